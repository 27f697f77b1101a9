// SPDX-License-Identifier: GPL-2.0-or-later
/* tlsgate.c — the tlsgate process: forked by the supervisor, set up (tlsgate-tls.c), confined
 * (net/gate-confine.h), then the relay (tlsgate-relay.c) until the gate's end of its control
 * socket closes. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net/gate-confine.h"
#include "net/tlsgate-internal.h"
#include "util/macro.h"

/* The hello's wait: set-up took 160-565 ms on a 2-CPU VM at load 8-13 (bench/tlsgate.sh: the
 * host store's ~140 roots, the P-256 keys, the handshakes in memory, confinement); a tlsgate that
 * says nothing in 30 s is broken. */
#define HELLO_TIMEOUT_MS 30000

/* Stage: not dumpable. Should: come first, before a key exists: no core dump (RLIMIT_CORE 0),
 * no ptrace attach by the caller's other processes, no /proc/PID/mem (PR_SET_DUMPABLE 0).
 * Mustn't: fail silently. */
static int undumpable(void)
{
	struct rlimit rl = { 0, 0 };

	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 || setrlimit(RLIMIT_CORE, &rl) < 0)
		return -errno;
	return 0;
}

/* Connections at once: TLSGATE_CONNS_MAX, or fewer when the fd limit (kept as it is by the
 * confinement) cannot hold four fds for each. */
static unsigned conns_max(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur >= 16 + 4 * (rlim_t)TLSGATE_CONNS_MAX)
		return TLSGATE_CONNS_MAX;
	/* 16 for its own (control socket, epoll, 0-2) and slack */
	return rl.rlim_cur >= 20 ? (unsigned)((rl.rlim_cur - 16) / 4) : 1;
}

static void hello_send(int sock, int status, const char *why, const char *pem)
{
	unsigned char msg[sizeof(struct tlsgate_wire_hello) + TLSGATE_PEM_MAX];
	struct tlsgate_wire_hello h = { .type = TLSGATE_MSG_HELLO, .status = status };
	size_t n = status == 0 && pem ? strlen(pem) : 0;

	snprintf(h.why, sizeof(h.why), "%s", why ? why : "");
	h.pem_len = (uint32_t)n;
	memcpy(msg, &h, sizeof(h));
	memcpy(msg + sizeof(h), pem ? pem : "", n);
	(void)send(sock, msg, sizeof(h) + n, MSG_NOSIGNAL);
}

/* The tlsgate's life, in the forked child. Never returns. */
_noreturn_ static void tlsgate_main(const struct tlsgate_config *cfg, int sock, pid_t parent)
{
	char why[TLSGATE_REASON_MAX] = "";
	struct tlsgate_tls *tls = NULL;
	char *pem = NULL;
	int keep[2] = { sock, -1 }, r = undumpable();
	unsigned max = conns_max();

	if (r < 0)
		snprintf(why, sizeof(why), "tlsgate: cannot make itself undumpable: %s", strerror(-r));
	else if (!(tls = tlsgate_tls_new(cfg, &pem, why, sizeof(why))))
		r = -EPROTO;
	else if ((keep[1] = epoll_create1(EPOLL_CLOEXEC)) < 0 || fcntl(sock, F_SETFL, O_NONBLOCK) < 0)
		r = -errno;
	if (r == 0 && (r = tlsgate_confine(parent, keep, ELEMENTSOF(keep))) < 0)
		snprintf(why, sizeof(why), "tlsgate: cannot confine itself: %s (run 'aisb doctor')", strerror(-r));
	if (r < 0 && !why[0])
		snprintf(why, sizeof(why), "tlsgate: set-up failed: %s", strerror(-r));
	hello_send(keep[0], r, why, pem);
	free(pem);
	if (r < 0)
		_exit(1);
	_exit(tlsgate_serve(tls, keep[1], keep[0], max) < 0 ? 1 : 0);
}

/* The first message: the status and the CA PEM. Return: 0 or -errno with @why set. */
static int hello_read(int sock, char **ca_pem, char *why, size_t why_len)
{
	unsigned char msg[sizeof(struct tlsgate_wire_hello) + TLSGATE_PEM_MAX];
	struct pollfd p = { .fd = sock, .events = POLLIN };
	struct tlsgate_wire_hello h;
	ssize_t k;

	if (poll(&p, 1, HELLO_TIMEOUT_MS) <= 0) {
		snprintf(why, why_len, "tlsgate: no answer in %d s", HELLO_TIMEOUT_MS / 1000);
		return -ETIMEDOUT;
	}
	k = recv(sock, msg, sizeof(msg), MSG_DONTWAIT);
	if (k < (ssize_t)sizeof(h)) {
		snprintf(why, why_len, "tlsgate: exited during its set-up");
		return -EPROTO;
	}
	memcpy(&h, msg, sizeof(h));
	h.why[sizeof(h.why) - 1] = '\0';
	if (h.type != TLSGATE_MSG_HELLO || h.status > 0 || h.pem_len > TLSGATE_PEM_MAX ||
	    (size_t)k != sizeof(h) + h.pem_len || (h.status == 0 && h.pem_len == 0)) {
		snprintf(why, why_len, "tlsgate: malformed answer");
		return -EPROTO;
	}
	if (h.status < 0) {
		snprintf(why, why_len, "%s", h.why);
		return h.status;
	}
	if (!(*ca_pem = malloc(h.pem_len + 1)))
		return -ENOMEM;
	memcpy(*ca_pem, msg + sizeof(h), h.pem_len);
	(*ca_pem)[h.pem_len] = '\0';
	return 0;
}

int tlsgate_spawn(const struct tlsgate_config *cfg, pid_t *pid, int *ctl_fd, char **ca_pem, char *why,
		  size_t why_len)
{
	pid_t parent = getpid(), p;
	int sv[2], r;

	why[0] = '\0';
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		r = -errno;
		snprintf(why, why_len, "tlsgate: cannot create its control socket: %s", strerror(-r));
		return r;
	}
	fflush(NULL);
	p = fork();
	if (p == 0) {
		close(sv[0]);
		tlsgate_main(cfg, sv[1], parent);
	}
	r = p < 0 ? -errno : 0;
	close(sv[1]);
	if (r < 0)
		snprintf(why, why_len, "tlsgate: cannot fork: %s", strerror(-r));
	else
		r = hello_read(sv[0], ca_pem, why, why_len);
	if (r < 0) {
		if (p > 0) {
			kill(p, SIGKILL);
			(void)waitpid(p, NULL, 0);
		}
		close(sv[0]);
		return r;
	}
	*pid = p;
	*ctl_fd = sv[0];
	return 0;
}
