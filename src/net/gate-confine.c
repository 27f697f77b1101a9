// SPDX-License-Identifier: GPL-2.0-or-later
/* gate-confine.c — the gate process's self-confinement and its resolver helper's privilege drop */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "net/gate-confine.h"
#include "ns/caps.h"
#include "ns/userns.h"
#include "util/log.h"
#include "util/rlimit.h"
#include "util/macro.h"

/* Stage: ids. Should: for a root caller, leave kernel uid 0 for USERNS_ROOT_RUN_ID (uid, gid, no
 * supplementary group) before anything else (a change of ids clears the parent-death signal, so
 * this comes first): uid 0 reads root's files through their owner bits (the resolver keeps the
 * host's filesystem: /etc/shadow) and RLIMIT_NPROC does not bind it (issue 22). CAP_SYS_ADMIN
 * alone is kept across the change, for the unshare of its own user namespace that follows (an
 * LSM that restricts unprivileged user namespaces, as Ubuntu's AppArmor does, exempts it); that
 * namespace then takes it from the host, and caps_drop_all() from the namespace. Mustn't: fail a
 * root caller that holds no CAP_SETUID/CAP_SETGID (a container that dropped them): it stays uid 0
 * then, confined as before, and says so with -v; nor one without CAP_SYS_ADMIN (a container's
 * default set: caught by tests/containers): it unshares unprivileged then. */
static int confine_ids(const char *name)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { 0 };
	const uid_t id = USERNS_ROOT_RUN_ID;

	uint32_t keep;

	if (getuid() != 0)
		return 0;
	/* CAP_SYS_ADMIN only where this process holds it: a container's root often does not (its
	 * engine's default set), and an unprivileged unshare works there */
	hdr.pid = 0;
	if (syscall(SYS_capget, &hdr, data) < 0)
		return log_error_errno(-errno, "%s: cannot read its capabilities: %m", name);
	keep = data[0].permitted & (1u << CAP_SYS_ADMIN);
	memset(data, 0, sizeof(data));
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0 || setgroups(0, NULL) < 0 || setresgid(id, id, id) < 0 ||
	    setresuid(id, id, id) < 0) {
		int e = errno;

		(void)prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
		if (e == EPERM && getuid() == 0) {
			log_debug("%s: stays uid 0 (no CAP_SETUID/CAP_SETGID here): %s", name, strerror(e));
			return 0;
		}
		return log_error_errno(-e, "%s: cannot leave uid 0 for uid %u: %m", name, id);
	}
	(void)prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
	data[0].effective = data[0].permitted = keep;
	if (syscall(SYS_capset, &hdr, data) < 0)
		return log_error_errno(-errno, "%s: cannot keep CAP_SYS_ADMIN for its user namespace: %m", name);
	return 0;
}

/* Stage: parent. Should: make the supervisor's death (even SIGKILL) kill this process, and exit
 * if it already happened. Mustn't: outlive the supervisor. */
static int confine_parent(pid_t parent, const char *name)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		return log_error_errno(-errno, "%s: PR_SET_PDEATHSIG failed: %m", name);
	if (getppid() != parent)
		_exit(1); /* the supervisor is gone already */
	(void)prctl(PR_SET_NAME, name);
	return 0;
}

/* Stage: signals. Should: block every signal (the supervisor owns the terminal's and the user's
 * signals; SIGPIPE and SIGXFSZ become EPIPE/EFBIG). Mustn't: run a handler inherited from the
 * supervisor. */
static void confine_signals(void)
{
	sigset_t all;

	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return x < y ? -1 : x > y;
}

/* Stage: fds. Should: keep exactly @keep (moved above 2 if needed), close every other fd the
 * supervisor had (its terminal, pty master, sync sockets, session files), and point 0-2 at a
 * pipe whose reader is gone (writes fail with EPIPE), so that nothing ever writes to a sandbox
 * client by a stray stderr. Mustn't: keep an fd to a host file. */
static int confine_fds(int *keep, size_t n_keep, const char *name)
{
	int dead[2], sorted[16];
	unsigned next = 3;

	if (n_keep > ELEMENTSOF(sorted))
		return log_error_errno(-E2BIG, "%s: too many fds to keep", name);
	for (size_t i = 0; i < n_keep; i++)
		if (keep[i] >= 0 && keep[i] < 3) {
			int fd = fcntl(keep[i], F_DUPFD_CLOEXEC, 3);

			if (fd < 0)
				return log_error_errno(-errno, "%s: cannot move an fd: %m", name);
			keep[i] = fd; /* the old number is closed with 0-2 below */
		}
	if (pipe2(dead, O_CLOEXEC) < 0)
		return log_error_errno(-errno, "%s: cannot create a pipe: %m", name);
	close(dead[0]);
	for (int fd = 0; fd < 3; fd++)
		if (dup2(dead[1], fd) < 0)
			return log_error_errno(-errno, "%s: cannot replace fd %d: %m", name, fd);
	if (dead[1] > 2)
		close(dead[1]);
	for (size_t i = 0; i < n_keep; i++)
		sorted[i] = keep[i];
	qsort(sorted, n_keep, sizeof(sorted[0]), cmp_int);
	for (size_t i = 0; i < n_keep; i++) {
		if (sorted[i] < 3)
			continue; /* -1 (an absent listener) */
		if ((unsigned)sorted[i] > next && close_range(next, (unsigned)sorted[i] - 1, 0) < 0)
			return log_error_errno(-errno, "%s: close_range failed: %m", name);
		next = (unsigned)sorted[i] + 1;
	}
	if (close_range(next, ~0u, 0) < 0)
		return log_error_errno(-errno, "%s: close_range failed: %m", name);
	return 0;
}

/* Stage: filesystem. Should: leave the process an empty, read-only root it cannot leave: a user
 * and a mount namespace of its own (no id map is needed: it only mounts and pivots), a tmpfs
 * with no room (nr_inodes=1, size=0) pivoted to and the host's tree detached. Works as an
 * ordinary user and as root (measured: ~0.1 ms unshare + ~0.15 ms mount/pivot here). Mustn't:
 * keep a path, a cwd or an fd into the host's tree; share mount events with the host. */
static int confine_fs(const char *name)
{
	const char *dir = "/tmp";
	int r = userns_unshare(CLONE_NEWNS);

	if (r < 0)
		return log_error_errno(r, "%s: cannot create its user and mount namespace: %m "
				       "(run 'aisb doctor')", name);
	if (mount("", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return log_error_errno(-errno, "%s: cannot make its mounts private: %m", name);
	if (access(dir, F_OK) < 0)
		dir = "/proc"; /* a host without /tmp; /proc exists wherever aisb runs */
	if (mount("aisb-gate", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY,
		  "size=0,nr_inodes=1,mode=0555") < 0)
		return log_error_errno(-errno, "%s: cannot mount its empty root: %m", name);
	if (chdir(dir) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 || umount2(".", MNT_DETACH) < 0 ||
	    chdir("/") < 0)
		return log_error_errno(-errno, "%s: cannot pivot into its empty root: %m", name);
	return 0;
}

/* Stage: capabilities. Should: clear the bounding, ambient, effective, permitted and inheritable
 * sets (a new user namespace granted a full set in it, and with it CAP_SETPCAP to clear the
 * bounding set), set no_new_privs, and read it all back: the workload's own sequence
 * (ns/caps.h). Mustn't: keep one. */
static int confine_caps(const char *name)
{
	int r = caps_drop_all();

	if (r < 0)
		return log_error_errno(r, "%s: cannot drop its capabilities: %m", name);
	return 0;
}

/* soft = hard = @v, or the caller's tighter limit (util/rlimit.h) */
static int set_limit(int res, rlim_t v, const char *what)
{
	if (rlimit_lower(res, v, true, NULL) < 0)
		return log_error_errno(-errno, "cannot set %s for the gate's process: %m", what);
	return 0;
}

/* The gate's memory bound. Its peak with 1,000 open tunnels was ~13 MiB of RSS (bench/gate.sh)
 * and every connection is bounded (64 KiB head, 16 KiB upstream head, DEFAULT_MAX_CONNS 2048):
 * 1 GiB of address space is far above need and still bounds a runaway. ASan reserves terabytes
 * of shadow address space, so sanitizer builds go without it. */
#define GATE_AS_MAX ((rlim_t)1 << 30)
/* The egress log is the only file it writes (through the fd the supervisor opened): ~250 bytes a
 * connection. The gate stops at the log's own bound (GATE_LOG_MAX, 64 MiB by default: gate.c's
 * log_put()) and passes that (plus one record) as @fsize, so that the kernel holds the bound
 * too, for a gate that went wrong; this is the most without one. */
#define GATE_FSIZE_MAX ((rlim_t)1 << 30)

/* Stage: resource limits. Should: no new processes or threads (NPROC 0), no core dump (it holds
 * the policy and sandbox traffic), bounded file writes and memory, no locked memory or message
 * queues, and the fd limit fixed at the level gate_new() sized the connection cap to. Mustn't:
 * leave a limit it could raise again (soft = hard), nor loosen one the caller ran aisb with (a
 * tighter inherited limit is kept: util/rlimit.h). */
static int confine_rlimits(rlim_t fsize)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return log_error_errno(-errno, "gate: cannot read RLIMIT_NOFILE: %m");
	if (set_limit(RLIMIT_NOFILE, rl.rlim_cur, "RLIMIT_NOFILE") < 0 ||
	    set_limit(RLIMIT_NPROC, 0, "RLIMIT_NPROC") < 0 || set_limit(RLIMIT_CORE, 0, "RLIMIT_CORE") < 0 ||
	    set_limit(RLIMIT_FSIZE, fsize, "RLIMIT_FSIZE") < 0 ||
	    set_limit(RLIMIT_MEMLOCK, 0, "RLIMIT_MEMLOCK") < 0 || set_limit(RLIMIT_MSGQUEUE, 0, "RLIMIT_MSGQUEUE") < 0)
		return -EPERM;
#ifndef GATE_SANITIZED
	if (set_limit(RLIMIT_AS, GATE_AS_MAX, "RLIMIT_AS") < 0)
		return -EPERM;
#endif
	return 0;
}

int gate_seccomp_compile(struct seccomp_prog *out)
{
	*out = seccomp_prebuilt_gate;
	return 0;
}

/* The stages of gate_confine() for a process called @name (its log lines) and @comm. */
static int confine_process(const char *name, const char *comm, pid_t parent, const struct seccomp_prog *prog,
			   int *keep, size_t n_keep, rlim_t fsize)
{
	int r = confine_ids(name);

	if (r >= 0)
		r = confine_parent(parent, comm);
	if (r < 0)
		return r;
	confine_signals();
	/* the log lines' time stamps are UTC (gmtime_r): make sure nothing reads /etc/localtime
	 * later */
	tzset();
	/* the fds last: until then a failure is still said on the supervisor's stderr */
	r = confine_fs(name);
	if (r >= 0)
		r = confine_caps(name);
	if (r >= 0)
		r = confine_rlimits(fsize);
	if (r >= 0)
		r = confine_fds(keep, n_keep, name);
	if (r < 0)
		return r;
	/* Stage: seccomp. Should: set no_new_privs and load the allowlist (one table: the gate's
	 * gate_seccomp_rules[], the tlsgate's tlsgate_seccomp_rules[], compiled when aisb was built)
	 * as the very last step. Mustn't: log afterwards (its stderr is a dead pipe; the gate's
	 * egress log and summary, the tlsgate's events, are their only outputs). */
	r = seccomp_policy_load(prog);
	if (r < 0)
		return log_error_errno(r, "%s: cannot load its seccomp filter: %m", name);
	log_set_quiet(true);
	return 0;
}

int gate_confine(pid_t parent, const struct seccomp_prog *prog, int *keep, size_t n_keep, uint64_t fsize)
{
	return confine_process("gate", GATE_PROC_NAME, parent, prog, keep, n_keep,
			       fsize && fsize < GATE_FSIZE_MAX ? (rlim_t)fsize : GATE_FSIZE_MAX);
}

int tlsgate_confine(pid_t parent, int *keep, size_t n_keep)
{
	/* it writes no file at all: RLIMIT_FSIZE 0 */
	return confine_process("tlsgate", "aisb-tlsgate", parent, &seccomp_prebuilt_tlsgate, keep, n_keep, 0);
}

int resolver_confine(pid_t parent, int *keep)
{
	int r = confine_ids("resolver");

	if (r >= 0)
		r = confine_parent(parent, RESOLVER_PROC_NAME);
	if (r < 0)
		return r;
	confine_signals();
	/* A user namespace of its own: whatever the caller held on the host (a root caller: every
	 * capability) is gone with it, and caps_drop_all() can clear the bounding set for any caller.
	 * Its files are still read as the caller (permission checks use the host ids). */
	if ((r = userns_unshare(0)) < 0)
		return log_error_errno(r, "resolver: cannot create its user namespace: %m (run 'aisb doctor')");
	r = confine_caps("resolver");
	if (r < 0)
		return r;
	/* no core dumps, no file writes (it writes none), a few fds for getaddrinfo's sockets and
	 * files per thread */
	if (set_limit(RLIMIT_CORE, 0, "RLIMIT_CORE") < 0 || set_limit(RLIMIT_FSIZE, 0, "RLIMIT_FSIZE") < 0 ||
	    set_limit(RLIMIT_NOFILE, 64, "RLIMIT_NOFILE") < 0)
		return -EPERM;
	r = confine_fds(keep, 1, "resolver");
	if (r < 0)
		return r;
	/* Stage: seccomp. Should: load the resolver's allowlist (resolver_seccomp_rules[]) last,
	 * while the process is still single-threaded, so every worker thread inherits it. Mustn't:
	 * run a lookup before it. */
	r = seccomp_policy_load(&seccomp_prebuilt_resolver);
	if (r < 0)
		return log_error_errno(r, "resolver: cannot load its seccomp filter: %m");
	log_set_quiet(true);
	return 0;
}
