/* SPDX-License-Identifier: GPL-2.0-or-later */
/* session.h — the session directory: what a run leaves for ps/inspect/logs/clean.
 *
 * A session dir, sessions/<id>/, is in the run dir (below) when nothing in it has to outlast the
 * machine's uptime (not --keep, no kept image upper) and the run dir is usable; else, or when the
 * run dir fills up while it is made, in the state dir ($XDG_STATE_HOME/aisb, default
 * ~/.local/state/aisb). Why: each file made and removed on the disk per start cost wall time
 * (ext4's inode bitmap search, a "discard" mount's wait at unlink; docs/measurements.md). It holds:
 *   plan.json     the plan without secret values (plan_to_json)
 *   supervisor    "PID STARTTIME\n": the supervisor's pid and its start time (field 22 of
 *                 /proc/PID/stat), so a reused pid is not mistaken for a live session
 *   init          "PID\n": host pid of the sandbox's init
 *   cgroup        the session's cgroup leaf (limits)
 *   egress.jsonl  egress log (network modes with a gate)
 *   etc/          generated passwd, group, hosts, resolv.conf, when the session dir is in the
 *                 run dir, or when the run dir cannot be used at all; with --key-via-gate for an
 *                 https:// endpoint also session-ca.pem (the tlsgate's CA certificate, public:
 *                 its key never leaves the tlsgate's memory) and ca-bundle.pem (the host's roots
 *                 and that CA), both bound read-only into the sandbox (core/plan.h, PLAN_TLS_CA)
 * Under the run dir (session_run_dir(): $XDG_RUNTIME_DIR/aisb, else /dev/shm/aisb-UID; a tmpfs
 * of the caller's own, checked by session_run_dir_open() before every use, by readers too):
 *   sessions/<id>/              a session dir, as above
 *   <id>/                       a session dir on the disk keeps its generated passwd, group, hosts,
 *                               resolv.conf here; removed at exit (also for --keep), by
 *                               `aisb clean` after a killed supervisor
 * Under the state dir:
 *   sessions/<id>/              a session dir, as above
 *   sessions.log                one JSON line per finished run: id, start, end, command, project,
 *                               net, exit, git_quarantined when gitguard found anything (never an
 *                               env value)
 *   egress/<id>.jsonl           the egress log of an ended session (moved or copied there at exit,
 *                               when the session dir is removed); the newest SESSION_EGRESS_KEEP stay,
 *                               as far as they fit SESSION_EGRESS_KEEP_BYTES in all
 * The session dir is removed at exit unless --keep; a supervisor killed with SIGKILL leaves it for
 * `aisb clean`.
 */
#ifndef AISB_RUN_SESSION_H
#define AISB_RUN_SESSION_H

#include <stdbool.h>
#include <sys/types.h>

#include "core/plan.h"
#include "core/session.h"

#define SESSION_EGRESS_KEEP 20
/* The kept egress logs' bound in all: each is bounded by the gate (GATE_LOG_MAX, 64 MiB by
 * default), and 20 of them full would be 1.25 GiB of a flood's denials on the disk. The newest
 * log stays whatever its size; older ones go once the newer ones fill this. */
#define SESSION_EGRESS_KEEP_BYTES ((long long)256 << 20)

/* The run dir for @get's environment: $XDG_RUNTIME_DIR/aisb when XDG_RUNTIME_DIR is absolute,
 * else /dev/shm/aisb-UID. Only a path: session_create() checks it before use. NULL on ENOMEM.
 * Does not log. */
char *session_run_dir(env_getter get);

/* Opens the run dir @run_dir (O_RDONLY|O_DIRECTORY), made 0700 first when @create: only when
 * its parent is a real directory on tmpfs that nobody else can rename entries of (sticky, or
 * writable by the caller or root only) and the run dir itself is the caller's own, 0700, not a
 * symlink. Return: the fd, or -errno (-EPERM: not safe to use). Does not log. */
int session_run_dir_open(const char *run_dir, bool create);

/* Whether the session dir goes to the run dir (when that is usable): nothing in it has to
 * outlast the machine's uptime (not --keep, no kept image upper). A kept session stays on the
 * disk, where it survives a reboot for inspect and logs. Does not log. */
bool session_fits_run_dir(const struct aisb_plan *p);

/* Creates the session dir (0700; in the run dir or the state dir, see above) with plan.json,
 * supervisor and the generated etc files, and the persistent home when @p has one; fills @ss
 * (zeroed by the caller): the session's id, dir and etc dir, and the canonical state dir and home
 * every later stage uses. @p is not written: what a run makes is the session's (core/session.h).
 * The caller frees @ss with session_done(), also on failure. Logs on failure. */
int session_create(const struct aisb_plan *p, struct aisb_session *ss);

/* Frees what @ss holds and zeroes it. Removes nothing on disk. Does not log. */
void session_done(struct aisb_session *ss);

/* Writes the session CA's certificate @ca_pem and the bundle (the host's roots in the file
 * @roots, then the CA) next to the generated /etc files (p->etc_dir, PLAN_TLS_CA_NAME and
 * PLAN_TLS_BUNDLE_NAME, 0644: public). Return: 0 or -errno. Logs on failure. */
int session_write_tls(const struct aisb_session *ss, const char *ca_pem, const char *roots);

/* Records the init pid. Does not log. */
int session_set_init_pid(const struct aisb_session *ss, pid_t pid);

/* Appends the sessions.log line (with the run's results: @exit_code, @git_quarantined files
 * gitguard moved) and removes the session dir unless p->keep. Logs on failure. */
int session_finish(const struct aisb_plan *p, const struct aisb_session *ss, int exit_code, long long start_usec,
		   size_t git_quarantined);

#endif
