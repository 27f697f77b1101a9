// SPDX-License-Identifier: GPL-2.0-or-later
/* init.c — PID 1 of the sandbox and the workload's last steps before execve */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <net/if.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "net/netplan.h"
#include "ns/caps.h"
#include "ns/seccomp.h"
#include "ns/limits.h"
#include "ns/stage.h"
#include "util/fdpass.h"
#include "util/log.h"
#include "util/util.h"

extern char **environ;

_Noreturn void stage_fail(int fd, int code, int err, const char *fmt, ...)
{
	struct stage_report rep = { .code = code, .err = err };
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(rep.msg, sizeof(rep.msg), fmt, ap);
	va_end(ap);
	if (err) {
		n = strlen(rep.msg);
		snprintf(rep.msg + n, sizeof(rep.msg) - n, ": %s", strerror(err));
	}
	(void)write_full(fd, &rep, sizeof(rep));
	_exit(code);
}

/* Stage: loopback. Should: bring lo up so --net none still has 127.0.0.1. Mustn't: create any
 * other interface or route. */
static int lo_up(void)
{
	struct ifreq ifr = { 0 };
	_cleanup_close_ int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return -errno;
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		return -errno;
	return 0;
}

/* Stage: no more user namespaces. Should: set user.max_user_namespaces=0 in the sandbox's user
 * namespace, so even a seccomp bypass cannot create one (machine-facts: unshare -U then fails
 * with ENOSPC). Mustn't: touch the host's value (the sysctl is per user namespace). */
static int userns_limit_zero(void)
{
	_cleanup_close_ int fd = open("/proc/sys/user/max_user_namespaces", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return write_full(fd, "0\n", 2);
}

static void build_envp(const struct aisb_plan *p, char **envp, size_t cap)
{
	size_t n = 0;
	for (size_t i = 0; i < p->n_env && n + 1 < cap; i++) {
		char *e;
		if (asprintf(&e, "%s=%s", p->env[i].name, p->env[i].value) < 0)
			continue;
		envp[n++] = e;
	}
	envp[n] = NULL;
}

/* The workload. Should: become a session leader on the pty (or keep the inherited fds), enter
 * the working directory, close every other fd, drop every capability, load seccomp last and
 * execve. Mustn't: log anything on stderr itself (failures go through the report pipe) or touch
 * a path outside the new root. */
_Noreturn static void workload(const struct init_args *a, const char *slave, const struct seccomp_prog *filter)
{
	const struct aisb_plan *p = a->plan;
	char *envp[256];
	int r;

	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			signal(s, SIG_DFL);
	sigprocmask(SIG_SETMASK, &a->oldmask, NULL);
	close(a->sync_fd);

	if (setsid() < 0)
		stage_fail(a->err_fd, AISB_EXIT_FAILED, errno, "workload: setsid failed");
	if (slave) {
		int fd = open(slave, O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (fd < 0)
			stage_fail(a->err_fd, AISB_EXIT_FAILED, errno, "workload: cannot open the pty '%s'", slave);
		if (ioctl(fd, TIOCSCTTY, 0) < 0)
			stage_fail(a->err_fd, AISB_EXIT_FAILED, errno, "workload: cannot make the pty the controlling terminal");
		for (int i = 0; i < 3; i++)
			if ((a->tty_mask & (1u << i)) && dup2(fd, i) < 0)
				stage_fail(a->err_fd, AISB_EXIT_FAILED, errno, "workload: dup2 of the pty failed");
		if (fd > 2)
			close(fd);
	}
	if (chdir(p->cwd) < 0)
		stage_fail(a->err_fd, AISB_EXIT_FAILED, errno, "workload: cannot enter the working directory '%s'", p->cwd);

	build_envp(p, envp, ELEMENTSOF(envp));
	/* Nothing above 2 survives execve (the report pipe is CLOEXEC already and stays usable). */
	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		stage_fail(a->err_fd, AISB_EXIT_ENFORCE, errno, "workload: close_range failed");
	r = caps_drop_all();
	if (r < 0)
		stage_fail(a->err_fd, AISB_EXIT_ENFORCE, -r, "workload: cannot drop all capabilities");
	r = seccomp_policy_load(filter);
	if (r < 0)
		stage_fail(a->err_fd, AISB_EXIT_ENFORCE, -r, "workload: cannot load the seccomp filter");

	environ = envp;
	execvp(p->argv[0], p->argv);
	if (errno == ENOENT)
		stage_fail(a->err_fd, AISB_EXIT_NOTFOUND, 0, "command not found in the sandbox: '%s'%s", p->argv[0],
			   strchr(p->argv[0], '/') ? "" : p->rootfs == ROOTFS_IMAGE ? " (not on the image's PATH)"
			   : " (not installed on this host where the sandbox can see it: install it system-wide, "
			     "or name its install dir with --harness-from DIR)");
	stage_fail(a->err_fd, AISB_EXIT_NOEXEC, errno, "cannot execute '%s'", p->argv[0]);
}

/* The filter the supervisor compiled (one message after "go"); static, so that it costs the
 * workload no page of its own. Return: 0 or -errno. */
static int recv_filter(int fd, struct seccomp_prog *out)
{
	static struct sock_filter buf[BPF_MAXINSNS];
	ssize_t k;

	do
		k = read(fd, buf, sizeof(buf));
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return -errno;
	if (k == 0 || (size_t)k % sizeof(buf[0]) != 0)
		return -EPROTO;
	*out = (struct seccomp_prog){ .insns = buf, .len = (unsigned short)((size_t)k / sizeof(buf[0])) };
	return 0;
}

struct workload_args {
	const struct init_args *a;
	const char *slave;
	const struct seccomp_prog *filter;
	int master; /* init's end of the pty, not the workload's */
};

static int workload_fn(void *arg)
{
	const struct workload_args *w = arg;

	if (w->master >= 0)
		close(w->master);
	workload(w->a, w->slave, w->filter);
}

#define WORKLOAD_STACK (256 * 1024)

#if defined(__SANITIZE_ADDRESS__)
#define AISB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AISB_ASAN 1
#endif
#endif
#ifndef AISB_ASAN
#define AISB_ASAN 0
#endif

/* Starts the workload in init's memory (CLONE_VM) on a stack of its own, init paused until its
 * execve (CLONE_VFORK), like posix_spawn(). A fork() copied init's address space for a process
 * that only makes system calls and execs: every page either side wrote was a copy-on-write
 * fault (about 25 of them, 15-55 us each on the VMs measured). The workload runs only aisb's own
 * code until execve, with its own fd table and credentials, so sharing memory with init until
 * then changes nothing it can reach. Return: its pid or -errno. */
static pid_t spawn_workload(const struct workload_args *w)
{
	char **env = environ; /* the workload sets environ for execvp's PATH search */
	size_t guard = (size_t)sysconf(_SC_PAGESIZE);
	char *stack;
	pid_t pid;

#if AISB_ASAN
	/* ASan cannot follow a child onto a stack of its own (it warns and may report falsely):
	 * the sanitizer build copies init's memory instead. */
	(void)env, (void)guard, (void)stack;
	pid = fork();
	if (pid == 0)
		workload_fn((void *)w);
	return pid < 0 ? -errno : pid;
#endif
	stack = mmap(NULL, WORKLOAD_STACK + guard, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
		     -1, 0);
	if (stack == MAP_FAILED)
		return -errno;
	/* an overflow hits the guard, never init's memory */
	if (mprotect(stack, guard, PROT_NONE) < 0) {
		pid = -errno;
		(void)munmap(stack, WORKLOAD_STACK + guard);
		return pid;
	}
	pid = clone(workload_fn, stack + guard + WORKLOAD_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, (void *)w);
	if (pid < 0)
		pid = -errno;
	environ = env;
	(void)munmap(stack, WORKLOAD_STACK + guard);
	return pid;
}

_Noreturn void init_main(const struct init_args *a)
{
	struct sync_go go;
	struct sync_ready ready = { .magic = SYNC_MAGIC };
	struct seccomp_prog filter;
	char err[512] = "";
	bool fell_back = false;
	char slave[128];
	int master = -1, sfd, r;
	int gate_fds[NETPLAN_GATE_FDS] = { -1, -1, -1, -1 }, fds[1 + NETPLAN_GATE_FDS];
	size_t nfds = 0;
	sigset_t mask;
	pid_t child;

	/* A killed supervisor takes the whole sandbox with it: PID 1 dying kills the pid namespace. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		stage_fail(a->err_fd, AISB_EXIT_FAILED, errno, "init: PR_SET_PDEATHSIG failed");
	if (read_full(a->sync_fd, &go, sizeof(go)) != sizeof(go) || go.magic != SYNC_MAGIC)
		_exit(AISB_EXIT_FAILED); /* supervisor gone before the maps were written */

	if (sethostname("aisb", 4) < 0)
		stage_fail(a->err_fd, AISB_EXIT_FAILED, errno, "init: cannot set the hostname");

	/* Stage: mounts. Should: build the whole tree from the plan and pivot. Mustn't: resolve a
	 * user-controlled path by name twice, or leave the old root reachable. */
	r = mount_plan_apply(a->mounts, &fell_back, err, sizeof(err));
	if (r < 0)
		stage_fail(a->err_fd, AISB_EXIT_FAILED, 0, "init: %s", err);
	if (fell_back)
		log_warn(MOUNT_FALLBACK_NOTICE);

	r = lo_up();
	if (r < 0)
		stage_fail(a->err_fd, AISB_EXIT_FAILED, -r, "init: cannot bring up the loopback interface");

	/* Stage: network (allow mode). Should: install and verify the nft ruleset and open the gate's
	 * listening sockets inside the new netns while init still holds its capabilities. Mustn't:
	 * let the workload start when the ruleset is not verified (77). */
	if (netplan_has_gate(a->plan->netp)) {
		r = netplan_init_apply(a->plan->netp, gate_fds, err, sizeof(err));
		if (r != 0)
			stage_fail(a->err_fd, r, 0, "%s", err);
	}

	r = userns_limit_zero();
	if (r < 0)
		stage_fail(a->err_fd, AISB_EXIT_ENFORCE, -r, "init: cannot set user.max_user_namespaces=0 inside");

	if (a->tty_mask) {
		master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (master < 0 || unlockpt(master) < 0 || ptsname_r(master, slave, sizeof(slave)) != 0)
			stage_fail(a->err_fd, AISB_EXIT_FAILED, errno, "init: cannot allocate a pty inside the sandbox");
		if (go.ws.ws_row && go.ws.ws_col)
			(void)ioctl(master, TIOCSWINSZ, &go.ws);
	}

	/* issue 5: without a delegated cgroup, default limits degrade to rlimits (RLIMIT_NPROC is
	 * counted per user namespace since 5.14, so this bounds the sandbox's own processes). */
	r = limits_apply_inside(a->plan);
	if (r < 0)
		stage_fail(a->err_fd, AISB_EXIT_ENFORCE, -r, "init: cannot set the process rlimit");

	r = recv_filter(a->sync_fd, &filter);
	if (r < 0)
		stage_fail(a->err_fd, AISB_EXIT_ENFORCE, -r, "init: no seccomp filter from the supervisor");

	child = spawn_workload(&(struct workload_args){ .a = a, .slave = a->tty_mask ? slave : NULL,
							 .filter = &filter, .master = master });
	if (child < 0)
		stage_fail(a->err_fd, AISB_EXIT_FAILED, -child, "init: cannot start the workload");
	close(a->err_fd);

	ready.workload_pid = child;
	if (master >= 0)
		fds[nfds++] = master;
	for (int i = 0; i < NETPLAN_GATE_FDS; i++)
		if (gate_fds[i] >= 0) {
			fds[nfds++] = gate_fds[i];
			ready.gate_nfds++;
		}
	ready.nfds = (uint32_t)nfds;
	if (fdpass_send(a->sync_fd, &ready, sizeof(ready), fds, nfds) < 0)
		_exit(AISB_EXIT_FAILED);
	/* only the supervisor's gate holds the listeners from here on */
	for (size_t i = 0; i < nfds; i++)
		close(fds[i]);

	/* Stage: PID 1. Should: reap every orphan, forward the supervisor's signals to the workload,
	 * and exit with the workload's status. Mustn't: wait for daemons the workload left behind
	 * (they die with the pid namespace when we exit). */
	sigemptyset(&mask);
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP && s < SIGRTMIN)
			sigaddset(&mask, s);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0)
		_exit(AISB_EXIT_FAILED);
	for (;;) {
		struct signalfd_siginfo si;
		ssize_t k = read(sfd, &si, sizeof(si));
		if (k != sizeof(si))
			continue;
		if (si.ssi_signo == SIGCHLD) {
			int st;
			pid_t w;
			while ((w = waitpid(-1, &st, WNOHANG)) > 0)
				if (w == child)
					_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
			continue;
		}
		kill(child, (int)si.ssi_signo);
	}
}
