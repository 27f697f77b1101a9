/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tlsgate.h — TLS termination for --key-via-gate's https:// endpoints, in its own confined
 * process (issue 27; docs/key-via-gate-tls.md). The gate never loads libssl: it hands a
 * connection over with tlsgate_handoff() and reads plaintext. */
#ifndef AISB_NET_TLSGATE_H
#define AISB_NET_TLSGATE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TLSGATE_NAMES_MAX 4        /* endpoint names per session */
#define TLSGATE_PRE_MAX   (5 + 16384) /* client bytes the gate read before the handoff: a whole
                                       * TLS record, the largest ClientHello the SNI check reads */
#define TLSGATE_REASON_MAX 160

struct tlsgate_config {
	const char *names[TLSGATE_NAMES_MAX]; /* the https endpoints' host names (policy_check()'s) */
	size_t n_names;
};

/* Supervisor side. Forks the tlsgate (see above). On success *pid, *ctl_fd (the gate's end, a
 * SOCK_SEQPACKET CLOEXEC socket: give it to the gate), and the CA certificate PEM in *ca_pem
 * (malloc'd, public). Return: 0, or -errno / -EPROTO with @why filled (no secret in it). */
int tlsgate_spawn(const struct tlsgate_config *cfg, pid_t *pid, int *ctl_fd, char **ca_pem,
		  char *why, size_t why_len);

/* Gate side (no libssl). Hands one connection to the tlsgate: @id (the gate's, echoed in events),
 * @name (one of cfg.names; the SNI must equal it and the upstream certificate must match it),
 * @pre/@pre_len (client bytes already read, the start of its ClientHello; may be 0), and four fds
 * that the tlsgate takes (the caller closes its copies after a 0 return):
 *   client          the sandbox's TCP connection (TLS to be terminated, as server)
 *   upstream        the TCP connection the gate dialled to the endpoint (TLS as client)
 *   plain_client    the tlsgate writes the client's decrypted bytes here, and encrypts to the
 *                   client what it reads here
 *   plain_upstream  the tlsgate encrypts to upstream what it reads here, and writes the decrypted
 *                   answers here
 * EOF/shutdown propagate in each direction. Return: 0 or -errno. */
int tlsgate_handoff(int ctl_fd, uint64_t id, const char *name, const void *pre, size_t pre_len,
		    int client, int upstream, int plain_client, int plain_upstream);

/* Gate side: one event from the tlsgate (read when ctl_fd is readable; nonblocking).
 * status: 0 = both handshakes done (upstream verified), else -errno-like with @reason set
 * ("upstream certificate: <X509 verify string>", "client SNI 'x' is not H", "client handshake:
 * ..."). Return: 1 with *ev filled, 0 when none is waiting, -errno (the tlsgate is gone). */
struct tlsgate_event {
	uint64_t id;
	int32_t status;
	char reason[TLSGATE_REASON_MAX];
};
int tlsgate_event_read(int ctl_fd, struct tlsgate_event *ev);

#endif
