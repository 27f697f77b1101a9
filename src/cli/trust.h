/* SPDX-License-Identifier: GPL-2.0-or-later */
/* trust.h — a project's own policy (.aisb/config, .aisb/allow), loaded only once trusted.
 *
 * A repository can carry a reviewable policy: `.aisb/config` (`key = value`, the user-config
 * keys allow, env, harness, memory, pids, cpus only; cli/args.h) and `.aisb/allow` (one allow
 * entry per line). Anyone who can write the project can write these files — a cloned repository,
 * or the agent that ran there last — so they are read only after `aisb trust` recorded the
 * sha256 of their exact content under the user's state dir (trust/<sha256 of the project's real
 * path>, which no sandbox can see). A file that differs from what was trusted is ignored with a
 * one-line notice until trusted again. Files are opened without following symlinks (a symlink
 * is ignored, so a policy cannot be borrowed from elsewhere), bounded to 64 KiB each, and refused
 * when it holds control characters (its keys and values reach the user's terminal in messages).
 */
#ifndef AISB_CLI_TRUST_H
#define AISB_CLI_TRUST_H

#include <stdbool.h>

#define TRUST_FILE_MAX (64L * 1024)

enum trust_state {
	TRUST_NONE,      /* no .aisb/config nor .aisb/allow */
	TRUST_UNTRUSTED, /* never trusted */
	TRUST_CHANGED,   /* trusted once, with other content */
	TRUST_TRUSTED,   /* exactly the trusted content */
	TRUST_STATE_MAX,
};

struct project_policy {
	char *root;          /* the project's real path */
	char *config;        /* .aisb/config content, or NULL */
	char *allow;         /* .aisb/allow content, or NULL */
	char hash[65];       /* sha256 over both (with their presence), hex */
};

/* Reads @dir/.aisb/{config,allow} (dir resolved to its real path). Return: 1 when a policy file
 * exists, 0 when none does, -ELOOP for a symlink, -EINVAL for a non-regular file, -EFBIG for
 * more than TRUST_FILE_MAX, -EILSEQ for control characters or NUL bytes, other -errno.
 * Does not log. */
int trust_read_policy(const char *dir, struct project_policy *pp);
void trust_policy_done(struct project_policy *pp);

/* The policy as one config text: .aisb/config, then `allow = LINE` for each .aisb/allow entry.
 * Caller frees; NULL on ENOMEM. Does not log. */
char *trust_policy_text(const struct project_policy *pp);

/* The trust state of @pp against the record under @state_dir. Does not log. */
enum trust_state trust_state_of(const char *state_dir, const struct project_policy *pp);

/* The policy text recorded when @pp's project was last trusted (trust_policy_text() form, env
 * values as trust_redact_env() writes them), or NULL. Caller frees. Does not log. */
char *trust_recorded_text(const char *state_dir, const struct project_policy *pp);

/* An env entry as the record keeps it: NAME, or NAME=<sha256:12 hex of the value>. Caller frees;
 * NULL on ENOMEM. Does not log. */
char *trust_redact_env(const char *entry);

/* Records (or with @revoke removes) the trust of @pp's exact content. Return: 0 or -errno.
 * Does not log. */
int trust_record(const char *state_dir, const struct project_policy *pp, bool revoke);

#endif
