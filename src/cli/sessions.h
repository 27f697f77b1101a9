/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sessions.h — reading the state dir for ps, inspect, logs and clean.
 *
 * Reads what src/run/session.h documents: sessions/<id>/{plan.json,supervisor,init,cgroup,
 * egress.jsonl} of the state dir and of the run dirs (this environment's, /run/user/UID/aisb,
 * /dev/shm/aisb-UID; each only when session_run_dir_open() finds it safe), and sessions.log. A session is live when its supervisor pid still names the same
 * process (start time compared, so a reused pid is not mistaken for it). Signals go through a
 * pidfd opened after that check, so the check and the kill name the same process. Nothing here
 * prints a value of the environment: plan.json holds names only.
 */
#ifndef AISB_CLI_SESSIONS_H
#define AISB_CLI_SESSIONS_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "cli/args.h"

struct session_info {
	char *id;
	char *dir;               /* <state dir or run dir>/sessions/<id> */
	bool live;
	pid_t supervisor;        /* 0 when unknown */
	unsigned long long supervisor_start;
	pid_t init;              /* host pid of the sandbox's init, 0 when unknown */
	long long started;       /* unix time the session was created (plan.json mtime) */
	json_object *plan;       /* plan.json, or NULL when unreadable */
	char *cgroup;            /* recorded cgroup leaf, or NULL */
};

/* The state dir: $XDG_STATE_HOME/aisb, else $HOME/.local/state/aisb. Caller frees; NULL when
 * there is no home. Does not log. */
char *sessions_state_dir(env_getter get);

/* The state dir for a command that needs it: frees *@state and stores the dir, checked to be
 * usable by the rule every command shares (homedir_aisb_usable()). Return: 0, or -errno.
 * Logs on failure (naming the variable to set). Commands exit 78 on that failure, as for the
 * image store's dir: the environment (HOME, XDG_STATE_HOME, a read-only root) is configuration
 * the user fixes, not aisb failing (docs/troubleshooting.md, Exit codes). */
int sessions_state_dir_checked(env_getter get, char **state);

/* Is @id shaped like a session id (lower-case hex, 1..64 chars)? Does not log. */
bool sessions_id_valid(const char *id);

/* Loads session @id from the state dir, else the run dir. Return: 0, -ENOENT when there is no
 * such session dir, -EINVAL for a bad id. Does not log. */
int sessions_load(const char *state_dir, const char *id, struct session_info *si);
void sessions_info_done(struct session_info *si);

/* All session dirs of the state dir and the run dir, oldest first. Return: 0 or -errno. Does
 * not log. */
int sessions_list(const char *state_dir, struct session_info **out, size_t *n);
void sessions_list_free(struct session_info *v, size_t n);

/* Formats an age in seconds as "42s", "5m", "3h", "2d". Does not log. */
void sessions_format_age(long long secs, char *buf, size_t n);

/* How long sessions_stop() waits for a supervisor to check what its sandbox wrote for git after
 * the sandbox was killed (a walk of a large tree takes seconds). */
#define SESSIONS_CHECK_WAIT_MS 120000

/* Stops a live session: SIGTERM to the supervisor (it forwards to the sandbox); after
 * @grace_ms, SIGKILL to the sandbox's init, so that the supervisor still runs its git check
 * (waited for up to SESSIONS_CHECK_WAIT_MS); only a supervisor that does not end then is
 * SIGKILLed, and its check stays pending (sessions_pending_checks()). Return: 0, -ESRCH when
 * it was not live. Does not log. */
int sessions_stop(const struct session_info *si, int grace_ms);

/* Removes an ended session: a leftover cgroup leaf (SIGKILLed supervisor whose watchdog died
 * too), then the dir. Refuses a live one (-EBUSY). Return: 0 or -errno. Does not log. */
int sessions_remove(const struct session_info *si);

/* Runs the git checks that killed supervisors left pending (git/gitguard.h), as the first step
 * of every aisb command (issue 21): each says so on stderr, with what it found. @preview: only
 * say that one is pending. Return: the number run, or -errno. Logs. */
int sessions_pending_checks(bool preview);

/* Prints the sessions.log lines of @id to @f. Return: the number of lines. Does not log. */
int sessions_print_log_lines(const char *state_dir, const char *id, FILE *f);

/* `aisb inspect` for sessions: prints session @id (human or --json). Return: 0, or -ENOENT when
 * there is no such session (the caller may then try images). Logs other failures. */
int session_inspect(const char *id, bool json);

#endif
