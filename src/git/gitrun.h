/* SPDX-License-Identifier: GPL-2.0-or-later */
/* gitrun.h — the one way aisb runs git on the host: hardened, argv only, clean environment.
 *
 * A clone workspace (workspace.h) is orchestrated by host git: cloning the project, validating
 * and rebuilding what the sandbox committed, publishing a branch. Every such git runs with what
 * could make it execute something switched off: hooks (core.hooksPath=/dev/null), fsmonitor,
 * pagers (--no-pager, core.pager=cat), credential helpers and askpass, prompting
 * (GIT_TERMINAL_PROMPT=0), auto-maintenance (gc.auto=0, maintenance.auto=0), signing, every
 * transport but file:// (protocol.allow=never, protocol.ext.allow=never), replace refs and lazy
 * fetches; system and global config are not read (GIT_CONFIG_NOSYSTEM=1,
 * GIT_CONFIG_GLOBAL=/dev/null), so the user's identity and excludes file are read explicitly
 * once, beforehand (gitrun_init()). No shell: git is exec'd from an argv array with an
 * environment built here from nothing (no GIT_EXTERNAL_DIFF, no PAGER, no SSH_ASKPASS can come
 * in from the caller). No diff-producing command is ever run, so external diff and textconv
 * drivers have nothing to run.
 *
 * Host git never runs in a repository the sandbox wrote: that is the export step's job, done
 * inside a second sandbox (workspace.c).
 */
#ifndef AISB_GIT_GITRUN_H
#define AISB_GIT_GITRUN_H

#include <stdbool.h>
#include <stddef.h>

#define GITRUN_OUT_MAX (64u << 20)  /* stdout kept from one git (rev-list of a big import) */
#define GITRUN_ERR_MAX 4096         /* stderr kept for the message */

struct gitrun {
	char git[256];       /* the git binary, resolved once */
	char *name, *email;  /* the user's identity (GIT_AUTHOR_* / user.* read beforehand) */
	char *excludes;      /* core.excludesFile read beforehand, or NULL */
	char *home, *xdg_config; /* for the one query that reads the user's own config */
};

struct gitrun_call {
	const char *dir;            /* git -C DIR, or NULL */
	const char *const *args;    /* after "git <hardening>": "rev-parse", "HEAD", NULL */
	const char *const *env;     /* extra NAME=VALUE (GIT_INDEX_FILE...), NULL-terminated or NULL */
	const char *in;             /* stdin bytes, or NULL */
	size_t in_len;
	int in_fd;                  /* stdin from this fd when >= 0 (takes precedence over @in) */
	bool ident;                 /* pass the identity as GIT_AUTHOR_* and GIT_COMMITTER_* */
	bool user_config;           /* read the user's global config (gitrun_init()'s queries only) */
	/* results */
	char *out;                  /* stdout, NUL-terminated (caller frees) */
	size_t out_len;
	char err[GITRUN_ERR_MAX];   /* stderr's start, NUL-terminated */
};

/* What gitrun_init() reads beforehand (each is a git process, so only what a caller needs). */
enum {
	GITRUN_IDENT = 1 << 0,     /* the identity; failing when none is configured */
	GITRUN_EXCLUDES = 1 << 1,  /* core.excludesFile */
};

/**
 * gitrun_init() - find git and read the user's identity and excludes file for @repo
 * @g: filled (free with gitrun_done())
 * @repo: the host project (its own config may set user.name), or NULL
 * @what: GITRUN_IDENT, GITRUN_EXCLUDES
 * @get: the host environment (secure_getenv in production)
 *
 * The identity comes from GIT_AUTHOR_NAME/EMAIL in aisb's environment, else `git config
 * user.name`/`user.email` read with the user's own config (a query, hardened like every call;
 * it executes nothing). Logs on failure (naming the fix: git config --global user.name ...).
 * Return: 0 or -errno.
 */
int gitrun_init(struct gitrun *g, const char *repo, unsigned what, const char *(*get)(const char *));
void gitrun_done(struct gitrun *g);

/**
 * gitrun_call() - run one hardened git
 * @g: from gitrun_init()
 * @c: what to run; receives the output
 *
 * Does not log. Return: git's exit status (0..255), 128+N when it died of signal N, or -errno
 * when it could not be run (-E2BIG when its stdout exceeded GITRUN_OUT_MAX).
 */
int gitrun_call(const struct gitrun *g, struct gitrun_call *c);
void gitrun_call_done(struct gitrun_call *c);

/**
 * gitrun_line() - run git and return the first line of its stdout
 * @g, @dir: as for gitrun_call()
 * @out: receives the malloc'd line (no newline)
 * @...: the arguments, NULL-terminated
 *
 * Does not log. Return: 0, a positive exit status, or -errno.
 */
int gitrun_line(const struct gitrun *g, const char *dir, char **out, ...);

/**
 * gitrun_ok() - run git, log its stderr's first line when it fails
 * @g, @dir: as for gitrun_call()
 * @what: names the step in the message
 * @...: the arguments, NULL-terminated
 *
 * Logs on failure. Return: 0 or -EIO.
 */
int gitrun_ok(const struct gitrun *g, const char *dir, const char *what, ...);

/* The environment and arguments every call gets (for the unit test and the docs). @env and
 * @argv are filled with static strings and pointers into @g; NULL-terminated. Pure. */
size_t gitrun_hardening_args(const char **argv, size_t max);
size_t gitrun_base_env(const char **env, size_t max);

/* Replaces control bytes (below 0x20, 0x7f) in @s with '?': git's messages can quote what a
 * sandbox wrote, and they go to the user's terminal. Pure. */
void gitrun_sanitize(char *s);

/* Is @s a full lower-case hex object id (40 or 64 digits)? Pure. */
bool gitrun_is_oid(const char *s);

#endif
