/* SPDX-License-Identifier: GPL-2.0-or-later */
/* gitguard.h — keep what a sandbox wrote from running in the host's git later.
 *
 * git on the host takes its config, hooks and object stores from files inside the repository
 * (gitfiles, commondir, config.worktree, worktrees/, modules/, alternates, include paths) and
 * runs the commands those configs name (core.fsmonitor, pagers, filters, ...). A sandbox that can
 * write the project can plant any of them. After a run, gitguard_check() walks a tree the sandbox
 * could write, finds every git entry point in it (every `.git`, and what gitfiles and commondir
 * files lead to below the same root), and neutralises each that changed during the run: it is
 * moved into a quarantine directory, so no host git can use it, and reported. It never runs git
 * and never follows a symlink: every file is opened below a directory fd with O_NOFOLLOW, read
 * with a size bound, and the walk is bounded in depth and entries.
 *
 * "Changed during the run" is ctime >= the run's start (whole seconds): ctime cannot be set from
 * userspace, so a sandbox cannot backdate what it wrote. Paths that were bound read-only during
 * the run (@pinned) could not be written by the sandbox and are not judged, only read for the
 * include paths their configs name.
 *
 * The parsers (git config syntax, gitfiles, the list of command-valued keys) are pure and
 * unit-tested; gitguard_check() is the thin layer that applies them to a tree.
 */
#ifndef AISB_GIT_GITGUARD_H
#define AISB_GIT_GITGUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

/* Bounds. A directory beyond one of them is not judged: it is moved whole out of git's reach and
 * named (an "unjudged" finding), and only it: every sibling is still judged (issue 21). */
#define GITGUARD_MAX_DEPTH 256
#define GITGUARD_MAX_ENTRIES 2000000     /* in all; after it every directory not yet walked is unjudged */
#define GITGUARD_MAX_DIR_ENTRIES 1000000 /* in one directory */
#define GITGUARD_MAX_CONFIG (1u << 20)   /* a bigger config that changed is quarantined unread */
#define GITGUARD_MAX_GITDIRS 4096        /* gitdirs inspected per root */
#define GITGUARD_MAX_INCLUDE_DEPTH 10    /* git's own include depth limit */

/* Called for every key of a config: section and name lower-cased, subsection as written (NULL
 * when absent), value NULL for a bare boolean key. Return < 0 to stop the scan. */
typedef int (*gitguard_key_fn)(const char *section, const char *subsection, const char *name,
			       const char *value, void *userdata);

/**
 * gitguard_config_parse() - parse git config text (git-config(1) "CONFIGURATION FILE")
 * @buf: the text (need not be NUL-terminated)
 * @len: its length
 * @fn: called for each key, in order
 * @userdata: passed to @fn
 *
 * Follows git's syntax: `[section]`, `[section "subsection"]` (escapes), the legacy
 * `[section.subsection]`, keys after a header on the same line, quoted values with escapes,
 * backslash-newline continuations, `#`/`;` comments. Pure. Does not log.
 * Return: 0, -EINVAL where git would refuse the file ("bad config line"), or @fn's error.
 */
int gitguard_config_parse(const char *buf, size_t len, gitguard_key_fn fn, void *userdata);

/**
 * gitguard_key_is_command() - whether a config key makes git run a command or read config,
 *                             hooks or attributes from somewhere else
 * @section: lower-cased section
 * @subsection: the subsection or NULL
 * @name: lower-cased key name
 *
 * The list is built from git-config(1) (git 2.39 and later additions such as hook.*.command):
 * core.fsmonitor, core.hooksPath, core.sshCommand, core.pager, core.editor, pager.*, alias.*,
 * diff.external, diff.*.textconv, filter.*.clean/smudge/process, merge.*.driver, credential
 * helpers, gpg.*, include paths, remote.*.uploadpack/receivepack, protocol.*.allow, ...
 * Pure. Return: the reason to show, or NULL.
 */
const char *gitguard_key_is_command(const char *section, const char *subsection, const char *name);

/**
 * gitguard_config_first_command() - the first command-valued key of a config text
 * @buf, @len: the text
 * @key: receives "section[.subsection].name" (truncated to @keylen)
 * @keylen: size of @key
 *
 * Pure. Return: 1 when one was found, 0 when none, -EINVAL when git could not parse the text.
 */
int gitguard_config_first_command(const char *buf, size_t len, char *key, size_t keylen);

/**
 * gitguard_parse_gitfile() - the path in a gitfile ("gitdir: PATH") or a commondir file
 * @buf, @len: the file's content
 * @prefix: "gitdir:" for a gitfile, NULL for a commondir file (the whole first line)
 * @out: receives the malloc'd path, trailing whitespace and newline removed
 *
 * Pure. Return: 0, -EINVAL when the content is not of that form, -ENOMEM.
 */
int gitguard_parse_gitfile(const char *buf, size_t len, const char *prefix, char **out);

/**
 * gitguard_path_below() - resolve @path (relative to @base, both relative to a root, or
 *                         absolute host path) lexically to a path relative to the root
 * @root: the root's host path (absolute, canonical)
 * @base: the directory @path is relative to, relative to @root ("" for the root itself)
 * @path: the path as written in the file
 * @out: receives the malloc'd root-relative path ("" for the root)
 *
 * Pure. Return: 0; -EXDEV when the path leaves the root; -ENOMEM.
 */
int gitguard_path_below(const char *root, const char *base, const char *path, char **out);

/**
 * gitguard_pointer_is_standard() - whether a pointer file is one git itself writes
 * @rel: the pointer's root-relative path (".../.git" gitfile or ".../commondir")
 * @target: its target, root-relative (gitguard_path_below()); NULL when it leaves the root
 * @commondir: @rel is a commondir file
 *
 * git writes gitfiles that lead into <repo>/.git/modules/ (submodules) or .git/worktrees/
 * (linked worktrees), and <X>/worktrees/<n>/commondir leading back to <X>; a pointer that
 * changed during a run and leads anywhere else is quarantined. Pure.
 */
bool gitguard_pointer_is_standard(const char *rel, const char *target, bool commondir);

struct gitguard_finding {
	char *path;      /* host path of what the sandbox changed */
	char *moved_to;  /* where it is now, NULL when it was left in place */
	char *reason;    /* what it would have made git do */
	int err;         /* < 0: moving it failed (-errno) */
	bool unjudged;   /* a directory that could not be checked (a bound, unreadable, an error):
			  * moved whole, since anything could be inside */
};

struct gitguard_report {
	struct gitguard_finding *v;
	size_t n;
	size_t lost;         /* findings dealt with but not listed (no memory for the list) */
	size_t n_unjudged;   /* of v: directories that could not be checked */
	size_t n_opened;     /* unreadable directories of the caller's made readable for the walk
			      * and put back (checked like any other) */
	bool incomplete;     /* something could not be checked: n_unjudged > 0, lost > 0, or the
			      * root itself (then root_err) */
	int root_err;        /* < 0: the root could not be opened or walked at all */
};

struct gitguard_options {
	const char *root;            /* host path of the tree (absolute, canonical) */
	char *const *pinned;         /* root-relative paths bound read-only during the run; NULL-terminated */
	struct timespec since;       /* when the run started (CLOCK_REALTIME) */
	const char *quarantine;      /* directory to move findings into (created 0700); NULL: report only */
	const char *home;            /* for `~/` in include paths; NULL: the caller's (getpwuid) */
	size_t max_entries;          /* 0: GITGUARD_MAX_ENTRIES (tests set a small one) */
};

/**
 * gitguard_check() - find and neutralise the git entry points that changed below @o->root
 * @o: what to check and where to put what is found
 * @rep: findings are appended here (free with gitguard_report_free())
 *
 * A directory that cannot be judged (deeper than GITGUARD_MAX_DEPTH, more entries than the
 * bounds, unreadable and not the caller's to open up, a read error) is itself a finding: moved
 * whole (into the quarantine, else renamed in place to NAME.aisb-unchecked with mode 000), and
 * only it; its siblings are judged as usual. A directory of the caller's that it cannot read is
 * made readable for the walk and its mode put back. `.git` is walked before its siblings.
 *
 * Does not run git. Does not log: the caller prints @rep (gitguard_report_print()).
 * Return: 0 (findings, including failed moves, are in @rep), or -errno when the root itself
 * could not be opened (also in @rep->root_err, with @rep->incomplete).
 */
int gitguard_check(const struct gitguard_options *o, struct gitguard_report *rep);

/**
 * gitguard_check_file() - judge one file the sandbox could write as git config
 * @o: @o->root is the file (a read-write --mount of a single file, such as a ~/.gitconfig);
 *     @o->pinned is ignored
 * @rep: findings are appended here
 *
 * A file that changed during the run and sets a command-valued key in git's syntax is moved like
 * gitguard_check() moves one (a file git cannot parse, or that sets none, is left alone).
 * Does not log. Return: 0, or -errno when its directory could not be opened.
 */
int gitguard_check_file(const struct gitguard_options *o, struct gitguard_report *rep);

void gitguard_report_free(struct gitguard_report *rep);

/**
 * gitguard_report_print() - the one message that names each finding, where it went and how to
 *                           inspect and restore it
 * @rep: the findings (nothing is printed when there are none and the walk was complete)
 * @quarantine: the quarantine directory (for the inspect hint), NULL in report-only mode
 * @f: where to print (stderr)
 *
 * Does not log otherwise. Return: the number of findings.
 */
size_t gitguard_report_print(const struct gitguard_report *rep, const char *quarantine, FILE *f);

/*
 * Jobs (gitguard-job.c): one run's check as a value. The supervisor records it on disk before
 * the workload starts (gitguard_job_record()), runs it after the sandbox is gone
 * (gitguard_job_run()) and only then forgets it; a record whose owner is gone is a check that
 * never ran, and every later aisb command runs it (gitguard_pending_run()) with the run's
 * original start time, so a SIGKILLed supervisor cannot make what its sandbox planted pass.
 */
struct gitguard_root {
	char *root;          /* host path (absolute, canonical) */
	bool is_file;        /* a single file mounted read-write: judged as git config */
	char **pinned;       /* root-relative read-only paths, NULL-terminated; may be NULL */
	char *quarantine;    /* NULL: report only (--writable-git) */
};

struct gitguard_job {
	char *id;                    /* the session id: names the record */
	struct timespec since;       /* when the run started */
	pid_t owner;                 /* the supervisor, and its start time (proc_start_time()) */
	unsigned long long owner_start;
	pid_t init;                  /* the sandbox's init (host pid) and its start time: a check */
	unsigned long long init_start; /* runs only once it is gone, with its whole pid namespace */
	unsigned long long pidns;    /* inode of the pid namespace those pids are in (gitguard_pidns()) */
	struct gitguard_root *roots;
	size_t n;
};

struct gitguard_verdict {
	size_t found;     /* findings (planted files and unjudged directories) */
	size_t unjudged;  /* directories that could not be checked (moved whole) */
	size_t failed;    /* findings that could not be moved */
	bool incomplete;  /* anything could not be checked, or a pending check was only announced */
};

/* The inode of this process's pid namespace, 0 when unknown. Does not log. */
unsigned long long gitguard_pidns(void);

/* Adds a root to @j; takes @pinned. Return: 0 or -ENOMEM. Does not log. */
int gitguard_job_add(struct gitguard_job *j, const char *root, bool is_file, char **pinned, const char *quarantine);
void gitguard_job_free(struct gitguard_job *j);

/**
 * gitguard_job_run() - check every root of @j, print the findings to @f, add them to @v
 * Return: 0. Logs (to @f).
 */
int gitguard_job_run(const struct gitguard_job *j, FILE *f, struct gitguard_verdict *v);

/**
 * gitguard_job_record() - write @j to @dir/<id>.json (0600, atomically; @dir made 0700)
 * gitguard_job_forget() - remove it, once the check ran
 * Return: 0 or -errno. Do not log.
 */
int gitguard_job_record(const struct gitguard_job *j, const char *dir);
int gitguard_job_forget(const struct gitguard_job *j, const char *dir);

/**
 * gitguard_pending_run() - run every recorded check in @dir whose owner is gone
 * @dir: the records' directory (<state dir>/pending)
 * @f: where the header and findings go (stderr)
 * @preview: only say that a check is pending (a --dry-run writes nothing)
 * @v: accumulates what was found
 *
 * One checker per record at a time (flock); a record is removed after its check ran.
 * Return: the number of checks run (or announced), or -errno. Logs (to @f).
 */
int gitguard_pending_run(const char *dir, FILE *f, bool preview, struct gitguard_verdict *v);

/*
 * Snapshots (gitguard-snapshot.c): the exact state of what makes a host git run something or
 * talk to somewhere, taken before a sandbox runs and compared afterwards. gitguard_check()
 * judges what changed during one run by ctime and moves it away; a snapshot is for a caller that
 * runs git itself between runs (aisb autophase): there, ANY change is a refusal, including one
 * gitguard lets through (a remote's URL, url.*.insteadOf, a hook written by --writable-git, or a
 * change made on the host while the sandbox ran). Covered, for the gitdir and the common dir:
 * config, config.worktree, commondir, gitdir, info/attributes, info/exclude,
 * objects/info/alternates, objects/info/http-alternates and hooks/ (every entry); the work tree's
 * .git when it is a gitfile; every file the configs include (include.path, includeIf.*.path,
 * followed GITGUARD_MAX_INCLUDE_DEPTH deep) and the core.hooksPath directory. Each is recorded
 * as absent, a symlink and its target, or a regular file with its mode and whole content (at
 * most GITGUARD_MAX_CONFIG), never by following a symlink.
 */
struct gitguard_snapshot;

/**
 * gitguard_snapshot_take() - record the git entry points of one work tree
 * @worktree: the work tree's host path (absolute)
 * @gitdir: its git dir (`git rev-parse --absolute-git-dir`)
 * @commondir: its common dir (the same as @gitdir outside linked worktrees)
 * @home: for `~/` in include paths; NULL: those are not followed
 * @out: receives the snapshot (gitguard_snapshot_free())
 *
 * Does not run git. Does not log.
 * Return: 0; -EFBIG for a file larger than GITGUARD_MAX_CONFIG or more than 4096 entries (the
 * caller refuses: it cannot vouch for what it could not record), -ENOMEM, or -errno of a read.
 */
int gitguard_snapshot_take(const char *worktree, const char *gitdir, const char *commondir, const char *home,
			   struct gitguard_snapshot **out);

/**
 * gitguard_snapshot_diff() - the first difference between two snapshots
 * @a: the earlier
 * @b: the later
 * @what: receives (when they differ) a malloc'd "'PATH' appeared" / "'PATH' was removed" /
 *        "'PATH' changed", PATH a host path
 *
 * Pure. Return: 0 when they are equal, 1 when they differ, -ENOMEM.
 */
int gitguard_snapshot_diff(const struct gitguard_snapshot *a, const struct gitguard_snapshot *b, char **what);

/* Number of entries recorded (for messages). */
size_t gitguard_snapshot_size(const struct gitguard_snapshot *s);

void gitguard_snapshot_free(struct gitguard_snapshot *s);

#endif
