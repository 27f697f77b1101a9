// SPDX-License-Identifier: GPL-2.0-or-later
/* tlsgate-rules.c — the system call allowlist of the confined tlsgate (a table only: seccomp-gen
 * compiles it into aisb when aisb is built) */
#include <sys/mman.h>

#include "net/gate-confine.h"
#include "util/macro.h"

#define ALLOW(n) { .name = (n) }
#define ALLOW1(n, op, a, m, v) { .name = (n), .cmp = { { (op), (a), (m), (v) } } }

/* Every call the tlsgate makes after tlsgate_confine(), and why; nothing else. Measured with
 * strace -f over tests/unit/test-tlsgate (docs/threat-model.md, "The tlsgate's process", has the
 * command and the counts). Default action: kill (SIGSYS), as for the gate: a call outside it
 * means the process left its known paths (a TLS parser exploited, or a bug), and a killed
 * tlsgate fails closed (the gate's keyed https connections fail, nothing is relayed). No socket,
 * connect or open: it only uses the fds the gate hands it. */
const struct seccomp_rule tlsgate_seccomp_rules[] = {
	/* the event loop */
	ALLOW("epoll_wait"), ALLOW("epoll_pwait"), ALLOW("epoll_ctl"),
	/* handoffs (SCM_RIGHTS) and events on the control socket */
	ALLOW("recvmsg"), ALLOW("sendto"),
	/* the relay: the four sockets of each connection */
	ALLOW("recvfrom"), ALLOW("shutdown"), ALLOW("close"), ALLOW("fcntl"),
	/* OpenSSL's DRBG: it reseeds from the kernel, and checks getpid() at every generate for a
	 * fork (crypto/rand/rand_lib.c) */
	ALLOW("getrandom"), ALLOW("getpid"),
	/* malloc; no executable mapping (mmap without PROT_EXEC only; no mprotect at all) */
	ALLOW1("mmap", SC_CMP_MASKED_EQ, 2, PROT_EXEC, 0), ALLOW("munmap"), ALLOW("mremap"), ALLOW("brk"),
	/* handshake deadlines */
	ALLOW("clock_gettime"),
	/* the end (_exit) */
	ALLOW("exit_group"),
#ifdef GATE_SANITIZED
	/* only in --enable-sanitizers builds, as for the gate (gate-rules.c) */
	ALLOW("sigaltstack"),
#endif
};
const size_t tlsgate_seccomp_rules_n = ELEMENTSOF(tlsgate_seccomp_rules);
