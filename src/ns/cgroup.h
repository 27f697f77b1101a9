/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cgroup.h — resource limits written directly to cgroup v2 (docs/design.md §7).
 *
 * The supervisor finds its own cgroup (/proc/self/cgroup "0::/path") and the cgroup2 mount
 * (/proc/self/mountinfo), checks that the subtree is delegated to it (writable, controllers
 * offered in cgroup.controllers, enable-able in cgroup.subtree_control), obeys the "no internal
 * processes" rule by moving itself into a leaf of its own first, creates one leaf per session,
 * writes memory.max, memory.swap.max, pids.max and cpu.max, moves the sandbox's init in before the
 * workload execs, reads memory.events to report an OOM kill, and at teardown empties the leaf with
 * cgroup.kill and removes it. Everything that reads the cgroupfs takes a root prefix so the unit
 * tests run against a fake tree in a temp dir ("" is the real system).
 *
 * Where no delegated subtree exists the caller decides (see cgroup_plan_limits): explicit limits
 * are refused (78), default limits degrade to RLIMIT_NPROC with one warning.
 */
#ifndef AISB_NS_CGROUP_H
#define AISB_NS_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/plan-limits.h"

/* Controllers aisb writes; a bit mask. */
enum cgroup_ctrl {
	CGROUP_MEMORY = 1u << 0,
	CGROUP_PIDS = 1u << 1,
	CGROUP_CPU = 1u << 2,
	CGROUP_CTRL_ALL = (1u << 3) - 1,
};

#define CGROUP_MEMORY_DEFAULT (4ULL << 30) /* 4 GiB */
#define CGROUP_PIDS_DEFAULT 4096ULL
#define CGROUP_MEMORY_MIN (8ULL << 20)       /* below this nothing starts */
#define CGROUP_PIDS_MIN 2ULL                 /* init and the workload */
#define CGROUP_CPUS_MAX 4096ULL

/* struct cgroup_limits (what to write) and enum limits_mode are the plan's vocabulary: they
 * live in core/plan-limits.h, below this module, so that core/plan.h need not include it. */

/* Where we are in the cgroup v2 hierarchy. All paths are host paths without the root prefix. */
struct cgroup_place {
	char *mount;      /* cgroup2 mount point, e.g. "/sys/fs/cgroup" */
	char *own;        /* own cgroup as in /proc/self/cgroup, e.g. "/user.slice/x.scope" */
	char *dir;        /* mount + own, the directory of the own cgroup */
};

/* The result of the delegation check of one cgroup directory. */
struct cgroup_check {
	bool writable;            /* dir, cgroup.procs and cgroup.subtree_control writable by us */
	unsigned available;       /* controllers in cgroup.controllers */
	unsigned enabled;         /* controllers already in cgroup.subtree_control */
	unsigned n_procs;         /* processes in cgroup.procs */
	bool only_self;           /* every process listed is @self */
	bool is_root;             /* the hierarchy's root (internal processes allowed) */
	char offered[128];        /* cgroup.controllers as read, for messages ("hugetlb") */
};

/* A live session leaf. */
struct cgroup {
	char *root;               /* test prefix, "" for the real system */
	char *parent;             /* the delegated cgroup (own cgroup at start) */
	char *sup;                /* supervisor leaf we moved ourselves into, or NULL */
	char *leaf;               /* the session leaf */
	unsigned enabled_by_us;   /* controllers we enabled in @parent's subtree_control */
	struct cgroup_limits limits;
};

/* Parses a size: bytes ("1048576"), or a number with a binary suffix K M G T (case-insensitive,
 * an optional trailing "B" or "iB"), fractions allowed ("1.5g"). "max" gives 0 (no limit).
 * Return: 0 or -EINVAL/-ERANGE. Does not log. */
int cgroup_parse_size(const char *s, uint64_t *out);

/* Parses a cpu count ("2", "1.5", "0.25") into a cpu.max quota per 100 ms period; "max" gives 0.
 * At most three decimals; 0.01 (1 ms quota, the kernel's minimum) .. CGROUP_CPUS_MAX.
 * Return: 0 or -EINVAL/-ERANGE. Does not log. */
int cgroup_parse_cpus(const char *s, uint64_t *quota_us);

/* Parses a process count; "max" gives 0. Return: 0 or -EINVAL/-ERANGE. Does not log. */
int cgroup_parse_pids(const char *s, uint64_t *out);

/* Formats @bytes for people: "512 MiB", "1.5 GiB", "4096 bytes". Does not log. */
void cgroup_format_size(uint64_t bytes, char *buf, size_t n);

/* Formats a cpu.max line ("150000 100000\n" or "max 100000\n"). Does not log. */
void cgroup_format_cpu_max(uint64_t quota_us, char *buf, size_t n);

/* Resolves the three settings (NULL: default) into @l, validating ranges.
 * Return: 0, or -EINVAL with a message naming the setting and the accepted form. Logs on failure. */
int cgroup_limits_parse(const char *memory, const char *pids, const char *cpus,
			struct cgroup_limits *l);

/* The controllers @l needs (cpu only when a quota is set). Does not log. */
unsigned cgroup_limits_wanted(const struct cgroup_limits *l);

/* Parses the text of /proc/PID/cgroup: the v2 line "0::/path". Return: 0, -ENOENT when there is
 * no v2 line, -EINVAL on malformed input. Does not log. */
int cgroup_parse_proc_cgroup(const char *text, char **own);

/* Finds the first cgroup2 mount in mountinfo @text; @mount and @mnt_root get its mount point and
 * root (octal escapes decoded). Return: 0 or -ENOENT. Does not log. */
int cgroup_parse_mountinfo(const char *text, char **mount, char **mnt_root);

/* Parses a cgroup.controllers / cgroup.subtree_control line into a mask of the controllers
 * aisb knows. Does not log. */
unsigned cgroup_parse_controllers(const char *text);

/* Names of the controllers in @mask, space separated ("memory pids"). Does not log. */
void cgroup_mask_to_string(unsigned mask, char *buf, size_t n);

/* Discovers the own cgroup under @root (read @root/proc/self/cgroup and mountinfo).
 * Return: 0, -ENOENT when there is no cgroup v2 or the own cgroup is outside the visible
 * hierarchy. Does not log. */
int cgroup_place_find(const char *root, struct cgroup_place *pl);
void cgroup_place_done(struct cgroup_place *pl);

/* Examines cgroup directory @dir (host path) under @root for delegation to us; @self is the pid
 * that may be listed in cgroup.procs. Return: 0 or -errno when unreadable. Does not log. */
int cgroup_check_dir(const char *root, const char *dir, pid_t self, struct cgroup_check *c);

/* Decides whether a session leaf can be made below a cgroup as @c describes, for @want.
 * Fills @why (a sentence naming what is missing) when not. Return: true when usable. Does not
 * log. */
bool cgroup_check_usable(const struct cgroup_check *c, unsigned want, char *why, size_t n);

/* Creates the session leaf "aisb-@id" below the own cgroup and writes @l into it: moves the
 * calling process (the supervisor) into a leaf "aisb-@id.sup" first when controllers must be
 * enabled, enables them, mkdirs the leaf, writes memory.max, memory.swap.max (0), pids.max and
 * cpu.max. @cg is filled for cgroup_attach/cgroup_destroy. Return: 0 or -errno; -EOPNOTSUPP with
 * @why filled when the subtree is not delegated. Logs on failure except -EOPNOTSUPP. */
int cgroup_create(const char *root, const char *id, const struct cgroup_limits *l,
		  struct cgroup *cg, char *why, size_t why_len);

/* Moves @pid into the session leaf (cgroup.procs). Call before the workload execs.
 * Return: 0 or -errno. Logs on failure. */
int cgroup_attach(const struct cgroup *cg, pid_t pid);

/* Opens the leaf directory (O_PATH|O_DIRECTORY|O_CLOEXEC), for clone3(CLONE_INTO_CGROUP).
 * Return: fd or -errno. Does not log. */
int cgroup_open_leaf(const struct cgroup *cg);

/* The oom_kill count from memory.events text. Return: count, 0 when the field is absent. */
uint64_t cgroup_parse_oom_kills(const char *events_text);

/* Reads the leaf's memory.events oom_kill count. Return: 0 or -errno. Does not log. */
int cgroup_read_oom_kills(const struct cgroup *cg, uint64_t *kills);

/* Counters of a session leaf, read before teardown. */
struct cgroup_stats {
	uint64_t oom_kill;          /* memory.events oom_kill */
	uint64_t pids_max_events;   /* pids.events max: forks refused at pids.max */
	uint64_t nr_throttled;      /* cpu.stat nr_throttled */
	uint64_t throttled_usec;    /* cpu.stat throttled_usec */
	uint64_t memory_peak;       /* memory.peak (Linux 5.19+), 0 when absent */
};

/* Reads the counters of the leaf; a missing file leaves its fields 0. Return: 0 or -EINVAL
 * without a leaf. Does not log. */
int cgroup_read_stats(const struct cgroup *cg, struct cgroup_stats *st);

/* Turns the sandbox's @exit_code into the one aisb exits with, given @oom_kills from the leaf
 * and the memory limit: an OOM kill that ended the command (SIGKILL, 137) is reported as
 * "killed: out of memory (limit 512 MiB)" and exit 137; an OOM kill of some other process gives
 * a note but keeps the code. @msg gets the line to print (empty when nothing to say).
 * Return: the exit code. Does not log. */
int cgroup_oom_report(int exit_code, uint64_t oom_kills, uint64_t memory_max, char *msg, size_t n);

/* Kills everything in the leaf (cgroup.kill; SIGKILL per pid on kernels without it), waits for
 * it to empty (bounded), removes it, and undoes the supervisor leaf when the calling process is
 * the one that made it. Idempotent; safe on a zeroed struct. Return: 0 or the first -errno.
 * Logs on failure. */
int cgroup_destroy(struct cgroup *cg);

/* Frees @cg's strings (does not touch the kernel). */
void cgroup_done(struct cgroup *cg);

/* Removes a leftover session leaf by path (for `aisb clean` after a SIGKILLed supervisor):
 * cgroup.kill, wait, rmdir. Return: 0 or -errno. Does not log. */
int cgroup_remove_leaf(const char *root, const char *leaf);

/* Applies the fallback for default limits when no cgroup can be had: RLIMIT_NPROC = pids_max,
 * or the caller's tighter soft/hard limit, each kept (util/rlimit.h) (counted per user namespace since Linux 5.14, so it bounds the sandbox's own processes). Call
 * in the sandbox after the user namespace exists. Return: 0 or -errno. Does not log. */
int cgroup_apply_rlimits(const struct cgroup_limits *l);

/* Probes, without changing anything, whether a session leaf could be made for @want under @root.
 * Return: true, or false with @why naming what is missing. Does not log. */
bool cgroup_probe(const char *root, unsigned want, char *why, size_t n);

/* The decision when no delegated subtree exists (@why says why): an explicit limit is refused
 * with the fix (Return: -EPERM, exit 78; logs the error); default limits degrade: @warn gets the
 * ONE warning line naming what is not enforced (Return: 0; the caller prints it and applies
 * cgroup_apply_rlimits inside). @host_root: the invoking user is uid 0, whom RLIMIT_NPROC does not
 * bind. Memory and cpu get no rlimit stand-in: RLIMIT_AS breaks runtimes that reserve address
 * space (V8, Go, the JVM) and RLIMIT_CPU bounds time, not a share. */
int cgroup_degrade(const struct cgroup_limits *l, const char *why, bool host_root, char *warn,
		   size_t n);

/* Builds the argv that re-runs aisb inside a delegated systemd scope:
 * systemd-run --user --scope --quiet --collect -p Delegate=yes -- @self_exe argv[1..].
 * Return: 0 or -ENOMEM. Does not log. */
int cgroup_systemd_argv(char *const *argv, const char *self_exe, char ***out);

#endif
