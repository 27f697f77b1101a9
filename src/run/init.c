// SPDX-License-Identifier: GPL-2.0-or-later
/* init.c — PID 1 of the sandbox and the workload's last steps before execve */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <linux/filter.h>
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
#include "ns/harden.h"
#include "ns/seccomp.h"
#include "ns/limits.h"
#include "ns/procfs.h"
#include "run/stage.h"
#include "util/fdpass.h"
#include "util/log.h"
#include "util/util.h"

_Noreturn void stage_fail(int fd, int code, int err, const char *fmt, ...)
{
	struct stage_report rep = { .code = code, .err = err };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rep.msg, sizeof(rep.msg), fmt, ap);
	va_end(ap);
	(void)write_full(fd, &rep, sizeof(rep));
	_exit(code);
}

/* stage_fail() for the workload, which shares init's memory until execve (CLONE_VM): no
 * formatting, no allocation, only write(2) and _exit(2); @msg was prepared before the clone. */
_Noreturn static void workload_fail(int fd, int code, int err, const char *msg)
{
	struct stage_report rep = { .code = code, .err = err };
	size_t n = strnlen(msg, sizeof(rep.msg) - 1);

	memcpy(rep.msg, msg, n);
	rep.msg[n] = 0;
	(void)write_full(fd, &rep, sizeof(rep));
	_exit(code);
}

/* Stage: /proc. Should: set user.max_user_namespaces=0 in the sandbox's user namespace (so even
 * a seccomp bypass cannot create one; docs/machine-facts.md: unshare -U then fails with ENOSPC),
 * then make the fresh /proc read-only (only its host-global entries, with --allow-ptrace) and hide
 * the root-only ones (ns/procfs.h),
 * after the network stage and before anything of the sandbox runs. Mustn't: touch the host's
 * values, or let the workload start with a cover missing (77). */
static int proc_stage(const struct aisb_plan *p, const char **failed)
{
	/* kernel uid 0 (a root caller that could not be remapped): owner bits of root's files
	 * would apply to it */
	int r = procfs_stage(p->run_uid == 0, p->allow_ptrace, p->container_proc, failed);

	if (r == 1)
		/* --container-proc on a container's read-only /proc/sys: the trade it states */
		log_warn("the container's /proc/sys is read-only, so user.max_user_namespaces=0 cannot be set: "
			 "nested user namespaces are refused by seccomp alone (--container-proc)");
	return r;
}

/* Everything the workload needs, made by init before the clone: the workload shares init's
 * memory (CLONE_VM) until its execve, so it must not take a lock or allocate (malloc's arena
 * locks and heap are init's too; a printf-family call may allocate). It only makes system calls
 * and async-signal-safe calls on what is prepared here. */
struct workload_args {
	const struct init_args *a;
	const char *slave;
	const struct seccomp_prog *filter;
	int master;             /* init's end of the pty, not the workload's */
	char **envp;            /* the plan's environment as NAME=VALUE, NULL-terminated */
	const char *path;       /* the plan's PATH, searched for a command without a '/' */
	char **sh_argv;         /* "/bin/sh", a slot for the script, the command's arguments */
	char msg_pty[256], msg_cwd[320], msg_notfound[320], msg_noexec[320];
};

/* Fills @w's environment, search path and messages from @p. Allocates; runs in init. Return: 0
 * or -ENOMEM. */
static int workload_prepare(const struct aisb_plan *p, const char *slave, struct workload_args *w)
{
	size_t argc = 0;

	w->envp = calloc(p->n_env + 1, sizeof(*w->envp));
	if (!w->envp)
		return -ENOMEM;
	/* glibc's execvp default when PATH is unset */
	w->path = "/bin:/usr/bin";
	for (size_t i = 0; i < p->n_env; i++) {
		if (asprintf(&w->envp[i], "%s=%s", p->env[i].name, p->env[i].value) < 0)
			return -ENOMEM;
		if (streq(p->env[i].name, "PATH"))
			w->path = p->env[i].value;
	}
	while (p->argv[argc])
		argc++;
	assert(argc > 0); /* resolve_command() always names a program */
	w->sh_argv = calloc(argc + 2, sizeof(*w->sh_argv));
	if (!w->sh_argv)
		return -ENOMEM;
	w->sh_argv[0] = (char *)"/bin/sh";
	for (size_t i = 1; i < argc; i++)
		w->sh_argv[i + 1] = p->argv[i];
	snprintf(w->msg_pty, sizeof(w->msg_pty), "workload: cannot open the pty '%s'", slave ? slave : "");
	snprintf(w->msg_cwd, sizeof(w->msg_cwd), "workload: cannot enter the working directory '%s'", p->cwd);
	snprintf(w->msg_notfound, sizeof(w->msg_notfound), "command not found in the sandbox: '%s'%s", p->argv[0],
		 strchr(p->argv[0], '/') ? "" : p->rootfs == ROOTFS_IMAGE ? " (not on the image's PATH)"
		 : " (not installed on this host where the sandbox can see it: install it system-wide, "
		   "or name its install dir with --harness-from DIR)");
	snprintf(w->msg_noexec, sizeof(w->msg_noexec), "cannot execute '%s'", p->argv[0]);
	return 0;
}

/* A file execve(2) refused with ENOEXEC (no #! line) runs as a shell script, as execvp(3)
 * does. Returns only on failure, with errno set. */
static void exec_script(const struct workload_args *w, const char *file)
{
	w->sh_argv[1] = (char *)file; /* the arguments are in sh_argv[2...] already */
	execve("/bin/sh", w->sh_argv, w->envp);
}

/* execvp(3) with the plan's PATH and environment, without its allocations or `environ`:
 * the same search (empty entries are the working directory; EACCES is remembered and the
 * search goes on; ENOENT, ENOTDIR and friends go on). Returns only on failure, with errno
 * ENOENT (nothing found) or why the file found could not run. */
static void exec_command(const struct workload_args *w, char *const argv[])
{
	const char *file = argv[0], *p = w->path;
	size_t fl = strlen(file);
	bool eacces = false;

	if (strchr(file, '/')) {
		execve(file, argv, w->envp);
		if (errno == ENOEXEC)
			exec_script(w, file);
		return;
	}
	for (;;) {
		const char *e = strchrnul(p, ':');
		size_t dl = (size_t)(e - p);
		char buf[PATH_MAX];

		if (dl + 1 + fl < sizeof(buf)) {
			memcpy(buf, p, dl);
			if (dl)
				buf[dl++] = '/';
			memcpy(buf + dl, file, fl + 1);
			execve(buf, argv, w->envp);
			switch (errno) {
			case EACCES:
				eacces = true;
				break;
			case ENOENT:
			case ENOTDIR:
			case ESTALE:
			case ENODEV:
			case ETIMEDOUT:
			case ENAMETOOLONG:
				break;
			case ENOEXEC:
				exec_script(w, buf);
				return;
			default:
				return;
			}
		}
		if (!*e)
			break;
		p = e + 1;
	}
	errno = eacces ? EACCES : ENOENT;
}

/* The workload. Should: become a session leader on the pty (or keep the inherited fds), enter
 * the working directory, close every other fd, drop every capability, load seccomp last and
 * execve. Mustn't: log anything on stderr itself (failures go through the report pipe), touch
 * a path outside the new root, or call anything that allocates or locks (see struct
 * workload_args). */
_Noreturn static void workload(const struct workload_args *w)
{
	static const char *const harden_msgs[HARDEN_STEP_MAX] = {
		[HARDEN_FDS] = "workload: close_range failed",
		[HARDEN_CAPS] = "workload: cannot drop all capabilities",
		[HARDEN_SECCOMP] = "workload: cannot load the seccomp filter",
	};
	const struct init_args *a = w->a;
	const struct aisb_plan *p = a->plan;
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	enum harden_step failed;
	int r;

	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			(void)sigaction(s, &dfl, NULL); /* EINVAL for libc's reserved ones */
	sigprocmask(SIG_SETMASK, &a->oldmask, NULL);
	close(a->sync_fd);

	if (setsid() < 0)
		workload_fail(a->err_fd, AISB_EXIT_FAILED, errno, "workload: setsid failed");
	if (w->slave) {
		int fd = open(w->slave, O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (fd < 0)
			workload_fail(a->err_fd, AISB_EXIT_FAILED, errno, w->msg_pty);
		if (ioctl(fd, TIOCSCTTY, 0) < 0)
			workload_fail(a->err_fd, AISB_EXIT_FAILED, errno,
				      "workload: cannot make the pty the controlling terminal");
		for (int i = 0; i < 3; i++)
			if ((a->tty_mask & (1u << i)) && dup2(fd, i) < 0)
				workload_fail(a->err_fd, AISB_EXIT_FAILED, errno, "workload: dup2 of the pty failed");
		if (fd > 2)
			close(fd);
	}
	if (chdir(p->cwd) < 0)
		workload_fail(a->err_fd, AISB_EXIT_FAILED, errno, w->msg_cwd);

	/* The one hardening sequence (ns/harden.h), as a build's RUN step ends: fds above 2 closed
	 * at exec (the report pipe stays usable), no capability, no_new_privs, seccomp last. */
	r = harden_before_exec(w->filter, 0, &failed);
	if (r < 0)
		workload_fail(a->err_fd, AISB_EXIT_ENFORCE, -r, harden_msgs[failed < HARDEN_STEP_MAX ? failed : 0]);

	exec_command(w, p->argv);
	if (errno == ENOENT)
		workload_fail(a->err_fd, AISB_EXIT_NOTFOUND, 0, w->msg_notfound);
	workload_fail(a->err_fd, AISB_EXIT_NOEXEC, errno, w->msg_noexec);
}

static int workload_fn(void *arg)
{
	const struct workload_args *w = arg;

	if (w->master >= 0)
		close(w->master);
	workload(w);
}

#define WORKLOAD_STACK ((size_t)256 * 1024)

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
 * then changes nothing it can reach; it allocates nothing (struct workload_args). Return: its
 * pid or -errno. */
static pid_t spawn_workload(const struct workload_args *w)
{
	size_t guard = (size_t)sysconf(_SC_PAGESIZE);
	char *stack;
	pid_t pid;

#if AISB_ASAN
	/* ASan cannot follow a child onto a stack of its own (it warns and may report falsely):
	 * the sanitizer build copies init's memory instead. */
	(void)guard, (void)stack;
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
	(void)munmap(stack, WORKLOAD_STACK + guard);
	return pid;
}

/* Stage: pty. Should: open the ptmx of the sandbox's own devpts, with the host terminal's size.
 * Mustn't: touch a host pty. Return: the master; exits through stage_fail() on failure. */
static int pty_stage(const struct init_args *a, const struct winsize *ws, char *slave, size_t n)
{
	int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);

	if (master < 0 || unlockpt(master) < 0 || ptsname_r(master, slave, n) != 0)
		stage_fail(a->err_fd, AISB_EXIT_FAILED, errno, "init: cannot allocate a pty inside the sandbox");
	if (ws->ws_row && ws->ws_col)
		(void)ioctl(master, TIOCSWINSZ, ws);
	return master;
}

/* Stage: PID 1. Should: reap every orphan, forward the supervisor's signals to the workload
 * @child, and exit with the workload's status. Mustn't: wait for daemons the workload left
 * behind (they die with the pid namespace when we exit). Never returns. */
_Noreturn static void pid1_loop(pid_t child)
{
	sigset_t mask;
	int sfd;

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

/* Stage: identity. Should: make the sandbox the OOM killer's pick, take the sandbox's ids when
 * the caller is root, and name the host. Mustn't: outlive the supervisor across the change of
 * ids (it clears the parent-death signal, which is set again). Exits through stage_fail() on
 * failure. */
static void identity_stage(const struct init_args *a)
{
	/* The OOM killer takes the sandbox, not its supervisor, which still has to check what the
	 * sandbox wrote for git (issue 21): raising one's own score needs no privilege, and the
	 * workload inherits it. A workload may lower it back to 0 (the floor of an unprivileged
	 * caller), where the largest process, which is its own, is still the one picked; and a
	 * supervisor killed anyway leaves its check pending for the next aisb command. */
	{
		int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, "1000", 4) != 4)
			log_debug_errno(-errno, "init: cannot raise the sandbox's oom_score_adj: %m");
		if (fd >= 0)
			close(fd);
	}

	/* A root caller's sandbox as USERNS_ROOT_RUN_ID (issue 22): init was cloned as kernel uid 0,
	 * which this namespace does not map, so it takes the sandbox's ids (the host's
	 * USERNS_ROOT_RUN_ID, now mapped) before it creates a file: an unmapped owner is EOVERFLOW.
	 * After its oom_score_adj: the id change makes it undumpable, and its /proc/self files
	 * root's, which it then cannot open.
	 * Its capabilities in the namespace stay (it never was the namespace's uid 0). */
	if (a->plan->run_uid != a->plan->host_uid &&
	    (setresgid(a->plan->gid, a->plan->gid, a->plan->gid) < 0 ||
	     setresuid(a->plan->uid, a->plan->uid, a->plan->uid) < 0))
		stage_fail(a->err_fd, AISB_EXIT_ENFORCE, errno, "init: cannot take the sandbox's uid %u",
			   (unsigned)a->plan->uid);
	/* a change of ids clears the parent-death signal: set it again, then check that the
	 * supervisor did not die in between (its end of the sync socket is closed then; getppid()
	 * is 0 for PID 1 of a new pid namespace either way) */
	if (a->plan->run_uid != a->plan->host_uid) {
		struct pollfd pf = { .fd = a->sync_fd, .events = POLLRDHUP };
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || poll(&pf, 1, 0) != 0)
			_exit(AISB_EXIT_FAILED);
	}

	/* The UTS name is cosmetic, not a security property: the new UTS namespace already keeps
	 * the host's name unchanged whatever happens here. Container engines' seccomp profiles
	 * (podman's and Docker's default) deny sethostname without CAP_SYS_ADMIN in the container,
	 * EPERM even inside our own user namespace (measured in rootful podman 4.3.1), so the
	 * sandbox then keeps the container's name, as build RUN steps do. */
	if (sethostname("aisb", 4) < 0)
		log_debug_errno(-errno, "init: the hostname stays the container's (sethostname: %m)");
}

/* Stages: mounts, then network. Exit through stage_fail() on failure. */
static void tree_net_stage(const struct init_args *a, int gate_fds[NETPLAN_GATE_FDS])
{
	char err[STAGE_MSG_MAX] = "";
	bool fell_back = false;
	int r;

	/* Stage: mounts. Should: build the whole tree from the plan and pivot. Mustn't: resolve a
	 * user-controlled path by name twice, or leave the old root reachable. */
	r = mount_plan_apply(a->mounts, &fell_back, err, sizeof(err));
	if (r != 0)
		/* the errno goes along (its text is already in err): the supervisor tells a
		 * platform's refusal from it (ns/refusal.h) */
		stage_fail(a->err_fd, r > 0 ? r : AISB_EXIT_FAILED, r < 0 ? -r : 0, "%s%s", r > 0 ? "" : "init: ", err);
	if (fell_back)
		log_warn(MOUNT_FALLBACK_NOTICE);

	/* Stage: network (net/netplan.h, shared with a build's RUN steps): lo up; in allow mode the
	 * verified nft ruleset and the gate's listening sockets, while init still holds its
	 * capabilities. Mustn't: let the workload start when the ruleset is not verified (77). */
	r = netplan_netns_stage(a->plan->netp, gate_fds, err, sizeof(err));
	if (r != 0)
		stage_fail(a->err_fd, r, 0, "init: %s", err);
}

/* Stage: bounds. Should: bound the sandbox's processes where no cgroup does, and cover the
 * sandbox's /proc. Mustn't: let the workload start with either missing (77). Exits through
 * stage_fail() on failure. */
static void bounds_stage(const struct init_args *a)
{
	int r;

	/* issue 22: kernel uid 0 is exempt from RLIMIT_NPROC; its bound is this pid namespace's
	 * pid_max, written while /proc/sys is still writable */
	r = limits_apply_pidns(a->plan);
	if (r == -ENXIO)
		/* --container-proc: /proc is the container's, its pid_max not the sandbox's */
		log_warn("the sandbox's processes are not bounded: it runs as kernel uid 0 without cgroups, and "
			 "with the container's /proc (--container-proc) its pid namespace's pid_max cannot be set");
	else if (r < 0)
		stage_fail(a->err_fd, AISB_EXIT_ENFORCE, -r, "init: cannot bound the sandbox's processes with its "
			   "pid namespace's pid_max (/proc/sys/kernel/pid_max)");

	{
		const char *failed;
		r = proc_stage(a->plan, &failed);
		if (r < 0)
			stage_fail(a->err_fd, AISB_EXIT_ENFORCE, -r, "init: cannot cover '%s' in the sandbox's /proc "
				   "(user.max_user_namespaces=0 and the read-only /proc/sys, /proc/irq, ...)", failed);
	}
}

/* Stage: workload. Should: set the rlimits, and start the workload with the seccomp filter and
 * the pty's @slave (NULL: none) and @master. Return: its pid; exits through stage_fail() on
 * failure. */
static pid_t workload_stage(const struct init_args *a, char *slave, int master)
{
	static struct seccomp_prog filter; /* read by the workload: lives as long as init, as w */
	pid_t child;
	int r;

	/* issue 5: without a delegated cgroup, default limits degrade to rlimits (RLIMIT_NPROC is
	 * counted per user namespace since 5.14, so this bounds the sandbox's own processes). */
	r = limits_apply_inside(a->plan);
	if (r < 0)
		stage_fail(a->err_fd, AISB_EXIT_ENFORCE, -r, "init: cannot set the process rlimit");

	/* built into the binary (ns/seccomp.h): nothing to compile, nothing to receive */
	(void)seccomp_policy_compile(&(struct seccomp_options){ .allow_ptrace = a->plan->allow_ptrace }, &filter);

	{
		/* init's own memory, never freed: init exits with the sandbox */
		static struct workload_args w;

		w = (struct workload_args){ .a = a, .slave = slave, .filter = &filter,
					    .master = master };
		if (workload_prepare(a->plan, w.slave, &w) < 0)
			stage_fail(a->err_fd, AISB_EXIT_FAILED, ENOMEM, "init: cannot prepare the workload");
		child = spawn_workload(&w);
	}
	if (child < 0)
		stage_fail(a->err_fd, AISB_EXIT_FAILED, -child, "init: cannot start the workload");
	return child;
}

/* Stage: ready. Should: send the supervisor the workload's pid, the pty's master and the gate's
 * listeners, and close init's copies. Exits on failure (the supervisor sees the socket close). */
static void ready_stage(const struct init_args *a, pid_t child, int master, const int gate_fds[NETPLAN_GATE_FDS])
{
	struct sync_ready ready = { .magic = SYNC_MAGIC };
	int fds[1 + NETPLAN_GATE_FDS];
	size_t nfds = 0;

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
}

_Noreturn void init_main(const struct init_args *a)
{
	struct sync_go go;
	char slave[128];
	int master = -1;
	int gate_fds[NETPLAN_GATE_FDS] = { -1, -1, -1, -1 };
	pid_t child;

	/* A killed supervisor takes the whole sandbox with it: PID 1 dying kills the pid namespace. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		stage_fail(a->err_fd, AISB_EXIT_FAILED, errno, "init: PR_SET_PDEATHSIG failed");
	if (read_full(a->sync_fd, &go, sizeof(go)) != sizeof(go) || go.magic != SYNC_MAGIC)
		_exit(AISB_EXIT_FAILED); /* supervisor gone before the maps were written */
	identity_stage(a);
	tree_net_stage(a, gate_fds);
	bounds_stage(a);
	if (a->tty_mask)
		master = pty_stage(a, &go.ws, slave, sizeof(slave));
	child = workload_stage(a, a->tty_mask ? slave : NULL, master);
	close(a->err_fd);
	ready_stage(a, child, master, gate_fds);
	pid1_loop(child);
}
