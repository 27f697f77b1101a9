/* SPDX-License-Identifier: GPL-2.0-or-later */
/* gate-confine.h — how the gate's process confines itself before it reads a byte from the
 * sandbox, and how its resolver helper drops what it does not need (issue 13).
 *
 * The gate parses hostile bytes (HTTP heads, TLS ClientHellos, DNS queries from the sandbox), so,
 * in the manner of passt's isolation.c, it runs as its own process that gives up everything it
 * does not need right after it was forked from the supervisor: every inherited fd but its own, the
 * filesystem (an empty read-only tmpfs root in a user and mount namespace of its own), every
 * capability, most resource limits, and every system call outside one allowlist
 * (gate_seccomp_rules[], default action: kill the process). Host-side name resolution, which
 * needs /etc and NSS modules, is done by a separate helper process (net/resolver.h) that drops
 * capabilities and privileges but keeps the filesystem.
 */
#ifndef AISB_NET_GATE_CONFINE_H
#define AISB_NET_GATE_CONFINE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ns/seccomp.h"

/* Set in ASan builds (--enable-sanitizers): the gate's table and limits differ there. */
#if defined(__SANITIZE_ADDRESS__)
#define GATE_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GATE_SANITIZED 1
#endif
#endif

/* The gate's exit status when it could not confine itself (it said why on stderr first): the
 * supervisor then stops the sandbox with exit 77, as for any enforcement that cannot be
 * installed. */
#define GATE_EXIT_CONFINE 77

/* The gate's process name (comm), as `ps` and /proc/PID/status show it; the resolver's. */
#define GATE_PROC_NAME "aisb-gate"
#define RESOLVER_PROC_NAME "aisb-resolve"

/* The system calls the confined gate may make, with their argument filters: one table, the one
 * gate_confine() compiles and loads (unit-tested: tests/unit/test-gate-confine.c). */
extern const struct seccomp_rule gate_seccomp_rules[];
extern const size_t gate_seccomp_rules_n;

/* gate_seccomp_rules[] compiled when aisb was built (default action: kill the process), by
 * seccomp-gen into src/ns/seccomp-filters.c; test-gate-confine compiles the table again and
 * compares. */
extern const struct seccomp_prog seccomp_prebuilt_gate;

/* The resolver helper's allowlist (src/net/gate-rules.c, why each call), compiled as the gate's
 * is (default action: kill); resolver_confine() loads it last. */
extern const struct seccomp_rule resolver_seccomp_rules[];
extern const size_t resolver_seccomp_rules_n;
extern const struct seccomp_prog seccomp_prebuilt_resolver;

/* The tlsgate's allowlist (src/net/tlsgate-rules.c, why each call), compiled as the gate's is
 * (default action: kill); tlsgate_confine() loads it last. */
extern const struct seccomp_rule tlsgate_seccomp_rules[];
extern const size_t tlsgate_seccomp_rules_n;
extern const struct seccomp_prog seccomp_prebuilt_tlsgate;

/**
 * gate_seccomp_compile() - the gate's filter: seccomp_prebuilt_gate
 * @out: the program (seccomp_prog_free() is harmless on it)
 *
 * Allocates nothing (see ns/seccomp.h for why nothing is compiled at run time). Return: 0.
 */
int gate_seccomp_compile(struct seccomp_prog *out);

/**
 * gate_confine() - confine the calling (freshly forked, single-threaded) gate process
 * @parent: the supervisor's pid, taken before the fork
 * @prog: gate_seccomp_compile()'s program, loaded as the last step
 * @keep: the fds the gate goes on using; every other fd is closed (0-2 become /dev/null)
 * @n_keep: how many
 * @fsize: RLIMIT_FSIZE, the furthest offset it may write a file to (its egress log); 0: 1 GiB
 *
 * Stages, in order: the parent's death kills it; signals blocked; an empty root; no capabilities; resource limits; fds closed; no_new_privs and the filter loaded.
 * After it returned, the process can only use the fds it kept.
 * Return: 0, or -errno. Logs on failure (to the supervisor's stderr: nothing of the sandbox has
 * been read yet); afterwards the log is silenced.
 */
int gate_confine(pid_t parent, const struct seccomp_prog *prog, int *keep, size_t n_keep, uint64_t fsize);

/**
 * tlsgate_confine() - confine the freshly forked tlsgate (net/tlsgate.h), as gate_confine() does
 * @parent: the supervisor's pid, taken before the fork
 * @keep: the fds it goes on using (its control socket, its epoll fd); every other fd is closed
 * @n_keep: how many
 *
 * The same stages as gate_confine(), with RLIMIT_FSIZE 0 (it writes no file) and the tlsgate's
 * allowlist (tlsgate_seccomp_rules[]) loaded last. Return: 0 or -errno. Logs on failure;
 * afterwards the log is silenced.
 */
int tlsgate_confine(pid_t parent, int *keep, size_t n_keep);

/**
 * resolver_confine() - drop what the resolver helper does not need
 * @parent: the supervisor's pid, taken before the fork
 * @keep: the one fd it serves (its socket to the gate); every other fd is closed
 *
 * The parent's death kills it; a user namespace of its own and no capabilities in it (a root
 * caller's helper loses its host capabilities with the namespace); no_new_privs; no core dumps,
 * no file writes, a small fd limit; then its seccomp allowlist (resolver_seccomp_rules[]). It
 * keeps the filesystem, read-only by the filter (getaddrinfo reads /etc and loads NSS modules).
 * Return: 0 or -errno. Logs on failure; afterwards the log is silenced.
 */
int resolver_confine(pid_t parent, int *keep);

#endif
