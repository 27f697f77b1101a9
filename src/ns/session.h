/* SPDX-License-Identifier: GPL-2.0-or-later */
/* session.h — the session directory: what a run leaves for ps/inspect/logs/clean.
 *
 * Layout under the state dir ($XDG_STATE_HOME/aisb, default ~/.local/state/aisb):
 *   sessions/<id>/plan.json     the plan without secret values (plan_to_json)
 *   sessions/<id>/supervisor    "PID STARTTIME\n": the supervisor's pid and its start time
 *                               (field 22 of /proc/PID/stat), so a reused pid is not mistaken
 *                               for a live session
 *   sessions/<id>/init          "PID\n": host pid of the sandbox's init
 *   sessions/<id>/egress.jsonl  egress log (network modes with a gate)
 *   sessions/<id>/etc/          generated passwd, group, hosts, resolv.conf, when the run dir
 *                               below cannot be used
 * Under the run dir (session_run_dir(): $XDG_RUNTIME_DIR/aisb, else /dev/shm/aisb-UID; a tmpfs
 * of the caller's own, checked before use):
 *   <id>/                       the generated passwd, group, hosts, resolv.conf, bound read-only
 *                               into the sandbox; removed at exit (also for --keep), by
 *                               `aisb clean` after a killed supervisor
 *   sessions.log                one JSON line per finished run: id, start, end, command, project,
 *                               net, exit, git_quarantined when gitguard found anything (never an
 *                               env value)
 *   egress/<id>.jsonl           the egress log of an ended session (moved there at exit, when
 *                               the session dir is removed); the newest SESSION_EGRESS_KEEP stay
 * The session dir is removed at exit unless --keep; a supervisor killed with SIGKILL leaves it for
 * `aisb clean`.
 */
#ifndef AISB_NS_SESSION_H
#define AISB_NS_SESSION_H

#include <stdbool.h>
#include <sys/types.h>

#include "core/plan.h"

#define SESSION_EGRESS_KEEP 20

/* The run dir for @get's environment: $XDG_RUNTIME_DIR/aisb when XDG_RUNTIME_DIR is absolute,
 * else /dev/shm/aisb-UID. Only a path: session_create() checks it before use. NULL on ENOMEM.
 * Does not log. */
char *session_run_dir(env_getter get);

/* Creates sessions/<id>/ (0700) with plan.json and supervisor, and the generated etc files
 * (in the run dir when it is safe, else sessions/<id>/etc); fills p->session_id,
 * p->session_dir and p->etc_dir. Logs on failure. */
int session_create(struct aisb_plan *p);

/* Records the init pid. Does not log. */
int session_set_init_pid(const struct aisb_plan *p, pid_t pid);

/* Appends the sessions.log line and removes the session dir unless p->keep. Logs on failure. */
int session_finish(const struct aisb_plan *p, int exit_code, long long start_usec);

/* Reads "PID STARTTIME" of a session's supervisor and tells whether it is still that process.
 * Does not log. */
bool session_is_live(const char *session_dir);

#endif
