// SPDX-License-Identifier: GPL-2.0-or-later
/* podman-netns.c — the gated netns that `podman build --network=ns:PATH` joins */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "build/podman-netns.h"
#include "net/gate.h"
#include "net/netplan.h"
#include "ns/userns.h"
#include "util/log.h"
#include "util/spawn.h"
#include "util/util.h"

/* podman unshare's first start of the pause process took ~0.4 s here; a hung podman is bounded */
#define USERNS_TIMEOUT_MS 30000

static void wait_quiet(pid_t pid)
{
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* Reads the first line @child writes to @fd (its pid), bounded in time and size. Return: the pid
 * or -errno. Does not log. */
static int read_pid_line(int fd)
{
	char buf[32];
	size_t n = 0;

	while (n < sizeof(buf) - 1) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int r = poll(&p, 1, USERNS_TIMEOUT_MS);
		ssize_t k;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -ETIMEDOUT;
		k = read(fd, buf + n, sizeof(buf) - 1 - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EPIPE;
		n += (size_t)k;
		buf[n] = '\0';
		if (strchr(buf, '\n')) {
			char *end;
			long v = strtol(buf, &end, 10);
			return v > 1 && v < (1L << 22) && *end == '\n' ? (int)v : -EBADMSG;
		}
	}
	return -EBADMSG;
}

/* Rootless podman's user namespace, from a `podman unshare` child that prints its pid and waits
 * on its stdin (we hold the other end, so the pid cannot be reused before the namespace is
 * open). Return: an O_CLOEXEC fd of it, or -errno with @why filled. Does not log. */
static int podman_userns_fd(const char *exe, char *why, size_t n)
{
	char *argv[] = { (char *)exe, (char *)"unshare", (char *)"/bin/sh", (char *)"-c",
			 (char *)"echo $$; read x", NULL };
	int in[2], out[2], fd = -1, pid_in;
	char path[64];
	struct stat a, b;
	pid_t pid;

	if (pipe2(in, O_CLOEXEC) < 0)
		return snprintf(why, n, "pipe: %s", strerror(errno)), -errno;
	if (pipe2(out, O_CLOEXEC) < 0) {
		int e = errno;
		close(in[0]);
		close(in[1]);
		return snprintf(why, n, "pipe: %s", strerror(e)), -e;
	}
	{
		const struct spawn_fd fds[] = { { in[0], STDIN_FILENO }, { out[1], STDOUT_FILENO } };
		int r = spawn(&(struct spawn_opts){ .argv = argv, .fds = fds, .n_fds = ELEMENTSOF(fds) }, &pid);

		close(in[0]);
		close(out[1]);
		if (r < 0) {
			close(in[1]);
			close(out[0]);
			return snprintf(why, n, "cannot start '%s unshare': %s", exe, strerror(-r)), r;
		}
	}
	pid_in = read_pid_line(out[0]);
	if (pid_in < 0) {
		snprintf(why, n, "'%s unshare' gave no pid (%s)", exe, strerror(-pid_in));
	} else {
		snprintf(path, sizeof(path), "/proc/%d/ns/user", pid_in);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			fd = -errno;
			snprintf(why, n, "cannot open '%s': %s", path, strerror(errno));
		} else if (fstat(fd, &a) < 0 || stat("/proc/self/ns/user", &b) < 0 || a.st_ino == b.st_ino) {
			/* podman ran in our own user namespace: it is not rootless podman's */
			close(fd);
			fd = -EINVAL;
			snprintf(why, n, "'%s unshare' did not run in a user namespace of its own", exe);
		}
	}
	close(in[1]); /* the child's read ends */
	close(out[0]);
	wait_quiet(pid);
	return fd;
}

/* The holder. Should: join @userns_fd (rootless podman's user namespace) when given, create the
 * netns, run the network stage of `aisb run` in it and send the listeners to the parent, then
 * wait until the parent closes @sock. Mustn't: outlive the parent (PR_SET_PDEATHSIG, set after
 * setns(), which clears it with the credential change), or run anything else. It is made
 * dumpable again after setns() (also cleared by the change): podman, in that user namespace,
 * must open /proc/PID/ns/net, which ptrace rules guard; the process holds nothing but the plan.
 * Returns an exit code. */
static int holder(const struct net_plan *np, int userns_fd, int sock)
{
	int fds[NETPLAN_GATE_FDS] = { -1, -1, -1, -1 };
	char err[512] = "";
	pid_t parent = getppid();
	int r = 0;
	char c;

	if (userns_fd >= 0 && (r = userns_join(userns_fd)) < 0) {
		snprintf(err, sizeof(err), "cannot join rootless podman's user namespace: %s", strerror(-r));
		r = AISB_EXIT_POLICY;
	} else if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent) {
		return AISB_EXIT_FAILED;
	} else if (unshare(CLONE_NEWNET) < 0) {
		snprintf(err, sizeof(err), "cannot create the build's network namespace: %s", strerror(errno));
		r = AISB_EXIT_ENFORCE;
	} else if (userns_fd >= 0 && prctl(PR_SET_DUMPABLE, 1) < 0) {
		snprintf(err, sizeof(err), "PR_SET_DUMPABLE: %s", strerror(errno));
		r = AISB_EXIT_FAILED;
	} else {
		r = netplan_netns_stage(np, fds, err, sizeof(err));
	}
	if (r != 0) {
		log_error("build: %s", err);
		(void)netplan_listeners_send(sock, r, fds);
		return r;
	}
	if ((r = netplan_listeners_send(sock, 0, fds)) < 0)
		return log_error_errno(r, "build: cannot pass the gate's sockets: %m"), AISB_EXIT_FAILED;
	while (read(sock, &c, 1) < 0 && errno == EINTR)
		;
	return 0;
}

int podman_netns_open(const char *podman_exe, const struct net_plan *np, struct gate *g, struct podman_netns *ns)
{
	_cleanup_close_ int userns = -1;
	int sv[2], r;
	pid_t pid;

	*ns = (struct podman_netns){ .holder = -1, .sock = -1 };
	if (getuid() != 0) {
		char why[PATH_MAX + 128] = "";
		userns = podman_userns_fd(podman_exe, why, sizeof(why));
		if (userns < 0)
			return log_error("--builder podman --allow: rootless podman's user namespace cannot be found: %s "
					 "(check 'podman unshare true', or use the native builder)", why),
			       AISB_EXIT_POLICY;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return log_error_errno(-errno, "socketpair: %m"), AISB_EXIT_FAILED;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		r = -errno;
		close(sv[0]);
		close(sv[1]);
		return log_error_errno(r, "fork: %m"), AISB_EXIT_FAILED;
	}
	if (pid == 0) {
		close(sv[0]);
		_exit(holder(np, userns, sv[1]));
	}
	close(sv[1]);
	ns->holder = pid;
	ns->sock = sv[0];
	snprintf(ns->path, sizeof(ns->path), "/proc/%d/ns/net", (int)pid);
	r = netplan_listeners_take(ns->sock, g);
	if (r == 0 && gate_start(g) < 0) {
		podman_netns_close(ns); /* gate_start() said why */
		return AISB_EXIT_ENFORCE;
	}
	if (r == -EPERM && ns->holder > 0) {
		/* the holder said why; its exit code says which: 78 (podman's user namespace cannot
		 * be joined), 77 (the policy could not be installed) */
		int st = 0;
		close(ns->sock);
		ns->sock = -1;
		while (waitpid(ns->holder, &st, 0) < 0 && errno == EINTR)
			;
		ns->holder = -1;
		return WIFEXITED(st) && WEXITSTATUS(st) == AISB_EXIT_POLICY ? AISB_EXIT_POLICY : AISB_EXIT_ENFORCE;
	}
	if (r < 0) {
		podman_netns_close(ns);
		if (r == -EPROTO)
			log_error("build: the network namespace for podman could not be prepared; nothing was built");
		return AISB_EXIT_ENFORCE;
	}
	return 0;
}

void podman_netns_close(struct podman_netns *ns)
{
	if (ns->sock >= 0)
		close(ns->sock);
	ns->sock = -1;
	if (ns->holder > 0) {
		(void)kill(ns->holder, SIGKILL);
		wait_quiet(ns->holder);
	}
	ns->holder = -1;
}
