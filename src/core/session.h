/* SPDX-License-Identifier: GPL-2.0-or-later */
/* session.h — what a run made: its session, the one result every stage after session_create()
 * reads beside the plan.
 *
 * The plan (core/plan.h) is a value: plan_resolve() (cli/resolve.h) makes it and nothing writes
 * it afterwards. What a run produces is not a decision and lives here: the session's id and
 * directories, made by session_create() (run/session.h), the canonical state dir and home it
 * made them under, and the --workspace clone workspace_prepare() made (workspace/workspace.h).
 * Modules below src/run read it (the mount planner, limits, scrub, the bridge, the workspace),
 * so it is a core type; it is freed by session_done() (run/session.h). The other results of a
 * run (exit code, quarantine counts) stay in run/sandbox.c's struct run.
 */
#ifndef AISB_CORE_SESSION_H
#define AISB_CORE_SESSION_H

struct aisb_session {
	char *id;            /* 12 hex digits, random */
	char *dir;           /* the session dir (run/session.h: in the run dir or the state dir) */
	char *etc_dir;       /* where the generated passwd, group, hosts, resolv.conf are */
	char *state_dir;     /* the plan's state dir, canonical once it exists: sources are opened
			      * without following a symlink, so every path after this is canonical */
	char *home_src;      /* the persistent home below it, created; NULL when ephemeral */
	char *workspace_dir; /* --workspace clone: <state>/workspaces/<id>, once prepared; else NULL */
	char *project_src;   /* --workspace clone: the clone the sandbox gets as its project
			      * (<workspace_dir>/repo); NULL: the plan's project */
};

#endif
