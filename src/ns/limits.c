// SPDX-License-Identifier: GPL-2.0-or-later
/* limits.c — resource-limit policy: decide at plan time, enforce in the supervisor, watchdog */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ns/limits.h"
#include "util/log.h"
#include "util/rlimit.h"
#include "util/util.h"

bool limits_systemd_usable(env_getter get, const char *root)
{
	_cleanup_free_ char *sd = NULL, *bus = NULL;
	const char *path = get("PATH"), *rt = get("XDG_RUNTIME_DIR"), *dbus = get("DBUS_SESSION_BUS_ADDRESS");
	struct stat st;
	bool found = false;

	/* Already re-run once: the scope did not give us a delegated subtree; never loop. */
	if (get("AISB_IN_SCOPE"))
		return false;
	if (asprintf(&sd, "%s/run/systemd/system", root ? root : "") < 0)
		return false;
	if (stat(sd, &st) < 0 || !S_ISDIR(st.st_mode))
		return false; /* not booted with systemd */
	if (!(dbus && *dbus)) {
		if (!rt || !path_is_absolute(rt) || !(bus = path_join(rt, "bus")) || stat(bus, &st) < 0)
			return false; /* no user manager to ask for a scope */
	}
	for (const char *p = path ? path : "/usr/bin:/bin"; p && *p && !found;) {
		size_t len = strcspn(p, ":");
		_cleanup_free_ char *c = NULL;
		if (len && asprintf(&c, "%.*s/systemd-run", (int)len, p) >= 0)
			found = access(c, X_OK) == 0;
		p += len;
		if (*p == ':')
			p++;
	}
	return found;
}

bool limits_pidns_supported(void)
{
	struct utsname u;
	unsigned a = 0, b = 0;

	/* pid_max became a per-pid-namespace value, writable by the namespace's owner, in Linux
	 * 6.14 (before, /proc/sys/kernel/pid_max was global: EPERM from a user namespace); measured
	 * on 6.18: a pid namespace with pid_max 400 refused fork at 357 children, and a nested
	 * one below it was held by the same bound (docs/measurements.md) */
	if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &a, &b) != 2)
		return false;
	return a > 6 || (a == 6 && b >= 14);
}

uint64_t limits_pidns_pid_max(uint64_t pids_max)
{
	/* pids below pid_max: at most pid_max - 1 tasks (init is one), so pids_max + 1; the kernel's
	 * floor is 301 (RESERVED_PIDS + 1) and its ceiling PID_MAX_LIMIT (4194304) */
	uint64_t v = pids_max + 1;

	return v < 301 ? 301 : v > 4194304 ? 4194304 : v;
}

int limits_resolve(struct aisb_plan *p, const char *memory, const char *pids, const char *cpus,
		   env_getter get, const char *cgroup_root)
{
	struct cgroup_limits shown;
	char warn[768];
	unsigned want;

	p->limits_mode = LIMITS_NONE;
	p->limits_rlimit = false;
	p->limits_pidns = false;
	p->limits_nproc = 0;
	p->limits_why[0] = 0;
	if (cgroup_limits_parse(memory, pids, cpus, &p->limits) < 0)
		return AISB_EXIT_POLICY;
	want = cgroup_limits_wanted(&p->limits);
	if (!want)
		return 0;
	if (cgroup_probe(cgroup_root, want, p->limits_why, sizeof(p->limits_why))) {
		p->limits_why[0] = 0;
		p->limits_mode = LIMITS_CGROUP;
		return 0;
	}
	if (limits_systemd_usable(get, cgroup_root)) {
		p->limits_mode = LIMITS_SCOPE;
		return 0;
	}
	/* init inherits this process's limits and keeps a tighter one: the warning and the preview
	 * name the process limit the sandbox gets */
	if (p->limits.pids_max && p->run_uid != 0)
		p->limits_nproc = rlimit_effective(RLIMIT_NPROC, (rlim_t)p->limits.pids_max);
	/* kernel uid 0 is exempt from RLIMIT_NPROC (a root caller whose sources cannot be idmapped,
	 * or an image run): the pid namespace's pid_max is its bound where the kernel has one */
	p->limits_pidns = p->limits.pids_max && p->run_uid == 0 && limits_pidns_supported();
	shown = p->limits;
	if (p->limits_nproc)
		shown.pids_max = p->limits_nproc;
	if (cgroup_degrade(&shown, p->limits_why, p->run_uid == 0 && !p->limits_pidns, warn, sizeof(warn)) < 0)
		return AISB_EXIT_POLICY;
	if (p->limits_pidns && *warn) {
		char mem[32];
		cgroup_format_size(p->limits.memory_max, mem, sizeof(mem));
		snprintf(warn, sizeof(warn), "resource limits are not enforced: %s; the memory limit (%s) and cpu "
			 "accounting are off, processes are capped by the pid namespace's pid_max (%" PRIu64
			 " processes) only (run 'aisb doctor' for the fix)", p->limits_why,
			 p->limits.memory_max ? mem : "max", p->limits.pids_max);
	}
	/* Explicit limits never get here (they fail with 78); for the defaults, the user may have
	 * acknowledged once in config that this host cannot enforce them. */
	if (*warn && !p->limits_quiet)
		log_warn("%s", warn);
	else if (*warn)
		log_debug("%s", warn);
	p->limits_mode = LIMITS_DEGRADED;
	p->limits_rlimit = p->limits.pids_max && p->run_uid != 0;
	return 0;
}

int limits_reexec_in_scope(char *const *argv)
{
	_cleanup_strv_free_ char **v = NULL;
	char self[PATH_MAX];
	ssize_t k;
	int r;

	k = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (k < 0)
		return log_error_errno(-errno, "cannot find the aisb binary to re-run in a systemd scope: %m");
	self[k] = 0;
	r = cgroup_systemd_argv(argv, self, &v);
	if (r < 0)
		return log_error_errno(r, "cannot build the systemd-run command: %m");
	if (setenv("AISB_IN_SCOPE", "1", 1) < 0)
		return log_error_errno(-errno, "cannot set AISB_IN_SCOPE: %m");
	log_debug("no delegated cgroup: re-running inside 'systemd-run --user --scope -p Delegate=yes'");
	fflush(NULL);
	execvp(v[0], v);
	return log_error_errno(-errno, "cannot run systemd-run for a delegated cgroup scope: %m");
}

void limits_describe(const struct aisb_plan *p, char *buf, size_t n)
{
	char mem[32], cpus[32];
	const struct cgroup_limits *l = &p->limits;

	if (l->memory_max)
		cgroup_format_size(l->memory_max, mem, sizeof(mem));
	else
		snprintf(mem, sizeof(mem), "max");
	if (l->cpu_quota_us)
		snprintf(cpus, sizeof(cpus), "%g", (double)l->cpu_quota_us / (double)CGROUP_CPU_PERIOD_US);
	else
		snprintf(cpus, sizeof(cpus), "all");
	switch (p->limits_mode) {
	case LIMITS_CGROUP:
		snprintf(buf, n, "memory %s (no swap), pids %" PRIu64 ", cpus %s: enforced by a cgroup v2 leaf",
			 mem, l->pids_max, cpus);
		break;
	case LIMITS_SCOPE:
		snprintf(buf, n, "memory %s (no swap), pids %" PRIu64 ", cpus %s: enforced by a cgroup v2 leaf "
			 "in a delegated systemd scope (aisb re-runs itself in 'systemd-run --user --scope')",
			 mem, l->pids_max, cpus);
		break;
	case LIMITS_DEGRADED:
		if (p->limits_rlimit && p->limits_nproc && p->limits_nproc < l->pids_max)
			snprintf(buf, n, "NOT enforced by cgroups (%s); processes capped by RLIMIT_NPROC=%" PRIu64
				 " (the caller's tighter limit, kept; aisb's would be %" PRIu64 "), memory %s and cpus "
				 "%s not enforced", p->limits_why, p->limits_nproc, l->pids_max, mem, cpus);
		else if (p->limits_pidns)
			snprintf(buf, n, "NOT enforced by cgroups (%s); processes capped by the pid namespace's "
				 "pid_max (%" PRIu64 "), memory %s and cpus %s not enforced", p->limits_why,
				 l->pids_max, mem, cpus);
		else if (p->limits_rlimit)
			snprintf(buf, n, "NOT enforced by cgroups (%s); processes capped by RLIMIT_NPROC=%" PRIu64
				 ", memory %s and cpus %s not enforced", p->limits_why, l->pids_max, mem, cpus);
		else
			snprintf(buf, n, "NOT enforced (%s): memory %s, pids %" PRIu64 ", cpus %s", p->limits_why,
				 mem, l->pids_max, cpus);
		break;
	default:
		snprintf(buf, n, "none (memory, pids and cpus all 'max')");
		break;
	}
}

/* ---- the supervisor side ------------------------------------------------------------------ */

/* The watchdog. Should: wait for the supervisor's goodbye byte; on EOF without it (the
 * supervisor was SIGKILLed) kill and remove the session leaf and undo the supervisor leaf.
 * Mustn't: hold the terminal, the caller's pipes or any fd of the run; die with Ctrl-C. */
_Noreturn static void watchdog_main(int rfd, struct cgroup *cg)
{
	static const int ignored[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU };
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	ssize_t k;
	char c;

	(void)setsid(); /* out of the terminal's process group: Ctrl-C is the supervisor's */
	for (size_t i = 0; i < ELEMENTSOF(ignored); i++)
		signal(ignored[i], SIG_IGN);
	(void)prctl(PR_SET_NAME, "aisb-watchdog");
	if (null >= 0)
		for (int fd = 0; fd < 3; fd++)
			(void)dup2(null, fd);
	if (rfd != 3 && dup2(rfd, 3) < 0)
		_exit(1);
	(void)close_range(4, ~0U, 0);
	do
		k = read(3, &c, 1);
	while (k < 0 && errno == EINTR);
	if (k == 1)
		_exit(0); /* the supervisor tears down itself */
	(void)cgroup_destroy(cg);
	_exit(0);
}

static int record_leaf(const struct aisb_session *ss, const struct cgroup *cg)
{
	_cleanup_close_ int dfd = -1;
	_cleanup_free_ char *line = NULL;
	const char *leaf = cg->leaf + strlen(cg->root);

	if (!ss->dir)
		return 0;
	dfd = open(ss->dir, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return -errno;
	if (asprintf(&line, "%s\n", leaf) < 0)
		return -ENOMEM;
	return write_file_at(dfd, "cgroup", line, strlen(line), 0600);
}

int limits_setup(const struct aisb_plan *p, const struct aisb_session *ss, struct limits_run *lr)
{
	char why[512];
	int fds[2], r;
	pid_t pid;

	memset(lr, 0, sizeof(*lr));
	lr->watchdog = -1;
	lr->watchdog_fd = -1;
	if (p->limits_mode != LIMITS_CGROUP)
		return 0;
	r = cgroup_create("", ss->id ? ss->id : "run", &p->limits, &lr->cg, why, sizeof(why));
	if (r == -EOPNOTSUPP) {
		/* The probe at plan time said yes; something changed since. */
		log_error("cannot enforce the resource limits: %s (run 'aisb doctor')", why);
		return AISB_EXIT_POLICY;
	}
	if (r < 0)
		return AISB_EXIT_FAILED;
	(void)record_leaf(ss, &lr->cg);

	if (pipe2(fds, O_CLOEXEC) < 0) {
		r = -errno;
		goto fail;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		r = -errno;
		close(fds[0]);
		close(fds[1]);
		goto fail;
	}
	if (pid == 0) {
		close(fds[1]);
		watchdog_main(fds[0], &lr->cg);
	}
	close(fds[0]);
	lr->watchdog = pid;
	lr->watchdog_fd = fds[1];
	return 0;
fail:
	log_error_errno(r, "cannot start the cgroup watchdog: %m");
	cgroup_destroy(&lr->cg);
	cgroup_done(&lr->cg);
	return AISB_EXIT_FAILED;
}

int limits_attach(struct limits_run *lr, pid_t pid)
{
	if (!lr->cg.leaf)
		return 0;
	return cgroup_attach(&lr->cg, pid);
}

static void watchdog_stop(struct limits_run *lr)
{
	if (lr->watchdog_fd >= 0) {
		(void)write_full(lr->watchdog_fd, "d", 1);
		close(lr->watchdog_fd);
		lr->watchdog_fd = -1;
	}
	if (lr->watchdog > 0) {
		while (waitpid(lr->watchdog, NULL, 0) < 0 && errno == EINTR)
			;
		lr->watchdog = -1;
	}
}

int limits_finish(const struct aisb_plan *p, const struct aisb_session *ss, struct limits_run *lr, int code)
{
	struct cgroup_stats st;
	char msg[256];

	if (!lr->cg.leaf) {
		watchdog_stop(lr);
		return code;
	}
	(void)cgroup_read_stats(&lr->cg, &st);
	log_debug("cgroup %s: oom_kill=%" PRIu64 " pids_max_events=%" PRIu64 " nr_throttled=%" PRIu64
		  " throttled_usec=%" PRIu64 " memory_peak=%" PRIu64, lr->cg.leaf, st.oom_kill,
		  st.pids_max_events, st.nr_throttled, st.throttled_usec, st.memory_peak);
	code = cgroup_oom_report(code, st.oom_kill, p->limits.memory_max, msg, sizeof(msg));
	if (*msg)
		log_error("%s", msg);
	if (st.pids_max_events)
		log_warn("%" PRIu64 " process creation%s refused at the process limit (pids %" PRIu64 ")",
			 st.pids_max_events, st.pids_max_events == 1 ? " was" : "s were", p->limits.pids_max);
	/* The watchdog sits in the supervisor leaf: it must be gone before we can remove that. */
	watchdog_stop(lr);
	(void)cgroup_destroy(&lr->cg);
	cgroup_done(&lr->cg);
	if (ss->dir) {
		_cleanup_free_ char *f = path_join(ss->dir, "cgroup");
		if (f)
			(void)unlink(f);
	}
	return code;
}

int limits_write_pid_max(uint64_t pids_max)
{
	char buf[24];
	int fd, n, r = 0;

	char self[24], link[24];
	ssize_t k;

	/* only the /proc of this process's own pid namespace: --container-proc binds the
	 * container's, whose pid_max is not the sandbox's to set */
	snprintf(self, sizeof(self), "%d", (int)getpid());
	k = readlink("/proc/self", link, sizeof(link) - 1);
	if (k < 0)
		return -errno;
	link[k] = 0;
	if (strcmp(link, self) != 0)
		return -ENXIO;
	n = snprintf(buf, sizeof(buf), "%" PRIu64 "\n", limits_pidns_pid_max(pids_max));
	fd = open("/proc/sys/kernel/pid_max", O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, (size_t)n) != n)
		r = -errno ?: -EIO;
	close(fd);
	return r;
}

int limits_apply_pidns(const struct aisb_plan *p)
{
	return p->limits_pidns ? limits_write_pid_max(p->limits.pids_max) : 0;
}

int limits_apply_inside(const struct aisb_plan *p)
{
	if (!p->limits_rlimit)
		return 0;
	return cgroup_apply_rlimits(&p->limits);
}
