// SPDX-License-Identifier: GPL-2.0-or-later
/* gate-rules.c — the system call allowlists of the gate and of its resolver helper (tables only:
 * seccomp-gen compiles them into aisb when aisb is built) */
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "net/gate-confine.h"
#include "util/macro.h"

#define ALLOW(n) { .name = (n) }
#define ERRNO(n, e) { .name = (n), .err = (e) }
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
	/* --key-via-gate, https://: a keyed connection goes to the tlsgate (tls_handoff()), its
	 * two TCP sockets and the far ends of two plaintext socketpairs passed with SCM_RIGHTS on
	 * the control socket (sendmsg); the pairs are AF_UNIX stream sockets only, connected to
	 * each other and nothing else. Events come back with recv (recvfrom, above). */
	ALLOW2("socketpair", SC_CMP_EQ, 0, 0, AF_UNIX, SC_CMP_MASKED_EQ, 1, 0xf, SOCK_STREAM),
	ALLOW("sendmsg"),
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

/* Opening a file for reading only: no write access, no creation, no truncation, no append
 * (O_TMPFILE needs write access too). */
#define RESOLVER_OPEN_WRITE_BITS ((uint64_t)(O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND))

/* Every call the resolver helper makes after resolver_confine(): its loop (recv a request, check
 * it, queue it, send the answer), its worker threads, and getaddrinfo(3) with the NSS modules
 * it loads. Measured with strace -f of getaddrinfo(AF_UNSPEC, SOCK_STREAM) in a worker thread,
 * glibc 2.36 (Debian 12), against a DNS server on 127.0.0.1 in a network namespace of its own:
 * names from /etc/hosts, A+AAAA over UDP, a truncated answer retried over TCP, and with
 * "hosts: files mdns4_minimal [NOTFOUND=return] resolve [!UNAVAIL=return] myhostname dns" (the
 * modules of libnss-mdns, libnss-resolve, libnss-myhostname): it made the calls below and no
 * other (docs/threat-model.md, "The gate's resolver"). What it never needs, and so never gets:
 * execve, ptrace and process_vm_*, a new process (clone only with CLONE_THREAD; clone3, whose
 * flags seccomp cannot see, answers ENOSYS and glibc falls back to clone), namespaces, mount,
 * kill, a file opened for writing, chmod/chown/unlink/rename, raw, packet or vsock sockets (the
 * families are an allowlist: AF_UNIX for nscd and the NSS daemons' sockets, AF_INET/AF_INET6
 * datagram and stream sockets for DNS and the RFC 3484 source-address probe, AF_NETLINK
 * NETLINK_ROUTE for the interface addresses), bpf, keyctl, io_uring, userfaultfd, perf. Default
 * action: kill, as for the gate: its hostile input is DNS answers (glibc's parser had
 * CVE-2015-7547); a killed resolver fails closed (the gate answers 502 for names it must
 * resolve). Executable mappings stay allowed: NSS modules are dlopen()ed at the first lookup. */
const struct seccomp_rule resolver_seccomp_rules[] = {
	/* the requests from the gate and the answers */
	ALLOW("recvfrom"), ALLOW("sendto"),
	/* worker threads (pthread_create, mutexes, condition variables); no new process */
	ALLOW1("clone", SC_CMP_MASKED_EQ, SECCOMP_CLONE_FLAGS_ARG, CLONE_THREAD, CLONE_THREAD),
	ERRNO("clone3", ENOSYS), ALLOW("futex"), ALLOW("set_robust_list"), ALLOW("rseq"),
	ALLOW("rt_sigprocmask"), ALLOW("madvise"), ALLOW("exit"), ALLOW("exit_group"),
	/* glibc's first pthread_create() installs its cancellation handler (SIGRTMIN); every signal
	 * stays blocked (resolver_confine()), so no handler runs and there is no rt_sigreturn */
	ALLOW("rt_sigaction"),
	/* memory; NSS modules are mapped executable when first used */
	ALLOW("mmap"), ALLOW("mprotect"), ALLOW("munmap"), ALLOW("mremap"), ALLOW("brk"), ALLOW("getrandom"),
	/* /etc/nsswitch.conf, host.conf, resolv.conf, hosts, gai.conf, the NSS modules: read only */
	ALLOW1("openat", SC_CMP_MASKED_EQ, 2, RESOLVER_OPEN_WRITE_BITS, 0), ALLOW("read"), ALLOW("pread64"),
	ALLOW("lseek"), ALLOW("newfstatat"), ALLOW("fstat"), ALLOW("statx"), ALLOW("close"), ALLOW("fcntl"),
	ALLOW("uname"),
	/* DNS and the NSS daemons: the families getaddrinfo uses, nothing else */
	ALLOW1("socket", SC_CMP_EQ, 0, 0, AF_UNIX),
	ALLOW2("socket", SC_CMP_EQ, 0, 0, AF_INET, SC_CMP_MASKED_EQ, 1, 0xf, SOCK_DGRAM),
	ALLOW2("socket", SC_CMP_EQ, 0, 0, AF_INET, SC_CMP_MASKED_EQ, 1, 0xf, SOCK_STREAM),
	ALLOW2("socket", SC_CMP_EQ, 0, 0, AF_INET6, SC_CMP_MASKED_EQ, 1, 0xf, SOCK_DGRAM),
	ALLOW2("socket", SC_CMP_EQ, 0, 0, AF_INET6, SC_CMP_MASKED_EQ, 1, 0xf, SOCK_STREAM),
	ALLOW2("socket", SC_CMP_EQ, 0, 0, AF_NETLINK, SC_CMP_EQ, 2, 0, NETLINK_ROUTE),
	ALLOW("connect"), ALLOW("bind"), ALLOW("getsockname"), ALLOW("setsockopt"), ALLOW("getsockopt"),
	ALLOW("sendmmsg"), ALLOW("sendmsg"), ALLOW("recvmsg"), ALLOW("writev"), ALLOW("poll"), ALLOW("ppoll"),
	ALLOW1("ioctl", SC_CMP_EQ, 1, 0, FIONREAD),
	/* time (the vDSO answers them unless the clock source has no vDSO support) */
	ALLOW("clock_gettime"), ALLOW("gettimeofday"),
#ifdef GATE_SANITIZED
	/* ASan's runtime, as for the gate, and its pthread_create interceptor (measured: SIGSYS at
	 * gettid otherwise) */
	ALLOW("sigaltstack"), ALLOW("gettid"), ALLOW("sched_getaffinity"),
#endif
};
const size_t resolver_seccomp_rules_n = ELEMENTSOF(resolver_seccomp_rules);
