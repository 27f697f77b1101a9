/* SPDX-License-Identifier: GPL-2.0-or-later */
/* gitrun.h — the one way aisb runs git on the host: hardened, argv only, clean environment.
 *
 * Its callers: a clone workspace (workspace.h: cloning the project, validating and rebuilding
 * what the sandbox committed, publishing a branch) and `aisb autophase` (autophase.h: status,
 * commits and a push in a work tree a sandbox could write). Every git runs with what could make
 * it execute something switched off: hooks (core.hooksPath=/dev/null), fsmonitor, pagers
 * (--no-pager, core.pager=cat), credential helpers and askpass, prompting
 * (GIT_TERMINAL_PROMPT=0), auto-maintenance (gc.auto=0, maintenance.auto=0), signing, submodule
 * recursion, implicit bare repositories, replace refs and lazy fetches; system and global config
 * are not read (GIT_CONFIG_NOSYSTEM=1, GIT_CONFIG_GLOBAL=/dev/null), so the user's identity and
 * excludes file are read explicitly, as text, beforehand (gitrun_init(), gitrun_read_user()).
 * Transports are an allowlist chosen per call: file:// only (no ssh at all, HOME=/nonexistent)
 * unless the call sets .remote (a push to the user's remote: file, ssh, https, http, git; the
 * user's HOME and SSH_AUTH_SOCK for ssh); ext:: and every remote helper are never allowed. No
 * shell: git is exec'd from an argv array with an environment built here from nothing (no
 * GIT_EXTERNAL_DIFF, no PAGER, no SSH_ASKPASS can come in from the caller). No diff-producing
 * command is ever run, so external diff and textconv drivers have nothing to run.
 *
 * A repository's own config is still read by git: the workspace never runs host git in a
 * repository the sandbox wrote (the export runs in a second sandbox, workspace.c); autophase
 * fingerprints the one it runs in (gitguard_snapshot_take()) before trusting it. What git
 * prints is captured, never printed here; a message shown to the user goes through
 * gitrun_message(): URL credentials hidden, control bytes replaced.
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
	char *home, *xdg_config; /* where the user's config is (and HOME of a .remote call) */
	char *env_name, *env_email; /* the caller's GIT_AUTHOR_NAME / GIT_AUTHOR_EMAIL, or NULL */
	char *ssh_auth_sock; /* SSH_AUTH_SOCK of a .remote call, or NULL */
	char **user_env;     /* NAME=VALUE of the caller a .user_config call gets (gitrun_user), or NULL */
	/* A bare repository the caller created itself (the workspace's quarantine), or NULL: a
	 * call whose dir is this path names it with --git-dir=, which safe.bareRepository=explicit
	 * accepts; every other dir is -C, where a bare repository is never entered by discovery. */
	const char *bare;
};

/* What the caller's environment gives gitrun_setup() (each may be NULL). */
struct gitrun_user {
	const char *home, *xdg_config;
	const char *env_name, *env_email;
	const char *ssh_auth_sock;
	/* NAME=VALUE entries of the caller's environment that a .user_config call gets (PATH, what
	 * a credential helper needs: the caller chooses them), NULL-terminated, or NULL */
	const char *const *user_env;
};

struct gitrun_call {
	const char *dir;            /* git -C DIR, or NULL */
	const char *const *args;    /* after "git <hardening>": "rev-parse", "HEAD", NULL */
	const char *const *env;     /* extra NAME=VALUE (GIT_INDEX_FILE...), NULL-terminated or NULL */
	const char *in;             /* stdin bytes, or NULL */
	size_t in_len;
	int in_fd;                  /* stdin from this fd when >= 0 (takes precedence over @in) */
	bool ident;                 /* pass the identity as GIT_AUTHOR_* and GIT_COMMITTER_* */
	bool remote;                /* network transports allowed (a push), see the header comment */
	/* With .remote only: the user's global config is read (~/.gitconfig, $XDG_CONFIG_HOME/git/
	 * config: url.*.insteadOf, credential helpers, core.sshCommand), the system config still
	 * not; credential.helper is not reset; the user's HOME, XDG_CONFIG_HOME and user_env are
	 * passed. The hardening options (hooks, fsmonitor, protocols...) still override it. Only for
	 * a call whose git dir is one aisb made (the autophase push repository): a repository a
	 * sandbox wrote must never contribute config to such a call. */
	bool user_config;
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
 * gitrun_setup() - find git and take what @u names
 * @g: filled (free with gitrun_done())
 * @u: the user's home, XDG config, GIT_AUTHOR_NAME/EMAIL and SSH_AUTH_SOCK (copied)
 *
 * Git is looked for at fixed paths (/usr/bin, /usr/local/bin, /bin), never the caller's PATH.
 * Logs when there is none. Return: 0, -ENOENT (no git), -ENOMEM.
 */
int gitrun_setup(struct gitrun *g, const struct gitrun_user *u);

/**
 * gitrun_read_user() - read the identity and excludes file into @g
 * @g: from gitrun_setup()
 * @commondir: the repository's common git dir (its config is read), or NULL
 * @what: GITRUN_IDENT, GITRUN_EXCLUDES
 *
 * The precedence, the same for every caller (gitrun_identity()): the caller's
 * GIT_AUTHOR_NAME/EMAIL if set and non-empty, else the first of @commondir/config,
 * ~/.gitconfig, $XDG_CONFIG_HOME/git/config (~/.config/git/config) that sets user.name (resp.
 * user.email), the last value within that file as git takes it. core.excludesFile is looked up
 * the same way, else git's default $XDG_CONFIG_HOME/git/ignore when it exists. The files are
 * parsed as text (gitguard_config_parse()): no git runs, includes are not followed, the system
 * config is not read. Does not log.
 * Return: 0, -ENODATA (GITRUN_IDENT and no name or no email), -EINVAL (a file does not parse),
 * -errno.
 */
int gitrun_read_user(struct gitrun *g, const char *commondir, unsigned what);

/**
 * gitrun_init() - gitrun_setup() from the host environment, then gitrun_read_user() for @repo
 * @g: filled (free with gitrun_done())
 * @repo: a directory in the host project (its git common dir is asked for), or NULL
 * @what: GITRUN_IDENT, GITRUN_EXCLUDES
 * @get: the host environment (secure_getenv in production): HOME, XDG_CONFIG_HOME,
 *       GIT_AUTHOR_NAME, GIT_AUTHOR_EMAIL
 *
 * Logs on failure (naming the fix: git config --global user.name ...). Return: 0 or -errno.
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
 * gitrun_ok() - run git, log its stderr's first line (gitrun_message()) when it fails
 * @g, @dir: as for gitrun_call()
 * @what: names the step in the message
 * @...: the arguments, NULL-terminated
 *
 * Logs on failure. Return: 0 or -EIO.
 */
int gitrun_ok(const struct gitrun *g, const char *dir, const char *what, ...);

/* The environment and arguments every call gets (for the unit test and the docs), then the
 * transport options of a call with .remote false (@remote false) or true; NULL-terminated,
 * static strings. Pure. */
size_t gitrun_hardening_args(const char **argv, size_t max);
size_t gitrun_transport_args(bool remote, const char **argv, size_t max);
size_t gitrun_base_env(const char **env, size_t max);

/* Replaces control bytes in @s with '?', in place: C0 (below 0x20) and 0x7f, the C1 controls
 * as single bytes (0x80-0x9f) and UTF-8-encoded (U+0080-U+009F: 0xc2 0x80-0x9f), and every
 * byte that is not part of valid UTF-8; valid UTF-8 text ("café") is kept. git's messages, a
 * commit's subject and its paths can hold what a sandbox wrote, and they go to the user's
 * terminal. Pure. */
void gitrun_sanitize(char *s);

/**
 * gitrun_redact() - @text with the credentials of every URL in it hidden
 * @text: anything that may hold a URL (git's stderr, a remote's URL, a message)
 *
 * "scheme://user:secret@host/..." becomes "scheme://<redacted>@host/...": everything between
 * "://" and the last '@' of the authority (which ends at '/', '?', '#', whitespace or a quote).
 * Pure. Return: a malloc'd string, or NULL on ENOMEM.
 */
char *gitrun_redact(const char *text);

/* Whether @text holds a URL with user info (what gitrun_redact() would hide). Pure. */
bool gitrun_has_credentials(const char *text);

/* What every git message shown to the user goes through: gitrun_redact(), then control bytes
 * but '\n' replaced (as gitrun_sanitize() does). Pure. Return: malloc'd, or NULL on ENOMEM. */
char *gitrun_message(const char *text);

/**
 * gitrun_identity() - user.name and user.email from git config files, read as text
 * @files: config files in decreasing precedence (repository, ~/.gitconfig, XDG); NULL-terminated;
 *         a missing file is skipped
 * @name: receives the first file's user.name (the last one within a file, as git), or NULL
 * @email: the same for user.email
 *
 * Includes are not followed. Does not log.
 * Return: 0, or -errno for a file that exists but cannot be read or parsed (-EINVAL).
 */
int gitrun_identity(const char *const *files, char **name, char **email);

/* Is @s a full lower-case hex object id (40 or 64 digits)? Pure. */
bool gitrun_is_oid(const char *s);

#endif
