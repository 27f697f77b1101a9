/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hostgit.h — git run on the host, on a repository a sandbox could write, without running what
 * the sandbox planted.
 *
 * Every call is one fork+execve of git with an argv array (no shell) in a clean environment:
 * system and global config off (GIT_CONFIG_NOSYSTEM=1, GIT_CONFIG_GLOBAL=/dev/null), no terminal
 * prompt, no askpass, no pager, no replace refs, and on the command line hooks off
 * (core.hooksPath=/dev/null), fsmonitor off, protocol.ext.allow=never, no credential helper, no
 * auto-gc or auto-maintenance, no signing, no submodule recursion. The repository's own config
 * is still read by git: callers fingerprint it (gitguard_snapshot_take()) before trusting it.
 * The user's identity is read explicitly (hostgit_identity()), never through git's global
 * config. What git prints is captured, never printed here: a caller prints it through
 * hostgit_redact(), which hides the credentials of URLs.
 */
#ifndef AISB_GIT_HOSTGIT_H
#define AISB_GIT_HOSTGIT_H

#include <stdbool.h>
#include <stddef.h>

#define HOSTGIT_MAX_OUT (16u << 20) /* stdout kept per call */
#define HOSTGIT_MAX_ERR (64u << 10) /* stderr kept per call */

struct hostgit {
	const char *worktree;      /* the directory git runs in */
	const char *home;          /* HOME for ssh and git's default excludes file; NULL: unset */
	const char *ssh_auth_sock; /* passed for an ssh push; NULL: unset */
	const char *name, *email;  /* identity for commits (GIT_AUTHOR_* and GIT_COMMITTER_*), or NULL */
	const char *index_file;    /* GIT_INDEX_FILE, or NULL for the repository's index */
};

/**
 * hostgit_run() - run git hardened (see the header comment)
 * @g: where and as whom
 * @args: git's arguments after the hardening options, NULL-terminated ("status", "--porcelain")
 * @out: receives stdout, NUL-terminated, at most HOSTGIT_MAX_OUT (the rest is read and dropped);
 *       NULL: stdout goes to /dev/null
 * @err: receives stderr the same way (at most HOSTGIT_MAX_ERR); NULL: /dev/null. Unredacted.
 *
 * stdin is /dev/null. Does not log.
 * Return: git's exit status (0-255; 128+N for signal N), or -errno when git could not be run
 * (-ENOENT: no git in /usr/local/bin, /usr/bin or /bin).
 */
int hostgit_run(const struct hostgit *g, const char *const *args, char **out, char **err);

/**
 * hostgit_argv() - the full argv hostgit_run() executes (for tests and --verbose)
 * @args: as for hostgit_run()
 *
 * Return: a NULL-terminated malloc'd vector (strv_free()), argv[0] "git"; NULL on ENOMEM.
 */
char **hostgit_argv(const char *const *args);

/**
 * hostgit_env() - the environment hostgit_run() gives git
 * @g: as for hostgit_run()
 *
 * Return: a NULL-terminated malloc'd vector (strv_free()); NULL on ENOMEM. Pure.
 */
char **hostgit_env(const struct hostgit *g);

/**
 * hostgit_redact() - @text with the credentials of every URL in it hidden
 * @text: anything that may hold a URL (git's stderr, a remote's URL, a message)
 *
 * "scheme://user:secret@host/..." becomes "scheme://<redacted>@host/...": everything between
 * "://" and the last '@' of the authority (which ends at '/', '?', '#', whitespace or a quote).
 * Pure. Return: a malloc'd string, or NULL on ENOMEM.
 */
char *hostgit_redact(const char *text);

/* Whether @text holds a URL with user info (what hostgit_redact() would hide). Pure. */
bool hostgit_has_credentials(const char *text);

/**
 * hostgit_identity() - user.name and user.email from git config files, read as text
 * @files: config files in decreasing precedence (repository, ~/.gitconfig, XDG); NULL-terminated;
 *         a missing file is skipped
 * @name: receives the first file's user.name (the last one within a file, as git), or NULL
 * @email: the same for user.email
 *
 * Includes are not followed (an identity behind an include is not found; the caller's message
 * says how to set one). Does not log.
 * Return: 0, or -errno for a file that exists but cannot be read or parsed (-EINVAL).
 */
int hostgit_identity(const char *const *files, char **name, char **email);

#endif
