/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spawn.h — start a program (fork, set up its fds, session, cwd, environment, exec) and wait for it.
 *
 * One way to start a helper program (issue 25): between fork() and exec the child does only what
 * the options say, with async-signal-safe calls, and a failure there (a dup2, chdir, setsid or
 * the exec itself) comes back to the caller as -errno through a close-on-exec pipe, not as an
 * exit status of 127 that reads like the program's own.
 *
 * Callers: build/podman.c, build/podman-netns.c (podman unshare), cli/cmd-doctor.c (2, with
 * alarm_s), cli/doctor.c (run_text), git/gitrun.c (reset_sigmask, sig_default), net/pasta.c
 * (run_capture; pasta_start with pdeathsig), pipeline/autophase.c (4: the probe with
 * new_session, the unit, the host gate and the library with cwd and env_set).
 *
 * The fork() calls left run aisb's own code in the child, not a program, and stay forks:
 *   build/native.c native_probe: probe_child() tries a user namespace and an overlay mount
 *   build/native.c run_in_child: a build step's function (fakeroot, the step's namespaces)
 *   build/native.c run_entry: PID 1 of the RUN step's pid namespace (run_pid1())
 *   build/native.c step_user: user_child() resolves USER in the image's passwd and group files
 *   build/podman-netns.c podman_netns_open: the netns holder (joins podman's userns, the gate's stage)
 *   cli/doctor.c probe: a probe function that may unshare freely
 *   cli/doctor.c probe_proc: PID 1 of a new pid namespace mounting /proc
 *   net/gate.c start_resolver, gate_start: the gate's resolver and the gate, confined in the child
 *   ns/limits.c limits_setup: the cgroup watchdog (watchdog_main())
 *   ns/refusal.c refusal_denied_syscalls: probe_child() tries the calls a seccomp profile may deny
 *   rootfs/store.c store_tree_begin: link_tree() links the base image's tree
 *   run/init.c spawn_workload: the workload (clone CLONE_VM|CLONE_VFORK; fork() under ASan)
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
