/* SPDX-License-Identifier: GPL-2.0-or-later */
/* regflags.h — --tls-verify, --cert-dir and --authfile: one meaning and one parser for every
 * command that talks to a registry (pull, update, build's FROM, run --image, push).
 *
 *   --tls-verify[=true|false]  false: no certificate check, and plain http when the registry
 *                              does not speak TLS (as skopeo and podman do)
 *   --cert-dir DIR             trust DIR/\*.crt instead of the system CAs
 *   --authfile FILE            tried before $REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR/containers/
 *                              auth.json and ~/.docker/config.json; given twice, the last first
 * The subcommands list the three in their flag tables (cli/commands.c), find them with
 * regflag_by_name() and hand them to regflag_apply(); `aisb run` keeps the values in its settings (cli/args.c) and applies them
 * through the same function when it attaches the image.
 */
#ifndef AISB_CLI_REGFLAGS_H
#define AISB_CLI_REGFLAGS_H

#include <stdbool.h>

#include "rootfs/registry.h"

enum regflag {
	REGFLAG_TLS_VERIFY = 0x1000,
	REGFLAG_CERT_DIR,
	REGFLAG_AUTHFILE,
	REGFLAG_MAX,
};

/* The registry flag named @name ("tls-verify", a row of a subcommand's flag table), or -1. */
int regflag_by_name(const char *name);

/* Parses a --tls-verify value: NULL (the bare flag) and "true" are true, "false" is false.
 * Return: 0, or -EINVAL for anything else. Logs on failure. */
int regflag_tls_verify(const char *value, bool *out);

/* Applies flag @flag with @value to @reg. @value must outlive @reg for --cert-dir (argv or the
 * run settings do); --authfile is copied to the front of @reg->auth_files. Return: 0, -EINVAL
 * (a bad --tls-verify value, an empty path), -ENOMEM. Logs on failure. */
int regflag_apply(struct registry_opts *reg, enum regflag flag, const char *value);

/* The flags of a command that applies them later (run): values point into argv or the
 * settings; authfiles is owned (regflags_done). */
struct regflags {
	const char *tls_verify;
	const char *cert_dir;
	char **authfiles;
};

/* Records flag @flag (checked as regflag_apply() checks it). Return: 0, -EINVAL, -ENOMEM.
 * Logs on failure. */
int regflags_collect(struct regflags *f, enum regflag flag, const char *value);

/* Applies every recorded flag to @reg with regflag_apply(), authfiles in the order given.
 * Return: 0 or -errno. Logs on failure. */
int regflags_apply(struct registry_opts *reg, const struct regflags *f);

/* Were any flags given? */
static inline bool regflags_any(const struct regflags *f)
{
	return f->tls_verify || f->cert_dir || f->authfiles;
}

void regflags_done(struct regflags *f);

#endif
