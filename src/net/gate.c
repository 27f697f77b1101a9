// SPDX-License-Identifier: GPL-2.0-or-later
/* gate.c — the egress gate's event loop, resolver pool, relay and egress log */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "net/dns.h"
#include "net/gate-confine.h"
#include "net/gate.h"
#include "net/http.h"
#include "net/keymask.h"
#include "net/resolver.h"
#include "net/sni.h"
#include "net/tlsgate.h"
#include "util/log.h"
#include "util/util.h"

#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80 /* linux/netfilter_ipv4.h, which clashes with netinet/in.h */
#endif

#define DEFAULT_MAX_CONNS 2048
#define DEFAULT_HEAD_TIMEOUT_MS 10000
#define DEFAULT_CONNECT_TIMEOUT_MS 10000
#define DEFAULT_IDLE_TIMEOUT_MS 600000
#define UPSTREAM_HEAD_MAX 16384
#define DNS_TCP_BUF (2 + 4096)
#define PIPE_CHUNK (1 << 20) /* pipes are grown to this when the pipe-user quota allows */
#define DENIED_MAX 64
/* The egress log's bound (gate_config.log_max): one record is at most LOG_LINE_MAX bytes (its
 * strings are cut to fit, never the line). An allowed connection holds LOG_LINE_MAX of room from
 * its decision until its record is written; denials and errors may fill the log only up to
 * LOG_DENY_SHARE of the bound, so that a flood of them leaves a quarter for the allowed; the
 * last LOG_NOTES bytes are for the two notes (the bound reached, the records dropped). */
#define LOG_LINE_MAX ((uint64_t)4096)
#define LOG_NOTES (2 * LOG_LINE_MAX)
#define LOG_MIN ((uint64_t)64 << 10)
#define LOG_DENY_SHARE(max) ((max) - (max) / 4 - LOG_NOTES)
/* Repeated denials (same kind, method, host, port and reason) are aggregated: the first is a
 * record, the next ones are counted in a slot of this table and written as one record with
 * "repeated":N when the slot is taken by another denial, AGG_FLUSH_MS after the last such
 * record, and at the end. */
#define AGG_SLOTS 1024
#define AGG_FLUSH_MS 60000
#define SWEEP_MS 200
#define SUMMARY_MAX 4096       /* the summary line the gate hands the supervisor at exit */
#define STOP_WAIT_MS 3000      /* for the gate's summary after the stop message */

enum htype { H_PROXY, H_TRANS, H_DNS_UDP, H_DNS_TCP, H_STOP, H_RESOLVED, H_TLS, H_CLIENT, H_UPSTREAM };
enum ckind { K_PROXY, K_TRANS, K_DNS_TCP };
enum cstate { CS_HEAD, CS_RESOLVE, CS_CONNECT, CS_UPHEAD, CS_SNI, CS_RELAY, CS_DNS };

struct gate;
struct conn;

struct handle {
	enum htype type;
	struct conn *c;
};

/* Published, any of these would make the gate a proxy for every local user of the host: pasta
 * forwards a host connection to 127.0.0.1:PORT inside, where the gate listens (issue 10). */
const struct gate_port gate_ports[GATE_PORTS_N] = {
	{ GATE_PROXY_PORT, "the gate's HTTP proxy listener" },
	{ GATE_TRANSPARENT_PORT, "the gate's transparent listener" },
	{ GATE_DNS_PORT, "the gate's DNS stub" },
};

/* ---- host-side resolution (net/resolver.h) ------------------------------------------------ */

/* A request sent to the resolver helper and not yet answered. */
struct job {
	struct job *next;
	uint64_t id;
	struct conn *conn;     /* NULL once the connection is gone */
};

/* ---- state -------------------------------------------------------------------------------- */

struct buf {
	char *p;
	size_t len, off;
};

struct conn {
	struct gate *g;
	struct conn *prev, *next;
	enum ckind kind;
	enum cstate st;
	int cfd, ufd;
	struct handle hc, hu;
	uint32_t ev_c, ev_u;
	bool u_registered, c_registered;
	bool dead;              /* closed; memory freed after the current epoll batch */

	char *in;               /* client bytes not yet forwarded: head, ClientHello, DNS */
	size_t in_len, in_cap, in_max;
	struct buf to_u, to_c;  /* bytes to write before the relay takes over each direction */
	char *fwd;              /* rewritten absolute-form head (+ body bytes already read) */
	size_t fwd_len, fwd_head; /* fwd_head: the head's part of it */
	bool key_added;         /* --key-via-gate: the model key is in the head (key_apply()) */
	bool keyed;             /* a tunnel or transparent connection to a key's endpoint: the client's
				 * bytes are read as requests, one after another (key_pump()) */
	bool tls_key;           /* keyed, and the endpoint is https://: handed to the tlsgate once
				 * dialled (tls_handoff()) */
	bool tls;               /* handed over: cfd and ufd are the plaintext socketpairs */
	bool tls_heard;         /* the tlsgate's event for it came (tls_events()) */
	char *tls_reason;       /* the tlsgate's failure, for the record; NULL: none */
	uint64_t id;            /* the tlsgate's events name it so */
	bool in_body;           /* keyed: the body of the last head is still coming */
	struct keymask_stream ks; /* keyed answers: a tail that may begin a key (mask_out()); its
				 * buffer allocated when first needed, as 1,000 tunnels must stay small */
	char *uhead;            /* upstream proxy's answer head */
	size_t uhead_len;

	struct policy_decision d;
	size_t next_addr;
	struct net_addr dialed;
	bool has_dialed;
	char method[16];
	const char *kind_name;
	bool connect_req, check_sni, via_upstream;
	bool answered;          /* the CONNECT's 200 is queued or sent: errors are resets from now on */
	bool log_held;          /* allowed: LOG_LINE_MAX of the log is held for its record */
	struct job *job;

	/* A plain (absolute-form) request: the gate forwards its head and exactly its body, framed
	 * here, and no byte after it (issue 22: a pipelined request or smuggled bytes behind a
	 * checked head reached the upstream unchecked). */
	bool framed;
	bool req_done;          /* the body is complete: what the client sends now is dropped */
	struct http_body_framer body;
	uint64_t dropped;       /* client bytes after the request, not forwarded */
	char *rhead;            /* the server's answer head(s) until the final one is passed */
	size_t rhead_len;
	bool resp_passed;       /* the final answer head went to the client: splice the rest */

	int p_cu[2], p_uc[2];
	size_t q_cu, q_uc;
	bool grown_cu, grown_uc;
	bool eof_c, eof_u, done_cu, done_uc;
	bool hup_u;             /* the server hung up: stop watching it once its data is drained */
	uint64_t bytes_out, bytes_in;
	long long t_start, deadline;
};

struct denied {
	char dest[ALLOW_NAME_MAX + 16];
	char suggest[ALLOW_NAME_MAX + 64];
	unsigned count;
};

/* A denial that was logged, and how often it came again since (agg_*). */
struct agg {
	uint64_t key;           /* 0: free */
	uint64_t repeats;
	long long t_flush;
	char kind[12];
	char method[16];
	char host[ALLOW_NAME_MAX + 1];
	unsigned port;
	char reason[ALLOW_NAME_MAX * 2 + 96];
};

/* The summary the gate sends the supervisor when it stops. */
struct gate_summary_msg {
	uint32_t total_denied;
	uint64_t log_dropped;
	char text[SUMMARY_MAX];
};

struct gate {
	struct gate_config cfg;
	int ep;                 /* the listeners' epoll set: the wake fd, then the gate's loop */
	int ctl_fd;             /* socketpair to the other side: stop message, summary */
	int res_fd;             /* gate: its resolver socket; -1 with an upstream proxy or once gone */
	pid_t pid, res_pid;     /* supervisor side: the gate and resolver processes, -1 when reaped */
	bool started, stopping, exited, refused;
	bool log_broken;        /* log_path could not be created: allowed connections get 503 */
	struct job *jobs;       /* gate side: requests the resolver has not answered */
	uint64_t next_job;
	struct gate_summary_msg *summary; /* supervisor side: what the gate sent at its exit */
	struct dns_pool pool;
	struct conn *conns;
	struct conn *dead;      /* closed in this batch: events may still point at them */
	unsigned n_conns;
	struct handle h[7];     /* enum htype order up to H_TLS */
	int tls_fd;             /* the tlsgate's control socket (net/tlsgate.h), -1: none or gone */
	pid_t tls_pid;          /* supervisor side: the tlsgate, -1 when none or reaped */
	uint64_t next_conn;     /* the last connection's id */
	bool has_upstream;
	bool own_log_fd;        /* opened from cfg.log_path: closed by gate_free() */
	struct net_addr up_addr;
	uint16_t up_port;
	struct denied *denied;  /* DENIED_MAX, allocated at the first denial */
	size_t n_denied;
	unsigned total_denied;
	long long next_sweep;
	/* the egress log's bound (gate side) */
	uint64_t log_size;      /* bytes in the log: its size at the start, then what was written */
	uint64_t log_held;      /* room held for the records of allowed connections not yet logged */
	uint64_t log_dropped;   /* denial and error records not written: over their share */
	bool log_full_noted;
	struct agg *agg;        /* AGG_SLOTS, allocated before the filter (gate_child()) */
	struct keymask *masks;  /* gate side: cfg.keys[i]'s needles (net/keymask.h), made before the filter */
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- egress log --------------------------------------------------------------------------- */

/* Appends @s as a JSON string of at most @cap bytes (cut, escapes included). The caps of a
 * record's strings add up to less than LOG_LINE_MAX (record_format()), so a record
 * is never cut mid-JSON, however long the names the sandbox sends. */
static void json_str(char *out, size_t *n, const char *s, size_t cap)
{
	size_t start = *n;

	out[(*n)++] = '"';
	for (; s && *s && *n - start + 8 < cap; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\') {
			out[(*n)++] = '\\';
			out[(*n)++] = (char)ch;
		} else if (ch < 0x20 || ch >= 0x7f) {
			*n += (size_t)snprintf(out + *n, 8, "\\u%04x", ch);
		} else {
			out[(*n)++] = (char)ch;
		}
	}
	out[(*n)++] = '"';
}

/* The egress log is created with the first line (a run that never touches the network pays
 * nothing: creating a file cost ~0.35 ms of CPU per start here). An allowed connection is dialed
 * only after this succeeded (decided()), so nothing leaves unlogged.
 * Return: 0 (open), 1 (no log configured), -errno. Does not log. */
static int log_ready(struct gate *g)
{
	if (g->log_broken)
		return -EROFS;  /* gate_start() could not create it, or a write failed */
	if (g->cfg.log_fd >= 0)
		return 0;
	if (!g->cfg.log_path)
		return 1;       /* no egress log configured */
	g->cfg.log_fd = open(g->cfg.log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (g->cfg.log_fd < 0)
		return -errno;
	g->own_log_fd = true;
	return 0;
}

/* One record of the egress log (design 6): never a path, a query or a header value. */
struct record {
	const char *kind, *method, *host;
	unsigned port;
	const struct net_addr *addr;
	bool allowed;
	bool note;              /* the log's own note (kind "log", decision "note") */
	const char *rule, *reason;
	uint64_t bytes_out, bytes_in;
	long long dur_ms;
	uint64_t repeated;      /* an aggregate of repeated denials (struct agg); 0: not one */
	uint64_t dropped;       /* the last note: records not written */
	bool key_added;         /* the gate put the model key into the request (never the value) */
	bool tls;               /* the tlsgate terminated its TLS (--key-via-gate, https://) */
};

/* Formats @r as one JSON line of at most LOG_LINE_MAX bytes: the time and keys (~200 bytes),
 * the strings' caps (kind 32, method 64, host 1024, addr 64, rule 512, reason 1536) and the
 * numbers (~160) stay below it. Return: its length. Does not log. */
static size_t record_format(const struct record *r, char *line)
{
	const size_t size = LOG_LINE_MAX;
	char ts[64], a[ADDR_STRLEN] = "";
	struct timespec now;
	struct tm tm;
	size_t n = 0;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	if (r->addr)
		addr_format(r->addr, a, sizeof(a));
	n += (size_t)snprintf(line + n, size - n, "{\"time\":\"%s.%03ldZ\",\"kind\":", ts, now.tv_nsec / 1000000);
	json_str(line, &n, r->kind, 32);
	if (r->method) {
		n += (size_t)snprintf(line + n, size - n, ",\"method\":");
		json_str(line, &n, r->method, 64);
	}
	n += (size_t)snprintf(line + n, size - n, ",\"host\":");
	json_str(line, &n, r->host, 1024);
	n += (size_t)snprintf(line + n, size - n, ",\"port\":%u,\"addr\":", r->port);
	json_str(line, &n, a, 64);
	n += (size_t)snprintf(line + n, size - n, ",\"decision\":\"%s\",\"rule\":",
			      r->note ? "note" : r->allowed ? "allow" : "deny");
	json_str(line, &n, r->rule ? r->rule : "", 512);
	n += (size_t)snprintf(line + n, size - n, ",\"reason\":");
	json_str(line, &n, r->reason ? r->reason : "", 1536);
	n += (size_t)snprintf(line + n, size - n, ",\"bytes_out\":%llu,\"bytes_in\":%llu,\"duration_ms\":%lld",
			      (unsigned long long)r->bytes_out, (unsigned long long)r->bytes_in, r->dur_ms);
	if (r->key_added)
		n += (size_t)snprintf(line + n, size - n, ",\"key\":\"added\"");
	if (r->tls)
		n += (size_t)snprintf(line + n, size - n, ",\"tls\":\"terminated\"");
	if (r->repeated)
		n += (size_t)snprintf(line + n, size - n, ",\"repeated\":%llu", (unsigned long long)r->repeated);
	if (r->dropped)
		n += (size_t)snprintf(line + n, size - n, ",\"records_dropped\":%llu", (unsigned long long)r->dropped);
	n += (size_t)snprintf(line + n, size - n, "}\n");
	assert(n < size);
	return n;
}

/* What a record may use of the log's bound. */
enum log_class {
	LOG_HELD,               /* an allowed connection's, from the room it holds (log_hold()) */
	LOG_SHARED,             /* a denial's or an error's: up to LOG_DENY_SHARE */
	LOG_NOTE,               /* the two notes: from the last LOG_NOTES */
};

/* Appends one line, or counts it as dropped. A failed write (the disk full) breaks the log:
 * allowed connections are refused from then on (decided()), never relayed unlogged. Return:
 * true when written. Does not log. */
static bool log_put(struct gate *g, const char *line, size_t n, enum log_class cls)
{
	const uint64_t max = g->cfg.log_max;

	if (cls == LOG_HELD) {
		g->log_held -= LOG_LINE_MAX;
	} else if (cls == LOG_SHARED && g->log_size + g->log_held + n > LOG_DENY_SHARE(max)) {
		g->log_dropped++;
		if (!g->log_full_noted) {
			char note[LOG_LINE_MAX], reason[256];
			struct record r = { .kind = "log", .note = true, .host = "", .reason = reason };

			g->log_full_noted = true;
			snprintf(reason, sizeof(reason), "the egress log reached its bound for denials and errors "
				 "(%llu of %llu bytes): further ones are counted, not written; allowed connections "
				 "are still logged", (unsigned long long)g->log_size, (unsigned long long)max);
			(void)log_put(g, note, record_format(&r, note), LOG_NOTE);
		}
		return false;
	} else if (cls == LOG_NOTE && g->log_size + g->log_held + n > max) {
		return false;   /* cannot happen: the notes' room is kept free */
	}
	if (write_full(g->cfg.log_fd, line, n) < 0) {
		g->log_broken = true;
		return false;
	}
	g->log_size += n;
	return true;
}

/* Writes @r if a log is open (class @cls). Does not log. */
static void egress_log(struct gate *g, const struct record *r, enum log_class cls)
{
	char line[LOG_LINE_MAX];

	if (log_ready(g) != 0) {
		if (cls == LOG_HELD)
			g->log_held -= LOG_LINE_MAX;
		return;
	}
	(void)log_put(g, line, record_format(r, line), cls);
}

/* Holds LOG_LINE_MAX of the log for an allowed connection's record, so that no flood of denials
 * can take its place. Return: false when the log has no room for it (the connection is refused).
 * Does not log. */
static bool log_hold(struct conn *c)
{
	struct gate *g = c->g;

	if (c->log_held)
		return true;
	if (log_ready(g) == 1)
		return true;    /* no log configured (unit tests of other modules) */
	if (g->log_size + g->log_held + LOG_LINE_MAX > g->cfg.log_max - LOG_NOTES)
		return false;
	g->log_held += LOG_LINE_MAX;
	c->log_held = true;
	return true;
}

/* FNV-1a over one field (and its terminating NUL, so that fields cannot run into each other). */
static uint64_t hash_str(uint64_t h, const char *s)
{
	do {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	} while (*s++);
	return h;
}

static void agg_flush(struct gate *g, struct agg *a, long long now)
{
	struct record r = { .kind = a->kind, .method = a->method[0] ? a->method : NULL, .host = a->host,
			    .port = a->port, .reason = a->reason, .repeated = a->repeats };

	if (!a->repeats)
		return;
	egress_log(g, &r, LOG_SHARED);
	a->repeats = 0;
	a->t_flush = now;
}

/* A denial record, aggregated with the same denial logged before it (struct agg). Does not log. */
static void log_denial(struct gate *g, const struct record *r)
{
	uint64_t key = 0xcbf29ce484222325ULL;
	long long now = now_ms();
	struct agg *a;
	char port[16];

	snprintf(port, sizeof(port), "%u", r->port);
	key = hash_str(hash_str(hash_str(hash_str(hash_str(key, r->kind), r->method ? r->method : ""), r->host),
				port), r->reason ? r->reason : "");
	key |= 1; /* never 0, the free slot */
	if (!g->agg) /* gate_child() could not allocate it: every denial is a record */
		return egress_log(g, r, LOG_SHARED);
	a = &g->agg[(key >> 1) % AGG_SLOTS];
	if (a->key == key && streq(a->kind, r->kind) && streq(a->method, r->method ? r->method : "") &&
	    streq(a->host, r->host) && a->port == r->port && streq(a->reason, r->reason ? r->reason : "")) {
		a->repeats++;
		if (now - a->t_flush >= AGG_FLUSH_MS)
			agg_flush(g, a, now);
		return;
	}
	agg_flush(g, a, now);
	egress_log(g, r, LOG_SHARED);
	/* a denial whose fields do not fit the slot is logged each time, never merged with another */
	if (strlen(r->kind) >= sizeof(a->kind) || (r->method && strlen(r->method) >= sizeof(a->method)) ||
	    strlen(r->host) >= sizeof(a->host) || (r->reason && strlen(r->reason) >= sizeof(a->reason))) {
		a->key = 0;
		return;
	}
	a->key = key;
	a->repeats = 0;
	a->t_flush = now;
	a->port = r->port;
	snprintf(a->kind, sizeof(a->kind), "%s", r->kind);
	snprintf(a->method, sizeof(a->method), "%s", r->method ? r->method : "");
	snprintf(a->host, sizeof(a->host), "%s", r->host);
	snprintf(a->reason, sizeof(a->reason), "%s", r->reason ? r->reason : "");
}

static void note_denial(struct gate *g, const char *host, unsigned port, const char *suggest)
{
	char dest[sizeof(((struct denied *)0)->dest)];

	g->total_denied++;
	snprintf(dest, sizeof(dest), strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, port);
	for (size_t i = 0; i < g->n_denied; i++)
		if (streq(g->denied[i].dest, dest)) {
			g->denied[i].count++;
			return;
		}
	if (!g->denied && !(g->denied = calloc(DENIED_MAX, sizeof(*g->denied))))
		return; /* the count above still makes the summary */
	if (g->n_denied < DENIED_MAX) {
		struct denied *d = &g->denied[g->n_denied++];

		snprintf(d->dest, sizeof(d->dest), "%s", dest);
		snprintf(d->suggest, sizeof(d->suggest), "%s", suggest ? suggest : "");
		d->count = 1;
	}
}

/* ---- epoll helpers ------------------------------------------------------------------------ */

static int ep_set(struct gate *g, int fd, struct handle *h, uint32_t *cur, uint32_t want, bool *registered)
{
	struct epoll_event ev = { .events = want, .data.ptr = h };

	if (registered && !*registered) {
		if (epoll_ctl(g->ep, EPOLL_CTL_ADD, fd, &ev) < 0)
			return -errno;
		*registered = true;
		*cur = want;
		return 0;
	}
	if (*cur == want)
		return 0;
	if (epoll_ctl(g->ep, EPOLL_CTL_MOD, fd, &ev) < 0)
		return -errno;
	*cur = want;
	return 0;
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		(void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* ---- connection lifecycle ----------------------------------------------------------------- */

static void log_conn(struct conn *c, bool allowed, const char *reason);

static void conn_free(struct conn *c)
{
	struct gate *g = c->g;

	if (c->log_held) /* an allowed connection is never closed unrecorded */
		log_conn(c, true, "closed by the gate");
	if (c->job)
		c->job->conn = NULL;
	if (c->cfd >= 0)
		close(c->cfd);       /* closing removes it from the epoll set */
	if (c->ufd >= 0)
		close(c->ufd);
	for (int i = 0; i < 2; i++) {
		if (c->p_cu[i] >= 0)
			close(c->p_cu[i]);
		if (c->p_uc[i] >= 0)
			close(c->p_uc[i]);
	}
	c->cfd = c->ufd = -1;
	c->p_cu[0] = c->p_cu[1] = c->p_uc[0] = c->p_uc[1] = -1;
	free(c->in);
	free(c->to_u.p);
	free(c->to_c.p);
	free(c->fwd);
	free(c->uhead);
	free(c->rhead);
	free(c->tls_reason);
	c->tls_reason = NULL;
	keymask_stream_done(&c->ks);
	c->in = c->to_u.p = c->to_c.p = c->fwd = c->uhead = c->rhead = NULL;
	if (c->prev)
		c->prev->next = c->next;
	else
		g->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	g->n_conns--;
	c->dead = true;
	c->prev = NULL;
	c->next = g->dead;
	g->dead = c;
}

static void reap_dead(struct gate *g)
{
	while (g->dead) {
		struct conn *c = g->dead;

		g->dead = c->next;
		free(c);
	}
}

static struct conn *conn_new(struct gate *g, enum ckind kind, int cfd)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->g = g;
	c->kind = kind;
	c->cfd = cfd;
	c->ufd = -1;
	c->p_cu[0] = c->p_cu[1] = c->p_uc[0] = c->p_uc[1] = -1;
	c->hc = (struct handle){ H_CLIENT, c };
	c->hu = (struct handle){ H_UPSTREAM, c };
	c->t_start = now_ms();
	c->id = ++g->next_conn;
	c->kind_name = kind == K_PROXY ? "proxy" : kind == K_TRANS ? "transparent" : "dns";
	c->next = g->conns;
	if (g->conns)
		g->conns->prev = c;
	g->conns = c;
	g->n_conns++;
	return c;
}

static void reset_close(struct conn *c)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	/* A denial of raw TCP is a reset: the client fails at once instead of waiting. */
	(void)setsockopt(c->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	conn_free(c);
}

/* After an HTTP error answer: end our side, and drop what the client already sent, so the close
 * does not turn into a reset that destroys the answer before the client reads it (a 431 comes
 * while the rest of the oversized head is still queued). Bounded: at most 1 MiB is discarded. */
static void lingering_close(struct conn *c)
{
	char junk[16384];

	shutdown(c->cfd, SHUT_WR);
	for (int i = 0; i < 64; i++)
		if (recv(c->cfd, junk, sizeof(junk), MSG_DONTWAIT) <= 0)
			break;
	conn_free(c);
}

static void conn_record(const struct conn *c, bool allowed, const char *reason, struct record *r)
{
	*r = (struct record){ .kind = c->connect_req ? "connect" : c->kind == K_TRANS ? "transparent" : "http",
			      .method = c->kind == K_PROXY ? c->method : NULL, .host = c->d.host, .port = c->d.port,
			      .addr = c->has_dialed ? &c->dialed : NULL, .allowed = allowed, .rule = c->d.rule,
			      .reason = reason, .bytes_out = c->bytes_out, .bytes_in = c->bytes_in,
			      .dur_ms = now_ms() - c->t_start, .key_added = c->key_added, .tls = c->tls };
	if (c->tls_reason)
		r->reason = c->tls_reason; /* what failed is the TLS, whatever the close looked like */
}

static void tls_events(struct gate *g, bool act);

/* The connection's record: from the room it holds if it was allowed (log_hold()). */
static void log_conn(struct conn *c, bool allowed, const char *reason)
{
	struct record r;

	/* the tlsgate says why before it closes the connection's plaintext ends, so its event
	 * may wait unread behind the close that brought us here */
	if (c->tls && !c->tls_heard)
		tls_events(c->g, false);
	conn_record(c, allowed, reason, &r);
	egress_log(c->g, &r, c->log_held ? LOG_HELD : LOG_SHARED);
	c->log_held = false;
}

/* Whether the client can still get an HTTP answer from the gate: a proxy request before the
 * relay, or a plain request whose server has sent the client nothing yet. */
static bool can_answer(const struct conn *c)
{
	if (c->kind != K_PROXY || c->answered)
		return false;
	return c->st != CS_RELAY || (c->framed && c->bytes_in == 0 && c->q_uc == 0 && c->to_c.len == 0);
}

/* Deny: log (aggregated with the same denial before), remember for the summary, answer 403
 * (HTTP) or reset (TCP), close. */
static void deny(struct conn *c, const char *reason, const char *suggest)
{
	struct record r;

	if (c->log_held) {      /* allowed first, then denied (the TLS server name) */
		c->g->log_held -= LOG_LINE_MAX;
		c->log_held = false;
	}
	conn_record(c, false, reason, &r);
	r.dur_ms = 0; /* the same denial aggregates whatever it took */
	log_denial(c->g, &r);
	note_denial(c->g, c->d.host[0] ? c->d.host : "(unknown)", c->d.port, suggest);
	if (can_answer(c)) {
		char resp[1024];
		int n = http_error_response(403, reason, resp, sizeof(resp));

		if (n > 0)
			(void)!write(c->cfd, resp, (size_t)n);
		lingering_close(c);
		return;
	}
	reset_close(c);
}

/* An error that is not a policy decision (bad request, upstream failure, timeout). */
static void fail(struct conn *c, int status, const char *reason)
{
	if (c->d.host[0]) {
		log_conn(c, c->d.step == POLICY_DIAL, reason);
	} else {
		struct record r = { .kind = c->kind_name, .host = "", .reason = reason, .dur_ms = now_ms() - c->t_start };

		egress_log(c->g, &r, LOG_SHARED);
	}
	if (can_answer(c)) {
		char resp[1024];
		int n = http_error_response(status, reason, resp, sizeof(resp));

		if (n > 0)
			(void)!write(c->cfd, resp, (size_t)n);
		lingering_close(c);
		return;
	}
	reset_close(c);
}

static int buf_set(struct buf *b, const void *data, size_t len)
{
	char *p = malloc(len ? len : 1);

	if (!p)
		return -ENOMEM;
	memcpy(p, data, len);
	free(b->p);
	b->p = p;
	b->len = len;
	b->off = 0;
	return 0;
}

static int buf_append(struct buf *b, const void *data, size_t len)
{
	char *p = realloc(b->p, b->len + len + 1);

	if (!p)
		return -ENOMEM;
	memcpy(p + b->len, data, len);
	b->p = p;
	b->len += len;
	return 0;
}

/* Writes what it can of @b; returns 1 when empty, 0 when more remains, -errno. */
static int buf_flush(int fd, struct buf *b)
{
	while (b->off < b->len) {
		ssize_t k = send(fd, b->p + b->off, b->len - b->off, MSG_NOSIGNAL);

		if (k < 0)
			return errno == EAGAIN ? 0 : -errno;
		b->off += (size_t)k;
	}
	return 1;
}

static void conn_update(struct conn *c);
static void start_dial(struct conn *c);
static void relay(struct conn *c, bool cu, bool uc);
static void on_connect_ready(struct conn *c);
static void on_sni(struct conn *c);
static void in_release(struct conn *c);

/* ---- decisions ---------------------------------------------------------------------------- */

/* Whether @placeholder is a key of the endpoint @host:@port. */
static const struct gate_key *key_for(const struct gate_config *cfg, const char *placeholder, const char *host,
				      uint16_t port)
{
	for (size_t i = 0; i < cfg->n_keys; i++)
		if (cfg->keys[i].port == port && strcasecmp(cfg->keys[i].host, host) == 0 &&
		    streq(cfg->keys[i].placeholder, placeholder))
			return &cfg->keys[i];
	return NULL;
}

/* Refuses @c, which carries a placeholder where the gate adds no key: "the model key's
 * placeholder in @what to HOST:PORT, @why". Return: false (the connection is gone). */
static bool placeholder_refused(struct conn *c, const char *what, const char *why)
{
	char reason[ALLOW_NAME_MAX + 192];

	snprintf(reason, sizeof(reason), "the model key's placeholder in %s to %s:%u, %s", what, c->d.host,
		 (unsigned)c->d.port, why);
	deny(c, reason, NULL);
	return false;
}

/* Stage: the model key (--key-via-gate) of a plain request whose destination is decided.
 * Should: put the real key in place of its placeholder in the auth headers of a request to that
 * key's endpoint (http_put_key()); refuse a head that carries a placeholder to any other
 * destination, with a record that names the destination and no value (a placeholder is worth
 * nothing elsewhere, but a request that carries it there is the sandbox trying). Mustn't: put a
 * value anywhere but that head, or into a record, or substitute for another host. A request to
 * the endpoint without a placeholder passes as it is: the gate adds a key only where the sandbox
 * asked for one (docs/agents.md). Return: true to go on, false when the connection was refused. */
static bool key_apply(struct conn *c)
{
	const struct gate_config *cfg = &c->g->cfg;

	for (size_t i = 0; i < cfg->n_keys; i++) {
		const struct gate_key *k = &cfg->keys[i];
		char *out = NULL;
		size_t out_len = 0;
		int r;

		if (!memmem(c->fwd, c->fwd_head, k->placeholder, strlen(k->placeholder)))
			continue;
		if (!key_for(cfg, k->placeholder, c->d.host, c->d.port))
			return placeholder_refused(c, "a request", "which is not its model endpoint (the gate adds the key "
						   "for that endpoint only)");
		if (k->port != c->d.port || strcasecmp(k->host, c->d.host) != 0)
			continue; /* the same placeholder's entry for this endpoint comes in its turn */
		/* http://H:443/ through the proxy: the key would cross the network in clear */
		if (k->tls)
			return placeholder_refused(c, "a plain http:// request", "an https:// endpoint (the gate adds "
						   "the key inside TLS only)");
		r = http_put_key(c->fwd, c->fwd_head, k->placeholder, k->value, &out, &out_len);
		if (r < 0) {
			fail(c, 503, "out of memory");
			return false;
		}
		if (r == 0)
			continue;
		{
			char *p = realloc(out, out_len + c->fwd_len - c->fwd_head);

			if (!p) {
				free(out);
				fail(c, 503, "out of memory");
				return false;
			}
			memcpy(p + out_len, c->fwd + c->fwd_head, c->fwd_len - c->fwd_head);
			explicit_bzero(c->fwd, c->fwd_len);
			free(c->fwd);
			c->fwd = p;
			c->fwd_len = out_len + c->fwd_len - c->fwd_head;
			c->fwd_head = out_len;
			c->key_added = true;
		}
	}
	return true;
}

/* The first --key-via-gate key whose endpoint is @host:@port, or NULL (an endpoint's keys are
 * all https:// or all http://: its URL says which). */
static const struct gate_key *endpoint_key(const struct gate_config *cfg, const char *host, uint16_t port)
{
	for (size_t i = 0; i < cfg->n_keys; i++)
		if (cfg->keys[i].port == port && strcasecmp(cfg->keys[i].host, host) == 0)
			return &cfg->keys[i];
	return NULL;
}

static void decided(struct conn *c)
{
	const struct gate_key *ek;

	if (c->d.step == POLICY_DENY) {
		deny(c, c->d.reason, c->d.suggest);
		return;
	}
	if (log_ready(c->g) < 0) {
		fail(c, 503, "the egress log cannot be written");
		return;
	}
	/* its record's room, held until it is written: a flood of denials cannot take it */
	if (!log_hold(c)) {
		c->d.step = POLICY_DENY;
		fail(c, 503, "the egress log is full (its bound is reached): no more connections are made");
		return;
	}
	if (c->framed && c->g->cfg.n_keys && !key_apply(c))
		return;
	c->check_sni = c->d.port == 443 && !c->d.is_literal && !c->d.host_internal;
	/* An http:// model endpoint reached through a CONNECT tunnel (undici, pi's HTTP client,
	 * tunnels http:// too) or the transparent listener: its requests are read one by one. An
	 * https:// one too, once the tlsgate decrypts it (tls_handoff()); its ClientHello's name is
	 * checked here first, as for any host on 443. */
	ek = !c->framed && c->g->cfg.n_keys ? endpoint_key(&c->g->cfg, c->d.host, c->d.port) : NULL;
	c->keyed = ek != NULL && (!c->check_sni || ek->tls);
	c->tls_key = c->keyed && ek->tls;
	if (!c->check_sni)
		return start_dial(c);
	/* The ClientHello is read and its SNI checked before anything is dialled: a refused name
	 * never costs the allowed server a connection (it used to be opened, then closed empty).
	 * A CONNECT client only sends its ClientHello after the 200, so the 200 comes first, and a
	 * dial that fails afterwards can only be a reset. */
	if (c->connect_req) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

		if (buf_append(&c->to_c, ok, sizeof(ok) - 1) < 0)
			return fail(c, 503, "out of memory");
		c->answered = true;
	}
	c->st = CS_SNI;
	c->deadline = now_ms() + c->g->cfg.head_timeout_ms;
	if (c->in_len)
		return on_sni(c); /* the ClientHello came with the CONNECT */
	conn_update(c);
}

/* Fails every connection waiting for the resolver: it is gone (crashed or killed). */
static void resolver_gone(struct gate *g)
{
	if (g->res_fd >= 0) {
		(void)epoll_ctl(g->ep, EPOLL_CTL_DEL, g->res_fd, NULL);
		close(g->res_fd);
		g->res_fd = -1;
	}
	while (g->jobs) {
		struct job *j = g->jobs;

		g->jobs = j->next;
		if (j->conn) {
			j->conn->job = NULL;
			fail(j->conn, 502, "host name resolution is not available (the resolver helper is gone)");
		}
		free(j);
	}
}

static void decide(struct conn *c, const char *host, uint16_t port)
{
	struct gate *g = c->g;
	struct resolver_req q = { .port = 0 };
	struct net_addr a;
	struct job *j;

	/* A pool address given to the proxy stands for the name it was handed out for. */
	if (addr_parse(host, &a) == 0 && a.family == AF_INET && a.b[0] == 198 && (a.b[1] & 0xfe) == 18) {
		const char *name = dns_pool_name(&g->pool, a.b);

		if (name)
			host = name;
	}
	policy_check(g->cfg.policy, host, port, &c->d);
	if (c->d.step != POLICY_RESOLVE || g->has_upstream) {
		if (c->d.step == POLICY_RESOLVE)
			c->d.step = POLICY_DIAL; /* the upstream proxy resolves */
		decided(c);
		return;
	}
	if (g->res_fd < 0)
		return fail(c, 502, "host name resolution is not available (the resolver helper is gone)");
	j = calloc(1, sizeof(*j));
	if (!j)
		return fail(c, 503, "out of memory");
	q.id = j->id = ++g->next_job;
	q.port = c->d.port;
	snprintf(q.host, sizeof(q.host), "%s", c->d.host);
	/* the helper answers asynchronously; a full socket buffer means it is far behind */
	if (send(g->res_fd, &q, sizeof(q), MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(q)) {
		free(j);
		return fail(c, 503, "the host's resolver is overloaded");
	}
	j->conn = c;
	j->next = g->jobs;
	g->jobs = j;
	c->job = j;
	c->st = CS_RESOLVE;
	c->deadline = now_ms() + g->cfg.connect_timeout_ms;
	conn_update(c);
}

/* Answers from the resolver helper. Each is checked (size, count, a pending id) before use: the
 * helper is another process. */
static void on_resolved(struct gate *g)
{
	for (int i = 0; i < 64 && g->res_fd >= 0; i++) {
		struct resolver_ans ans;
		struct job **pp, *j;
		struct conn *c;
		ssize_t k = recv(g->res_fd, &ans, sizeof(ans), MSG_DONTWAIT | MSG_TRUNC);

		if (k < 0 && errno == EAGAIN)
			return;
		if (k <= 0)
			return resolver_gone(g);
		if (k != (ssize_t)sizeof(ans) || ans.n > POLICY_ADDRS_MAX)
			continue;
		for (pp = &g->jobs; *pp && (*pp)->id != ans.id; pp = &(*pp)->next)
			;
		if (!(j = *pp))
			continue;
		*pp = j->next;
		c = j->conn;
		free(j);
		if (!c)
			continue;
		c->job = NULL;
		if (ans.err || ans.n == 0) {
			char reason[ALLOW_NAME_MAX + 64];

			snprintf(reason, sizeof(reason), "%s does not resolve on the host", c->d.host);
			fail(c, 502, reason);
		} else {
			policy_filter_resolved(g->cfg.policy, ans.addrs, ans.n, &c->d);
			decided(c);
		}
	}
}

/* ---- dialing ------------------------------------------------------------------------------ */

static void start_dial(struct conn *c)
{
	struct gate *g = c->g;
	bool upstream = g->has_upstream && !c->d.host_internal;

	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl;
		const struct net_addr *a;
		uint16_t port;
		int fd, k;

		if (upstream) {
			if (c->next_addr > 0)
				break;
			a = &g->up_addr;
			port = g->up_port;
		} else {
			if (c->next_addr >= c->d.n_addrs)
				break;
			a = &c->d.addrs[c->next_addr];
			port = c->d.port;
		}
		c->next_addr++;
		c->via_upstream = upstream;
		c->dialed = *a;
		c->has_dialed = true;
		sl = addr_to_sockaddr(a, port, &ss);
		fd = socket(a->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		if (connect(fd, (struct sockaddr *)&ss, sl) < 0 && errno != EINPROGRESS) {
			close(fd);
			continue;
		}
		/* A handshake over loopback (or any fast path) is often complete when connect()
		 * returns EINPROGRESS: a second connect() returns 0 (or EISCONN), and the relay starts
		 * without the epoll round (two epoll_ctl and a wait, measured with strace on every
		 * CONNECT to a local server). EALREADY waits for EPOLLOUT as before. Any other answer
		 * is this address's failure, and must be taken as one here: the second connect()
		 * reports a refusal once and clears it, so SO_ERROR after it would read 0. */
		k = connect(fd, (struct sockaddr *)&ss, sl) == 0 ? 0 : errno;
		if (k != 0 && k != EISCONN && k != EALREADY && k != EINPROGRESS) {
			close(fd);
			continue;
		}
		if (c->ufd >= 0)
			close(c->ufd);
		c->ufd = fd;
		c->u_registered = false;
		c->ev_u = 0;
		c->st = CS_CONNECT;
		c->deadline = now_ms() + g->cfg.connect_timeout_ms;
		if (k == 0 || k == EISCONN)
			return on_connect_ready(c);
		conn_update(c);
		return;
	}
	{
		char reason[ALLOW_NAME_MAX + 96], a[ADDR_STRLEN] = "";

		if (c->has_dialed)
			addr_format(&c->dialed, a, sizeof(a));
		snprintf(reason, sizeof(reason), "cannot connect to %s%s %s port %u", upstream ? "upstream proxy for " : "",
			 c->d.host, a, (unsigned)(upstream ? g->up_port : c->d.port));
		fail(c, 502, reason);
	}
}

static void tls_handoff(struct conn *c);

static void connected(struct conn *c)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

	if (c->connect_req && !c->answered && buf_append(&c->to_c, ok, sizeof(ok) - 1) < 0)
		return fail(c, 503, "out of memory");
	c->answered = c->connect_req;
	if (c->tls_key)
		return tls_handoff(c);
	if (c->uhead) {
		/* bytes the upstream sent after its answer head belong to the client */
		char *end = strstr(c->uhead, "\r\n\r\n");
		size_t used = (size_t)(end + 4 - c->uhead), more = c->uhead_len - used;

		/* a plain request's answer starts there: answer_head() reads it from rhead */
		if (more && c->framed) {
			if (!(c->rhead = malloc(UPSTREAM_HEAD_MAX)))
				return fail(c, 503, "out of memory");
			memcpy(c->rhead, c->uhead + used, more); /* more < UPSTREAM_HEAD_MAX */
			c->rhead_len = more;
		} else if (more && buf_append(&c->to_c, c->uhead + used, more) < 0) {
			return fail(c, 503, "out of memory");
		}
	}
	if (c->fwd) {
		free(c->to_u.p);
		c->to_u = (struct buf){ .p = c->fwd, .len = c->fwd_len };
		c->fwd = NULL;
	}
	/* the client's bytes so far (a checked ClientHello, or what followed a CONNECT) go first;
	 * a keyed connection's are the start of its first request: key_pump() reads them */
	if (!c->keyed && c->in_len && buf_append(&c->to_u, c->in, c->in_len) < 0)
		return fail(c, 503, "out of memory");
	if (!c->keyed) {
		c->in_len = 0;
		in_release(c);
	}
	c->st = CS_RELAY;
	/* Only the queued bytes (the 200, a head, a checked ClientHello) go now: a splice from
	 * either socket here found nothing in the measured CONNECT (two EAGAINs before the first
	 * byte), and the level-triggered epoll set reports what is readable in the next wait. */
	relay(c, c->keyed && c->in_len, false); /* a keyed request that came with the CONNECT */
}

static void on_connect_ready(struct conn *c)
{
	int err = 0;
	socklen_t l = sizeof(err);

	if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
		err = errno;
	if (err) {
		close(c->ufd);
		c->ufd = -1;
		start_dial(c);
		return;
	}
	(void)setsockopt(c->ufd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	if (c->via_upstream) {
		char req[ALLOW_NAME_MAX * 2 + 64], a[ADDR_STRLEN];
		const char *target = c->d.host;
		int n;

		if (c->d.is_literal || (c->d.n_addrs && !c->d.host_internal && c->d.rule[0] &&
					c->d.addrs[0].family)) {
			/* literal or pinned: tell the upstream the checked address, not the name */
			if (c->d.n_addrs) {
				addr_format(&c->d.addrs[0], a, sizeof(a));
				target = a;
			}
		}
		n = snprintf(req, sizeof(req), strchr(target, ':') ? "CONNECT [%s]:%u HTTP/1.1\r\nHost: [%s]:%u\r\n\r\n" :
				 "CONNECT %s:%u HTTP/1.1\r\nHost: %s:%u\r\n\r\n", target, c->d.port, target, c->d.port);
		if (buf_set(&c->to_u, req, (size_t)n) < 0)
			return fail(c, 503, "out of memory");
		c->st = CS_UPHEAD;
		conn_update(c);
		return;
	}
	connected(c);
}

static void on_upstream_head(struct conn *c)
{
	int r = buf_flush(c->ufd, &c->to_u);

	if (r < 0)
		return fail(c, 502, "upstream proxy closed the connection");
	if (r == 0)
		return conn_update(c);
	if (!c->uhead && !(c->uhead = malloc(UPSTREAM_HEAD_MAX + 1)))
		return fail(c, 503, "out of memory");
	for (;;) {
		ssize_t k = recv(c->ufd, c->uhead + c->uhead_len, UPSTREAM_HEAD_MAX - c->uhead_len, 0);

		if (k < 0 && errno == EAGAIN)
			return conn_update(c);
		if (k <= 0)
			return fail(c, 502, "upstream proxy closed the connection");
		c->uhead_len += (size_t)k;
		c->uhead[c->uhead_len] = '\0';
		if (strstr(c->uhead, "\r\n\r\n"))
			break;
		if (c->uhead_len >= UPSTREAM_HEAD_MAX)
			return fail(c, 502, "upstream proxy answer too large");
	}
	if (strncmp(c->uhead, "HTTP/1.", 7) != 0 || c->uhead_len < 12 || c->uhead[9] != '2') {
		char reason[64];

		snprintf(reason, sizeof(reason), "upstream proxy refused the tunnel (status %.3s)",
			 c->uhead_len >= 12 ? c->uhead + 9 : "?");
		return fail(c, 502, reason);
	}
	free(c->to_u.p);
	c->to_u = (struct buf){ 0 };
	connected(c);
}

/* ---- the tlsgate (--key-via-gate, https://; net/tlsgate.h) --------------------------------- */

_Static_assert(TLSGATE_PRE_MAX >= SNI_RECORD_MAX, "the tlsgate takes every ClientHello the SNI check accepts");

/* Stops watching @fd of @c (before the fd is handed away: the tlsgate's copy would keep the
 * epoll registration, and its events would name @c after @c is freed). */
static void unwatch(struct conn *c, int fd, bool *registered)
{
	if (*registered)
		(void)epoll_ctl(c->g->ep, EPOLL_CTL_DEL, fd, NULL);
	*registered = false;
}

/* Stage: the hand-over of a keyed connection to an https:// endpoint, dialled (and its 200
 * queued, for a CONNECT). Should: send the 200, then give the tlsgate the client's and the
 * server's sockets with the client bytes already read (the ClientHello the SNI check read, or
 * what came with the CONNECT) and the far ends of two new socketpairs, and go on with the near
 * ends as this connection's client and server: the keyed relay reads the decrypted requests and
 * answers exactly as it does for http:// (key_pump(), mask_pump()). Mustn't: keep a copy of
 * either TCP socket, or send a byte of the client's to the server itself. */
static void tls_handoff(struct conn *c)
{
	const char *end = c->uhead ? strstr(c->uhead, "\r\n\r\n") : NULL;
	int pc[2] = { -1, -1 }, pu[2] = { -1, -1 }, r;

	/* a TLS server speaks after the ClientHello: bytes after the upstream proxy's answer are
	 * not TLS from it */
	if (end && (size_t)(end + 4 - c->uhead) < c->uhead_len)
		return fail(c, 502, "the upstream proxy sent bytes before the TLS handshake");
	if (c->g->tls_fd < 0)
		return fail(c, 502, "the TLS terminator of the model endpoint is gone");
	if (c->in_len > TLSGATE_PRE_MAX)
		return fail(c, 502, "the TLS ClientHello is too large to hand over");
	r = buf_flush(c->cfd, &c->to_c);
	if (r <= 0)
		return fail(c, 502, "the client did not take the tunnel's answer");
	c->to_c.len = c->to_c.off = 0;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pc) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pu) < 0) {
		for (int i = 0; i < 2; i++)
			if (pc[i] >= 0)
				close(pc[i]);
		return fail(c, 503, "out of sockets");
	}
	unwatch(c, c->cfd, &c->c_registered);
	unwatch(c, c->ufd, &c->u_registered);
	c->ev_c = c->ev_u = 0;
	r = tlsgate_handoff(c->g->tls_fd, c->id, c->d.host, c->in, c->in_len, c->cfd, c->ufd, pc[1], pu[1]);
	close(pc[1]);
	close(pu[1]);
	if (r < 0) {
		close(pc[0]);
		close(pu[0]);
		return fail(c, 502, "the TLS terminator of the model endpoint did not take the connection");
	}
	close(c->cfd);
	close(c->ufd);
	c->cfd = pc[0];
	c->ufd = pu[0];
	c->tls = true;
	c->in_len = 0;
	in_release(c);
	c->st = CS_RELAY;
	relay(c, false, false);
}

/* The tlsgate is gone (crashed or killed): connections handed to it see their plaintext ends
 * close; new ones are refused (tls_handoff()). */
static void tls_gone(struct gate *g)
{
	(void)epoll_ctl(g->ep, EPOLL_CTL_DEL, g->tls_fd, NULL);
	close(g->tls_fd);
	g->tls_fd = -1;
}

/* The tlsgate's events: a failed handshake (the upstream certificate did not verify, the SNI was
 * not the endpoint) becomes the connection's record's reason; @act: also end the connection
 * now (from the loop; log_conn() only collects the reason of the one it is writing). */
static void tls_events(struct gate *g, bool act)
{
	for (int i = 0; i < 64 && g->tls_fd >= 0; i++) {
		struct tlsgate_event ev;
		struct conn *c = g->conns;
		int r = tlsgate_event_read(g->tls_fd, &ev);

		if (r == 0)
			return;
		if (r < 0)
			return tls_gone(g);
		while (c && !(c->tls && c->id == ev.id))
			c = c->next;
		if (!c)
			continue;
		c->tls_heard = true;
		if (ev.status == 0)
			continue;
		if (!c->tls_reason) {
			ev.reason[sizeof(ev.reason) - 1] = '\0';
			c->tls_reason = strdup(ev.reason[0] ? ev.reason : "the TLS handshake failed");
		}
		if (act) {
			log_conn(c, true, NULL);
			conn_free(c);
		}
	}
}

/* ---- client input before the relay -------------------------------------------------------- */

/* Reads what the client sent, up to @cap bytes in all (the first call's cap is the limit).
 * The buffer starts at 1 KiB and doubles, and in_release() frees it once consumed: a 64 KiB
 * buffer kept per connection cost a 4 KiB page of RSS each (1,000 tunnels: supervisor 12.8 MiB,
 * bench/gate.sh) although heads are a few hundred bytes. */
static int read_in(struct conn *c, size_t cap)
{
	if (!c->in_max)
		c->in_max = cap;
	for (;;) {
		ssize_t k;

		if (c->in_len == c->in_cap) {
			size_t n = c->in_cap ? c->in_cap * 2 : 1024;
			char *p;

			if (c->in_cap >= c->in_max)
				return 0;
			if (n > c->in_max)
				n = c->in_max;
			p = realloc(c->in, n + 1);
			if (!p)
				return -ENOMEM;
			c->in = p;
			c->in_cap = n;
		}
		k = recv(c->cfd, c->in + c->in_len, c->in_cap - c->in_len, 0);
		if (k < 0)
			return errno == EAGAIN ? 0 : -errno;
		if (k == 0)
			return -ECONNRESET;
		c->in_len += (size_t)k;
		/* a short read drained the socket: the level-triggered epoll set reports more (or the
		 * EOF), so the recv() that would only say EAGAIN is saved */
		if (c->in_len < c->in_cap)
			return 0;
	}
}

/* An empty input buffer is freed: a long-lived tunnel keeps only its struct conn. */
static void in_release(struct conn *c)
{
	if (c->in_len)
		return;
	free(c->in);
	c->in = NULL;
	c->in_cap = 0;
}

static void on_head(struct conn *c)
{
	struct http_request req;
	int status, r;

	int rr = read_in(c, HTTP_HEAD_MAX);

	if (rr == -ENOMEM)
		return fail(c, 503, "out of memory");
	r = http_parse_head(c->in, c->in_len, &req, &status);
	if (r == HTTP_NEED_MORE && rr < 0) {
		if (c->in_len) {
			struct record rec = { .kind = "proxy", .host = "", .reason = "client closed before a complete request",
					      .dur_ms = now_ms() - c->t_start };

			egress_log(c->g, &rec, LOG_SHARED);
		}
		conn_free(c);
		return;
	}
	if (r == HTTP_NEED_MORE)
		return conn_update(c);
	if (r < 0)
		return fail(c, status, status == 431 ? "request head too large" : req.bad ? req.bad : "malformed request");
	snprintf(c->method, sizeof(c->method), "%s", req.method);
	c->connect_req = req.connect;
	if (req.host_mismatch) {
		snprintf(c->d.host, sizeof(c->d.host), "%.253s", req.host);
		c->d.port = req.port;
		return deny(c, "the Host header names another host than the request target", NULL);
	}
	if (!req.connect) {
		size_t extra = c->in_len - req.head_len, used = 0;
		int fr;

		if (http_rewrite_origin(c->in, &req, &c->fwd, &c->fwd_len) < 0)
			return fail(c, 503, "out of memory");
		c->fwd_head = c->fwd_len;
		/* of what followed the head, only the body's bytes go with it; the rest (a pipelined
		 * request) is dropped, and a malformed chunked body is refused before any dial */
		c->framed = true;
		http_body_init(&c->body, &req);
		fr = http_body_feed(&c->body, c->in + req.head_len, extra, &used);
		if (fr < 0)
			return fail(c, 400, c->body.bad);
		c->req_done = fr == 1;
		c->dropped = extra - used;
		if (used) {
			char *p = realloc(c->fwd, c->fwd_len + used);

			if (!p)
				return fail(c, 503, "out of memory");
			memcpy(p + c->fwd_len, c->in + req.head_len, used);
			c->fwd = p;
			c->fwd_len += used;
		}
		c->in_len = req.head_len;
	}
	/* a CONNECT keeps what followed its head: maybe a ClientHello */
	memmove(c->in, c->in + req.head_len, c->in_len - req.head_len);
	c->in_len -= req.head_len;
	in_release(c);
	decide(c, req.host, req.port);
}

static void on_sni(struct conn *c)
{
	char name[ALLOW_NAME_MAX + 1], reason[ALLOW_NAME_MAX * 2 + 64];
	int r;

	int rr = read_in(c, SNI_RECORD_MAX);

	r = sni_parse((const unsigned char *)c->in, c->in_len, name, sizeof(name));
	if (r == 0 && rr < 0) {
		log_conn(c, true, "client closed before sending a TLS ClientHello");
		return conn_free(c);
	}
	if (r == 0 && c->in_len < SNI_RECORD_MAX)
		return conn_update(c);
	if (r == 1 && streq(name, c->d.host))
		return start_dial(c); /* the ClientHello waits in c->in until connected() */
	if (r == 1)
		snprintf(reason, sizeof(reason), "TLS server name '%s' differs from the checked host %s", name, c->d.host);
	else if (r == -ENOENT)
		snprintf(reason, sizeof(reason), "TLS ClientHello without a server name for %s", c->d.host);
	else
		snprintf(reason, sizeof(reason), "port 443 of %s without a readable TLS ClientHello", c->d.host);
	deny(c, reason, NULL);
}

/* ---- relay -------------------------------------------------------------------------------- */

/* Moves bytes src -> pipe -> dst; returns -1 on a fatal error.
 *
 * Reads until the source has nothing more right now (or the pipe is full), then writes it all
 * in one splice, as a blocking splice would: the sender keeps adding data while we read, so one
 * wakeup gathers far more than the ~64 KiB (one loopback segment) that one read returns. Fewer,
 * larger writes mean fewer TCP pushes and reader wakeups on the far side. */
static int pump(int src, int pw, int pr, int dst, size_t *q, bool *eof, bool *done, bool *grown, uint64_t *count)
{
	/* A direction that carried 1 MiB gets a 1 MiB pipe: fewer splice calls per byte. Only bulk
	 * flows grow, so 1,000 idle connections do not eat the user's pipe quota (past it the
	 * kernel hands out one-page pipes). Failure keeps 64 KiB. */
	if (!*grown && *count >= PIPE_CHUNK) {
		*grown = true;
		(void)fcntl(pw, F_SETPIPE_SZ, PIPE_CHUNK);
	}

	for (int round = 0; round < 16; round++) { /* then back to epoll: other connections get a turn */
		while (!*eof) {
			ssize_t k = splice(src, NULL, pw, NULL, PIPE_CHUNK, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);

			if (k > 0) {
				*q += (size_t)k;
				continue;
			}
			if (k == 0)
				*eof = true;
			else if (errno != EAGAIN)
				return -1;
			break;      /* the source is empty for now, or the pipe is full */
		}
		if (*q > 0) {
			ssize_t k = splice(pr, NULL, dst, NULL, *q, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);

			if (k < 0)
				return errno == EAGAIN ? 0 : -1;
			*q -= (size_t)k;
			*count += (uint64_t)k;
			if (*q > 0)
				return 0;   /* dst is full: wait for EPOLLOUT */
			continue;       /* the source may have more by now */
		}
		if (*eof && !*done) {
			shutdown(dst, SHUT_WR);
			*done = true;
		}
		return 0;
	}
	return 0;
}

/* Stage: the client-to-server direction of a plain request. Should: forward exactly the bytes
 * of the request's body (http_body_feed()), then read and drop whatever the client sends (read,
 * so that closing never resets the answer away), and pass the client's EOF on. Mustn't: forward
 * one byte after the body's end: the head it belongs to was never checked. Userspace copies,
 * not splice: only the framer knows where the body ends (plain HTTP uploads only; CONNECT
 * tunnels keep the splice path). Return: 0, -EBADMSG (c->body.bad says why), -1 when closed. */
static int frame_pump(struct conn *c)
{
	char tmp[16384];

	for (int round = 0; round < 16; round++) { /* then back to epoll, like pump() */
		size_t used = 0;
		ssize_t k;
		int r;

		k = recv(c->cfd, tmp, sizeof(tmp), 0);
		if (k < 0)
			return errno == EAGAIN ? 0 : -1;
		if (k == 0) {
			c->eof_c = true;
			if (!c->done_cu) {
				shutdown(c->ufd, SHUT_WR);
				c->done_cu = true;
			}
			return 0;
		}
		if (c->req_done) {
			c->dropped += (uint64_t)k;
			continue;
		}
		r = http_body_feed(&c->body, tmp, (size_t)k, &used);
		if (r < 0)
			return -EBADMSG;
		c->req_done = r == 1;
		c->dropped += (uint64_t)k - used;
		if (!used)
			continue;
		if (buf_set(&c->to_u, tmp, used) < 0)
			return -1;
		r = buf_flush(c->ufd, &c->to_u);
		if (r < 0)
			return -1;
		if (r == 0)
			return 0; /* the rest waits in to_u for EPOLLOUT */
		c->bytes_out += c->to_u.len;
		c->to_u.len = c->to_u.off = 0;
	}
	return 0;
}

static bool is_hop_header(const char *line, size_t len)
{
	static const char *const names[] = { "connection", "keep-alive", "proxy-connection" };

	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		size_t n = strlen(names[i]);

		if (len > n && line[n] == ':' && strncasecmp(line, names[i], n) == 0)
			return true;
	}
	return false;
}

/* The length of the answer head at @b (incl. its empty line: CRLF CRLF, or bare LFs), or 0. */
static size_t answer_head_end(const char *b, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (b[i] != '\n')
			continue;
		if (i + 1 < len && b[i + 1] == '\n')
			return i + 2;
		if (i + 2 < len && b[i + 1] == '\r' && b[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

/* The answer head [@h, @h + @len) of a plain request, queued for the client: 1xx interim answers
 * as they are, the final one with its Connection and Keep-Alive lines replaced by
 * "Connection: close", so the client never sends a next request on a connection the gate will
 * forward nothing more on (RFC 9112 9.6). Return: 1 for the final head, 0 for an interim one,
 * -EBADMSG when it is not an HTTP/1.x status head, -ENOMEM. */
static int queue_answer_head(struct conn *c, const char *h, size_t len)
{
	size_t pos;

	if (len < 12 || memcmp(h, "HTTP/1.", 7) != 0 || h[8] != ' ' || h[9] < '1' || h[9] > '5' || h[10] < '0' ||
	    h[10] > '9' || h[11] < '0' || h[11] > '9')
		return -EBADMSG;
	if (h[9] == '1' && !(h[10] == '0' && h[11] == '1')) { /* 1xx but 101: another head follows */
		c->bytes_in += len;
		return buf_append(&c->to_c, h, len) < 0 ? -ENOMEM : 0;
	}
	pos = (size_t)((const char *)memchr(h, '\n', len) - h) + 1;
	if (buf_append(&c->to_c, h, pos) < 0)
		return -ENOMEM;
	while (pos < len) {
		const char *line = h + pos;
		size_t l = (size_t)((const char *)memchr(line, '\n', len - pos) - line) + 1;
		size_t content = l - 1 - (l >= 2 && line[l - 2] == '\r');

		pos += l;
		if (content == 0)
			break;
		if (!is_hop_header(line, content) && buf_append(&c->to_c, line, l) < 0)
			return -ENOMEM;
	}
	if (buf_append(&c->to_c, "Connection: close\r\n\r\n", 21) < 0)
		return -ENOMEM;
	c->bytes_in += len;
	return 1;
}

_Static_assert(GATE_KEY_VALUE_MAX <= KEYMASK_KEY_MAX, "keymask.h holds the longest key");

/* The needles (net/keymask.h) of the keys the gate adds on @c's connection (its endpoint's),
 * into @out (GATE_KEYS_MAX). Return: how many. */
static size_t conn_masks(const struct conn *c, const struct keymask **out)
{
	const struct gate_config *cfg = &c->g->cfg;
	size_t n = 0;

	for (size_t i = 0; i < cfg->n_keys && c->g->masks; i++)
		if (cfg->keys[i].port == c->d.port && strcasecmp(cfg->keys[i].host, c->d.host) == 0)
			out[n++] = &c->g->masks[i];
	return n;
}

/* Overwrites, in place, every copy in [@b, @b + @n) of a key the gate adds on this connection,
 * plain or encoded (keymask_scan()). Return: how many bytes at the end may begin one. */
static size_t mask_keys(const struct conn *c, char *b, size_t n)
{
	const struct keymask *m[GATE_KEYS_MAX];

	/* not final: an answer head's possible key is decided when more of the head is read */
	return keymask_scan(m, conn_masks(c, m), b, n, false);
}

static int to_client(void *ctx, const char *p, size_t n)
{
	struct conn *c = ctx;

	return buf_append(&c->to_c, p, n) < 0 ? -ENOMEM : 0;
}

/* Queues @len answer bytes for the client of a keyed connection, with every key the gate added
 * masked (keymask_feed()): an endpoint that echoes a request header (an error message quoting the
 * key, a debugging route) must not hand the key to the sandbox. A tail that may begin a key is
 * held back until the next bytes decide (@final: the answer ended, send it). Return: 0, -ENOMEM. */
static int mask_out(struct conn *c, const char *data, size_t len, bool final)
{
	const struct keymask *m[GATE_KEYS_MAX];

	return keymask_feed(m, conn_masks(c, m), &c->ks, data, len, final, to_client, c);
}

/* Stage: the server-to-client direction of a connection that carries a key (--key-via-gate),
 * after any answer head. Should: pass the answers through mask_out(), in userspace (not splice:
 * the bytes must be looked at), as they come (a streamed answer is never held back but for a
 * possible key's first bytes), then pass the server's EOF on. Return: 0, -1 when closed. */
static int mask_pump(struct conn *c)
{
	char tmp[16384];

	for (int round = 0; round < 16; round++) {
		ssize_t k;
		int r;

		if (c->to_c.off < c->to_c.len) {
			r = buf_flush(c->cfd, &c->to_c);
			if (r <= 0)
				return r;
		}
		c->to_c.len = c->to_c.off = 0;
		if (c->eof_u) {
			if (!c->done_uc) {
				shutdown(c->cfd, SHUT_WR);
				c->done_uc = true;
			}
			return 0;
		}
		k = recv(c->ufd, tmp, sizeof(tmp), 0);
		if (k < 0)
			return errno == EAGAIN ? 0 : -1;
		if (k == 0)
			c->eof_u = true;
		else
			c->bytes_in += (uint64_t)k;
		if (mask_out(c, tmp, (size_t)k, k == 0) < 0)
			return -1;
		explicit_bzero(tmp, (size_t)k);
	}
	return 0;
}

/* Stage: the server-to-client direction of a plain request, until its final answer head.
 * Should: read the head(s) (at most UPSTREAM_HEAD_MAX), queue them through
 * queue_answer_head(), then the body bytes read with them, and leave the rest to pump().
 * Mustn't: pass anything that is not an HTTP/1.x answer (502 while the client has seen
 * nothing). Return: 0, or -1 when the connection was closed here. */
static int answer_head(struct conn *c)
{
	for (;;) {
		ssize_t k;
		size_t used;
		int r;

		if (!c->rhead) {
			if (!(c->rhead = malloc(UPSTREAM_HEAD_MAX))) {
				fail(c, 503, "out of memory");
				return -1;
			}
			c->rhead_len = 0;
		}
		/* complete heads already read go first (an interim 100 and the final answer); a head
		 * that echoes the key is masked like the body (mask_out()) */
		if (c->key_added)
			(void)mask_keys(c, c->rhead, c->rhead_len);
		if ((used = answer_head_end(c->rhead, c->rhead_len))) {
			r = queue_answer_head(c, c->rhead, used);
			if (r == -ENOMEM || r == -EBADMSG) {
				fail(c, 502, r == -ENOMEM ? "out of memory" : "the server's answer is not an HTTP/1.x response");
				return -1;
			}
			memmove(c->rhead, c->rhead + used, c->rhead_len - used);
			c->rhead_len -= used;
			if (r == 1) {
				/* the body bytes read with the head follow it; the rest is spliced */
				if (c->rhead_len && (c->key_added ? mask_out(c, c->rhead, c->rhead_len, false) :
						     buf_append(&c->to_c, c->rhead, c->rhead_len)) < 0) {
					fail(c, 503, "out of memory");
					return -1;
				}
				c->bytes_in += c->rhead_len;
				free(c->rhead);
				c->rhead = NULL;
				c->rhead_len = 0;
				c->resp_passed = true;
				return 0;
			}
			continue;
		}
		if (c->rhead_len >= UPSTREAM_HEAD_MAX) {
			fail(c, 502, "the server's answer head is too large");
			return -1;
		}
		k = recv(c->ufd, c->rhead + c->rhead_len, UPSTREAM_HEAD_MAX - c->rhead_len, 0);
		if (k < 0 && errno == EAGAIN)
			return 0;
		if (k <= 0) {
			fail(c, 502, "the server closed the connection without an answer");
			return -1;
		}
		c->rhead_len += (size_t)k;
	}
}

/* Queues @n bytes at @p for the server and writes what it can. Return: 1 all written, 0 the rest
 * waits for EPOLLOUT, -1 a write failed. */
static int to_server(struct conn *c, const char *p, size_t n)
{
	int r;

	if (buf_append(&c->to_u, p, n) < 0)
		return -1;
	r = buf_flush(c->ufd, &c->to_u);
	if (r <= 0)
		return r;
	c->bytes_out += c->to_u.len;
	c->to_u.len = c->to_u.off = 0;
	return 1;
}

/* Drops the first @n bytes of the client input. */
static void in_consume(struct conn *c, size_t n)
{
	memmove(c->in, c->in + n, c->in_len - n);
	c->in_len -= n;
}

/* One request head of a keyed connection, [c->in, +@len), parsed into @req: to the server, with
 * the key in place of its placeholder. Return: 1, 0 (waits for EPOLLOUT), -1. */
static int key_head(struct conn *c, size_t len)
{
	const struct gate_config *cfg = &c->g->cfg;
	char *head = c->in, *out = NULL;
	size_t hl = len;
	int r;

	for (size_t i = 0; i < cfg->n_keys; i++) {
		const struct gate_key *k = &cfg->keys[i];
		size_t ol = 0;

		if (k->port != c->d.port || strcasecmp(k->host, c->d.host) != 0)
			continue;
		r = http_put_key(head, hl, k->placeholder, k->value, &out, &ol);
		if (r < 0)
			break;
		if (r > 0) {
			if (head != c->in) {
				explicit_bzero(head, hl);
				free(head);
			}
			head = out, hl = ol;
			c->key_added = true;
		}
	}
	r = to_server(c, head, hl);
	if (head != c->in) {
		explicit_bzero(head, hl);
		free(head);
	}
	in_consume(c, len);
	return r;
}

/* Stage: the client-to-server direction of a keyed connection (--key-via-gate, a tunnel or
 * transparent connection to an http:// model endpoint). Should: read the client's bytes as
 * HTTP/1.x requests one after another, each head bounded and checked like a proxy head
 * (http_parse_origin_head(): origin-form, the Host the endpoint, no ambiguous framing), with the
 * key put in place of its placeholder (key_head()), each body framed (http_body_feed()) and
 * forwarded as it is; pass the client's EOF on. Mustn't: forward bytes it could not read as a
 * request (a reset instead), or keep a key anywhere but the head it goes out in. Return: 0,
 * -EBADMSG (c->body.bad says why), -1 when closed. */
static int key_pump(struct conn *c)
{
	/* 16 reads, then back to epoll, like pump(); bytes already read are always handled (each
	 * turn consumes some or returns), since no event would come for them */
	for (int round = 0; round < 16 || c->in_len; round++) {
		struct http_request req;
		size_t used = 0;
		int rr = 0, r, status;

		if (!c->in_len) {
			rr = read_in(c, HTTP_HEAD_MAX);
			if (rr == -ECONNRESET) {
				c->eof_c = true;
				if (!c->done_cu) {
					shutdown(c->ufd, SHUT_WR);
					c->done_cu = true;
				}
				return 0;
			}
			if (rr < 0)
				return -1;
			if (!c->in_len)
				return 0;
		}
		if (c->in_body) {
			r = http_body_feed(&c->body, c->in, c->in_len, &used);
			if (r < 0)
				return -EBADMSG;
			c->in_body = r != 1;
			if (used) {
				int w = to_server(c, c->in, used);

				in_consume(c, used);
				if (w <= 0)
					return w;
			}
			continue;
		}
		r = http_parse_origin_head(c->in, c->in_len, c->d.host, c->d.port, &req, &status);
		if (r == HTTP_NEED_MORE) {
			size_t had = c->in_len;

			rr = read_in(c, HTTP_HEAD_MAX);
			if (rr == -ECONNRESET || rr < 0)
				return -1; /* a request cut off: nothing of it goes out */
			if (c->in_len == had)
				return 0;
			continue;
		}
		if (r < 0 || req.host_mismatch) {
			c->body.bad = r < 0 ? (req.bad ? req.bad : status == 431 ? "request head too large" :
					       "malformed request inside the tunnel to the model endpoint") :
				      "the Host header names another host than the model endpoint";
			return -EBADMSG;
		}
		http_body_init(&c->body, &req);
		c->in_body = req.body != HTTP_BODY_NONE;
		r = key_head(c, (size_t)r);
		if (r <= 0)
			return r;
	}
	return 0;
}

/* A chunked body broke the rules half-way: the server got a body it cannot finish, so it gets
 * a reset (a FIN could look like an end), and the client a 400 when it has seen no answer yet. */
static void body_refused(struct conn *c)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	(void)setsockopt(c->ufd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	fail(c, 400, c->body.bad);
}

/* @cu, @uc: which directions to pump (the event said the client side, resp. the server side,
 * can move); the queued to_u/to_c bytes are flushed either way. An event on one direction used to
 * pump both, one splice that returned EAGAIN per wake-up of a one-way transfer. */
static void relay(struct conn *c, bool cu, bool uc)
{
	int r;

	if (c->st == CS_SNI)
		return on_sni(c);
	if (c->p_cu[0] < 0) {
		if (pipe2(c->p_cu, O_CLOEXEC | O_NONBLOCK) < 0 || pipe2(c->p_uc, O_CLOEXEC | O_NONBLOCK) < 0)
			return fail(c, 503, "out of pipes");

	}
	c->deadline = now_ms() + c->g->cfg.idle_timeout_ms;
	r = buf_flush(c->ufd, &c->to_u);
	if (r < 0)
		goto closed;
	if (r > 0) {
		c->bytes_out += c->to_u.len;
		c->to_u.len = c->to_u.off = 0;
		if (cu && (c->framed || c->keyed)) {
			int fr = c->keyed ? key_pump(c) : frame_pump(c);

			if (fr == -EBADMSG)
				return body_refused(c);
			if (fr < 0)
				goto closed;
		} else if (cu && pump(c->cfd, c->p_cu[1], c->p_cu[0], c->ufd, &c->q_cu, &c->eof_c, &c->done_cu, &c->grown_cu,
				      &c->bytes_out) < 0) {
			goto closed;
		}
	}
	r = buf_flush(c->cfd, &c->to_c);
	if (r < 0)
		goto closed;
	if (r > 0) {
		c->to_c.len = c->to_c.off = 0;
		if (uc && c->framed && !c->resp_passed) {
			if (answer_head(c) < 0)
				return;
			if (c->to_c.len) /* the head is queued: flush it, then splice */
				return relay(c, false, c->resp_passed);
		} else if (uc && (c->keyed || c->key_added)) {
			if (mask_pump(c) < 0)
				goto closed;
		} else if (uc && pump(c->ufd, c->p_uc[1], c->p_uc[0], c->cfd, &c->q_uc, &c->eof_u, &c->done_uc, &c->grown_uc,
				      &c->bytes_in) < 0) {
			goto closed;
		}
	}
	if (c->done_cu && c->done_uc)
		goto closed;
	/* A server that hung up can take no more bytes: give up if some are still meant for it. */
	if (c->hup_u && c->eof_u && (c->q_cu > 0 || c->to_u.off < c->to_u.len))
		goto closed;
	conn_update(c);
	return;
closed:
	log_conn(c, true, c->dropped ? "bytes the client sent after its request were not forwarded (one request per connection)" : NULL);
	conn_free(c);
}

/* ---- DNS ---------------------------------------------------------------------------------- */

static int dns_answer(struct gate *g, const uint8_t *msg, size_t len, uint8_t *out, size_t size, const char *kind)
{
	struct dns_query q;
	uint8_t a[4];
	int r = dns_parse_query(msg, len, &q);

	if (r == -EOPNOTSUPP)
		return dns_build_error(msg, len, DNS_RCODE_NOTIMP, out, size);
	if (r < 0)
		return dns_build_error(msg, len, DNS_RCODE_FORMERR, out, size);
	if (!q.name_ok || q.qclass != 1)
		return dns_build_error(msg, len, DNS_RCODE_REFUSED, out, size);
	if (!policy_name_listed(g->cfg.policy, q.name)) {
		char reason[ALLOW_NAME_MAX + 32], suggest[ALLOW_NAME_MAX + 16];

		snprintf(reason, sizeof(reason), "%s is not in the allowlist", q.name);
		snprintf(suggest, sizeof(suggest), "--allow %s", q.name);
		struct record rec = { .kind = kind, .host = q.name, .reason = reason };

		log_denial(g, &rec);
		if (q.name[0])
			note_denial(g, q.name, 53, suggest);
		return dns_build_response(&q, DNS_RCODE_NXDOMAIN, NULL, out, size);
	}
	if (q.qtype == DNS_TYPE_A && dns_pool_lookup_or_add(&g->pool, q.name, a) == 0)
		return dns_build_response(&q, DNS_RCODE_NOERROR, a, out, size);
	return dns_build_response(&q, DNS_RCODE_NOERROR, NULL, out, size);
}

static void on_dns_udp(struct gate *g)
{
	for (int i = 0; i < 64; i++) {
		uint8_t msg[DNS_MSG_MAX], out[DNS_MSG_MAX];
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		ssize_t k = recvfrom(g->cfg.dns_udp_fd, msg, sizeof(msg), MSG_TRUNC, (struct sockaddr *)&from, &fl);
		int n;

		if (k < 0)
			return;
		if ((size_t)k > sizeof(msg))
			continue;                    /* oversized: drop */
		n = dns_answer(g, msg, (size_t)k, out, sizeof(out), "dns");
		if (n > 0)
			(void)sendto(g->cfg.dns_udp_fd, out, (size_t)n, MSG_DONTWAIT, (struct sockaddr *)&from, fl);
	}
}

static void on_dns_tcp(struct conn *c)
{
	int r = read_in(c, DNS_TCP_BUF);

	c->deadline = now_ms() + c->g->cfg.head_timeout_ms;
	while (c->in_len >= 2) {
		size_t l = (size_t)((uint8_t)c->in[0] << 8 | (uint8_t)c->in[1]);
		uint8_t out[2 + DNS_MSG_MAX];
		int n;

		if (l + 2 > DNS_TCP_BUF)
			return conn_free(c);
		if (c->in_len < l + 2)
			break;
		n = dns_answer(c->g, (const uint8_t *)c->in + 2, l, out + 2, sizeof(out) - 2, "dns");
		if (n > 0) {
			out[0] = (uint8_t)(n >> 8);
			out[1] = (uint8_t)n;
			if (buf_append(&c->to_c, out, (size_t)n + 2) < 0)
				return conn_free(c);
		}
		memmove(c->in, c->in + l + 2, c->in_len - l - 2);
		c->in_len -= l + 2;
	}
	if (buf_flush(c->cfd, &c->to_c) < 0)
		return conn_free(c);
	if (c->to_c.off == c->to_c.len)
		c->to_c.len = c->to_c.off = 0;
	if (r < 0 && c->to_c.len == 0)
		return conn_free(c);
	conn_update(c);
}

/* ---- event masks -------------------------------------------------------------------------- */

static void conn_update(struct conn *c)
{
	uint32_t wc = 0, wu = 0;

	switch (c->st) {
	case CS_HEAD:
	case CS_SNI:
	case CS_DNS:
		wc = EPOLLIN;
		if (c->to_c.len > c->to_c.off)
			wc |= EPOLLOUT;
		break;
	case CS_RESOLVE:
		break;
	case CS_CONNECT:
		wu = EPOLLOUT;
		break;
	case CS_UPHEAD:
		wu = c->to_u.off < c->to_u.len ? EPOLLOUT : EPOLLIN;
		break;
	case CS_RELAY: {
		bool u_pending = c->to_u.off < c->to_u.len, c_pending = c->to_c.off < c->to_c.len;

		if (!u_pending && !c->eof_c && c->q_cu == 0)
			wc |= EPOLLIN;
		if (c_pending || c->q_uc > 0)
			wc |= EPOLLOUT;
		if (!c_pending && !c->eof_u && c->q_uc == 0)
			wu |= EPOLLIN;
		if (u_pending || c->q_cu > 0)
			wu |= EPOLLOUT;
		break;
	}
	}
	if (c->st == CS_SNI && c->to_c.len > c->to_c.off) {
		/* send the 200 before waiting for the ClientHello */
		int r = buf_flush(c->cfd, &c->to_c);

		if (r < 0) {
			log_conn(c, true, "client closed");
			conn_free(c);
			return;
		}
		if (r > 0) {
			c->to_c.len = c->to_c.off = 0;
			wc &= ~(uint32_t)EPOLLOUT;
		}
	}
	if (ep_set(c->g, c->cfd, &c->hc, &c->ev_c, wc, &c->c_registered) < 0) {
		conn_free(c);
		return;
	}
	if (c->ufd >= 0 && c->hup_u && c->eof_u) {
		/* EPOLLHUP is reported even with no events requested: stop watching the fd, or the
		 * loop would spin while the client drains the rest */
		if (c->u_registered) {
			(void)epoll_ctl(c->g->ep, EPOLL_CTL_DEL, c->ufd, NULL);
			c->u_registered = false;
		}
		return;
	}
	if (c->ufd >= 0 && ep_set(c->g, c->ufd, &c->hu, &c->ev_u, wu, &c->u_registered) < 0)
		conn_free(c);
}

static void on_conn_event(struct conn *c, bool upstream, uint32_t ev)
{
	/* A client that hung up while we wait on the resolver or a dial: an fd with no requested
	 * events still reports EPOLLHUP, level-triggered, so close now instead of spinning. */
	if (!upstream && (ev & (EPOLLHUP | EPOLLERR)) &&
	    (c->st == CS_RESOLVE || c->st == CS_CONNECT || c->st == CS_UPHEAD)) {
		log_conn(c, c->d.step == POLICY_DIAL, "client closed while the gate was dialing");
		conn_free(c);
		return;
	}
	/* In the relay, a client that hung up (EPOLLHUP: both directions closed) or an error on
	 * either side ends the connection: level-triggered HUP would otherwise spin the loop. */
	if (c->st == CS_RELAY && (ev & (EPOLLHUP | EPOLLERR))) {
		if (upstream && !(ev & EPOLLERR)) {
			c->hup_u = true;    /* drain what the server sent, then stop watching it */
		} else {
			relay(c, true, true); /* deliver what can still be delivered */
			if (!c->dead) {
				log_conn(c, true, NULL);
				conn_free(c);
			}
			return;
		}
	}
	switch (c->st) {
	case CS_HEAD:
		return on_head(c);
	case CS_RESOLVE:
		return;
	case CS_CONNECT:
		if (upstream)
			on_connect_ready(c);
		return;
	case CS_UPHEAD:
		return on_upstream_head(c);
	case CS_SNI:
		if (!upstream)
			on_sni(c);
		return;
	case CS_RELAY:
		/* client readable or server writable: c->u; server readable or client writable: u->c */
		return relay(c, upstream ? (ev & EPOLLOUT) != 0 : (ev & EPOLLIN) != 0,
			     upstream ? (ev & (EPOLLIN | EPOLLHUP)) != 0 : (ev & EPOLLOUT) != 0);
	case CS_DNS:
		return on_dns_tcp(c);
	}
}

/* ---- accepting ---------------------------------------------------------------------------- */

static void on_accept(struct gate *g, enum htype type)
{
	int lfd = type == H_PROXY ? g->cfg.proxy_fd : type == H_TRANS ? g->cfg.transparent_fd : g->cfg.dns_tcp_fd;

	for (int i = 0; i < 64; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct conn *c;

		if (fd < 0)
			return;
		if (g->n_conns >= g->cfg.max_conns) {
			static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n"
						   "Content-Length: 31\r\n\r\naisb: too many open connections\n";

			if (type == H_PROXY)
				(void)!write(fd, busy, sizeof(busy) - 1);
			struct record r = { .kind = type == H_PROXY ? "proxy" : "transparent", .host = "",
					    .reason = "too many concurrent connections" };

			log_denial(g, &r);
			close(fd);
			continue;
		}
		c = conn_new(g, type == H_PROXY ? K_PROXY : type == H_TRANS ? K_TRANS : K_DNS_TCP, fd);
		if (!c) {
			close(fd);
			continue;
		}
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
		c->deadline = c->t_start + g->cfg.head_timeout_ms;
		if (c->kind == K_PROXY) {
			/* The client sends its request as soon as its connect() returns, often before
			 * this accept: read it now instead of after an epoll round (on_head() registers
			 * the fd when nothing is there yet). */
			c->st = CS_HEAD;
			on_head(c);
		} else if (c->kind == K_DNS_TCP) {
			c->st = CS_DNS;
			conn_update(c);
		} else {
			struct sockaddr_in od = { 0 };
			socklen_t ol = sizeof(od);
			const char *name = NULL;
			bool known;
			char a[ADDR_STRLEN];

			c->st = CS_HEAD;
			/* without a nat redirect (a direct connection to the listener) there is no
			 * original destination: ENOENT, and @od stays zero */
			known = getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &od, &ol) == 0 && ol == sizeof(od) &&
				od.sin_family == AF_INET;
			if (known)
				name = dns_pool_name(&g->pool, (const uint8_t *)&od.sin_addr);
			if (!name) {
				inet_ntop(AF_INET, &od.sin_addr, a, sizeof(a));
				snprintf(c->d.host, sizeof(c->d.host), "%s", known ? a : "(unknown)");
				c->d.port = ntohs(od.sin_port);
				deny(c, "transparent connection to an address the DNS stub never handed out", NULL);
				continue;
			}
			decide(c, name, ntohs(od.sin_port));
		}
	}
}

/* ---- timeouts ----------------------------------------------------------------------------- */

static void sweep(struct gate *g, long long now)
{
	struct conn *c = g->conns, *next;

	for (; c; c = next) {
		next = c->next;
		if (c->deadline > now)
			continue;
		switch (c->st) {
		case CS_HEAD:
			if (c->kind == K_PROXY) {
				fail(c, 408, "no complete request head in time");
				break;
			}
			/* fallthrough */
		case CS_DNS:
			conn_free(c);
			break;
		case CS_RESOLVE:
			fail(c, 504, "host name resolution timed out");
			break;
		case CS_CONNECT:
			close(c->ufd);
			c->ufd = -1;
			start_dial(c);
			break;
		case CS_UPHEAD:
			fail(c, 504, "upstream proxy did not answer in time");
			break;
		case CS_SNI:
			deny(c, "no TLS ClientHello in time", NULL);
			break;
		case CS_RELAY:
			log_conn(c, true, "idle timeout");
			conn_free(c);
			break;
		}
	}
}

/* ---- the gate process -------------------------------------------------------------------- */

/* Most denied first, in place (stable). Not qsort(3): from 27 entries glibc's qsort sorts by
 * merging into a buffer it sizes with sysconf(_SC_PHYS_PAGES), i.e. sysinfo(2), which is not on
 * the gate's allowlist (issue 22: 27 distinct denials killed the gate at its exit). An insertion
 * sort of at most DENIED_MAX entries allocates nothing and makes no system call. */
static void denied_sort(struct denied *v, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		struct denied t = v[i];
		size_t j = i;

		for (; j > 0 && v[j - 1].count < t.count; j--)
			v[j] = v[j - 1];
		v[j] = t;
	}
}

/* The summary line (design 6: the top denied destinations with the flag that would allow each),
 * formatted in the gate, printed by the supervisor. Does not log. */
static void summary_format(struct gate *g, struct gate_summary_msg *m)
{
	size_t shown, n = 0, size = sizeof(m->text);

	m->total_denied = g->total_denied;
	m->log_dropped = g->log_dropped;
	m->text[0] = '\0';
	if (!g->total_denied && !g->log_dropped)
		return;
	denied_sort(g->denied, g->n_denied);
#define PUT(...) (n += (size_t)snprintf(m->text + n, n < size ? size - n : 0, __VA_ARGS__), n = n < size ? n : size - 1)
	if (g->total_denied)
		PUT("aisb: network: denied %u request(s)%s", g->total_denied, g->n_denied ? ":" : "");
	else
		PUT("aisb: network: nothing denied");
	shown = g->n_denied < 5 ? g->n_denied : 5;
	for (size_t i = 0; i < shown; i++)
		PUT("%s %s (%ux%s%s)", i ? "," : "", g->denied[i].dest, g->denied[i].count,
		    g->denied[i].suggest[0] ? ", allow with " : "", g->denied[i].suggest);
	if (g->n_denied > shown)
		PUT(", and %zu more", g->n_denied - shown);
	/* the session dir goes at exit: name what outlives it (session_finish() keeps the log) */
	if (g->cfg.log_hint)
		PUT("; every connection: %s", g->cfg.log_hint);
	else if (g->n_denied > shown)
		PUT(" (see the egress log)");
	if (g->log_dropped)
		PUT("; %llu record(s) of denials and errors dropped at the egress log's bound (%llu %s; every "
		    "allowed connection is logged)", (unsigned long long)g->log_dropped,
		    (unsigned long long)(g->cfg.log_max >= (1 << 20) ? g->cfg.log_max >> 20 : g->cfg.log_max >> 10),
		    g->cfg.log_max >= (1 << 20) ? "MiB" : "KiB");
#undef PUT
}

/* The end of the gate: open connections are closed and logged, the summary goes to the
 * supervisor, and the process exits (the resolver sees its socket close and exits too). */
static _Noreturn void gate_exit(struct gate *g)
{
	struct gate_summary_msg m;
	char stop;

	while (g->conns) {
		struct conn *c = g->conns;

		if (c->st == CS_RELAY || c->log_held)
			log_conn(c, true, "sandbox exited");
		conn_free(c);
	}
	reap_dead(g);
	/* the denials counted since their last record, then what could not be written */
	for (size_t i = 0; g->agg && i < AGG_SLOTS; i++)
		agg_flush(g, &g->agg[i], 0);
	if (g->log_dropped && log_ready(g) == 0) {
		char line[LOG_LINE_MAX];
		struct record r = { .kind = "log", .note = true, .host = "", .dropped = g->log_dropped,
				    .reason = "records of denials and errors dropped at the egress log's bound" };

		(void)log_put(g, line, record_format(&r, line), LOG_NOTE);
	}
	summary_format(g, &m);
	/* Read the stop message first: a unix socket closed with unread data resets its peer, and
	 * the supervisor's recv of the summary then fails with ECONNRESET (measured: 1 run in 4 of
	 * bench/gate.sh lost its summary and reported a dead gate). */
	(void)recv(g->ctl_fd, &stop, 1, MSG_DONTWAIT);
	(void)send(g->ctl_fd, &m, sizeof(m), MSG_NOSIGNAL);
	_exit(0);
}

static _Noreturn void gate_loop(struct gate *g)
{
	struct epoll_event evs[128];

	for (;;) {
		long long now;
		int n = epoll_wait(g->ep, evs, (int)ELEMENTSOF(evs), g->conns ? SWEEP_MS : -1);

		if (n < 0 && errno != EINTR)
			_exit(1);
		for (int i = 0; i < n; i++) {
			struct handle *h = evs[i].data.ptr;

			switch (h->type) {
			case H_STOP:
				/* the stop message, or the supervisor's end closed */
				reap_dead(g);
				gate_exit(g);
			case H_RESOLVED:
				on_resolved(g);
				break;
			case H_TLS:
				tls_events(g, true);
				break;
			case H_PROXY:
			case H_TRANS:
			case H_DNS_TCP:
				on_accept(g, h->type);
				break;
			case H_DNS_UDP:
				on_dns_udp(g);
				break;
			case H_CLIENT:
			case H_UPSTREAM:
				/* a connection closed earlier in this batch is still allocated: skip it */
				if (!h->c->dead)
					on_conn_event(h->c, h->type == H_UPSTREAM, evs[i].events);
				break;
			}
		}
		reap_dead(g);
		now = now_ms();
		if (now >= g->next_sweep) {
			sweep(g, now);
			g->next_sweep = now + SWEEP_MS;
		}
	}
}

/* h[i] is the handle of fds in enum htype order: proxy, transparent, DNS UDP, DNS TCP, stop, resolved. */
static int watch(struct gate *g, size_t i, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &g->h[i] };

	set_nonblock(fd);
	if (epoll_ctl(g->ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		return log_error_errno(-errno, "cannot watch a gate socket: %m");
	return 0;
}

/* In the forked gate: confine, then serve. @parent: the supervisor; @prog: the allowlist.
 * Does not return. */
static _Noreturn void gate_child(struct gate *g, pid_t parent, const struct seccomp_prog *prog)
{
	int keep[] = { g->cfg.proxy_fd, g->cfg.transparent_fd, g->cfg.dns_udp_fd, g->cfg.dns_tcp_fd,
		       g->cfg.log_fd, g->ctl_fd, g->res_fd, g->ep, g->tls_fd };

	/* The aggregation table (~0.9 MiB, its pages touched only as slots are used), before the
	 * filter: an allocation this large is an mmap, and under ASan also a madvise(2), which the
	 * filter kills (measured: SIGSYS at the first denial of the --enable-sanitizers unit run). */
	g->agg = calloc(AGG_SLOTS, sizeof(*g->agg));
	/* Each key's needles (its encoded forms: net/keymask.h), once: without them no answer of a
	 * keyed connection could be masked, so the gate does not start */
	if (g->cfg.n_keys) {
		g->masks = calloc(g->cfg.n_keys, sizeof(*g->masks));
		if (!g->masks)
			_exit(1);
		for (size_t i = 0; i < g->cfg.n_keys; i++)
			if (keymask_init(&g->masks[i], g->cfg.keys[i].value, strlen(g->cfg.keys[i].value)) < 0)
				_exit(1);
	}
	/* Stage: confinement, before the first byte from the sandbox is read (gate-confine.h). The
	 * log's bound as RLIMIT_FSIZE too: log_put() never reaches it (one record of slack). */
	if (gate_confine(parent, prog, keep, ELEMENTSOF(keep), g->log_size + g->cfg.log_max + LOG_LINE_MAX) < 0)
		_exit(GATE_EXIT_CONFINE);
	g->cfg.proxy_fd = keep[0], g->cfg.transparent_fd = keep[1], g->cfg.dns_udp_fd = keep[2];
	g->cfg.dns_tcp_fd = keep[3], g->cfg.log_fd = keep[4], g->ctl_fd = keep[5], g->res_fd = keep[6];
	g->ep = keep[7];
	g->tls_fd = keep[8];
	if (watch(g, H_STOP, g->ctl_fd) < 0 || (g->res_fd >= 0 && watch(g, H_RESOLVED, g->res_fd) < 0) ||
	    (g->tls_fd >= 0 && watch(g, H_TLS, g->tls_fd) < 0))
		_exit(1);
	gate_loop(g);
}

static int parse_upstream(struct gate *g, const char *spec)
{
	char host[ALLOW_NAME_MAX + 1];
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL;
	int r;

	if (http_split_hostport(spec, strlen(spec), host, sizeof(host), &g->up_port, 0) < 0)
		return log_error_errno(-EINVAL, "invalid --proxy '%s' (use HOST:PORT)", spec);
	r = getaddrinfo(host, NULL, &hints, &res);
	if (r != 0 || !res)
		return log_error_errno(-EHOSTUNREACH, "cannot resolve the upstream proxy '%s': %s", host, gai_strerror(r));
	r = addr_from_sockaddr(res->ai_addr, &g->up_addr);
	freeaddrinfo(res);
	if (r < 0)
		return log_error_errno(r, "cannot use the upstream proxy '%s'", spec);
	g->has_upstream = true;
	return 0;
}

static void close_listeners(struct gate *g)
{
	int *slots[] = { &g->cfg.proxy_fd, &g->cfg.transparent_fd, &g->cfg.dns_udp_fd, &g->cfg.dns_tcp_fd };

	for (size_t i = 0; i < ELEMENTSOF(slots); i++)
		if (*slots[i] >= 0) {
			close(*slots[i]);
			*slots[i] = -1;
		}
}

/**
 * gate_new() - set up a gate over already-open listening sockets
 * @c: configuration; the gate owns the listening fds from here on (closed on failure too), the
 *     log fd and the policy stay owned by the caller and must outlive the gate
 * @out: the gate
 *
 * Raises RLIMIT_NOFILE to its hard limit (each relayed connection holds six fds) and sizes the
 * connection cap to fit. Resolves --proxy once, here (the gate process cannot).
 * Return: 0, or -errno. Logs on failure.
 */
int gate_new(const struct gate_config *c, struct gate **out)
{
	struct gate *g = calloc(1, sizeof(*g));
	struct rlimit rl;
	int r;

	if (!g) {
		struct gate tmp = { .cfg = *c };

		close_listeners(&tmp);
		return log_error_errno(-ENOMEM, "out of memory");
	}
	g->cfg = *c;
	g->ep = g->ctl_fd = g->res_fd = g->tls_fd = -1;
	g->pid = g->res_pid = g->tls_pid = -1;
	if (!g->cfg.head_timeout_ms)
		g->cfg.head_timeout_ms = DEFAULT_HEAD_TIMEOUT_MS;
	if (!g->cfg.connect_timeout_ms)
		g->cfg.connect_timeout_ms = DEFAULT_CONNECT_TIMEOUT_MS;
	if (!g->cfg.idle_timeout_ms)
		g->cfg.idle_timeout_ms = DEFAULT_IDLE_TIMEOUT_MS;
	if (!g->cfg.max_conns)
		g->cfg.max_conns = DEFAULT_MAX_CONNS;
	if (!g->cfg.log_max)
		g->cfg.log_max = GATE_LOG_MAX;
	if (g->cfg.log_max < LOG_MIN)
		g->cfg.log_max = LOG_MIN;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		if (rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			(void)setrlimit(RLIMIT_NOFILE, &rl);
		}
		if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > 64 && g->cfg.max_conns > (rl.rlim_cur - 64) / 6)
			g->cfg.max_conns = (unsigned)((rl.rlim_cur - 64) / 6);
	}
	if (c->upstream && (r = parse_upstream(g, c->upstream)) < 0)
		goto fail;

	g->ep = epoll_create1(EPOLL_CLOEXEC);
	if (g->ep < 0) {
		r = log_error_errno(-errno, "cannot set up the gate: %m");
		goto fail;
	}
	{
		const int fds[] = { c->proxy_fd, c->transparent_fd, c->dns_udp_fd, c->dns_tcp_fd };

		for (size_t i = 0; i < ELEMENTSOF(g->h); i++)
			g->h[i] = (struct handle){ (enum htype)i, NULL };
		for (size_t i = 0; i < ELEMENTSOF(fds); i++)
			if (fds[i] >= 0 && (r = watch(g, i, fds[i])) < 0)
				goto fail;
	}
	*out = g;
	return 0;
fail:
	gate_free(g);
	return r;
}

/**
 * gate_listen() - hand a gate not yet started the sockets init passed out
 * @g: gate made by gate_new() without them
 * @proxy_fd: proxy listener
 * @transparent_fd: transparent listener
 * @dns_udp_fd: DNS stub, UDP
 * @dns_tcp_fd: DNS stub, TCP listener
 *
 * The supervisor makes the gate while init is still building the sandbox and attaches the
 * sockets once they exist. The gate owns the fds from here on, also when this fails: its
 * process takes them at gate_start(), and the supervisor's copies are closed then, so that a
 * dead gate leaves nothing listening (the sandbox's connections are refused, not left hanging).
 * Return: 0, or -errno. Logs on failure.
 */
int gate_listen(struct gate *g, int proxy_fd, int transparent_fd, int dns_udp_fd, int dns_tcp_fd)
{
	const int fds[] = { proxy_fd, transparent_fd, dns_udp_fd, dns_tcp_fd };
	int *slots[] = { &g->cfg.proxy_fd, &g->cfg.transparent_fd, &g->cfg.dns_udp_fd, &g->cfg.dns_tcp_fd };
	bool bad = g->started;
	int r = 0;

	for (size_t i = 0; i < ELEMENTSOF(fds); i++)
		bad |= fds[i] < 0 || *slots[i] >= 0;
	for (size_t i = 0; i < ELEMENTSOF(fds); i++) {
		if (bad) {
			if (fds[i] >= 0)
				close(fds[i]);
			continue;
		}
		*slots[i] = fds[i];
		if (r >= 0)
			r = watch(g, i, fds[i]);
	}
	if (bad)
		return log_error_errno(-EINVAL, "gate: bad or repeated listening socket");
	return r;
}

/* Supervisor side: the egress log, opened for the gate (which opens no file). @g->log_broken
 * when it cannot be: allowed connections are then refused with 503, as before a log exists. */
static void open_log(struct gate *g)
{
	if (g->cfg.log_fd >= 0 || !g->cfg.log_path)
		return;
	g->cfg.log_fd = open(g->cfg.log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (g->cfg.log_fd < 0)
		g->log_broken = true;
	else
		g->own_log_fd = true;
}

/* Supervisor side: what the log holds already (a caller's fd may have lines; a pipe counts 0),
 * so that the bound is on the file. Does not log. */
static void measure_log(struct gate *g)
{
	struct stat st;

	if (g->cfg.log_fd >= 0 && fstat(g->cfg.log_fd, &st) == 0 && S_ISREG(st.st_mode))
		g->log_size = (uint64_t)st.st_size;
}

/* Supervisor side: the resolver helper, serving @fd (the gate holds the other end). Return: 0 or
 * -errno. Logs on failure. */
static int start_resolver(struct gate *g, pid_t self, int fd)
{
	pid_t pid = fork();

	if (pid < 0)
		return log_error_errno(-errno, "cannot start the gate's resolver: %m");
	if (pid == 0) {
		if (resolver_confine(self, &fd) < 0)
			_exit(1);
		resolver_main(fd, g->cfg.policy);
	}
	g->res_pid = pid;
	return 0;
}

/**
 * gate_start() - start the gate's process (and its resolver helper)
 * @g: gate
 *
 * Forks the gate, which confines itself (gate_confine()) before it reads a byte from the
 * sandbox, and takes the listening sockets with it: the supervisor closes its copies here. The
 * egress log is opened here, for the gate, and the seccomp allowlist compiled. Then the resolver
 * helper is forked (not with an upstream proxy, which resolves), while the gate confines itself.
 * Call it when gate_wake_fd() turns readable, so that a sandbox that never uses the network never
 * pays for the processes (docs/architecture.md). The supervisor must pass every child it reaps
 * to gate_reaped(), and call gate_stop() at the end.
 * Return: 0, or -errno. Logs on failure.
 */
int gate_start(struct gate *g)
{
	struct seccomp_prog prog = { 0 };
	int ctl[2] = { -1, -1 }, res[2] = { -1, -1 }, r;
	pid_t self = getpid(), pid;

	if (g->started)
		return 0;
	open_log(g);
	measure_log(g);
	r = gate_seccomp_compile(&prog);
	if (r < 0)
		return r;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) < 0 ||
	    (!g->has_upstream && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, res) < 0)) {
		r = log_error_errno(-errno, "cannot create the gate's sockets: %m");
		goto out;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		close(ctl[0]);
		if (res[1] >= 0)
			close(res[1]);
		g->ctl_fd = ctl[1];
		g->res_fd = res[0];
		gate_child(g, self, &prog);
	}
	if (pid < 0) {
		r = log_error_errno(-errno, "cannot start the gate: %m");
		goto out;
	}
	/* The gate holds the only copies of the listeners from now on. */
	g->pid = pid;
	g->ctl_fd = TAKE_FD(ctl[0]);
	g->started = true;
	close_listeners(g);
	close(g->ep);
	g->ep = -1;
	if (g->tls_fd >= 0) {
		close(g->tls_fd); /* the gate's now: the tlsgate sees it close when the gate dies */
		g->tls_fd = -1;
	}
	/* Without its resolver the gate answers 502 to names it must resolve (and says so). */
	if (res[1] >= 0)
		(void)start_resolver(g, self, res[1]);
	r = 0;
out:
	for (size_t i = 0; i < 2; i++) {
		if (ctl[i] >= 0)
			close(ctl[i]);
		if (res[i] >= 0)
			close(res[i]);
	}
	seccomp_prog_free(&prog);
	return r;
}

/**
 * gate_wake_fd() - an fd that turns readable when a gate not yet started has work
 * @g: gate
 *
 * The supervisor polls it and calls gate_start() at the first connection or DNS query, so a
 * sandbox that never uses the network never pays for the gate's processes. It is the epoll set
 * of the listeners; nothing reads from them before the gate confined itself.
 * Return: the fd. Does not log.
 */
int gate_wake_fd(const struct gate *g)
{
	return g->ep;
}

/**
 * gate_tls() - give a gate not yet started the tlsgate of its https:// keys (net/tlsgate.h)
 * @g: gate
 * @pid: the tlsgate's process: the gate reaps it from here on (gate_reaped(), gate_stop())
 * @ctl_fd: the gate's end of its control socket (tlsgate_spawn()); the gate owns it from here
 *          on, also when this fails: its process takes it at gate_start()
 *
 * Return: 0, or -EINVAL (started, or given one already). Logs on failure.
 */
int gate_tls(struct gate *g, pid_t pid, int ctl_fd)
{
	if (g->started || g->tls_fd >= 0 || g->tls_pid > 0 || ctl_fd < 0) {
		if (ctl_fd >= 0)
			close(ctl_fd);
		if (pid > 0) {
			kill(pid, SIGKILL);
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
		}
		return log_error_errno(-EINVAL, "gate: bad or repeated TLS terminator");
	}
	g->tls_pid = pid;
	g->tls_fd = ctl_fd;
	return 0;
}

/* The one line for a gate that died while the sandbox ran (design 6: fail closed, say so). */
static void report_death(pid_t pid, int st)
{
	if (WIFEXITED(st) && WEXITSTATUS(st) == GATE_EXIT_CONFINE)
		log_error("network: the gate could not confine itself (see above); the sandbox is stopped");
	else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS)
		log_error("network: the gate (pid %d) was killed by its seccomp filter: it made a system call "
			  "outside its allowlist (a bug, or an attack from inside the sandbox); the sandbox's "
			  "connections are refused from now on", (int)pid);
	else if (WIFSIGNALED(st))
		log_error("network: the gate (pid %d) was killed by signal %d (%s); the sandbox's connections "
			  "are refused from now on", (int)pid, WTERMSIG(st), strsignal(WTERMSIG(st)));
	else
		log_error("network: the gate (pid %d) exited with status %d; the sandbox's connections are "
			  "refused from now on", (int)pid, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/**
 * gate_reaped() - tell the gate that the supervisor reaped a child
 * @g: gate, or NULL
 * @pid: the child
 * @st: its wait status
 *
 * The gate process's death before gate_stop() is reported (one line on stderr) and its resolver
 * killed; its listeners died with it, so the sandbox's connections are refused from then on.
 * Return: 1 the gate died (the sandbox may go on, without a network), -1 the gate could not
 * confine itself (the caller stops the sandbox: gate_refused() is then true), 0 @pid is not the
 * gate (the resolver is noted silently). Logs (that line).
 */
int gate_reaped(struct gate *g, pid_t pid, int st)
{
	if (!g || pid <= 0)
		return 0;
	if (pid == g->res_pid) {
		g->res_pid = -1;
		return 0;
	}
	if (pid == g->tls_pid) {
		g->tls_pid = -1;
		if (!g->stopping)
			log_error("network: the TLS terminator of --key-via-gate (pid %d) %s; the sandbox's https:// "
				  "connections to its model endpoint fail from now on", (int)pid,
				  WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS ? "was killed by its seccomp filter" : "died");
		return 0;
	}
	if (pid != g->pid)
		return 0;
	g->pid = -1;
	g->exited = true;
	if (g->res_pid > 0)
		kill(g->res_pid, SIGKILL); /* reaped by the caller's next wait, or by gate_stop() */
	if (g->stopping)
		return 0;
	report_death(pid, st);
	if (WIFEXITED(st) && WEXITSTATUS(st) == GATE_EXIT_CONFINE) {
		g->refused = true;
		return -1;
	}
	return 1;
}

/**
 * gate_refused() - whether the gate could not confine itself (the sandbox then ends with 77)
 * @g: gate, or NULL
 *
 * Return: true or false. Does not log.
 */
bool gate_refused(const struct gate *g)
{
	return g && g->refused;
}

/* Waits up to @ms for the gate's summary on the control socket. Does not log. */
static void receive_summary(struct gate *g, int ms)
{
	struct pollfd pf = { g->ctl_fd, POLLIN, 0 };

	if (poll(&pf, 1, ms) <= 0)
		return;
	if (!g->summary && !(g->summary = calloc(1, sizeof(*g->summary))))
		return;
	if (recv(g->ctl_fd, g->summary, sizeof(*g->summary), MSG_DONTWAIT) != (ssize_t)sizeof(*g->summary)) {
		free(g->summary);
		g->summary = NULL;
		return;
	}
	g->summary->text[sizeof(g->summary->text) - 1] = '\0';
}

static void reap(pid_t *pid, bool kill_first)
{
	if (*pid <= 0)
		return;
	if (kill_first)
		kill(*pid, SIGKILL);
	while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR)
		;
	*pid = -1;
}

/**
 * gate_stop() - stop the gate's process and reap it and its resolver
 * @g: gate, or NULL
 *
 * The gate closes and logs its open connections and sends its summary; one that does not within
 * STOP_WAIT_MS is killed. A gate that died earlier and was never reaped is reported here. Logs
 * (only that).
 */
void gate_stop(struct gate *g)
{
	static const char stop = 's';
	int st;

	if (!g || !g->started)
		return;
	g->started = false;
	if (g->pid > 0 && !g->exited) {
		g->stopping = true;
		(void)send(g->ctl_fd, &stop, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		receive_summary(g, STOP_WAIT_MS);
		if (!g->summary)
			kill(g->pid, SIGKILL);
		if (waitpid(g->pid, &st, 0) == g->pid && !g->summary) {
			report_death(g->pid, st);
			/* a caller without a SIGCHLD loop (a build step) learns it here */
			g->refused |= WIFEXITED(st) && WEXITSTATUS(st) == GATE_EXIT_CONFINE;
		}
		g->pid = -1;
	}
	reap(&g->res_pid, true);
	reap(&g->tls_pid, true);
	if (g->ctl_fd >= 0) {
		close(g->ctl_fd);
		g->ctl_fd = -1;
	}
}

/* Terminal control bytes from the gate (which parses the sandbox's names) never reach the
 * host's terminal: the gate is the less trusted process. */
static void put_sanitized(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f ? '?' : *s, f);
}

/**
 * gate_summary() - one stderr line with the top denied destinations, if anything was denied or
 * records were dropped at the egress log's bound
 * @g: a stopped gate
 * @f: output (stderr)
 *
 * The line comes from the gate's process (its summary at exit), with control bytes replaced.
 * Return: the number of denials. Does not log.
 */
int gate_summary(struct gate *g, FILE *f)
{
	if (!g || !g->summary || !g->summary->text[0])
		return 0;
	put_sanitized(f, g->summary->text);
	fputc('\n', f);
	return (int)g->summary->total_denied;
}

void gate_free(struct gate *g)
{
	if (!g)
		return;
	gate_stop(g);
	reap(&g->res_pid, true);
	reap(&g->tls_pid, true); /* a gate never started still owns its tlsgate */
	if (g->tls_fd >= 0)
		close(g->tls_fd);
	while (g->conns)
		conn_free(g->conns);
	reap_dead(g);
	while (g->jobs) {
		struct job *j = g->jobs;

		g->jobs = j->next;
		free(j);
	}
	close_listeners(g);
	if (g->ep >= 0)
		close(g->ep);
	if (g->ctl_fd >= 0)
		close(g->ctl_fd);
	dns_pool_free(&g->pool);
	if (g->own_log_fd)
		close(g->cfg.log_fd);
	free(g->denied);
	free(g->agg);
	free(g->summary);
	free(g);
}
