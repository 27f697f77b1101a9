/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spawn.h — start a program (fork, set up its fds, session, cwd, environment, exec) and wait for it.
 *
 * One way to start a helper program (issue 25): between fork() and exec the child does only what
 * the options say, with async-signal-safe calls, and a failure there (a dup2, chdir, setsid or
 * the exec itself) comes back to the caller as -errno through a close-on-exec pipe, not as an
 * exit status of 127 that reads like the program's own.
 *
 * Callers: build/podman.c (run), net/pasta.c (run_capture), cli/doctor.c (run_text). Fork sites
 * that exec and could move here, not moved yet: cli/cmd-doctor.c (2, with alarm()),
 * git/gitrun.c (resets the signal mask and dispositions), net/pasta.c pasta_start
 * (PR_SET_PDEATHSIG), pipeline/autophase.c (4: setsid, setenv, signal dispositions). The other
 * fork() calls run code of aisb in the child, not a program, and stay forks: rootfs/store.c
 * (links the base tree), ns/limits.c (watchdog), ns/refusal.c and cli/doctor.c (probes),
 * net/gate.c (gate, resolver), build/native.c (steps), run/init.c (the workload, CLONE_VFORK).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SPAWN_DEVNULL (-1) /* as spawn_fd.from: /dev/null, open for reading and writing */

/* The child's fd @to becomes a copy of the caller's @from (which may be any fd, also one of the
 * other mappings' @to: all are read before any is replaced). */
struct spawn_fd {
	int from;
	int to;
};

struct spawn_opts {
	const char *path;            /* the program (no $PATH search); NULL: argv[0] */
	char *const *argv;
	char *const *envp;           /* NULL: the caller's environment */
	const struct spawn_fd *fds;  /* fds 0-2 not listed are inherited */
	size_t n_fds;
	const char *cwd;             /* NULL: the caller's */
	bool new_session;            /* setsid(): no controlling terminal, a process group of its own */
	bool new_pgid;               /* setpgid(0, 0) (ignored with new_session) */
	bool close_others;           /* every fd >= 3 that is not a @to is closed at exec */
	unsigned alarm_s;            /* SIGALRM after this many seconds (0: none): a bound on a probe */
	int pdeathsig;               /* PR_SET_PDEATHSIG: sent when the caller's forking thread ends (0: none) */
	unsigned long long sig_default; /* SPAWN_SIG(n) bits: back to SIG_DFL (ones the caller ignores) */
	bool reset_sigmask;          /* an empty signal mask (not the caller's blocked set) */
	char *const *env_set;        /* NAME=VALUE, set over envp or the caller's environment */
};

#define SPAWN_SIG(s) (1ULL << (s)) /* a bit of spawn_opts.sig_default, for signals 1-63 */

/**
 * spawn() - start a program
 * @o: what to run and how
 * @pid: the child, when 0 is returned
 *
 * Flushes stdout and stderr first, so that their buffered output comes before the child's.
 * Returns after the exec succeeded, or after reaping a child that failed before it.
 *
 * Return: 0, or -errno: of pipe2()/fork(), or of the child's step that failed (-ENOENT: no
 * such program or cwd; -EACCES; -EBADF: a @from that is not open). Does not log.
 */
int spawn(const struct spawn_opts *o, pid_t *pid);

/**
 * spawn_wait() - wait for a child to end (EINTR is retried)
 * @pid: the child
 *
 * Return: its exit status (0-255), or 128 + the signal that killed it, or -errno of waitpid().
 * Does not log.
 */
int spawn_wait(pid_t pid);
