// SPDX-License-Identifier: GPL-2.0-or-later
/* spawn.c — fork + exec with an options struct, and a wait that retries EINTR (see spawn.h) */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <linux/close_range.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "util/spawn.h"

#define SPAWN_FDS_MAX 16 /* more mappings than any caller needs: refused with -E2BIG */

/* The child's side, between fork() and exec: async-signal-safe calls only (the caller may have
 * threads). @errfd is the error pipe, moved out of the targets' way. Returns the errno of the
 * step that failed; does not return when the exec worked. */
static int child_exec(const struct spawn_opts *o, int *errfd)
{
	int high[SPAWN_FDS_MAX], min = 3, fd;

	if (o->new_session ? setsid() < 0 : o->new_pgid && setpgid(0, 0) < 0)
		return errno;
	if (o->cwd && chdir(o->cwd) < 0)
		return errno;
	/* Every source is copied above every target first (close-on-exec), so a mapping never reads
	 * an fd that an earlier one replaced (swaps, and a @from that is another's @to); the error
	 * pipe moves up there too, or a target could replace it. */
	for (size_t i = 0; i < o->n_fds; i++)
		if (o->fds[i].to >= min)
			min = o->fds[i].to + 1;
	if ((fd = fcntl(*errfd, F_DUPFD_CLOEXEC, min)) < 0)
		return errno;
	close(*errfd);
	*errfd = fd;
	for (size_t i = 0; i < o->n_fds; i++) {
		int from = o->fds[i].from;
		int null = -1;

		if (from == SPAWN_DEVNULL && (from = null = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
			return errno;
		high[i] = fcntl(from, F_DUPFD_CLOEXEC, min);
		if (high[i] < 0)
			return errno;
		if (null >= 0)
			close(null);
	}
	/* marked, not closed: the error pipe must stay open until the exec */
	if (o->close_others && syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		return errno;
	for (size_t i = 0; i < o->n_fds; i++)
		if (dup2(high[i], o->fds[i].to) < 0) /* the copy at @to is not close-on-exec */
			return errno;
	if (o->alarm_s)
		alarm(o->alarm_s);
	if (o->envp)
		execve(o->path ?: o->argv[0], o->argv, o->envp);
	else
		execv(o->path ?: o->argv[0], o->argv);
	return errno;
}

int spawn(const struct spawn_opts *o, pid_t *pid)
{
	int ep[2], e = 0, r;
	ssize_t n;
	pid_t p;

	if (o->n_fds > SPAWN_FDS_MAX)
		return -E2BIG;
	if (pipe2(ep, O_CLOEXEC) < 0)
		return -errno;
	fflush(stdout);
	fflush(stderr);
	p = fork();
	if (p < 0) {
		r = -errno;
		close(ep[0]);
		close(ep[1]);
		return r;
	}
	if (p == 0) {
		close(ep[0]);
		e = child_exec(o, &ep[1]);
		(void)!write(ep[1], &e, sizeof(e));
		_exit(127);
	}
	close(ep[1]);
	/* end of file: the exec closed the pipe; an int: the errno of the step that failed */
	do
		n = read(ep[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(ep[0]);
	if (n == (ssize_t)sizeof(e)) {
		(void)spawn_wait(p);
		return e > 0 ? -e : -EIO;
	}
	*pid = p;
	return 0;
}

int spawn_wait(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}
