/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sandbox.h — the supervisor: clone the sandbox, run it, tear it down.
 *
 * sandbox_run() executes a resolved plan (docs/design.md §3): it creates the session dir, clones
 * init into new user/mount/pid/net/ipc/uts/cgroup namespaces, writes the single-id maps, relays the
 * pty, forwards signals, waits, and removes everything it created.
 */
#ifndef AISB_RUN_SANDBOX_H
#define AISB_RUN_SANDBOX_H

#include "core/plan.h"
#include "core/session.h"

/* The most environment variables a command gets (the plan's env after defaults, --env,
 * --env-file, the image's and the proxy variables): more is refused (78), never cut short. */
#define SANDBOX_ENV_MAX 255

/* Runs @p, which it does not write (the plan is a value: core/plan.h). @ss (zeroed by the
 * caller) receives what the run made: its session (id, dirs, canonical state dir and home, a
 * --workspace clone), which the caller reads afterwards (workspace_finish()) and frees with
 * session_done() (run/session.h), also on failure. Return: the process exit code (the
 * command's, 128+N, or 77/78/125/126/127; 78 also for more than SANDBOX_ENV_MAX environment
 * variables). Logs on failure. */
int sandbox_run(const struct aisb_plan *p, struct aisb_session *ss);

/* Maps a wait status to aisb's exit code: the code itself, or 128+N for signal N. Pure. */
int sandbox_exit_code(int wait_status);

#endif
