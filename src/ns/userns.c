// SPDX-License-Identifier: GPL-2.0-or-later
/* userns.c — user namespaces and their one-id maps (see userns.h) */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ns/userns.h"
#include "util/macro.h"
#include "util/util.h"

struct userns_map userns_map_root(void)
{
	return (struct userns_map){ .inside_uid = 0, .host_uid = getuid(), .inside_gid = 0, .host_gid = getgid() };
}

static int write_map_file(int dir, const char *file, unsigned inside, unsigned host)
{
	char buf[64];
	int n = snprintf(buf, sizeof(buf), "%u %u 1\n", inside, host);

	return write_file_at(dir, file, buf, (size_t)n, 0);
}

/* Stage: identity. Should: map exactly one uid and one gid, deny setgroups first (required for
 * an unprivileged gid_map, and it keeps a root caller's supplementary groups from being
 * droppable inside). Mustn't: map a range, or any host id but the two of @m. */
int userns_write_maps(pid_t pid, const struct userns_map *m, const char **failed)
{
	_cleanup_close_ int dir = -1;
	char path[64];
	const char *dummy;
	int r;

	if (!failed)
		failed = &dummy;
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self");
	*failed = path[6] == 's' ? "/proc/self" : "/proc/PID";
	dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -errno;
	*failed = "setgroups";
	r = write_file_at(dir, "setgroups", "deny", 4, 0);
	if (r < 0 && r != -ENOENT)
		return r;
	*failed = "uid_map";
	r = write_map_file(dir, "uid_map", (unsigned)m->inside_uid, (unsigned)m->host_uid);
	if (r < 0)
		return r;
	*failed = "gid_map";
	r = write_map_file(dir, "gid_map", (unsigned)m->inside_gid, (unsigned)m->host_gid);
	if (r < 0)
		return r;
	*failed = NULL;
	return 0;
}

/* userns_enter() for host ids that are not this process's own (a root caller's build step as
 * USERNS_ROOT_RUN_ID): a process that unshares loses the parent namespace's CAP_SETUID it would
 * need to write such a map itself, so the namespace is made and mapped by userns_open() and
 * joined (root holds every capability over it); root's supplementary groups are dropped first
 * (setgroups is denied inside), and the process takes @m's inside ids, which makes it @m's host
 * ids (its kernel uid 0 is not mapped there). Return: 0 or -errno. */
static int enter_mapped(const struct userns_map *m, const char **failed)
{
	_cleanup_close_ int fd = -1;

	*failed = "setgroups";
	if (setgroups(0, NULL) < 0)
		return -errno;
	*failed = "user namespace";
	if ((fd = userns_open(m)) < 0)
		return fd;
	if (setns(fd, CLONE_NEWUSER) < 0)
		return -errno;
	*failed = "ids";
	if (setresgid(m->inside_gid, m->inside_gid, m->inside_gid) < 0 ||
	    setresuid(m->inside_uid, m->inside_uid, m->inside_uid) < 0)
		return -errno;
	return 0;
}

int userns_enter(const struct userns_map *m, int more, const char **failed)
{
	const char *dummy;
	int r;

	if (!failed)
		failed = &dummy;
	if (m->host_uid != geteuid() || m->host_gid != getegid()) {
		r = enter_mapped(m, failed);
		if (r < 0)
			return r;
		*failed = "namespaces";
		if (more && unshare(more) < 0)
			return -errno;
		*failed = NULL;
		return 0;
	}
	*failed = "user namespace";
	if (unshare(CLONE_NEWUSER) < 0)
		return -errno;
	r = userns_write_maps(0, m, failed);
	if (r < 0)
		return r;
	*failed = "namespaces";
	if (more && unshare(more) < 0)
		return -errno;
	*failed = NULL;
	return 0;
}

pid_t userns_clone(int more)
{
	return (pid_t)syscall(SYS_clone, CLONE_NEWUSER | more | SIGCHLD, NULL, NULL, NULL, NULL);
}

int userns_unshare(int more)
{
	return unshare(CLONE_NEWUSER | more) < 0 ? -errno : 0;
}

int userns_try(void)
{
	return userns_unshare(0);
}

/* Invalid on purpose, so that no namespace is made when the call reaches the kernel:
 * CLONE_SIGHAND without CLONE_VM is EINVAL (kernel/fork.c copy_process()), and unshare()
 * refuses unknown flags with EINVAL (check_unshare_flags()) before any capability check. A
 * seccomp filter answers before that (Docker's default: EPERM). */
bool userns_clone_filtered(void)
{
	long r = syscall(SYS_clone, CLONE_NEWUSER | CLONE_SIGHAND | SIGCHLD, NULL, NULL, NULL, NULL);
	int e = errno;

	if (r == 0)
		_exit(0); /* a kernel that accepted it after all: nothing to keep */
	if (r > 0) {
		(void)waitpid((pid_t)r, NULL, 0);
		return false;
	}
	return e != EINVAL;
}

bool userns_unshare_filtered(void)
{
	return unshare(CLONE_NEWUSER | (int)0x80000000u) < 0 && errno != EINVAL;
}

static int holder(void *arg)
{
	const int *pfd = arg;
	char b;

	/* Raw calls: this child shares the parent's memory (CLONE_VM), errno included. It has its
	 * own copy of the fd table, so it closes its write end first: then a supervisor killed
	 * before it released the child is EOF here, not a child blocked forever in a pipe it holds
	 * both ends of (seen under load by lifecycle.bats' SIGKILL-during-startup test). */
	(void)syscall(SYS_close, pfd[1]);
	(void)syscall(SYS_read, pfd[0], &b, 1);
	return 0;
}

int userns_join(int fd)
{
	return setns(fd, CLONE_NEWUSER) < 0 ? -errno : 0;
}

int userns_open(const struct userns_map *m)
{
	const size_t stack_size = (size_t)64 * 1024;
	int pfd[2], ufd = -1, r = 0;
	bool released = false;
	char path[64];
	void *stack;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED) {
		r = -errno;
		goto out;
	}
	/* the child only waits in the new namespace while its maps are written */
	pid = clone(holder, (char *)stack + stack_size, CLONE_NEWUSER | CLONE_VM | SIGCHLD, pfd);
	if (pid < 0) {
		r = -errno;
		goto out;
	}
	r = userns_write_maps(pid, m, NULL);
	if (r == 0) {
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
		ufd = open(path, O_RDONLY | O_CLOEXEC);
		if (ufd < 0)
			r = -errno;
	}
	/* Release the child: EOF once our write end is closed (the child closed its copy). pfd
	 * itself stays as it is until the child is reaped: the child reads pfd[1] from this frame
	 * (shared memory), possibly only now, when it is first scheduled. */
	close(pfd[1]);
	released = true;
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
out:
	if (stack != MAP_FAILED && stack)
		munmap(stack, stack_size);
	close(pfd[0]);
	if (!released)
		close(pfd[1]);
	return r < 0 ? r : ufd;
}

bool userns_is_initial(void)
{
	_cleanup_free_ char *map = NULL;
	unsigned a, b, c;

	/* the initial user namespace maps all of 0..2^32-2 onto itself; a container's does not */
	if (read_file_at(AT_FDCWD, "/proc/self/uid_map", 4096, &map, NULL) < 0 || sscanf(map, "%u %u %u", &a, &b, &c) != 3)
		return false;
	return a == 0 && b == 0 && c == 4294967295u;
}
