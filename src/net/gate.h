/* SPDX-License-Identifier: GPL-2.0-or-later */
/* gate.h — aisb's egress gate: proxy listener, DNS stub and transparent listener (design 6).
 *
 * The gate serves listening sockets that init created inside the sandbox's netns and passed out,
 * so it is reachable only from inside, and dials out from the host. It parses hostile bytes, so
 * it runs as a process of its own, forked from the supervisor at the first connection or query
 * (gate_wake_fd(), gate_start()), that confines itself before it reads a byte from the sandbox
 * (net/gate-confine.h: no filesystem, no capabilities, its own limits, a seccomp allowlist).
 * It takes the listening sockets with it: when it dies, nothing listens any more and the
 * sandbox's connections are refused (gate_reaped() reports it). One epoll loop over non-blocking
 * sockets (bounded heads, header counts, connect/head/idle timeouts, a cap on concurrent
 * connections) relays with splice(2) through pipes; host-side name resolution is done by a
 * resolver helper process (net/resolver.h), so a slow DNS answer never stalls other connections.
 * Every connection and DNS denial is one JSON line in the egress log, which the supervisor opens
 * for it, bounded (GATE_LOG_MAX) without ever dropping an allowed connection's record; at the end
 * the gate hands the supervisor its summary, which gate_summary() prints: the top denials with
 * the flag that would allow each, and the records dropped at the bound.
 */
#ifndef AISB_NET_GATE_H
#define AISB_NET_GATE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "net/policy.h"

#define GATE_PROXY_PORT 3128
#define GATE_TRANSPARENT_PORT 3129
#define GATE_DNS_ADDR "127.0.0.53"
#define GATE_DNS_PORT 53

/* The egress log's bound per session, however long a flood lasts (docs/networking.md, "Egress
 * log"): a quarter of it is kept for the records of allowed connections, which are never
 * dropped (one that finds no room is refused instead), denials beyond their share are counted
 * and the count is written at the end. */
#define GATE_LOG_MAX ((uint64_t)64 << 20)

/* The model key the gate adds on the way out (--key-via-gate, docs/agents.md "The key stays
 * outside"): the sandbox holds only a placeholder, random per session; in the head of a plain
 * HTTP request to the model endpoint (host, port as the policy names them) the gate replaces
 * `Authorization: Bearer <placeholder>` and `x-api-key: <placeholder>` with the real value. A head
 * that carries the placeholder to any other destination is refused. The value reaches the gate
 * only as memory of the supervisor it is forked from: never argv, an environment, a file or
 * the egress log, and no system call is added to the gate's allowlist. */
#define GATE_PLACEHOLDER_PREFIX "aisb-placeholder-"
#define GATE_PLACEHOLDER_HEX 32
#define GATE_PLACEHOLDER_SIZE (sizeof(GATE_PLACEHOLDER_PREFIX) + GATE_PLACEHOLDER_HEX)
#define GATE_KEYS_MAX 16
#define GATE_KEY_VALUE_MAX 4096

struct gate_key {
	char host[ALLOW_NAME_MAX + 1];   /* the model endpoint, as policy_check() names it */
	uint16_t port;
	char placeholder[GATE_PLACEHOLDER_SIZE];
	char *value;                     /* the real key (the plan's memory; never printed) */
	bool tls;                        /* an https:// endpoint: the tlsgate terminates the sandbox's
					  * TLS and makes its own to the endpoint (gate_tls()) */
};

/* The gate's own ports inside the sandbox, with what listens there: never publishable. */
struct gate_port {
	uint16_t port;
	const char *what;
};
#define GATE_PORTS_N 3
extern const struct gate_port gate_ports[GATE_PORTS_N];

struct gate_config {
	int proxy_fd;          /* listening TCP sockets / bound UDP socket (the gate owns them); -1: absent */
	int transparent_fd;
	int dns_udp_fd;
	int dns_tcp_fd;
	const struct net_policy *policy;
	const char *upstream;  /* --proxy HOST:PORT, or NULL */
	int log_fd;            /* egress log, O_APPEND (the caller's); -1: gate_start() creates log_path */
	const char *log_path;  /* egress log to create (0600) at gate_start() when log_fd is -1 (NULL:
				* no log); if it cannot be, allowed connections are refused (503) */
	const char *log_hint;  /* how to read the log after exit ("aisb logs ID"), named in the
				* summary; NULL: "the egress log" (the caller keeps it alive) */
	uint64_t log_max;      /* the egress log's bound in bytes (0: GATE_LOG_MAX; at least 64 KiB) */
	unsigned max_conns;    /* 0: default */
	unsigned head_timeout_ms, connect_timeout_ms, idle_timeout_ms; /* 0: defaults */
	const struct gate_key *keys;     /* --key-via-gate: the caller's, outliving the gate */
	size_t n_keys;
};

struct gate;

int gate_new(const struct gate_config *c, struct gate **out);
int gate_start(struct gate *g);
int gate_wake_fd(const struct gate *g);
int gate_tls(struct gate *g, pid_t pid, int ctl_fd);
int gate_listen(struct gate *g, int proxy_fd, int transparent_fd, int dns_udp_fd, int dns_tcp_fd);
int gate_reaped(struct gate *g, pid_t pid, int st);
bool gate_refused(const struct gate *g);
void gate_stop(struct gate *g);
int gate_summary(struct gate *g, FILE *f);
void gate_free(struct gate *g);

#endif
