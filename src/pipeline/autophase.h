/* SPDX-License-Identifier: GPL-2.0-or-later */
/* autophase.h — `aisb autophase`: run a project's .agents/phases/ pipeline, agents inside aisb,
 * git outside.
 *
 * A unit is one phase file, .agents/phases/NN-name.md, taken in name order. For each phase not
 * yet delivered on the current branch, the driver runs the user's launcher inside a sandbox
 * (`aisb run RUN-FLAGS -- LAUNCHER... PHASE-FILE`, the phase file also on stdin), then
 * .agents/validate.sh inside another, and only when both exit 0 it delivers on the host: the
 * work tree is committed with the host's identity (trailer `Aisb-Phase: NN-name`, which is also
 * how a later run knows the phase is done) and, with a push target, pushed. Between units the
 * driver refuses to deliver when gitguard quarantined what a unit planted for git, or the hooks
 * or config of .git changed since before the first unit (gitguard_snapshot_take(); both unless
 * trust_git_changes), when .agents/validate.sh or the
 * launcher file changed, or when HEAD left the branch. Host git is gitrun.h's. The sandbox's
 * stdout is the command's; the driver's own lines go to stderr (status and dry-run reports to
 * stdout). docs/autophase.md is the user's view and lists the choices made.
 *
 * Issue 23 made it the seed's driver: a host launcher (the user's sandbox-pi, found by an rc
 * probe that never calls it, run per unit with the prompt as one argument), retries with
 * backoff and fix rounds, the four push points with the user's global git config (from a bare
 * repository of the driver's own: never the project's config), --validate-in host, the
 * preflight, and --library (the seed's pipeline library with five functions shadowed).
 */
#ifndef AISB_PIPELINE_AUTOPHASE_H
#define AISB_PIPELINE_AUTOPHASE_H

#include <stdbool.h>

enum autophase_launcher_source {
	AUTOPHASE_LAUNCHER_FLAG,   /* --launcher CMD */
	AUTOPHASE_LAUNCHER_CONFIG, /* autophase_launcher = CMD in the user's config */
	AUTOPHASE_LAUNCHER_FILE,   /* the executable .agents/launcher */
	AUTOPHASE_LAUNCHER_HOST,   /* the user's host command (--pi-cmd, AISB_AP_PI_CMD, sandbox-pi) */
	AUTOPHASE_LAUNCHER_NONE,
	AUTOPHASE_LAUNCHER_SOURCE_MAX,
};

struct autophase_options {
	const char *launcher;             /* --launcher CMD, or NULL */
	const char *library;              /* --library LIB: the seed's pipeline library, or NULL */
	bool push_only;                   /* --push-only: the library's push_phase */
	const char *pi_cmd;               /* --pi-cmd NAME or AISB_AP_PI_CMD, or NULL (sandbox-pi looked for) */
	const char *config_launcher;      /* the config's autophase_launcher, or NULL */
	const char *config_path;          /* where that came from (for messages) */
	const char *push_remote;          /* --push REMOTE (a remote's name, a URL or a path), or NULL */
	const char *push_branch;          /* --push-branch BRANCH; NULL: the current branch's name */
	bool trust_git_changes;
	unsigned retries;                 /* --retries: reruns of an agent that exited non-zero */
	unsigned backoff;                 /* --backoff: seconds before the first retry, doubled each time */
	bool validate_on_host;            /* --validate-in host: the gate outside any sandbox (warned) */
	unsigned fix_rounds;              /* --fix-rounds: agent + gate rounds after a failed validation */
	bool status;                      /* report only */
	bool dry_run;                     /* check everything, print the plan, start nothing */
	char *const *run_flags;           /* given to every `aisb run` (checked by the caller) */
	const char *self;                 /* the aisb binary to run units with */
	const char *state_dir;            /* aisb's state dir (the driver's lock lives there) */
	const char *home;                 /* the user's home (git's ~/.gitconfig, ssh, the rc files), or NULL */
	const char *path;                 /* the caller's PATH (a host launcher that is a program), or NULL */
	const char *xdg_config_home;      /* $XDG_CONFIG_HOME or NULL (git's XDG config) */
	const char *ssh_auth_sock;        /* passed to a push */
	const char *const *push_env;      /* NAME=VALUE the push gets (PATH, a credential helper's), or NULL */
	const char *env_name, *env_email; /* GIT_AUTHOR_NAME / GIT_AUTHOR_EMAIL of the caller, or NULL */
};

/**
 * autophase_main() - run, report (@o->status) or plan (@o->dry_run) the pipeline of the git
 *                    work tree the current directory is in
 * @o: the options
 *
 * Logs on failure. Return: an exit code: 0 every phase delivered (or none left); 1 a phase's
 * agent, its validation, its commit or its push failed (nothing of that phase was delivered
 * unless the message says it was committed); 77, 78 or 125 from a unit's `aisb run`, or 78 for a
 * refusal of the driver's own (the guards above, a dirty work tree, no launcher, no identity,
 * another driver holding the repository's lock);
 * 128+N when a unit died of signal N; 125 when the driver itself failed.
 */
int autophase_main(const struct autophase_options *o);

#endif
