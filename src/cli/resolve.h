/* SPDX-License-Identifier: GPL-2.0-or-later */
/* resolve.h — settings to plan: every path checked, every env value resolved, every refusal made.
 *
 * The pure helpers (mount specs, env names) are exported for the unit tests; plan_resolve() is the
 * impure whole that reads the host. Reserved paths, project placement and the caller's home are
 * the core's (core/plan.h): modules below the CLI need them too.
 */
#ifndef AISB_CLI_RESOLVE_H
#define AISB_CLI_RESOLVE_H

#include <stdbool.h>
#include <stdio.h>

#include "cli/args.h"
#include "core/plan.h"

/* Is @path a host path that must never be exposed (runtime dirs, engine sockets, /proc, /)? */
bool plan_path_is_forbidden_source(const char *path, const char *xdg_runtime_dir);

/* Canonicalises a host path the sandbox will see (--mount source, --env-file; @what names the
 * flag in the message) with path_resolve_trusted(): a symlink some sandbox could have planted is
 * refused with a message naming it and the fix. Logs on failure. */
int plan_resolve_source(const char *path, const char *what, char **out);

/* Parses SRC[:DST][:ro|:rw]; default read-only. Does not check the host. Logs on failure. */
int plan_parse_mount_spec(const char *spec, char **src, char **dst, bool *ro);

/* Builds the environment: TERM LANG LC_ALL LC_CTYPE TZ from the host, the sandbox's own
 * variables, then --env and --env-file. An unset NAME, a bad name, a bad or non-0600 env file
 * is -EINVAL (exit 78). Messages name variables and files, never values. Logs on failure. */
int plan_build_env(struct aisb_plan *p, const struct aisb_settings *s, env_getter get);

/* Whether a root caller's sandbox may run as USERNS_ROOT_RUN_ID (ns/mounts.h,
 * mount_remap_possible()); AISB_TEST_NO_IDMAP=1, a test hook, says no. Does not log. */
bool plan_root_remap_wanted(env_getter get);

/**
 * plan_resolve() - the one resolver: settings to plan
 * @p: filled; nothing writes it afterwards (every module below takes a const plan, and what a
 *     run produces lives in the run's own structs: docs/architecture.md, "The plan")
 * @s: the settings (defaults < config < environment < flags)
 * @get: the host environment
 * @image_lock: for --image, receives a shared lock on the rootfs to hold for the run (or -1);
 *              NULL for a resolution that runs nothing: then, as for a preview, the image is
 *              never pulled, only read from the store
 *
 * Named stages, in order: identity, network and rootfs, project (and --workspace clone), state
 * and home, mounts with identity and limits, environment and command, the harness check, the
 * image (image_attach(): rootfs and config) and the harness config bridge (bridge_resolve(),
 * not for --version). Reads the host; creates nothing, except that a run (not a preview) pulls
 * an --image the store lacks.
 * Return: 0 or an exit code (78, 125, 127: the harness is not where the sandbox looks). Logs on
 * failure.
 */
int plan_resolve(struct aisb_plan *p, const struct aisb_settings *s, env_getter get, int *image_lock);

/* Frees a plan plan_resolve() made, the parts other modules resolved into it included (net,
 * bridge, workspace), wiping env values first; zeroes @p. Does not log. */
void plan_free(struct aisb_plan *p);

/* Prints the plan as --dry-run does, secret values replaced by <redacted>. */
void plan_print(const struct aisb_plan *p, FILE *f);

/* Prints the effective policy as key=value lines (--print-policy). */
void plan_print_policy(const struct aisb_plan *p, FILE *f);


#endif
