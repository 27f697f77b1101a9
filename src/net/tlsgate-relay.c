// SPDX-License-Identifier: GPL-2.0-or-later
/* tlsgate-relay.c — the confined tlsgate's event loop: handoffs from the gate, two TLS ends per
 * connection (server towards the sandbox, verified client towards the endpoint) and their
 * plaintext relayed to and from the gate over two socketpairs.
 *
 * Every TLS end reads and writes through memory BIOs that this file fills from and drains to the
 * socket, so the client's first bytes (read by the gate before the handoff) are fed in first,
 * and every buffer has a bound: a memory BIO is filled from its socket only while it holds less
 * than BIO_CAP, decrypted bytes wait in a BUF_CAP buffer, and the plaintext sockets are read only
 * while the TLS end's output BIO holds less than BIO_CAP. A client that floods stops being read
 * (TCP back-pressure), it never grows a buffer. Level-triggered epoll: after a connection has
 * been pumped until nothing moves, every fd it waits on is registered for what it waits for. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <fcntl.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "net/tlsgate-internal.h"
#include "util/fdpass.h"
#include "util/macro.h"

#define BUF_CAP 16384            /* decrypted bytes waiting for their plaintext socket */
#define BIO_CAP 65536            /* bytes a memory BIO holds before its source is not read */
#define IO_CHUNK 16384           /* one read or send */
#define HANDSHAKE_MS 30000       /* both handshakes, from the handoff */
#define EV_CTL UINT64_MAX        /* epoll data of the control socket */

/* One TLS end: its TCP socket, the SSL and the two memory BIOs in front of it. */
struct tls_end {
	int fd;
	SSL *ssl;
	BIO *rb, *wb;        /* read from fd, to be decrypted / encrypted, to be sent to fd */
	bool fd_eof;         /* the socket read 0 */
	bool tls_done;       /* close_notify (or the client's EOF): nothing more to decrypt */
	bool close_sent;     /* SSL_shutdown() queued our close_notify */
	bool wr_shut;        /* ... and it was sent, then shutdown(SHUT_WR) */
	uint32_t ev;         /* registered epoll events (0: not in the set) */
};

/* One plaintext socket to the gate and the decrypted bytes waiting to be written to it. */
struct plain_end {
	int fd;
	bool eof;            /* the gate shut its side: close_notify to the TLS end */
	bool wr_shut;
	uint32_t ev;         /* as tls_end's */
	size_t off, len;
	unsigned char buf[BUF_CAP];
};

enum conn_state { CONN_UPSTREAM_HS, CONN_CLIENT_HS, CONN_RELAY, CONN_STATE_MAX };

struct conn {
	uint64_t id;
	unsigned slot;
	enum conn_state state;
	uint64_t deadline;   /* monotonic ms; 0 once relaying */
	struct tlsgate_sni sni;
	struct tls_end cl, up;
	struct plain_end pc, pu;
};

struct relay {
	const struct tlsgate_tls *tls;
	int ep, ctl;
	unsigned max_conns;
	struct conn **conns;
};

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* Tells the gate a connection's outcome. A full control socket drops the event: the gate reads
 * it as it comes, and the connection itself goes on or fails regardless. */
static void relay_event(const struct relay *r, uint64_t id, int status, const char *reason)
{
	struct tlsgate_wire_event w = { .type = TLSGATE_MSG_EVENT, .status = status, .id = id };

	snprintf(w.reason, sizeof(w.reason), "%s", reason ? reason : "");
	(void)send(r->ctl, &w, sizeof(w), MSG_DONTWAIT | MSG_NOSIGNAL);
}

static void conn_free(struct relay *r, struct conn *c)
{
	int fds[] = { c->cl.fd, c->up.fd, c->pc.fd, c->pu.fd };

	SSL_free(c->cl.ssl); /* frees its BIOs */
	SSL_free(c->up.ssl);
	for (size_t i = 0; i < ELEMENTSOF(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]); /* leaves the epoll set with it */
	r->conns[c->slot] = NULL;
	free(c);
}

/* A fatal TLS alert (handshake_failure) as a plaintext record, for a client whose handshake
 * cannot go on because the upstream one failed: it fails at once instead of on EOF. */
static void send_alert(int fd)
{
	static const unsigned char alert[] = { 0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28 };

	(void)send(fd, alert, sizeof(alert), MSG_DONTWAIT | MSG_NOSIGNAL);
}

static void conn_fail(struct relay *r, struct conn *c, int status, const char *reason)
{
	if (c->state != CONN_RELAY) {
		relay_event(r, c->id, status, reason);
		if (c->state == CONN_UPSTREAM_HS)
			send_alert(c->cl.fd);
	}
	conn_free(r, c);
}

/* socket -> memory BIO. Return: 1 moved, 0 nothing, -errno. */
static int end_fill(struct tls_end *e)
{
	unsigned char b[IO_CHUNK];
	ssize_t k;

	if (e->fd_eof || BIO_ctrl_pending(e->rb) >= BIO_CAP)
		return 0;
	k = recv(e->fd, b, sizeof(b), 0);
	if (k < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	if (k == 0) {
		e->fd_eof = true;
		BIO_set_mem_eof_return(e->rb, 0); /* the SSL sees EOF once the BIO is empty */
		return 1;
	}
	return BIO_write(e->rb, b, (int)k) == (int)k ? 1 : -ENOMEM;
}

/* memory BIO -> socket, then shutdown(SHUT_WR) once our close_notify is out. */
static int end_flush(struct tls_end *e)
{
	unsigned char b[IO_CHUNK];
	char *data;
	long n = BIO_get_mem_data(e->wb, &data);
	ssize_t k;

	if (n <= 0) {
		if (!e->close_sent || e->wr_shut)
			return 0;
		e->wr_shut = true;
		return shutdown(e->fd, SHUT_WR) < 0 && errno != ENOTCONN ? -errno : 1;
	}
	k = send(e->fd, data, (size_t)(n < IO_CHUNK ? n : IO_CHUNK), MSG_NOSIGNAL);
	if (k < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	return BIO_read(e->wb, b, (int)k) == (int)k ? 1 : -EIO; /* drops what was sent */
}

/* decrypted bytes -> the plaintext socket; shutdown(SHUT_WR) after the TLS end's EOF */
static int plain_flush(const struct tls_end *e, struct plain_end *p)
{
	ssize_t k;

	if (p->off == p->len) {
		if (p->len) {
			p->off = p->len = 0;
			return 1; /* room again: SSL_read() can go on (else a full buffer stalled it) */
		}
		if (!e->tls_done || p->wr_shut)
			return 0;
		p->wr_shut = true;
		return shutdown(p->fd, SHUT_WR) < 0 && errno != ENOTCONN ? -errno : 1;
	}
	k = send(p->fd, p->buf + p->off, p->len - p->off, MSG_NOSIGNAL);
	if (k < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	p->off += (size_t)k;
	return 1;
}

/* TLS end -> its plaintext socket. @strict: an EOF without close_notify is a truncation that
 * fails the connection (upstream); else it is the end of the stream (a client that just closes). */
static int tls_to_plain(struct tls_end *e, struct plain_end *p, bool strict)
{
	int n, k = 0;

	if (!e->tls_done && p->len < BUF_CAP) {
		n = SSL_read(e->ssl, p->buf + p->len, (int)(BUF_CAP - p->len));
		if (n > 0) {
			p->len += (size_t)n;
			k = 1;
		} else {
			switch (SSL_get_error(e->ssl, n)) {
			case SSL_ERROR_WANT_READ:
				break;
			case SSL_ERROR_ZERO_RETURN:
				e->tls_done = true;
				k = 1;
				break;
			default:
				ERR_clear_error();
				if (!e->fd_eof || strict)
					return e->fd_eof ? -ECONNRESET : -EPROTO;
				e->tls_done = true;
				k = 1;
			}
		}
	}
	n = plain_flush(e, p);
	return n < 0 ? n : (k | n);
}

/* plaintext socket -> TLS end; the gate's EOF becomes our close_notify */
static int plain_to_tls(struct plain_end *p, struct tls_end *e)
{
	unsigned char b[IO_CHUNK];
	ssize_t k;

	if (p->eof) {
		if (e->close_sent)
			return 0;
		e->close_sent = true;
		(void)SSL_shutdown(e->ssl);
		ERR_clear_error();
		return 1;
	}
	if (BIO_ctrl_pending(e->wb) >= BIO_CAP)
		return 0;
	k = recv(p->fd, b, sizeof(b), 0);
	if (k < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	if (k == 0) {
		p->eof = true;
		return 1;
	}
	return SSL_write(e->ssl, b, (int)k) == (int)k ? 1 : -EPROTO;
}

static int relay_step(struct conn *c)
{
	int k, moved = 0;

	if ((k = tls_to_plain(&c->cl, &c->pc, false)) < 0)
		return k;
	moved |= k;
	if ((k = tls_to_plain(&c->up, &c->pu, true)) < 0)
		return k;
	moved |= k;
	if ((k = plain_to_tls(&c->pc, &c->cl)) < 0)
		return k;
	moved |= k;
	if ((k = plain_to_tls(&c->pu, &c->up)) < 0)
		return k;
	return moved | k;
}

/* Why a handshake failed, for the event: the verification result for upstream, the SNI check's
 * reason for the client, else the library's reason. Never a secret: these are certificate and
 * protocol facts. */
static int handshake_reason(struct conn *c, bool upstream, char *out, size_t n)
{
	const char *side = upstream ? "upstream" : "client";
	unsigned long e = ERR_peek_last_error();
	long v;

	if (upstream && (v = SSL_get_verify_result(c->up.ssl)) != X509_V_OK) {
		snprintf(out, n, "upstream certificate: %s", X509_verify_cert_error_string(v));
		return -EACCES;
	}
	if (!upstream && c->sni.reason[0]) {
		snprintf(out, n, "%s", c->sni.reason);
		return -EPERM;
	}
	if ((upstream ? c->up.fd_eof : c->cl.fd_eof) && !e) {
		snprintf(out, n, "%s closed the connection during the TLS handshake", side);
		return -ECONNRESET;
	}
	if (e && ERR_reason_error_string(e))
		snprintf(out, n, "%s handshake: %s", side, ERR_reason_error_string(e));
	else
		snprintf(out, n, "%s handshake failed", side);
	return -EPROTO;
}

/* The upstream handshake first, then the client's: the sandbox finishes its handshake only with
 * an endpoint that was verified, and a failure upstream fails the client's handshake (an alert). */
static int conn_handshake(struct relay *r, struct conn *c)
{
	bool upstream = c->state == CONN_UPSTREAM_HS;
	SSL *s = upstream ? c->up.ssl : c->cl.ssl;
	char reason[TLSGATE_REASON_MAX];
	int k = SSL_do_handshake(s);

	if (k == 1) {
		c->state = upstream ? CONN_CLIENT_HS : CONN_RELAY;
		if (!upstream) {
			c->deadline = 0;
			relay_event(r, c->id, 0, NULL);
		}
		return 1;
	}
	if (SSL_get_error(s, k) == SSL_ERROR_WANT_READ)
		return 0;
	k = handshake_reason(c, upstream, reason, sizeof(reason));
	ERR_clear_error();
	conn_fail(r, c, k, reason);
	return -ECANCELED; /* freed */
}

/* Done once the gate has ended both of its streams and our close_notify went out on each TLS
 * end: it writes nothing more to either side, so nothing it could still read matters. */
static bool conn_finished(const struct conn *c)
{
	return c->cl.wr_shut && c->up.wr_shut;
}

static void watch(const struct relay *r, const struct conn *c, int fd, uint32_t *have, uint32_t want, unsigned which)
{
	struct epoll_event ev = { .events = want, .data.u64 = ((uint64_t)c->slot << 2) | which };

	if (*have == want)
		return;
	/* an fd that waits for nothing leaves the set: epoll reports EPOLLHUP and EPOLLERR whatever
	 * the mask, and a socket both of whose halves ended would wake the loop forever (measured:
	 * a busy loop once upstream and the gate's plaintext socket had both closed while the
	 * client's side went on) */
	(void)epoll_ctl(r->ep, !*have ? EPOLL_CTL_ADD : !want ? EPOLL_CTL_DEL : EPOLL_CTL_MOD, fd, &ev);
	*have = want;
}

/* Registers what each of the connection's fds waits for (see the file's comment). */
static void conn_watch(const struct relay *r, struct conn *c)
{
	bool relaying = c->state == CONN_RELAY;
	struct tls_end *e[2] = { &c->cl, &c->up };
	struct plain_end *p[2] = { &c->pc, &c->pu };

	for (unsigned i = 0; i < 2; i++) {
		uint32_t t = 0, q = 0;

		if (!e[i]->fd_eof && BIO_ctrl_pending(e[i]->rb) < BIO_CAP)
			t |= EPOLLIN;
		if (BIO_ctrl_pending(e[i]->wb) > 0)
			t |= EPOLLOUT;
		if (relaying && !p[i]->eof && BIO_ctrl_pending(e[i]->wb) < BIO_CAP)
			q |= EPOLLIN;
		if (p[i]->len > p[i]->off)
			q |= EPOLLOUT;
		watch(r, c, e[i]->fd, &e[i]->ev, t, i);
		watch(r, c, p[i]->fd, &p[i]->ev, q, 2 + i);
	}
}

/* Moves everything that can move, until nothing does (every buffer is bounded, so this ends). */
static void conn_pump(struct relay *r, struct conn *c)
{
	int moved;

	do {
		int k[5];

		k[0] = end_fill(&c->cl);
		k[1] = end_fill(&c->up);
		k[2] = c->state == CONN_RELAY ? relay_step(c) : conn_handshake(r, c);
		if (k[2] == -ECANCELED)
			return; /* failed and freed, the event sent */
		k[3] = end_flush(&c->cl);
		k[4] = end_flush(&c->up);
		moved = 0;
		for (size_t i = 0; i < ELEMENTSOF(k); i++) {
			if (k[i] < 0) {
				conn_fail(r, c, k[i], "connection failed during the TLS handshake");
				return;
			}
			moved |= k[i];
		}
	} while (moved);
	if (conn_finished(c))
		conn_free(r, c);
	else
		conn_watch(r, c);
}

static int end_init(struct tls_end *e, SSL_CTX *ctx, int fd)
{
	e->fd = fd;
	e->ssl = SSL_new(ctx);
	e->rb = BIO_new(BIO_s_mem());
	e->wb = BIO_new(BIO_s_mem());
	if (!e->ssl || !e->rb || !e->wb) {
		BIO_free(e->rb);
		BIO_free(e->wb);
		return -ENOMEM;
	}
	BIO_set_mem_eof_return(e->rb, -1); /* empty: retry, until the socket's EOF */
	SSL_set_bio(e->ssl, e->rb, e->wb);
	return 0;
}

static int conn_setup(struct relay *r, struct conn *c, const struct tlsgate_leaf *leaf, const void *pre, size_t pre_len)
{
	int fds[] = { c->cl.fd, c->up.fd, c->pc.fd, c->pu.fd };

	if (end_init(&c->cl, r->tls->server, fds[0]) < 0 || end_init(&c->up, r->tls->client, fds[1]) < 0 ||
	    tlsgate_server_ssl_setup(c->cl.ssl, leaf, &c->sni) < 0 || tlsgate_client_ssl_setup(c->up.ssl, leaf->name) < 0)
		return -ENOMEM;
	SSL_set_accept_state(c->cl.ssl);
	SSL_set_connect_state(c->up.ssl);
	if (pre_len && BIO_write(c->cl.rb, pre, (int)pre_len) != (int)pre_len)
		return -ENOMEM;
	/* in the epoll set from the first conn_watch() on, while they wait for something */
	for (unsigned i = 0; i < ELEMENTSOF(fds); i++) {
		int fl = fcntl(fds[i], F_GETFL);

		if (fl < 0 || fcntl(fds[i], F_SETFL, fl | O_NONBLOCK) < 0)
			return -errno;
	}
	return 0;
}

static void close_fds(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
}

/* One handoff: checked (the name is one of ours, four fds, the announced length), then a
 * connection, or an event saying why not. */
static void conn_new(struct relay *r, const struct tlsgate_wire_handoff *h, const void *pre, int *fds)
{
	const struct tlsgate_leaf *leaf = tlsgate_leaf_find(r->tls, h->name);
	struct conn *c = NULL;
	unsigned slot;
	int k;

	for (slot = 0; slot < r->max_conns && r->conns[slot]; slot++)
		;
	if (!leaf || slot == r->max_conns || !(c = calloc(1, sizeof(*c)))) {
		close_fds(fds, TLSGATE_FD_MAX);
		relay_event(r, h->id, !leaf ? -EINVAL : slot == r->max_conns ? -EMFILE : -ENOMEM,
			    !leaf ? "handoff for a name the tlsgate has no certificate for" :
			    slot == r->max_conns ? "too many TLS connections at once" : "out of memory");
		return;
	}
	*c = (struct conn){ .id = h->id, .slot = slot, .deadline = now_ms() + HANDSHAKE_MS,
			    .cl.fd = fds[0], .up.fd = fds[1], .pc.fd = fds[2], .pu.fd = fds[3] };
	r->conns[slot] = c;
	k = conn_setup(r, c, leaf, pre, h->pre_len);
	if (k < 0) {
		conn_fail(r, c, k, "cannot set the connection up");
		return;
	}
	conn_pump(r, c);
}

/* Reads the waiting handoffs. Return: 0, or -EPIPE when the gate's end is closed. */
static int relay_ctl(struct relay *r)
{
	static unsigned char msg[sizeof(struct tlsgate_wire_handoff) + TLSGATE_PRE_MAX + 1];

	for (;;) {
		struct tlsgate_wire_handoff h;
		int fds[TLSGATE_FD_MAX];
		size_t nfds = 0;
		int k = fdpass_recv(r->ctl, msg, sizeof(msg), fds, ELEMENTSOF(fds), &nfds);

		if (k == -EAGAIN || k == -EWOULDBLOCK)
			return 0;
		if (k == 0 || (k < 0 && k != -EMSGSIZE && k != -EINTR))
			return -EPIPE;
		if (k < (int)sizeof(h) || nfds != TLSGATE_FD_MAX) {
			close_fds(fds, nfds);
			continue; /* not the gate's: nothing to answer to */
		}
		memcpy(&h, msg, sizeof(h));
		h.name[sizeof(h.name) - 1] = '\0';
		if (h.type != TLSGATE_MSG_HANDOFF || h.pre_len > TLSGATE_PRE_MAX || (size_t)k != sizeof(h) + h.pre_len) {
			close_fds(fds, nfds);
			relay_event(r, h.id, -EPROTO, "malformed handoff");
			continue;
		}
		conn_new(r, &h, msg + sizeof(h), fds);
	}
}

/* Fails every connection whose handshakes outlived HANDSHAKE_MS; returns the ms until the next
 * deadline (-1: none). */
static int relay_expire(struct relay *r)
{
	uint64_t now = now_ms(), next = UINT64_MAX;

	for (unsigned i = 0; i < r->max_conns; i++) {
		struct conn *c = r->conns[i];

		if (!c || !c->deadline)
			continue;
		if (c->deadline <= now)
			conn_fail(r, c, -ETIMEDOUT, "TLS handshake timed out");
		else if (c->deadline < next)
			next = c->deadline;
	}
	return next == UINT64_MAX ? -1 : (int)(next - now);
}

int tlsgate_serve(struct tlsgate_tls *tls, int ep, int ctl, unsigned max_conns)
{
	struct relay r = { .tls = tls, .ep = ep, .ctl = ctl, .max_conns = max_conns };
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = EV_CTL }, evs[64];
	int k = 0;

	r.conns = calloc(max_conns, sizeof(struct conn *));
	if (!r.conns || epoll_ctl(ep, EPOLL_CTL_ADD, ctl, &ev) < 0) {
		free(r.conns);
		return -ENOMEM;
	}
	while (k >= 0) {
		int n = epoll_wait(ep, evs, ELEMENTSOF(evs), relay_expire(&r));

		for (int i = 0; i < n && k >= 0; i++) {
			struct conn *c;

			if (evs[i].data.u64 == EV_CTL) {
				k = relay_ctl(&r);
				continue;
			}
			c = r.conns[evs[i].data.u64 >> 2];
			if (c)
				conn_pump(&r, c);
		}
	}
	/* the gate is gone: every connection with it */
	for (unsigned i = 0; i < max_conns; i++)
		if (r.conns[i])
			conn_free(&r, r.conns[i]);
	free(r.conns);
	return 0;
}
