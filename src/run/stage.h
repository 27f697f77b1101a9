/* SPDX-License-Identifier: GPL-2.0-or-later */
/* stage.h — what the supervisor, init and the workload say to each other.
 *
 * Supervisor -> init, on the sync socket: one `struct sync_go` after the id maps are written.
 * Init -> supervisor: one `struct sync_ready` (with the pty master as SCM_RIGHTS when asked for)
 * once the workload is forked. Any stage that fails before execve writes one `struct
 * stage_report` to the CLOEXEC error pipe and exits; the pipe closing without a report means
 * execve succeeded.
 */
#ifndef AISB_RUN_STAGE_H
#define AISB_RUN_STAGE_H

#include <signal.h>
#include <stdint.h>
#include <sys/ioctl.h>

#include "core/plan.h"
#include "ns/mounts.h"
#include "ns/seccomp.h"

struct sync_go {
	uint32_t magic;
	struct winsize ws;      /* initial pty size, when a pty is used */
};

struct sync_ready {
	uint32_t magic;
	int32_t workload_pid;   /* as seen inside */
	uint32_t nfds;          /* fds passed with this message: [0] pty master if tty_mask, then */
	uint32_t gate_nfds;     /* the gate's listening sockets (NETPLAN_GATE_FDS in allow mode) */
};

#define SYNC_MAGIC 0x41495342u /* "AISB" */

/* A report's message: a refusal with its fix (the unknown engine's proc refusal is ~570 bytes);
 * the whole report stays below PIPE_BUF, so one write delivers it. */
#define STAGE_MSG_MAX 1024

struct stage_report {
	int32_t code;           /* exit code for the supervisor: 77, 125, 126, 127 */
	int32_t err;            /* errno, 0 if none */
	char msg[STAGE_MSG_MAX]; /* names the step; never an env value */
};

struct init_args {
	const struct aisb_plan *plan;
	const struct mount_plan *mounts;
	int sync_fd;
	int err_fd;
	unsigned tty_mask;      /* bit i: fd i is a terminal on the host and gets the pty slave */
	sigset_t oldmask;       /* the supervisor's mask before it blocked signals */
};

/* PID 1 of the sandbox: builds the tree, forks the workload, reaps and forwards signals, exits
 * with the workload's status (128+N for signal N). Never returns. */
_Noreturn void init_main(const struct init_args *a);

/* Writes a report to @fd and exits with @code. For use before execve only. Never returns. */
_Noreturn void stage_fail(int fd, int code, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
