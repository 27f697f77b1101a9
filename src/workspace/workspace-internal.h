/* SPDX-License-Identifier: GPL-2.0-or-later */
/* workspace-internal.h — the pure parsers and checks of the import, for workspace.c and its tests.
 *
 * Everything here reads bytes the sandbox produced (the bundle, git's listing of the sandbox's
 * commits) and decides; nothing touches the host.
 */
#ifndef AISB_WORKSPACE_INTERNAL_H
#define AISB_WORKSPACE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#define WS_BUNDLE_HEADER_MAX 65536   /* a bundle header larger than this is refused */
#define WS_BUNDLE_REF "refs/heads/aisb-export"
#define WS_MAX_COMMITS 10000         /* commits one import may bring */
#define WS_MESSAGE_MAX 65536         /* a longer commit message is cut here */
#define WS_PACK_MAX_STR "4294967296" /* index-pack --max-input-size: 4 GiB */

struct ws_bundle {
	int version;              /* 2 or 3 */
	char prereq[65];          /* the one prerequisite (the base) */
	char tip[65];             /* the one ref's object */
	size_t pack_offset;       /* where the pack data starts */
};

/**
 * ws_bundle_parse() - parse and judge a bundle header (gitformat-bundle(5))
 * @buf, @len: the file's first bytes (at least the whole header)
 * @base: the base the workspace was cloned at; the one prerequisite allowed
 * @b: filled
 * @why: on refusal, what was wrong (static string)
 *
 * Accepts v2 and v3 (capability @object-format=sha1|sha256, nothing else) with exactly one
 * prerequisite, @base, and exactly one ref, WS_BUNDLE_REF. Pure.
 * Return: 0, or -EINVAL (see @why).
 */
int ws_bundle_parse(const char *buf, size_t len, const char *base, struct ws_bundle *b, const char **why);

/**
 * ws_chain_check() - judge `git rev-list --parents --reverse --topo-order TIP --not BASE`
 * @text: that output (one "COMMIT PARENT..." line per commit, oldest first)
 * @base: the recorded base
 * @tip: the bundle's tip
 * @chain: receives the commits, oldest first (NULL-terminated strv)
 * @why: on refusal, what was wrong (static string)
 *
 * The sandbox's history must be a line: every commit has exactly one parent, the first's is
 * @base, each next one's is the one before, the last is @tip, at most WS_MAX_COMMITS. Pure.
 * Return: the number of commits, or -EINVAL (see @why), -ENOMEM.
 */
int ws_chain_check(const char *text, const char *base, const char *tip, char ***chain, const char **why);

/**
 * ws_commit_parse() - the tree and the message of a raw commit object (`git cat-file commit`)
 * @obj, @len: the object
 * @tree: receives the tree's hex id
 * @msg, @msg_len: receive a pointer into @obj and the message's length (cut at WS_MESSAGE_MAX,
 *                 at a NUL)
 *
 * Pure. Return: 0, -EINVAL when there is no tree line.
 */
int ws_commit_parse(const char *obj, size_t len, char tree[65], const char **msg, size_t *msg_len);

/**
 * ws_oidset_from_show_index() - the object ids `git show-index` lists ("OFFSET OID (CRC)")
 * @text: its output
 * @out: receives a sorted strv of ids
 *
 * Pure. Return: the count, -EINVAL on a malformed line, -ENOMEM.
 */
int ws_oidset_from_show_index(const char *text, char ***out);

/* Is @oid in the sorted set @set? Pure. */
bool ws_oidset_has(char *const *set, size_t n, const char *oid);

/**
 * ws_ls_tree_filter() - the records of `git ls-tree -r -z` whose path is in @paths
 * @ls, @len: that output ("MODE TYPE OID\tPATH\0"...)
 * @paths, @n: a sorted set of paths
 * @out, @out_len: receive the kept records, NUL-terminated each (what `update-index -z
 *                 --index-info` reads), or NULL and 0 when none
 *
 * Pure. Return: the number kept, -EINVAL on a record without a tab, -ENOMEM.
 */
int ws_ls_tree_filter(const char *ls, size_t len, char *const *paths, size_t n, char **out, size_t *out_len);

/* One path of `git diff-tree -r -z --no-renames --raw` (and --numstat) between the tree that
 * would be published and its base. */
struct ws_change {
	char status;              /* A, M, D, T */
	unsigned old_mode, new_mode; /* octal, as git prints them */
	const char *path;         /* into the raw text */
	long long added, deleted; /* lines; -1 for a binary file */
};

/**
 * ws_raw_parse() - parse `git diff-tree -r -z --no-renames --raw A B`
 * @raw, @len: that output (":OLDMODE NEWMODE OLD NEW STATUS\0PATH\0"...); paths point into it
 * @out, @n: receive the changes (caller frees @out), added/deleted set to 0
 *
 * Pure. Return: 0, -EINVAL on a malformed record, -ENOMEM.
 */
int ws_raw_parse(const char *raw, size_t len, struct ws_change **out, size_t *n);

/* Fills added/deleted of @c from `git diff-tree -r -z --no-renames --numstat A B` ("A\tD\tPATH\0",
 * "-\t-\t" for binary), which lists the same paths in the same order. Pure. Return: 0, -EINVAL
 * when a record does not parse or names another path. */
int ws_numstat_apply(const char *ns, size_t len, struct ws_change *c, size_t n);

/**
 * ws_review_flag() - why a path the sandbox changed is outside the tree's usual paths, or NULL
 * @c: the change
 * @top, @ntop: the sorted names of the base tree's top-level entries
 *
 * In order: a submodule (a gitlink, mode 160000, added or changed to); a git control file
 * (.gitattributes, .gitmodules anywhere: filters, drivers, submodule URLs) added or modified; for
 * an added path: hook-like (a component hooks, githooks, .githooks or .husky), a dotfile (any
 * component starting with '.': .github/workflows, .envrc, .vscode ...), a new top-level entry (its
 * first component is not in @top), a symlink, an executable; for a modified path: made a
 * symlink or made executable. Pure. Return: a static reason string, or NULL.
 */
const char *ws_review_flag(const struct ws_change *c, char *const *top, size_t ntop);

/* Appends @path as an anchored, escaped gitignore pattern ("/a\*b\n"). Pure. Return: 0, -ENOMEM. */
int ws_exclude_pattern(const char *path, char **out);

/* Is @name a branch name aisb may create (refs/heads/NAME): git's check-ref-format rules plus
 * no leading '-'? Pure. */
bool ws_branch_name_valid(const char *name);

#endif
