/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plan-limits.h — the resource limits as the plan holds them (docs/design.md §7).
 *
 * The values the resolver puts into the plan and how they are enforced; ns/cgroup.h writes them
 * to cgroup v2 and ns/limits.h decides the mode. They live in the core, below both, because the
 * plan owns them (tests/lint/layers.sh: core includes only util).
 */
#ifndef AISB_CORE_PLAN_LIMITS_H
#define AISB_CORE_PLAN_LIMITS_H

#include <stdbool.h>
#include <stdint.h>

/* cpu.max's period; a plan's cpu_quota_us is per this many microseconds */
#define CGROUP_CPU_PERIOD_US 100000ULL

/* What to write. A 0 value means "max" (no limit). The *_explicit flags say the user asked
 * (flag, config or environment) rather than taking the default. */
struct cgroup_limits {
	uint64_t memory_max;     /* bytes */
	uint64_t pids_max;
	uint64_t cpu_quota_us;   /* per CGROUP_CPU_PERIOD_US */
	bool memory_explicit, pids_explicit, cpus_explicit;
};

/* How a plan's limits are enforced. */
enum limits_mode {
	LIMITS_NONE,       /* nothing to enforce (every limit "max") */
	LIMITS_CGROUP,     /* a session leaf in a delegated cgroup v2 subtree */
	LIMITS_SCOPE,      /* re-run inside a delegated systemd scope first */
	LIMITS_DEGRADED,   /* defaults only, not enforced by cgroups (RLIMIT_NPROC at most) */
	LIMITS_MODE_MAX,
};

#endif
