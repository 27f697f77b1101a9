/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tlsgate-internal.h — what the tlsgate's files share: the wire format on its control socket
 * (private to src/net/tlsgate*.c and tests/unit/test-tlsgate.c) and the stages of its process.
 * No openssl header here: the gate's side (tlsgate-wire.c) includes it too. */
#ifndef AISB_NET_TLSGATE_INTERNAL_H
#define AISB_NET_TLSGATE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "net/tlsgate.h"

/* The longest DNS name (RFC 1035: 253 characters) and its NUL, rounded up. */
#define TLSGATE_NAME_MAX 256
/* The CA certificate's PEM: ~800 bytes for one name, ~1 KiB for four (measured). */
#define TLSGATE_PEM_MAX 8192

enum tlsgate_msg {
	TLSGATE_MSG_HELLO = 0x54475331,   /* tlsgate -> supervisor, once: status, then the CA PEM */
	TLSGATE_MSG_HANDOFF = 0x54475332, /* gate -> tlsgate: one connection, 4 fds */
	TLSGATE_MSG_EVENT = 0x54475333,   /* tlsgate -> gate: a connection's outcome */
};

/* Each message is one SOCK_SEQPACKET datagram; every field is in host order (both ends are the
 * same binary on the same machine). */
struct tlsgate_wire_hello {
	uint32_t type;
	int32_t status;
	uint32_t pem_len; /* bytes of PEM that follow */
	char why[TLSGATE_REASON_MAX];
};

struct tlsgate_wire_handoff {
	uint32_t type;
	uint32_t pre_len; /* bytes of the client's ClientHello that follow */
	uint64_t id;
	char name[TLSGATE_NAME_MAX];
};

struct tlsgate_wire_event {
	uint32_t type;
	int32_t status;
	uint64_t id;
	char reason[TLSGATE_REASON_MAX];
};

/* The fds of a handoff, in the order they travel. */
enum { TLSGATE_FD_CLIENT, TLSGATE_FD_UPSTREAM, TLSGATE_FD_PLAIN_CLIENT, TLSGATE_FD_PLAIN_UPSTREAM, TLSGATE_FD_MAX };

/* Connections served at once; one more is refused with an event (-EMFILE). Each holds four fds
 * and at most ~300 KiB of buffers (tlsgate-relay.c), so 256 stay under 80 MiB. */
#define TLSGATE_CONNS_MAX 256

/* The process's name (comm), as ps and /proc/PID/status show it. */
#define TLSGATE_PROC_NAME "aisb-tlsgate"

/* OpenSSL's types by their struct tags (SSL_CTX, X509, EVP_PKEY), so that this header needs no
 * openssl include */
struct ssl_ctx_st;
struct x509_st;
struct evp_pkey_st;
struct ssl_st;

/* One endpoint name and the leaf certificate the CA signed for it. */
struct tlsgate_leaf {
	char name[TLSGATE_NAME_MAX];
	struct x509_st *cert;
	struct evp_pkey_st *key;
};

/* The process's TLS state (tlsgate-tls.c), made before it confines itself, read-only after. */
struct tlsgate_tls {
	struct ssl_ctx_st *server; /* towards the sandbox: TLS >= 1.2, ALPN http/1.1, SNI checked */
	struct ssl_ctx_st *client; /* towards the endpoint: the host trust store, peer verified */
	struct tlsgate_leaf leaves[TLSGATE_NAMES_MAX];
	size_t n_leaves;
};

/**
 * tlsgate_tls_new() - everything the tlsgate needs before it confines itself
 * @cfg: the endpoint names
 * @ca_pem: the CA certificate PEM (malloc'd)
 * @why: a reason on failure
 * @why_len: its size
 *
 * Loads libssl, forces its providers, reads the trust store, makes the CA and one leaf per
 * name, frees the CA key and runs a throwaway handshake in memory. Return: the state, or NULL
 * with @why set. Does not log.
 */
struct tlsgate_tls *tlsgate_tls_new(const struct tlsgate_config *cfg, char **ca_pem, char *why, size_t why_len);

/**
 * tlsgate_serve() - the confined relay's event loop (tlsgate-relay.c)
 * @tls: tlsgate_tls_new()'s state
 * @ep: an epoll fd made before confinement (epoll_create1 is not in the allowlist)
 * @ctl: the control socket (handoffs in, events out), nonblocking
 * @max_conns: connections served at once
 *
 * Returns when @ctl is closed by the other end. Return: 0, or -errno on a fatal error. Does
 * not log (the process is confined: its stderr is a dead pipe).
 */
int tlsgate_serve(struct tlsgate_tls *tls, int ep, int ctl, unsigned max_conns);

/* The leaf for @name (case-insensitive), or NULL. */
const struct tlsgate_leaf *tlsgate_leaf_find(const struct tlsgate_tls *tls, const char *name);

/* What the SNI callback checks a client's SSL against (its app data), and why it refused. */
struct tlsgate_sni {
	const char *name;
	char reason[TLSGATE_REASON_MAX];
};

/* A server SSL for @leaf's name: its certificate and key, the SNI check against @chk (kept by
 * the caller as long as the SSL). Return: 0 or -ENOMEM. */
int tlsgate_server_ssl_setup(struct ssl_st *s, const struct tlsgate_leaf *leaf, struct tlsgate_sni *chk);

/* A client SSL towards @name: SNI, and the certificate must match the name (no partial
 * wildcards). Return: 0 or -ENOMEM. */
int tlsgate_client_ssl_setup(struct ssl_st *s, const char *name);

#endif
