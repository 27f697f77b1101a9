// SPDX-License-Identifier: GPL-2.0-or-later
/* gate-rules.c — the confined gate's system call allowlist (a table only: seccomp-gen compiles
 * it into aisb when aisb is built) */
#include <sys/mman.h>
#include <sys/socket.h>

#include "net/gate-confine.h"
#include "util/macro.h"

#define ALLOW(n) { .name = (n) }
#define ALLOW1(n, op, a, m, v) { .name = (n), .cmp = { { (op), (a), (m), (v) } } }
#define ALLOW2(n, op, a, m, v, op2, a2, m2, v2) \
	{ .name = (n), .cmp = { { (op), (a), (m), (v) }, { (op2), (a2), (m2), (v2) } } }

/* Every call the gate's event loop makes after gate_confine(), and why; nothing else. Measured
 * with strace -f of the gate over HTTP, CONNECT, transparent, DNS over UDP and TCP, denials,
 * malformed and oversized heads, host-side resolution and a 64 MiB upload, and the e2e net suite:
 * it made exactly the calls below except brk/mmap/munmap/mremap (malloc, once the heap it
 * inherited is full), epoll_pwait (the only epoll wait on arm64 and others) and clock_gettime
 * (the vDSO answers it, unless the clock source has no vDSO support). Default action: kill the
 * process (SIGSYS), not EPERM: a call outside this list means the gate left its known code paths
 * (an exploited parser, or a bug); an EPERM would let an exploit probe on, while a killed gate
 * fails closed (the listeners die with it, so the sandbox's connections are refused) and the
 * supervisor reports it with the signal that names the reason. Signals are all blocked and no
 * handler runs, so there is no rt_sigreturn; no thread, so no exit or futex. */
const struct seccomp_rule gate_seccomp_rules[] = {
	/* the event loop */
	ALLOW("epoll_wait"), ALLOW("epoll_pwait"), ALLOW("epoll_ctl"),
	/* sandbox side: accept on the listeners it kept, read heads and queries, answer; the
	 * egress log (write) */
	ALLOW("accept4"), ALLOW("recvfrom"), ALLOW("sendto"), ALLOW("write"), ALLOW("shutdown"),
	ALLOW("close"), ALLOW("getsockopt"), ALLOW("setsockopt"), ALLOW("fcntl"),
	/* host side: TCP to the checked address only. socket(2) is limited to AF_INET/AF_INET6
	 * stream sockets: no AF_UNIX (host daemons' sockets), no AF_NETLINK, no AF_VSOCK (not
	 * namespaced: reaches the VM host, issue 10), no raw or UDP sockets. */
	ALLOW2("socket", SC_CMP_EQ, 0, 0, AF_INET, SC_CMP_MASKED_EQ, 1, 0xf, SOCK_STREAM),
	ALLOW2("socket", SC_CMP_EQ, 0, 0, AF_INET6, SC_CMP_MASKED_EQ, 1, 0xf, SOCK_STREAM),
	ALLOW("connect"),
	/* the relay: splice through pipes */
	ALLOW("splice"), ALLOW("pipe2"),
	/* malloc; no executable mapping (mmap without PROT_EXEC only; no mprotect at all) */
	ALLOW1("mmap", SC_CMP_MASKED_EQ, 2, PROT_EXEC, 0), ALLOW("munmap"), ALLOW("mremap"), ALLOW("brk"),
	/* time for deadlines and log lines */
	ALLOW("clock_gettime"),
	/* the end (_exit) */
	ALLOW("exit_group"),
#ifdef GATE_SANITIZED
	/* only in --enable-sanitizers builds (the unit tests in CI): ASan's runtime checks its
	 * alternate signal stack in its interceptors and at exit (measured: SIGSYS right after
	 * sigaltstack otherwise) */
	ALLOW("sigaltstack"),
#endif
};
const size_t gate_seccomp_rules_n = ELEMENTSOF(gate_seccomp_rules);

