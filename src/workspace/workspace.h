/* SPDX-License-Identifier: GPL-2.0-or-later */
/* workspace.h — `--workspace clone`: the sandbox works on its own clone; commits come back validated.
 *
 * Binding the project read-write lets the sandbox edit what the host's git reads later (hooks,
 * config, gitfiles: src/git/gitguard.h). A clone workspace never shows the sandbox the host's
 * .git or worktree: the sandbox gets a fresh local clone of the project's HEAD, made by host git
 * before the run, in <state>/workspaces/<session>/repo, mounted at the project's usual path.
 *
 * Afterwards the clone is hostile data. Host git never runs in it: a second sandbox (the
 * export, run by the CLI through workspace_exporter) packs the commits made on top of the base
 * into a bundle. The host then, in a quarantine repository of its own that borrows the
 * project's objects read-only (alternates):
 *   - parses the bundle header itself (one prerequisite: the base; one ref; no filter);
 *   - indexes the pack with `index-pack --strict` (a thin pack, a broken object or a missing
 *     link is refused), lists what it holds, and runs `git fsck --strict` on it;
 *   - checks that every object the new commits reach beyond the base is in the bundle (nothing
 *     borrowed from the host's other objects), that the commits form one line on the base
 *     (no merges, no new roots), and their count;
 *   - rebuilds every commit from its tree with the user's identity and a fresh committer date
 *     (no sandbox-made commit object, author, date or signature survives), leaving out the
 *     untracked files copied in (--untracked copy);
 *   - publishes with compare-and-swap (`git update-ref REF NEW OLD`): a new branch
 *     aisb/<session> (or --target BRANCH), never the checked-out branch, index or worktree,
 *     except with --target current, a guarded fast-forward.
 * Every host git is hardened (gitrun.h).
 *
 * Layout: <state>/workspaces/<id>/{workspace.json, repo/, untracked (NUL-separated paths),
 * export/ (the export sandbox's output), import.git/ (quarantine, removed after an import)}.
 */
#ifndef AISB_WORKSPACE_WORKSPACE_H
#define AISB_WORKSPACE_WORKSPACE_H

#include <stdbool.h>
#include <stdio.h>

#include "core/plan.h"

/* struct workspace_plan, the plan's part that this module carries out, is in core/plan.h: the
 * plan is the core's vocabulary (core/plan.c writes it into plan.json). */

/* What the export sandbox is asked to do (workspace_exporter). */
struct workspace_export {
	const char *repo;       /* host path of the clone (mount it read-only) */
	const char *out;        /* host path of an empty directory for the results (read-write) */
	const char *base;
	bool checkpoint;        /* also commit uncommitted work as one checkpoint commit */
	const char *script;     /* the export script (workspace_export_script) */
	/* The host branch moved: rebase the commits onto @onto (a commit with @base as ancestor)
	 * inside the export. @onto_dir (mount it read-only at WORKSPACE_EXPORT_ONTO) holds onto.pack,
	 * the host's commits ONTO ^BASE packed from the host's own objects. Both NULL: no rebase. */
	const char *onto;
	const char *onto_dir;
};

/* Runs the export in a sandbox; returns its exit code (0: ran). Logs on failure. */
typedef int (*workspace_exporter)(const struct workspace_export *e);

/* The POSIX sh script the export sandbox runs: `sh -c SCRIPT aisb-export BASE CHECKPOINT [ONTO]`
 * with the clone at WORKSPACE_EXPORT_REPO (read-only), WORKSPACE_EXPORT_OUT (read-write) and,
 * with ONTO, the host's new commits at WORKSPACE_EXPORT_ONTO (read-only). Its exit codes: 0 done,
 * 3-5 the clone could not be read or packed, 6 the rebase could not be set up, 7 a commit did not
 * apply on ONTO (out/conflict-commit names it, out/conflicts the conflicting paths, NUL-separated),
 * 8 a commit to rebase is a merge or a root (out/conflict-commit names it). With ONTO,
 * WORKSPACE_EXPORT_ONTO/untracked (NUL-separated) lists the files copied in as untracked: the
 * rebase takes them out of the commits first. */
#define WORKSPACE_EXPORT_REPO "/aisb-export/repo"
#define WORKSPACE_EXPORT_OUT "/aisb-export/out"
#define WORKSPACE_EXPORT_ONTO "/aisb-export/onto"
#define WORKSPACE_EXPORT_CONFLICT 7
#define WORKSPACE_EXPORT_NOT_A_LINE 8
extern const char workspace_export_script[];

/**
 * workspace_resolve() - the clone workspace for @p's project (plan time: creates nothing)
 * @p: the plan; p->project_src is the working directory. Its project placement is redone from
 *     the top-level directory, and .git is the clone's own (writable_git)
 * @untracked: "none" or "copy" (NULL: none)
 * @target: NULL, "current" or a branch name
 * @import_uncommitted: the flag
 * @review: --review
 * @get: the host environment
 *
 * Logs on failure. Return: 0 or an exit code (78 when the project is not a git repository with a
 * commit, or a target is invalid; 125).
 */
int workspace_resolve(struct aisb_plan *p, const char *untracked, const char *target, bool import_uncommitted, bool review,
		      env_getter get);

/**
 * workspace_prepare() - make the clone before the sandbox is built
 * @p: the plan (not written)
 * @ss: its session (id, canonical state dir); gets the workspace dir and, as ss->project_src,
 *      the clone the sandbox gets as its project (plan_project_src(), core/plan.h)
 *
 * Clones the project's HEAD with hardened git, checks it is still the base, copies the
 * untracked files when asked, records workspace.json. Logs on failure. Return: 0 or -errno.
 */
int workspace_prepare(const struct aisb_plan *p, struct aisb_session *ss);

struct scrub_needle;

struct workspace_import_opts {
	const char *target;     /* overrides the recorded target when non-NULL */
	bool uncommitted;       /* --import-uncommitted */
	bool rebase;            /* --rebase: onto the host branch's tip when it moved (--target current: always) */
	bool quiet;
	/* --review: once validated and rebuilt, what would be published is printed on stdout
	 * (commits, diffstat, the paths outside the tree's usual ones), and it is published only
	 * when @yes or @confirm says 1 (0: declined; <0: no terminal to ask on, refused) */
	bool review;
	bool yes;
	int (*confirm)(void);
	/* values passed into the session (--env ...): masked in the review (ns/scrub.h) */
	const struct scrub_needle *needles;
	size_t n_needles;
};

/**
 * workspace_import() - export, validate, rebuild and publish a workspace's new commits
 * @state: the state dir
 * @id: the session id
 * @o: options
 * @ex: runs the export sandbox
 * @get: the host environment
 *
 * Logs (the outcome, and every refusal with its reason). Return: 0 (imported, or nothing to
 * import), -EPERM a refusal (the workspace is kept; also --review without a terminal to
 * confirm on), -ECANCELED declined at the review (kept), -ENOENT no such workspace, other -errno.
 */
int workspace_import(const char *state, const char *id, const struct workspace_import_opts *o,
		     workspace_exporter ex, env_getter get);

/**
 * workspace_finish() - after a clone run: import, then remove the workspace when nothing is left
 * @p: the plan of the run
 * @ss: the session it ran as (workspace_prepare() filled its workspace dir)
 * @ex, @get: as for workspace_import()
 * @confirm: asks on the terminal, for --review (see workspace_import_opts)
 *
 * The workspace stays when the import was refused or declined, when uncommitted work was left
 * behind, or with --keep. Logs. Return: 0 (also when declined at the review), or -errno when
 * something was not imported.
 */
int workspace_finish(const struct aisb_plan *p, const struct aisb_session *ss, workspace_exporter ex, env_getter get,
		     int (*confirm)(void));

/* `aisb ps`: one line per workspace (id, state, base, pending commits, target, project), after
 * a header; nothing when there are none. @live tells whether a session is live. Does not log. */
void workspace_print_table(const char *state, bool (*live)(const char *state, const char *id), FILE *f);

/* `aisb inspect`: the workspace of @id (human lines, or a JSON object added to @json_out when
 * non-NULL). Return: 0, -ENOENT. Does not log. */
struct json_object;
int workspace_describe(const char *state, const char *id, FILE *f, struct json_object **json_out);

/**
 * workspace_clean() - remove the workspaces of ended sessions whose commits were imported
 * @state: the state dir
 * @discard: also those with commits or uncommitted work that were not imported
 * @live: tells whether a session is live (its workspace is always kept)
 *
 * Prints one line per workspace removed or kept. Return: the number kept because of pending work.
 */
int workspace_clean(const char *state, bool discard, bool (*live)(const char *state, const char *id));

/* The session ids that have a workspace, sorted (NULL when none). Does not log. */
char **workspace_ids(const char *state);

void workspace_plan_free(struct workspace_plan *w);

/* The --dry-run line. */
void workspace_plan_print(const struct workspace_plan *w, FILE *f);

#endif
