// SPDX-License-Identifier: GPL-2.0-or-later
/* spawn.c — fork + exec with an options struct, and a wait that retries EINTR (see spawn.h) */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/close_range.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "util/spawn.h"

#define SPAWN_FDS_MAX 16 /* more mappings than any caller needs: refused with -E2BIG */

/* The child's side, between fork() and exec: async-signal-safe calls only (the caller may have
 * threads). @errfd is the error pipe, moved out of the targets' way. Returns the errno of the
 * step that failed; does not return when the exec worked. */
static int child_exec(const struct spawn_opts *o, char *const *envp, int *errfd)
{
	int high[SPAWN_FDS_MAX], min = 3, fd;

	if (o->pdeathsig && prctl(PR_SET_PDEATHSIG, o->pdeathsig) < 0)
		return errno;
	if (o->sig_default) {
		struct sigaction dfl = { .sa_handler = SIG_DFL };

		for (int s = 1; s < 64; s++)
			if ((o->sig_default & SPAWN_SIG(s)) && sigaction(s, &dfl, NULL) < 0)
				return errno;
	}
	if (o->reset_sigmask) {
		sigset_t none;

		sigemptyset(&none);
		if (sigprocmask(SIG_SETMASK, &none, NULL) < 0)
			return errno;
	}
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
	if (envp)
		execve(o->path ?: o->argv[0], o->argv, envp);
	else
		execv(o->path ?: o->argv[0], o->argv);
	return errno;
}

/* Whether NAME=VALUE entries @a and @b set the same name. Pure. */
static bool same_name(const char *a, const char *b)
{
	size_t n = strcspn(a, "=");

	return strncmp(a, b, n) == 0 && b[n] == '=';
}

/* @base with each entry of @set in place of the one of the same name, or after the others: an
 * array of pointers into both (no string is copied), built before fork() because the child may
 * not allocate. Return: malloc'd, or NULL (ENOMEM). */
static char **env_merge(char *const *base, char *const *set)
{
	size_t nb = 0, ns = 0, n = 0;
	char **v;

	while (base && base[nb])
		nb++;
	while (set[ns])
		ns++;
	v = calloc(nb + ns + 1, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < nb; i++) {
		bool replaced = false;

		for (size_t j = 0; j < ns && !replaced; j++)
			replaced = same_name(set[j], base[i]);
		if (!replaced)
			v[n++] = base[i];
	}
	for (size_t j = 0; j < ns; j++)
		v[n++] = set[j];
	return v;
}

int spawn(const struct spawn_opts *o, pid_t *pid)
{
	char **merged = NULL;
	int ep[2], e = 0, r;
	ssize_t n;
	pid_t p;

	if (o->n_fds > SPAWN_FDS_MAX)
		return -E2BIG;
	if (o->env_set && !(merged = env_merge(o->envp ?: environ, o->env_set)))
		return -ENOMEM;
	if (pipe2(ep, O_CLOEXEC) < 0) {
		free(merged);
		return -errno;
	}
	fflush(stdout);
	fflush(stderr);
	p = fork();
	if (p < 0) {
		r = -errno;
		close(ep[0]);
		close(ep[1]);
		free(merged);
		return r;
	}
	if (p == 0) {
		close(ep[0]);
		e = child_exec(o, merged ?: o->envp, &ep[1]);
		(void)!write(ep[1], &e, sizeof(e));
		_exit(127);
	}
	free(merged);
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
