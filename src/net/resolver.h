/* SPDX-License-Identifier: GPL-2.0-or-later */
/* resolver.h — the gate's host-side name resolution, in a helper process of its own (issue 13).
 *
 * The confined gate has no filesystem, so it cannot run getaddrinfo (which reads /etc and loads
 * NSS modules). It sends each name that passed policy_check() to this helper over a
 * SOCK_SEQPACKET socketpair, one fixed-size request per message, and gets the addresses back
 * asynchronously (a slow DNS answer never stalls other connections: up to RESOLVER_THREADS
 * threads, started on demand). The helper checks the name against the policy again, so a
 * compromised gate cannot use it to look up names the allowlist does not name. It exits when the
 * gate's end of the socket closes.
 */
#ifndef AISB_NET_RESOLVER_H
#define AISB_NET_RESOLVER_H

#include <stdint.h>

#include "net/policy.h"

#define RESOLVER_THREADS 4

struct resolver_req {
	uint64_t id;
	uint16_t port;
	char host[ALLOW_NAME_MAX + 1]; /* NUL-terminated */
};

struct resolver_ans {
	uint64_t id;
	int32_t err;                   /* 0, or a positive errno / EAI code: does not resolve */
	uint32_t n;                    /* <= POLICY_ADDRS_MAX */
	struct net_addr addrs[POLICY_ADDRS_MAX];
};

/**
 * resolver_main() - serve resolution requests on @fd until it closes, then exit the process
 * @fd: the helper's end of the socketpair
 * @policy: the sandbox's policy (the supervisor's copy, inherited by fork)
 *
 * Does not return. Does not log (the helper's stderr is closed).
 */
_Noreturn void resolver_main(int fd, const struct net_policy *policy);

#endif
