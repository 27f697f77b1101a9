/* SPDX-License-Identifier: GPL-2.0-or-later */
/* limits.h — the resource-limit policy of a run: plan time, supervisor and sandbox hooks.
 *
 * Plan time (limits_resolve): parse --memory/--pids/--cpus (defaults 4 GiB, 4096, all cpus),
 * probe for a delegated cgroup v2 subtree and decide: enforce with cgroups, re-run inside a
 * delegated systemd scope, refuse an explicit limit (78), or degrade default limits to
 * RLIMIT_NPROC with exactly one warning.
 *
 * Supervisor (limits_setup/limits_attach/limits_finish): create the session leaf before clone,
 * move init in before it may fork the workload, report an OOM kill (137) and pids.max refusals,
 * remove the leaf. A watchdog process, forked right after the leaf exists, removes the leaf when
 * the supervisor dies without saying goodbye (SIGKILL), so no cgroup outlives a run.
 */
#ifndef AISB_NS_LIMITS_H
#define AISB_NS_LIMITS_H

#include <stdbool.h>
#include <sys/types.h>

#include "core/plan.h"
#include "ns/cgroup.h"

/* Decides how @p->limits are enforced (see above). @cgroup_root is "" on the real system.
 * Return: 0 or an exit code (78). Logs the one warning or the refusal. */
int limits_resolve(struct aisb_plan *p, const char *memory, const char *pids, const char *cpus,
		   env_getter get, const char *cgroup_root);

/* Whether the kernel bounds a pid namespace by a pid_max of its own (Linux 6.14+), the process
 * bound of a sandbox at kernel uid 0 without cgroups. Does not log. */
bool limits_pidns_supported(void);

/* The pid namespace's pid_max for @pids_max processes (init included), within the kernel's
 * 301..4194304. Pure. */
uint64_t limits_pidns_pid_max(uint64_t pids_max);

/* Writes /proc/sys/kernel/pid_max (limits_pidns_pid_max(@pids_max)) of this process's pid
 * namespace, whose /proc is mounted at /proc and not yet covered. Return: 0, -ENXIO when /proc
 * is another pid namespace's (--container-proc), or -errno. Does not log. */
int limits_write_pid_max(uint64_t pids_max);

/* In init, in the new pid namespace with its /proc mounted and not yet covered: with
 * p->limits_pidns, writes /proc/sys/kernel/pid_max. Return: 0 or -errno. Does not log. */
int limits_apply_pidns(const struct aisb_plan *p);

/* Is this a systemd host where `systemd-run --user --scope` can give us a delegated scope?
 * @root as above. Does not log. */
bool limits_systemd_usable(env_getter get, const char *root);

/* Re-executes aisb inside `systemd-run --user --scope -p Delegate=yes` with @argv (argv[0] is
 * skipped). Sets AISB_IN_SCOPE=1 so the child never loops. Return: only on failure, -errno.
 * Logs on failure. */
int limits_reexec_in_scope(char *const *argv);

/* The live cgroup state of one run, owned by the supervisor. */
struct limits_run {
	struct cgroup cg;
	pid_t watchdog;      /* -1 when none */
	int watchdog_fd;     /* write end: one byte "done", or EOF when we die */
};

/* Supervisor, after the session dir exists and before clone: creates the session leaf (when the
 * plan enforces with cgroups), records its path in the session dir of @ss ("cgroup") and starts
 * the watchdog. Return: 0 or an exit code. Logs on failure. */
int limits_setup(const struct aisb_plan *p, const struct aisb_session *ss, struct limits_run *lr);

/* Supervisor, after clone and before init may fork the workload: moves @pid into the leaf.
 * Return: 0 or -errno. Logs on failure. */
int limits_attach(struct limits_run *lr, pid_t pid);

/* Supervisor, after init was reaped: reads the leaf's counters, reports an OOM kill ("killed:
 * out of memory (limit 512 MiB)", exit 137) and forks refused at pids.max, stops the watchdog,
 * removes the leaf. Return: the exit code to use. Logs. */
int limits_finish(const struct aisb_plan *p, const struct aisb_session *ss, struct limits_run *lr, int code);

/* In the sandbox's init, before it forks the workload: applies the degraded rlimits when the
 * plan says so. Return: 0 or -errno. Does not log. */
int limits_apply_inside(const struct aisb_plan *p);

/* Renders the limits line of --dry-run ("memory 512 MiB, pids 4096, cpus all (cgroup v2)").
 * Does not log. */
void limits_describe(const struct aisb_plan *p, char *buf, size_t n);

#endif
