// SPDX-License-Identifier: GPL-2.0-or-later
/* test-gate.c — the gate over listeners on 127.0.0.1, against a local server (no other address) */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <net/if.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "net/gate.h"
#include "net/netplan.h"
#include "net/tlsgate.h"
#include "userns-child.h"

static int listen_on(int type, uint16_t *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(sa);
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	if (type == SOCK_STREAM)
		assert_int_equal(listen(fd, 128), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &l), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

static int dial(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Read until EOF or @n bytes. */
static size_t read_all(int fd, char *buf, size_t n)
{
	size_t got = 0;

	while (got < n - 1) {
		ssize_t k = read(fd, buf + got, n - 1 - got);

		if (k <= 0)
			break;
		got += (size_t)k;
	}
	buf[got] = '\0';
	return got;
}

static size_t read_head(int fd, char *buf, size_t n)
{
	size_t got = 0;

	while (got < n - 1) {
		ssize_t k = read(fd, buf + got, 1);

		if (k <= 0)
			break;
		got++;
		buf[got] = '\0';
		if (got >= 4 && strcmp(buf + got - 4, "\r\n\r\n") == 0)
			break;
	}
	buf[got] = '\0';
	return got;
}

/* The local server: "GET" gets its request echoed in a response ("GET /interim" a 100 and a
 * kept-alive 200, "GET /garbage" no HTTP at all); "POST" a response head, then its bytes
 * echoed; anything else is echoed. */
static void *server(void *arg)
{
	int lfd = *(int *)arg;

	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		char buf[4096];
		ssize_t k;

		if (fd < 0)
			return NULL;
		k = read(fd, buf, sizeof(buf) - 1);
		if (k > 0 && strncmp(buf, "GET /interim ", 13) == 0) {
			static const char a[] = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nConnection: keep-alive\r\n"
						"Keep-Alive: timeout=5\r\nContent-Length: 2\r\n\r\nok";

			(void)!write(fd, a, sizeof(a) - 1);
		} else if (k > 0 && strncmp(buf, "GET /garbage ", 13) == 0) {
			(void)!write(fd, "SSH-2.0-OpenSSH\r\n\r\n", 19);
		} else if (k > 0 && strncmp(buf, "GET ", 4) == 0) {
			char out[4200];
			int n;

			buf[k] = '\0';
			n = snprintf(out, sizeof(out), "HTTP/1.0 200 OK\r\n\r\n%s", buf);
			(void)!write(fd, out, (size_t)n);
		} else {
			if (k > 0 && strncmp(buf, "POST ", 5) == 0)
				(void)!write(fd, "HTTP/1.0 200 OK\r\n\r\n", 19);
			while (k > 0) {
				(void)!write(fd, buf, (size_t)k);
				k = read(fd, buf, sizeof(buf));
			}
		}
		close(fd);
	}
}

struct fixture {
	int srv_fd, proxy_fd, dns_fd, log_fd[2], closed_fd;
	uint16_t srv_port, proxy_port, dns_port, closed_port;
	pthread_t srv;
	struct net_policy pol;
	struct gate *g;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char entry[64];

	f->srv_fd = listen_on(SOCK_STREAM, &f->srv_port);
	f->proxy_fd = listen_on(SOCK_STREAM, &f->proxy_port);
	f->dns_fd = listen_on(SOCK_DGRAM, &f->dns_port);
	assert_int_equal(pipe2(f->log_fd, O_CLOEXEC | O_NONBLOCK), 0);
	fcntl(f->log_fd[0], F_SETPIPE_SZ, 1 << 20);
	pthread_create(&f->srv, NULL, server, &f->srv_fd);
	snprintf(entry, sizeof(entry), "svc.test:%u", f->srv_port);
	assert_int_equal(allow_list_add(&f->pol.allow, entry), 0);
	snprintf(entry, sizeof(entry), "localhost:%u", f->srv_port);
	assert_int_equal(allow_list_add(&f->pol.allow, entry), 0);
	assert_int_equal(policy_add_pin(&f->pol, "svc.test=127.0.0.1"), 0);
	/* allowed and pinned, but nothing listens there: a TCP port bound without listen(), held
	 * until teardown so that nobody else takes it */
	{
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t l = sizeof(sa);

		f->closed_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		assert_true(f->closed_fd >= 0);
		assert_int_equal(bind(f->closed_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		assert_int_equal(getsockname(f->closed_fd, (struct sockaddr *)&sa, &l), 0);
		f->closed_port = ntohs(sa.sin_port);
	}
	snprintf(entry, sizeof(entry), "closed.test:%u", f->closed_port);
	assert_int_equal(allow_list_add(&f->pol.allow, entry), 0);
	assert_int_equal(policy_add_pin(&f->pol, "closed.test=127.0.0.1"), 0);
	struct gate_config c = { .proxy_fd = f->proxy_fd, .transparent_fd = -1, .dns_udp_fd = f->dns_fd,
				 .dns_tcp_fd = -1, .policy = &f->pol, .log_fd = f->log_fd[1],
				 .head_timeout_ms = 600 };
	assert_int_equal(gate_new(&c, &f->g), 0);
	assert_int_equal(gate_start(f->g), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	gate_free(f->g);
	close(f->closed_fd);
	shutdown(f->srv_fd, SHUT_RDWR);
	close(f->srv_fd);
	pthread_join(f->srv, NULL);
	/* the listeners were the gate's (gate_new()) */
	close(f->log_fd[0]);
	close(f->log_fd[1]);
	policy_free(&f->pol);
	free(f);
	return 0;
}

/* A CONNECT tunnel to the echo server through the gate (@headers: extra header lines, each
 * ending in CRLF), its 200 read. Return: the client fd. */
static int tunnel_open(const struct fixture *f, const char *headers)
{
	char req[256], buf[4096];
	int fd = dial(f->proxy_port);

	snprintf(req, sizeof(req), "CONNECT svc.test:%u HTTP/1.1\r\n%s\r\n", f->srv_port, headers);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	read_head(fd, buf, sizeof(buf));
	assert_string_equal(buf, "HTTP/1.1 200 Connection established\r\n\r\n");
	return fd;
}

/* @word through tunnel @fd and back (the write side shut, so the echo ends); closes @fd. */
static void tunnel_echo(int fd, const char *word)
{
	char buf[4096];

	assert_int_equal(write(fd, word, strlen(word)), (ssize_t)strlen(word));
	shutdown(fd, SHUT_WR);
	read_all(fd, buf, sizeof(buf));
	assert_string_equal(buf, word);
	close(fd);
}

static void test_connect_allowed_and_denied(void **state)
{
	struct fixture *f = *state;
	char req[256], buf[4096];
	int fd;

	tunnel_echo(tunnel_open(f, "Host: svc.test\r\n"), "ping");

	/* control above, refusal here: a name off the list */
	fd = dial(f->proxy_port);
	snprintf(req, sizeof(req), "CONNECT other.test:%u HTTP/1.1\r\n\r\n", f->srv_port);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	read_all(fd, buf, sizeof(buf));
	assert_non_null(strstr(buf, "HTTP/1.1 403 Forbidden\r\n"));
	assert_non_null(strstr(buf, "X-Aisb-Denied: other.test is not in the allowlist\r\n"));
	close(fd);

	/* the same name on another port */
	fd = dial(f->proxy_port);
	snprintf(req, sizeof(req), "CONNECT svc.test:%u HTTP/1.1\r\n\r\n", (unsigned)(f->srv_port == 65535 ? 1 : f->srv_port + 1));
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	read_all(fd, buf, sizeof(buf));
	assert_non_null(strstr(buf, "403"));
	assert_non_null(strstr(buf, "is not allowed"));
	close(fd);
}

/* A refused dial is a 502, never a 200 and an empty tunnel: the gate's second connect() (the
 * check for a handshake that completed at once) takes the refusal and clears it from SO_ERROR,
 * so it must act on it itself. Control: the allowed, listening server gets its 200 and data. */
static void test_refused_dial_is_502(void **state)
{
	struct fixture *f = *state;
	char req[256], buf[4096];

	for (int i = 0; i < 20; i++) { /* the refusal races the second connect(): try it often */
		int fd = dial(f->proxy_port);

		snprintf(req, sizeof(req), "CONNECT closed.test:%u HTTP/1.1\r\n\r\n", f->closed_port);
		assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
		read_all(fd, buf, sizeof(buf));
		assert_non_null(strstr(buf, "HTTP/1.1 502 Bad Gateway\r\n"));
		assert_non_null(strstr(buf, "cannot connect to closed.test"));
		close(fd);
	}
	tunnel_echo(tunnel_open(f, ""), "pong");
}

/* Writes @n bytes of the pattern (offset % 251) to @fd, then shuts its write side. */
struct pump {
	int fd;
	size_t n;
};

static void *pump_out(void *arg)
{
	const struct pump *p = arg;
	unsigned char buf[65536];
	size_t off = 0;

	while (off < p->n) {
		size_t k = p->n - off < sizeof(buf) ? p->n - off : sizeof(buf);
		ssize_t w;

		for (size_t i = 0; i < k; i++)
			buf[i] = (unsigned char)((off + i) % 251);
		w = write(p->fd, buf, k);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	shutdown(p->fd, SHUT_WR);
	return NULL;
}

/* Back-pressure both ways through a tunnel: 8 MiB up to the echo server while the client does
 * not read at first, so every buffer on the way fills and each direction of the relay stops and
 * must be resumed by the other side's EPOLLOUT; then all of it comes back, in order, and the
 * half-close reaches the server. A relay that lost a direction's wake-up stalls (poll timeout). */
static void test_tunnel_backpressure(void **state)
{
	struct fixture *f = *state;
	const size_t total = (size_t)8 << 20;
	struct pump p = { .fd = tunnel_open(f, ""), .n = total };
	char buf[16384];
	size_t got = 0;
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, pump_out, &p), 0);
	usleep(300 * 1000);
	for (;;) {
		struct pollfd pfd = { .fd = p.fd, .events = POLLIN };
		ssize_t k;

		assert_int_equal(poll(&pfd, 1, 10000), 1); /* a stall fails here */
		k = read(p.fd, buf, sizeof(buf));
		assert_true(k >= 0);
		if (k == 0)
			break;
		for (ssize_t i = 0; i < k; i++)
			if ((unsigned char)buf[i] != (unsigned char)((got + (size_t)i) % 251))
				fail_msg("byte %zu differs", got + (size_t)i);
		got += (size_t)k;
	}
	pthread_join(t, NULL);
	assert_int_equal(got, total);
	close(p.fd);
}

static void test_http_forward(void **state)
{
	struct fixture *f = *state;
	char req[256], buf[4096];
	int fd = dial(f->proxy_port);

	snprintf(req, sizeof(req), "GET http://svc.test:%u/secret-path?q=1 HTTP/1.1\r\nHost: svc.test\r\n"
		 "Proxy-Authorization: Basic c2VjcmV0\r\n\r\n", f->srv_port);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	read_all(fd, buf, sizeof(buf));
	assert_non_null(strstr(buf, "HTTP/1.0 200 OK\r\nConnection: close\r\n\r\n"));
	assert_non_null(strstr(buf, "GET /secret-path?q=1 HTTP/1.1\r\n"));
	assert_null(strstr(buf, "Proxy-Authorization"));
	assert_non_null(strstr(buf, "Connection: close"));
	close(fd);
}

/* Issue 22: only the checked request reaches the server. The server echoes what it got: a
 * pipelined request behind a GET, bytes behind a Content-Length or chunked body, a chunked body
 * broken half-way never reach it; ambiguous framing is a 400 before any dial. Controls: the
 * request itself, and each body, arrive whole. */
static void test_http_one_request(void **state)
{
	struct fixture *f = *state;
	static const char evil[] = "GET http://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n";
	static const struct {
		const char *headers, *body;
		const char *expect;  /* in the echo */
	} t[] = {
		{ "", "", "GET / HTTP/1.1\r\n" },
		{ "Content-Length: 5\r\n", "hello", "\r\n\r\nhello" },
		{ "Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\n\r\n", "\r\n\r\n5\r\nhello\r\n0\r\n\r\n" },
	};
	char req[512], buf[4096];
	int fd;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int n = snprintf(req, sizeof(req), "%s http://svc.test:%u/ HTTP/1.1\r\nHost: svc.test:%u\r\n%s\r\n%s%s",
				 t[i].headers[0] ? "POST" : "GET", f->srv_port, f->srv_port, t[i].headers, t[i].body, evil);

		fd = dial(f->proxy_port);
		assert_int_equal(write(fd, req, (size_t)n), n); /* one write: the gate reads it whole */
		shutdown(fd, SHUT_WR);
		read_all(fd, buf, sizeof(buf));
		if (!strstr(buf, t[i].expect) || strstr(buf, "evil"))
			fail_msg("case %zu: the server saw '%s'", i, buf);
		close(fd);
	}

	/* ambiguous framing: 400 with the reason, nothing dialled */
	fd = dial(f->proxy_port);
	snprintf(req, sizeof(req), "POST http://svc.test:%u/ HTTP/1.1\r\nContent-Length: 5\r\n"
		 "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n%s", f->srv_port, evil);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	read_all(fd, buf, sizeof(buf));
	assert_non_null(strstr(buf, "HTTP/1.1 400 Bad Request"));
	assert_non_null(strstr(buf, "both Content-Length and Transfer-Encoding"));
	assert_null(strstr(buf, "evil"));
	close(fd);

	/* the same when the body and what follows it come after the head is relayed (the relay's
	 * framer, not the head's): both bodies reach the server, the request behind them does not */
	for (int chunked = 0; chunked < 2; chunked++) {
		fd = dial(f->proxy_port);
		snprintf(req, sizeof(req), "POST http://svc.test:%u/ HTTP/1.1\r\n%s\r\n", f->srv_port,
			 chunked ? "Transfer-Encoding: chunked\r\n" : "Content-Length: 5\r\n");
		assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
		read_head(fd, buf, sizeof(buf)); /* the server's answer head: the request was relayed */
		read_head(fd, buf, sizeof(buf)); /* its echo of the request head */
		snprintf(req, sizeof(req), "%s%s", chunked ? "5\r\nhello\r\n0\r\n\r\n" : "hello", evil);
		assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
		shutdown(fd, SHUT_WR);
		read_all(fd, buf, sizeof(buf));
		if (!strstr(buf, "hello") || strstr(buf, "evil"))
			fail_msg("chunked=%d: the server saw '%s'", chunked, buf);
		close(fd);
	}

	/* a chunked body that breaks the rules once the server has answered: reset, the chunk
	 * never forwarded (control: its head was) */
	fd = dial(f->proxy_port);
	snprintf(req, sizeof(req), "POST http://svc.test:%u/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", f->srv_port);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	read_head(fd, buf, sizeof(buf));
	assert_string_equal(buf, "HTTP/1.0 200 OK\r\nConnection: close\r\n\r\n");
	read_head(fd, buf, sizeof(buf));
	assert_non_null(strstr(buf, "POST / HTTP/1.1\r\n"));
	assert_int_equal(write(fd, "5;x=1\r\nhello\r\n0\r\n\r\n", 20), 20);
	read_all(fd, buf, sizeof(buf));
	assert_null(strstr(buf, "hello"));
	close(fd);
}

/* The client is told the connection closes after the answer: the final head's Connection and
 * Keep-Alive become "Connection: close", an interim 100 passes as it is; a server that does not
 * speak HTTP is a 502 (control: test_http_forward's plain answer gets the same header). */
static void test_http_answer_closes(void **state)
{
	struct fixture *f = *state;
	char req[256], buf[4096];
	int fd = dial(f->proxy_port);

	snprintf(req, sizeof(req), "GET http://svc.test:%u/interim HTTP/1.1\r\nHost: svc.test\r\n\r\n", f->srv_port);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	read_all(fd, buf, sizeof(buf));
	assert_string_equal(buf, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
			   "Connection: close\r\n\r\nok");
	close(fd);

	fd = dial(f->proxy_port);
	snprintf(req, sizeof(req), "GET http://svc.test:%u/garbage HTTP/1.1\r\nHost: svc.test\r\n\r\n", f->srv_port);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	read_all(fd, buf, sizeof(buf));
	assert_non_null(strstr(buf, "HTTP/1.1 502 Bad Gateway"));
	assert_null(strstr(buf, "SSH-2.0"));
	close(fd);
}

static void test_rebinding_and_errors(void **state)
{
	struct fixture *f = *state;
	char req[256], buf[4096];
	int fd;

	/* localhost is listed but resolves to loopback: refused unless pinned */
	fd = dial(f->proxy_port);
	snprintf(req, sizeof(req), "CONNECT localhost:%u HTTP/1.1\r\n\r\n", f->srv_port);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	read_all(fd, buf, sizeof(buf));
	assert_non_null(strstr(buf, "403"));
	assert_non_null(strstr(buf, "loopback"));
	close(fd);

	/* an IP literal without an IP entry */
	fd = dial(f->proxy_port);
	snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", f->srv_port);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	read_all(fd, buf, sizeof(buf));
	assert_non_null(strstr(buf, "not covered by an IP entry"));
	close(fd);

	fd = dial(f->proxy_port);
	assert_int_equal(write(fd, "GET /x HTTP/1.1\r\n\r\n", 19), 19);
	read_all(fd, buf, sizeof(buf));
	assert_non_null(strstr(buf, "HTTP/1.1 400 Bad Request"));
	close(fd);
}

static void test_slow_client_does_not_stall(void **state)
{
	struct fixture *f = *state;
	char buf[4096];
	int slow = dial(f->proxy_port);

	assert_int_equal(write(slow, "CONNECT svc.te", 14), 14);
	/* a good connection in parallel completes */
	tunnel_echo(tunnel_open(f, ""), "x");
	/* the slow one gets its 408 after the head timeout (600 ms here) */
	read_all(slow, buf, sizeof(buf));
	assert_non_null(strstr(buf, "HTTP/1.1 408"));
	close(slow);
}

static size_t dns_query(uint16_t port, const char *name, uint16_t type, uint8_t *ans, size_t n)
{
	uint8_t q[300];
	size_t l = 12;
	const char *p = name;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ssize_t k;

	memset(q, 0, 12);
	q[0] = 0xab, q[2] = 1, q[5] = 1;
	while (*p) {
		const char *dot = strchr(p, '.');
		size_t ll = dot ? (size_t)(dot - p) : strlen(p);

		q[l++] = (uint8_t)ll;
		memcpy(q + l, p, ll);
		l += ll;
		p += ll + (dot ? 1 : 0);
	}
	q[l++] = 0, q[l++] = 0, q[l++] = (uint8_t)type, q[l++] = 0, q[l++] = 1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	sendto(fd, q, l, 0, (struct sockaddr *)&sa, sizeof(sa));
	k = recv(fd, ans, n, 0);
	close(fd);
	return k > 0 ? (size_t)k : 0;
}

static void test_dns_stub(void **state)
{
	struct fixture *f = *state;
	uint8_t a[512];
	size_t n = dns_query(f->dns_port, "svc.test", 1, a, sizeof(a));

	assert_true(n > 16);
	assert_int_equal(a[3] & 0xf, 0);
	assert_int_equal(a[7], 1);
	assert_int_equal(a[n - 4], 198);
	assert_int_equal(a[n - 3], 18);
	n = dns_query(f->dns_port, "svc.test", 28, a, sizeof(a));
	assert_int_equal(a[3] & 0xf, 0);
	assert_int_equal(a[7], 0);
	n = dns_query(f->dns_port, "unknown.test", 1, a, sizeof(a));
	assert_true(n >= 12);
	assert_int_equal(a[3] & 0xf, 3);
}

static void test_log_and_summary(void **state)
{
	struct fixture *f = *state;
	char log[1 << 16], *sum = NULL;
	size_t sl = 0;
	FILE *m;
	ssize_t k;

	test_connect_allowed_and_denied(state);
	test_http_forward(state);
	gate_stop(f->g);
	k = read(f->log_fd[0], log, sizeof(log) - 1);
	assert_true(k > 0);
	log[k] = '\0';
	assert_non_null(strstr(log, "\"kind\":\"connect\",\"method\":\"CONNECT\",\"host\":\"svc.test\""));
	assert_non_null(strstr(log, "\"decision\":\"deny\""));
	assert_non_null(strstr(log, "\"decision\":\"allow\""));
	assert_null(strstr(log, "secret-path"));
	assert_null(strstr(log, "c2VjcmV0"));
	m = open_memstream(&sum, &sl);
	assert_true(gate_summary(f->g, m) > 0);
	fclose(m);
	assert_non_null(strstr(sum, "aisb: network: denied"));
	assert_non_null(strstr(sum, "allow with --allow other.test:"));
	free(sum);
}

/* A minimal ClientHello carrying @sni (or none). */
static size_t mkhello(unsigned char *b, const char *sni)
{
	size_t n = 0, hs, ext, rec;

	b[n++] = 0x16, b[n++] = 3, b[n++] = 1;
	rec = n, n += 2;
	b[n++] = 1;
	hs = n, n += 3;
	b[n++] = 3, b[n++] = 3;
	memset(b + n, 0xab, 32), n += 32;
	b[n++] = 0;
	b[n++] = 0, b[n++] = 2, b[n++] = 0x13, b[n++] = 0x01;
	b[n++] = 1, b[n++] = 0;
	ext = n, n += 2;
	if (sni) {
		size_t l = strlen(sni);

		b[n++] = 0, b[n++] = 0, b[n++] = 0, b[n++] = (unsigned char)(l + 5);
		b[n++] = 0, b[n++] = (unsigned char)(l + 3), b[n++] = 0, b[n++] = 0, b[n++] = (unsigned char)l;
		memcpy(b + n, sni, l), n += l;
	}
	b[ext] = (unsigned char)((n - ext - 2) >> 8), b[ext + 1] = (unsigned char)(n - ext - 2);
	b[hs] = 0, b[hs + 1] = (unsigned char)((n - hs - 3) >> 8), b[hs + 2] = (unsigned char)(n - hs - 3);
	b[rec] = (unsigned char)((n - rec - 2) >> 8), b[rec + 1] = (unsigned char)(n - rec - 2);
	return n;
}

#define CHECK(cond)                                                                      \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			_exit(1);                                                        \
		}                                                                        \
	} while (0)

/* Whether a connection waits in @lfd's accept queue within @ms (taken and closed if so). */
static bool pending_conn(int lfd, int ms, int *out)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	int fd;

	if (poll(&p, 1, ms) <= 0)
		return false;
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return false;
	if (out)
		*out = fd;
	else
		close(fd);
	return true;
}

/* Waits for a test's child: exit 0 passes, 77 skips (no user namespace here), anything else
 * fails. */
static void child_passed(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77)
		skip(); /* no user namespace here */
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* The SNI is checked against the CONNECT host BEFORE the gate dials: a ClientHello naming
 * another host (or none, or not TLS) must leave the allowed server with zero connections (it
 * used to be connected first, then closed empty); the control, the matching SNI, connects and
 * is relayed. Runs in a user+net namespace of its own, where port 443 on its lo is ours. */
static void test_sni_checked_before_dial(void **state)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(443),
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		struct ifreq ifr = { .ifr_name = "lo" };
		static const struct {
			const char *sni;
			int pass;
		} t[] = { { "evil.test", 0 }, { NULL, 0 }, { "", 0 }, { "svc.test", 1 }, { "other.svc.test", 0 } };
		struct net_policy pol = { 0 };
		struct gate *g;
		uint16_t proxy_port;
		int lfd, pfd, sk;

		/* mapped ids: the gate process makes a user namespace of its own below this one */
		if (enter_userns(uid, gid) < 0 || unshare(CLONE_NEWNET) < 0)
			_exit(77);
		sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		CHECK(sk >= 0 && ioctl(sk, SIOCGIFFLAGS, &ifr) == 0);
		ifr.ifr_flags |= IFF_UP;
		CHECK(ioctl(sk, SIOCSIFFLAGS, &ifr) == 0);
		close(sk);
		lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(lfd, 16) == 0);
		pfd = listen_on(SOCK_STREAM, &proxy_port);
		CHECK(allow_list_add(&pol.allow, "svc.test") == 0);
		CHECK(policy_add_pin(&pol, "svc.test=127.0.0.1") == 0);
		struct gate_config c = { .proxy_fd = pfd, .transparent_fd = -1, .dns_udp_fd = -1, .dns_tcp_fd = -1,
					 .policy = &pol, .log_fd = -1, .head_timeout_ms = 2000 };
		CHECK(gate_new(&c, &g) == 0 && gate_start(g) == 0);
		for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
			static const char req[] = "CONNECT svc.test:443 HTTP/1.1\r\n\r\n";
			unsigned char hello[512];
			char buf[4096];
			size_t n = t[i].sni && !*t[i].sni ? 10 : mkhello(hello, t[i].sni);
			int fd = dial(proxy_port), sfd = -1;

			if (t[i].sni && !*t[i].sni)
				memcpy(hello, "SSH-2.0-x\r\n", 10); /* not TLS at all */
			CHECK(write(fd, req, sizeof(req) - 1) == (ssize_t)sizeof(req) - 1);
			read_head(fd, buf, sizeof(buf));
			CHECK(strstr(buf, " 200 ") != NULL);
			/* nothing is dialled while the gate waits for the ClientHello */
			CHECK(!pending_conn(lfd, 100, NULL));
			CHECK(write(fd, hello, n) == (ssize_t)n);
			if (t[i].pass) {
				ssize_t k;

				CHECK(pending_conn(lfd, 5000, &sfd));
				k = read(sfd, buf, sizeof(buf));
				CHECK(k == (ssize_t)n && memcmp(buf, hello, n) == 0); /* the ClientHello, relayed */
				CHECK(write(sfd, "hello", 5) == 5);
				close(sfd);
				CHECK(read_all(fd, buf, sizeof(buf)) == 5 && memcmp(buf, "hello", 5) == 0);
			} else {
				CHECK(read(fd, buf, sizeof(buf)) <= 0); /* reset, nothing relayed */
				if (pending_conn(lfd, 300, NULL)) {
					fprintf(stderr, "case %zu: the server got a connection for SNI %s\n", i,
						t[i].sni ? t[i].sni : "(none)");
					_exit(1);
				}
			}
			close(fd);
		}
		gate_free(g);
		policy_free(&pol);
		_exit(0);
	}
	child_passed(pid);
}

/* In a test's child: a user namespace with the caller's ids @mapped (else unmapped, where the
 * gate's own user namespace is refused), a proxy listener on *@port and the gate started on it.
 * Exits 77 when no user namespace can be made here. */
static struct gate *confine_child_gate(struct fixture *f, bool mapped, uid_t uid, gid_t gid, uint16_t *port)
{
	struct gate *g = NULL;
	int lfd;

	if (mapped ? enter_userns(uid, gid) < 0 : unshare(CLONE_NEWUSER) < 0)
		_exit(77);
	lfd = listen_on(SOCK_STREAM, port);
	struct gate_config c = { .proxy_fd = lfd, .transparent_fd = -1, .dns_udp_fd = -1, .dns_tcp_fd = -1,
				 .policy = &f->pol, .log_fd = -1 };
	CHECK(gate_new(&c, &g) == 0 && gate_start(g) == 0);
	return g;
}

/* A gate that cannot confine itself never serves: here the caller's ids are unmapped in its user
 * namespace, so the gate's own user namespace is refused (EPERM); the gate exits 77 and
 * gate_reaped() says the sandbox must stop (gate_refused()), and its listener is closed, so a
 * connection is refused. A caller without a SIGCHLD loop (a build's RUN step) learns it at
 * gate_stop() (mode 2): the step then fails with 77. Control: the same start with mapped ids
 * answers the CONNECT and is refused at no point. */
static void test_confine_failure_refuses(void **state)
{
	struct fixture *f = *state;

	for (int mode = 0; mode < 3; mode++) {
		bool mapped = mode == 1;
		uid_t uid = getuid();
		gid_t gid = getgid();
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			char req[256], buf[4096];
			uint16_t port;
			struct gate *g = confine_child_gate(f, mapped, uid, gid, &port);
			int fd, w, wst, r = 0;

			if (mapped) {
				fd = dial(port);
				snprintf(req, sizeof(req), "CONNECT svc.test:%u HTTP/1.1\r\n\r\n", f->srv_port);
				CHECK(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
				read_head(fd, buf, sizeof(buf));
				CHECK(strstr(buf, " 200 ") != NULL);
				close(fd);
				CHECK(!gate_refused(g));
				gate_stop(g);
				CHECK(!gate_refused(g));
			} else if (mode == 2) {
				/* no wait, no gate_reaped(): gate_stop() reaps the gate itself */
				gate_stop(g);
				CHECK(gate_refused(g));
			} else {
				/* the gate's exit (its resolver is killed and reaped by gate_free()) */
				while ((w = wait(&wst)) > 0 && (r = gate_reaped(g, w, wst)) == 0)
					;
				CHECK(r == -1 && gate_refused(g));
				fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
				struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
							  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
				CHECK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno == ECONNREFUSED);
				close(fd);
			}
			gate_free(g);
			_exit(0);
		}
		child_passed(pid);
	}
}

static const char *tls_env(const char *name)
{
	return streq(name, "SSL_CERT_FILE") ? "/dev/null" : NULL;
}

/* --key-via-gate with https:// endpoints in the plan: each name once for the tlsgate (at most
 * TLSGATE_NAMES_MAX: a fifth is refused, one seen before is not), http:// keys not among them,
 * and the preview names each terminated endpoint once with the upstream trust file. */
static void test_netplan_tls_keys(void **state)
{
	char entry[] = "a.test", *allows[] = { entry, NULL };
	struct aisb_settings s = { .net = NET_ALLOW, .net_source = SRC_FLAG, .allows = allows };
	static const char *const hosts[] = { "a.test", "b.test", "c.test", "d.test" };
	const char *names[TLSGATE_NAMES_MAX];
	struct net_plan *np = NULL;
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_int_equal(netplan_resolve(&s, &np), 0);
	assert_false(netplan_has_tls(np));
	assert_int_equal(netplan_add_key(np, "plain.test", 80, "aisb-placeholder-1", "sk-1", false), 0);
	assert_false(netplan_has_tls(np));
	for (size_t i = 0; i < ELEMENTSOF(hosts); i++)
		assert_int_equal(netplan_add_key(np, hosts[i], 443, "aisb-placeholder-2", "sk-2", true), 0);
	/* a name the tlsgate has already (another port, another case): no new leaf */
	assert_int_equal(netplan_add_key(np, "A.test", 8443, "aisb-placeholder-2", "sk-2", true), 0);
	assert_int_equal(netplan_add_key(np, "e.test", 443, "aisb-placeholder-2", "sk-2", true), -E2BIG);
	assert_true(netplan_has_tls(np));
	assert_int_equal(netplan_tls_names(np, names), TLSGATE_NAMES_MAX);
	for (size_t i = 0; i < ELEMENTSOF(hosts); i++)
		assert_string_equal(names[i], hosts[i]);
	assert_int_equal(netplan_tls_trust(np, tls_env), 0);
	assert_string_equal(np->tls_roots, "/dev/null");
	f = open_memstream(&out, &len);
	assert_non_null(f);
	netplan_print(np, f);
	netplan_print_policy(np, f);
	fclose(f);
	assert_non_null(strstr(out, "tls:        a.test:443 terminated by aisb's tlsgate"));
	assert_non_null(strstr(out, "tls:        A.test:8443 terminated"));
	assert_null(strstr(out, "plain.test:80 terminated"));
	assert_non_null(strstr(out, "upstream verified against /dev/null\n"));
	assert_non_null(strstr(out, "key_tls=d.test:443\n"));
	assert_non_null(strstr(out, "tls_upstream_trust=/dev/null\n"));
	assert_null(strstr(out, "sk-"));
	assert_null(strstr(strstr(out, "tls:        a.test:443") + 1, "tls:        a.test:443"));
	free(out);
	netplan_free(np);
}

/* The gate as `aisb run` and a build's RUN step make it from the network plan
 * (netplan_gate_new()), given its listeners afterwards (gate_listen()): the plan's allowlist and
 * pins are what it enforces. Control: the allowed CONNECT is relayed (200); attack: another
 * host is refused (403) and nothing is dialled. */
static void test_gate_from_plan(void **state)
{
	struct fixture *f = *state;
	char entry[64], pin[] = "svc.test=127.0.0.1", req[256], buf[4096];
	char *allows[] = { entry, NULL }, *hosts[] = { pin, NULL };
	struct aisb_settings s = { .net = NET_ALLOW, .net_source = SRC_FLAG, .allows = allows, .add_hosts = hosts };
	struct net_plan *np = NULL;
	uint16_t port[4];
	int lfd[4], log[2], fd;
	struct gate *g;

	snprintf(entry, sizeof(entry), "svc.test:%u", f->srv_port);
	assert_int_equal(netplan_resolve(&s, &np), 0);
	assert_int_equal(pipe2(log, O_CLOEXEC | O_NONBLOCK), 0);
	assert_int_equal(netplan_gate_new(np, log[1], NULL, NULL, &g), 0);
	for (int i = 0; i < 4; i++)
		lfd[i] = listen_on(i == 2 ? SOCK_DGRAM : SOCK_STREAM, &port[i]);
	assert_true(gate_wake_fd(g) >= 0); /* not started: nothing forked yet */
	assert_int_equal(gate_listen(g, lfd[0], lfd[1], lfd[2], lfd[3]), 0);
	assert_int_equal(gate_start(g), 0);
	for (int allowed = 1; allowed >= 0; allowed--) {
		fd = dial(port[0]);
		snprintf(req, sizeof(req), "CONNECT %s:%u HTTP/1.1\r\n\r\n", allowed ? "svc.test" : "other.test",
			 f->srv_port);
		assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
		read_head(fd, buf, sizeof(buf));
		if (!strstr(buf, allowed ? " 200 " : " 403 "))
			fail_msg("CONNECT %s: %s", allowed ? "svc.test" : "other.test", buf);
		close(fd);
	}
	gate_stop(g);
	assert_false(gate_refused(g));
	gate_free(g);
	netplan_free(np);
	close(log[0]);
	close(log[1]);
}

/* A gate made with gate_new() but not started: its wake fd turns readable at the first
 * connection, and the egress log (log_path) is created only then. An allowed connection whose
 * log cannot be created is refused (503); the control with a writable path relays. */
static void test_lazy_start_and_log(void **state)
{
	struct fixture *f = *state;
	char dir[] = "/tmp/aisb-test-gate.XXXXXX", path[128], req[256], buf[4096];
	const char *const paths[] = { path, "/nonexistent-aisb-dir/egress.jsonl" };
	struct stat st;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/egress.jsonl", dir);
	for (size_t i = 0; i < 2; i++) {
		uint16_t port;
		int lfd = listen_on(SOCK_STREAM, &port), fd;
		struct gate_config c = { .proxy_fd = -1, .transparent_fd = -1, .dns_udp_fd = -1, .dns_tcp_fd = -1,
					 .policy = &f->pol, .log_fd = -1, .log_path = paths[i] };
		struct gate *g;
		struct pollfd pf;

		assert_int_equal(gate_new(&c, &g), 0);
		assert_int_equal(gate_listen(g, lfd, -1, -1, -1), -EINVAL); /* all four or none */
		assert_int_equal(fcntl(lfd, F_GETFD), -1);          /* and the gate closed it */
		gate_free(g);
		lfd = listen_on(SOCK_STREAM, &port);
		c.proxy_fd = lfd;
		assert_int_equal(gate_new(&c, &g), 0);
		pf = (struct pollfd){ gate_wake_fd(g), POLLIN, 0 };
		assert_int_equal(poll(&pf, 1, 0), 0);                 /* nothing to do yet */
		assert_int_equal(stat(paths[i], &st), -1);            /* and no log file */
		fd = dial(port);
		assert_int_equal(poll(&pf, 1, 5000), 1);              /* the first connection wakes it */
		assert_int_equal(gate_start(g), 0);
		snprintf(req, sizeof(req), "CONNECT svc.test:%u HTTP/1.1\r\n\r\n", f->srv_port);
		assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
		if (i == 0) {
			read_head(fd, buf, sizeof(buf));
			assert_string_equal(buf, "HTTP/1.1 200 Connection established\r\n\r\n");
			assert_int_equal(stat(path, &st), 0);
			assert_int_equal(st.st_mode & 0777, 0600);
		} else {
			read_all(fd, buf, sizeof(buf));
			assert_non_null(strstr(buf, "503"));
			assert_non_null(strstr(buf, "the egress log cannot be written"));
		}
		close(fd);
		gate_free(g);
	}
	unlink(path);
	rmdir(dir);
}


/* ---- issue 22: denials, floods and the egress log's bound, through the confined gate ------- */

/* A gate with its egress log in a regular file (as in a session), bounded at @log_max (0: the
 * default), with a DNS TCP listener and "hold.test", a pinned, allowed server whose
 * connections the test accepts and answers itself (long-lived tunnels). */
struct ffix {
	struct fixture *f;
	struct gate *g;
	int log_rd, hold_fd, dnst_fd, proxy_fd, dns_fd, trans_fd;
	uint16_t hold_port, dnst_port, proxy_port, dns_port, trans_port;
	char path[64];
};

static void ffix_start_cfg(struct fixture *f, struct ffix *x, const struct gate_config *extra);

static void ffix_start(struct fixture *f, struct ffix *x, uint64_t log_max, unsigned max_conns)
{
	struct gate_config c = { .log_max = log_max, .max_conns = max_conns };

	ffix_start_cfg(f, x, &c);
}

/* @extra: log_max, max_conns, upstream and the timeouts taken from it. */
static void ffix_start_cfg(struct fixture *f, struct ffix *x, const struct gate_config *extra)
{
	char entry[64];
	int wfd;

	x->f = f;
	snprintf(x->path, sizeof(x->path), "/tmp/aisb-test-egress.XXXXXX");
	wfd = mkstemp(x->path);
	assert_true(wfd >= 0);
	x->log_rd = open(x->path, O_RDONLY | O_CLOEXEC);
	unlink(x->path);
	assert_true(x->log_rd >= 0);
	assert_int_equal(fcntl(wfd, F_SETFL, O_APPEND), 0);
	x->hold_fd = listen_on(SOCK_STREAM, &x->hold_port);
	assert_int_equal(listen(x->hold_fd, 1024), 0);
	snprintf(entry, sizeof(entry), "hold.test:%u", x->hold_port);
	assert_int_equal(allow_list_add(&f->pol.allow, entry), 0);
	assert_int_equal(policy_add_pin(&f->pol, "hold.test=127.0.0.1"), 0);
	x->proxy_fd = listen_on(SOCK_STREAM, &x->proxy_port);
	assert_int_equal(listen(x->proxy_fd, 1024), 0);
	x->dns_fd = listen_on(SOCK_DGRAM, &x->dns_port);
	x->dnst_fd = listen_on(SOCK_STREAM, &x->dnst_port);
	x->trans_fd = listen_on(SOCK_STREAM, &x->trans_port);
	struct gate_config c = { .proxy_fd = x->proxy_fd, .transparent_fd = x->trans_fd, .dns_udp_fd = x->dns_fd,
				 .dns_tcp_fd = x->dnst_fd, .policy = &f->pol, .log_fd = wfd, .log_max = extra->log_max,
				 .max_conns = extra->max_conns, .upstream = extra->upstream,
				 .head_timeout_ms = extra->head_timeout_ms, .idle_timeout_ms = extra->idle_timeout_ms,
				 .connect_timeout_ms = extra->connect_timeout_ms };
	assert_int_equal(gate_new(&c, &x->g), 0);
	assert_int_equal(gate_start(x->g), 0);
}

/* Stops the gate; returns its summary line (malloc'd, "" without one) and the log's text. */
static char *ffix_stop(struct ffix *x, char **log, size_t *log_len)
{
	char *sum = NULL;
	size_t sl = 0;
	struct stat st;
	FILE *m;

	gate_stop(x->g);
	m = open_memstream(&sum, &sl);
	gate_summary(x->g, m);
	fclose(m);
	assert_int_equal(fstat(x->log_rd, &st), 0);
	*log_len = (size_t)st.st_size;
	*log = malloc(*log_len + 1);
	assert_int_equal(pread(x->log_rd, *log, *log_len, 0), (ssize_t)*log_len);
	(*log)[*log_len] = '\0';
	gate_free(x->g);
	close(x->log_rd);
	close(x->hold_fd);
	return sum;
}

/* Every line of @log is one complete JSON object. Return: how many have "decision":"allow". */
static size_t log_check_lines(char *log, size_t *n_lines)
{
	size_t allowed = 0, n = 0;

	for (char *p = log, *nl; *p; p = nl + 1) {
		json_object *o;

		nl = strchr(p, '\n');
		assert_non_null(nl); /* the last record ends its line too */
		*nl = '\0';
		o = json_tokener_parse(p);
		if (!o)
			fail_msg("line %zu is not JSON: %s", n + 1, p);
		json_object_put(o);
		allowed += strstr(p, "\"decision\":\"allow\"") != NULL;
		*nl = '\n';
		n++;
	}
	*n_lines = n;
	return allowed;
}

/* A CONNECT through @x's proxy to @host:@port; returns the fd with the 200 read, or -1 with the
 * refusal read into @buf. */
static int ffix_connect(const struct ffix *x, const char *host, unsigned port, char *buf, size_t n)
{
	char req[512];
	int fd = dial(x->proxy_port);

	snprintf(req, sizeof(req), "CONNECT %s:%u HTTP/1.1\r\n\r\n", host, port);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	read_head(fd, buf, n);
	if (strcmp(buf, "HTTP/1.1 200 Connection established\r\n\r\n") == 0)
		return fd;
	read_all(fd, buf + strlen(buf), n - strlen(buf));
	close(fd);
	return -1;
}

/* One query to the DNS stub on @fd (a connected UDP socket), its rcode (answer awaited). */
static int dns_ask(int fd, const char *name)
{
	uint8_t q[300], a[512];
	size_t l = 12;
	const char *p = name;
	ssize_t k;

	memset(q, 0, 12);
	q[0] = 0x5a, q[2] = 1, q[5] = 1;
	while (*p) {
		const char *dot = strchr(p, '.');
		size_t ll = dot ? (size_t)(dot - p) : strlen(p);

		q[l++] = (uint8_t)ll;
		memcpy(q + l, p, ll);
		l += ll;
		p += ll + (dot ? 1 : 0);
	}
	q[l++] = 0, q[l++] = 0, q[l++] = 1, q[l++] = 0, q[l++] = 1;
	assert_int_equal(send(fd, q, l, 0), (ssize_t)l);
	k = recv(fd, a, sizeof(a), 0);
	assert_true(k >= 12);
	return a[3] & 0xf;
}

static int udp_to(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Whether a child of this process named aisb-gate runs with its seccomp filter (Seccomp: 2). */
static bool gate_is_confined(void)
{
	char path[64], line[256], *pid, *save = NULL;
	bool found = false;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	fp = fopen(path, "re");
	if (!fp || !fgets(line, sizeof(line), fp)) {
		if (fp)
			fclose(fp);
		return false;
	}
	fclose(fp);
	for (pid = strtok_r(line, " \n", &save); pid; pid = strtok_r(NULL, " \n", &save)) {
		char st[4096];
		size_t n;

		snprintf(path, sizeof(path), "/proc/%s/status", pid);
		if (!(fp = fopen(path, "re")))
			continue;
		n = fread(st, 1, sizeof(st) - 1, fp);
		fclose(fp);
		st[n] = '\0';
		if (strstr(st, "Name:\taisb-gate\n") && strstr(st, "\nSeccomp:\t2\n"))
			found = true;
	}
	return found;
}

/* 27 distinct denials killed the gate at its exit: glibc's qsort() of that many entries calls
 * sysinfo(2), outside its allowlist. 40 here; the summary must come from the live gate, sorted
 * (the repeated one first). Control: a single denial also gets its summary. */
static void test_many_denials_summary(void **state)
{
	struct fixture *f = *state;
	char buf[4096], name[64], *sum, *log;
	size_t ll, lines;
	struct ffix x;

	for (int round = 0; round < 2; round++) {
		int n = round == 0 ? 1 : 40;

		ffix_start(f, &x, 0, 0);
		for (int i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "denied-%d.test", i);
			assert_int_equal(ffix_connect(&x, name, 443, buf, sizeof(buf)), -1);
			assert_non_null(strstr(buf, "403"));
		}
		for (int i = 0; i < 3 && n > 1; i++) /* the most denied, shown first */
			assert_int_equal(ffix_connect(&x, "again.test", 443, buf, sizeof(buf)), -1);
		sum = ffix_stop(&x, &log, &ll);
		fprintf(stderr, "# %s\n", sum);
		if (n == 1) {
			assert_non_null(strstr(sum, "aisb: network: denied 1 request(s): denied-0.test:443 (1x, allow with --allow denied-0.test)"));
		} else {
			assert_non_null(strstr(sum, "aisb: network: denied 43 request(s): again.test:443 (3x"));
			assert_non_null(strstr(sum, ", and 36 more"));
		}
		assert_int_equal(log_check_lines(log, &lines), 0);
		/* the repeated denial is one record and one aggregate: "repeated":2 */
		assert_int_equal(lines, n > 1 ? (size_t)n + 2 : 1);
		if (n > 1)
			assert_non_null(strstr(log, "\"host\":\"again.test\",\"port\":443,\"addr\":\"\",\"decision\":\"deny\""
						    ",\"rule\":\"\",\"reason\":\"again.test is not in the allowlist\","
						    "\"bytes_out\":0,\"bytes_in\":0,\"duration_ms\":0,\"repeated\":2}"));
		free(sum);
		free(log);
	}
}

/* The egress log cannot be blinded: a flood of distinct denied DNS names far beyond the bound
 * (256 KiB here) leaves the log within it, every line complete JSON, a record of the dropped
 * count, and an allowed connection made after the flood in the log; the summary says how many
 * records were dropped. Control: the same, below the bound, drops nothing. */
static void test_log_bound_flood(void **state)
{
	struct fixture *f = *state;
	const uint64_t max = 256 << 10;
	char buf[4096], name[80], *sum, *log;
	size_t ll, lines, allowed;
	struct ffix x;

	for (int round = 0; round < 2; round++) {
		int n = round == 0 ? 100 : 20000, udp, fd;

		ffix_start(f, &x, max, 0);
		udp = udp_to(x.dns_port);
		for (int i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "flood-%d.denied.test", i);
			assert_int_equal(dns_ask(udp, name), 3); /* NXDOMAIN */
		}
		assert_int_equal(dns_ask(udp, "svc.test"), 0);
		close(udp);
		/* allowed after the flood: two tunnels, logged */
		for (int i = 0; i < 2; i++) {
			snprintf(name, sizeof(name), "svc.test");
			fd = ffix_connect(&x, name, f->srv_port, buf, sizeof(buf));
			assert_true(fd >= 0);
			tunnel_echo(fd, "after the flood");
		}
		sum = ffix_stop(&x, &log, &ll);
		fprintf(stderr, "# %d names: log %zu bytes; %s\n", n, ll, sum);
		assert_true(ll <= max);
		allowed = log_check_lines(log, &lines);
		assert_int_equal(allowed, 2);
		assert_non_null(strstr(log, "\"kind\":\"connect\",\"method\":\"CONNECT\",\"host\":\"svc.test\""));
		if (round == 0) {
			assert_int_equal(lines, (size_t)n + 2);
			assert_null(strstr(log, "records_dropped"));
			assert_null(strstr(sum, "dropped"));
		} else {
			assert_true(ll > max / 2);
			assert_non_null(strstr(log, "\"kind\":\"log\""));
			assert_non_null(strstr(log, "\"records_dropped\":"));
			assert_non_null(strstr(sum, "record(s) of denials and errors dropped at the egress log's bound"));
		}
		free(sum);
		free(log);
	}
}

/* Once the flood took the denials' share, allowed connections still use the quarter kept for
 * them; when that is full too, a new one is refused (503), never relayed unlogged. */
static void test_log_full_refuses_allowed(void **state)
{
	struct fixture *f = *state;
	char buf[4096], *sum, *log;
	size_t ll, lines, allowed;
	int ok = 0, refused = 0;
	struct ffix x;

	ffix_start(f, &x, 64 << 10, 0); /* the least: 16 KiB for allowed records */
	for (int i = 0; i < 2000 && !refused; i++) {
		int fd = ffix_connect(&x, "svc.test", f->srv_port, buf, sizeof(buf));

		if (fd >= 0) {
			tunnel_echo(fd, "x");
			ok++;
		} else {
			assert_non_null(strstr(buf, "503"));
			assert_non_null(strstr(buf, "the egress log is full"));
			refused++;
		}
	}
	sum = ffix_stop(&x, &log, &ll);
	fprintf(stderr, "# %d allowed, then refused; log %zu bytes\n", ok, ll);
	assert_true(ok > 10);
	assert_int_equal(refused, 1);
	allowed = log_check_lines(log, &lines);
	assert_int_equal(allowed, (size_t)ok); /* every relayed connection is in the log */
	assert_true(ll <= 64 << 10);
	free(sum);
	free(log);
}

/* The stress test (issue 22): through the confined gate, with its real seccomp filter, every
 * path a busy or hostile sandbox takes, many times: 300 long-lived tunnels held open across all
 * of it, 3,000 distinct CONNECT denials and 20,000 distinct DNS denials (UDP), 200 pipelined
 * DNS queries over TCP, pipelined HTTP requests, malformed and oversized heads, then every
 * tunnel still relays, and the exit summary comes from the gate (a gate killed by its filter
 * sends none). */
static void test_stress(void **state)
{
	enum { TUNNELS = 300, DENIALS = 3000, DNS_FLOOD = 20000, DNS_TCP = 200 };
	struct fixture *f = *state;
	static int cl[TUNNELS], sv[TUNNELS];
	char buf[70000], name[80], *sum, *log, want[64];
	size_t ll, lines, allowed;
	struct ffix x;
	int fd, udp;

	ffix_start(f, &x, 0, TUNNELS + 10);
	for (int i = 0; i < TUNNELS; i++) {
		cl[i] = ffix_connect(&x, "hold.test", x.hold_port, buf, sizeof(buf));
		assert_true(cl[i] >= 0);
		sv[i] = accept4(x.hold_fd, NULL, NULL, SOCK_CLOEXEC);
		assert_true(sv[i] >= 0);
	}
	assert_true(gate_is_confined()); /* it answered: it confined itself before that */
	for (int i = 0; i < DENIALS; i++) {
		snprintf(name, sizeof(name), "scan-%d.test", i);
		assert_int_equal(ffix_connect(&x, name, 443 + (unsigned)(i % 7), buf, sizeof(buf)), -1);
		assert_non_null(strstr(buf, "403"));
	}
	{ /* past the connection cap (TUNNELS + 10): 503, the held ones unharmed (every closed
	   * connection so far was freed by the gate before it accepts the next) */
		int idle[20], busy = 0;

		for (int i = 0; i < 20; i++)
			idle[i] = dial(x.proxy_port);
		for (int i = 0; i < 20; i++) {
			struct pollfd p = { .fd = idle[i], .events = POLLIN };

			/* the first 10 wait for their head (no answer within the head timeout's
			 * start), the others get their 503 at once */
			if (poll(&p, 1, i < 10 ? 0 : 5000) == 1) {
				read_all(idle[i], buf, 4096);
				assert_non_null(strstr(buf, "503"));
				busy++;
			}
		}
		for (int i = 0; i < 20; i++)
			close(idle[i]);
		assert_int_equal(busy, 10);
	}
	udp = udp_to(x.dns_port);
	for (int i = 0; i < DNS_FLOOD; i++) {
		snprintf(name, sizeof(name), "q%d.flood.test", i);
		assert_int_equal(dns_ask(udp, name), 3);
	}
	assert_int_equal(dns_ask(udp, "hold.test"), 0);
	close(udp);
	{ /* pipelined DNS over TCP: all queries in one write, every answer read */
		static uint8_t q[DNS_TCP * 64];
		size_t l = 0, got = 0, answers = 0;

		for (int i = 0; i < DNS_TCP; i++) {
			char label[16];
			size_t start = l, ll2 = (size_t)snprintf(label, sizeof(label), "t%d", i);

			l += 2;
			memset(q + l, 0, 12);
			q[l] = (uint8_t)i, q[l + 2] = 1, q[l + 5] = 1;
			l += 12;
			q[l++] = (uint8_t)ll2, memcpy(q + l, label, ll2), l += ll2;
			q[l++] = 4, memcpy(q + l, "test", 4), l += 4;
			q[l++] = 0, q[l++] = 0, q[l++] = 1, q[l++] = 0, q[l++] = 1;
			q[start] = (uint8_t)((l - start - 2) >> 8), q[start + 1] = (uint8_t)(l - start - 2);
		}
		fd = dial(x.dnst_port);
		assert_int_equal(write(fd, q, l), (ssize_t)l);
		while (answers < DNS_TCP) {
			ssize_t k = read(fd, buf + got, sizeof(buf) - got);

			assert_true(k > 0);
			got += (size_t)k;
			while (got >= 2 && got >= 2 + (size_t)((uint8_t)buf[0] << 8 | (uint8_t)buf[1])) {
				size_t m = 2 + (size_t)((uint8_t)buf[0] << 8 | (uint8_t)buf[1]);

				assert_int_equal(buf[2 + 3] & 0xf, 3);
				memmove(buf, buf + m, got - m);
				got -= m;
				answers++;
			}
		}
		close(fd);
	}
	{ /* pipelined HTTP requests on one connection: at least the first is answered */
		char req[1024];
		int n = 0;

		for (int i = 0; i < 5; i++)
			n += snprintf(req + n, sizeof(req) - (size_t)n, "GET http://svc.test:%u/%d HTTP/1.1\r\n"
				      "Host: svc.test:%u\r\n\r\n", f->srv_port, i, f->srv_port);
		fd = dial(x.proxy_port);
		assert_int_equal(write(fd, req, (size_t)n), n);
		read_all(fd, buf, sizeof(buf));
		assert_non_null(strstr(buf, "HTTP/1.0 200 OK"));
		close(fd);
	}
	for (int i = 0; i < 100; i++) { /* transparent connections to addresses never handed out */
		fd = dial(x.trans_port);
		assert_int_equal(read(fd, buf, 16), -1); /* reset */
		close(fd);
	}
	for (int i = 0; i < 50; i++) { /* malformed and oversized heads */
		fd = dial(x.proxy_port);
		if (i % 2) {
			memset(buf, 'A', 66000);
			memcpy(buf, "GET http://svc.test/ HTTP/1.1\r\nX: ", 34);
			(void)!write(fd, buf, 66000);
		} else {
			(void)!write(fd, "\x16\x03\x01 not http\r\n\r\n", 16);
		}
		read_all(fd, buf, 4096);
		assert_non_null(strstr(buf, i % 2 ? "431" : "400"));
		close(fd);
	}
	/* every long-lived tunnel still relays, both ways */
	for (int i = 0; i < TUNNELS; i++) {
		int k = snprintf(want, sizeof(want), "tunnel %d", i);

		assert_int_equal(write(cl[i], want, (size_t)k), k);
		assert_int_equal(read(sv[i], buf, sizeof(buf)), k);
		assert_int_equal(write(sv[i], buf, (size_t)k), k);
		assert_int_equal(read(cl[i], buf, sizeof(buf)), k);
		assert_memory_equal(buf, want, (size_t)k);
	}
	for (int i = 0; i < TUNNELS; i++) {
		close(cl[i]);
		close(sv[i]);
	}
	sum = ffix_stop(&x, &log, &ll);
	fprintf(stderr, "# log %zu bytes; %s\n", ll, sum);
	snprintf(want, sizeof(want), "aisb: network: denied %d request(s):", DENIALS + DNS_FLOOD + DNS_TCP + 100);
	assert_non_null(strstr(sum, want));
	allowed = log_check_lines(log, &lines);
	assert_int_equal(allowed, TUNNELS + 1);
	assert_null(strstr(log, "records_dropped"));
	free(sum);
	free(log);
}

/* The paths the stress test does not reach, also under the filter: the sweep's timeouts (a head,
 * a ClientHello and an idle tunnel) and --proxy (the upstream's CONNECT, its 200 and bytes after
 * it, its refusal, its silence). The upstream is "hold.test"'s listener, answered by the test. */
static void test_timeouts_and_upstream(void **state)
{
	struct fixture *f = *state;
	char buf[4096], up[64], *sum, *log;
	size_t ll, lines, allowed;
	struct ffix x;
	int fd, s;

	/* timeouts: 300 ms for heads, ClientHellos and connects, 500 ms idle */
	{
		struct gate_config c = { .head_timeout_ms = 300, .idle_timeout_ms = 500, .connect_timeout_ms = 300 };

		assert_int_equal(allow_list_add(&f->pol.allow, "hello.test"), 0); /* 443 and 80 */
		assert_int_equal(policy_add_pin(&f->pol, "hello.test=127.0.0.1"), 0);
		ffix_start_cfg(f, &x, &c);
	}
	fd = dial(x.proxy_port);
	assert_int_equal(write(fd, "CONNECT hold", 12), 12);
	read_all(fd, buf, sizeof(buf));
	assert_non_null(strstr(buf, "408"));
	close(fd);
	fd = ffix_connect(&x, "hello.test", 443, buf, sizeof(buf)); /* 200 first, then the ClientHello wait */
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), -1); /* reset: no ClientHello in time */
	close(fd);
	fd = ffix_connect(&x, "hold.test", x.hold_port, buf, sizeof(buf));
	assert_true(fd >= 0);
	s = accept4(x.hold_fd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(s >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 0); /* the idle tunnel is closed by the gate */
	close(fd);
	close(s);
	sum = ffix_stop(&x, &log, &ll);
	allowed = log_check_lines(log, &lines);
	assert_int_equal(allowed, 1);
	assert_non_null(strstr(log, "\"reason\":\"no complete request head in time\""));
	assert_non_null(strstr(log, "\"reason\":\"no TLS ClientHello in time\""));
	assert_non_null(strstr(log, "\"decision\":\"allow\",\"rule\":\"hold.test:"));
	assert_non_null(strstr(log, "\"reason\":\"idle timeout\""));
	free(sum);
	free(log);

	/* --proxy: the hold listener plays the upstream */
	{
		uint16_t up_port;
		int up_fd = listen_on(SOCK_STREAM, &up_port);
		struct gate_config c = { .upstream = up, .connect_timeout_ms = 300 };
		char head[512];

		snprintf(up, sizeof(up), "127.0.0.1:%u", up_port);
		ffix_start_cfg(f, &x, &c);
		for (int i = 0; i < 3; i++) {
			char req[256];

			fd = dial(x.proxy_port);
			snprintf(req, sizeof(req), "CONNECT svc.test:%u HTTP/1.1\r\n\r\n", f->srv_port);
			assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
			s = accept4(up_fd, NULL, NULL, SOCK_CLOEXEC);
			assert_true(s >= 0);
			read_head(s, head, sizeof(head));
			/* the checked pin, by address */
			snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%u HTTP/1.1\r\n", f->srv_port);
			assert_non_null(strstr(head, req));
			if (i == 0) { /* accepted, with the first bytes of the tunnel in the same write */
				assert_int_equal(write(s, "HTTP/1.1 200 OK\r\n\r\nearly", 24), 24);
				read_head(fd, buf, sizeof(buf));
				assert_string_equal(buf, "HTTP/1.1 200 Connection established\r\n\r\n");
				assert_int_equal(read(fd, buf, 5), 5);
				assert_memory_equal(buf, "early", 5);
				assert_int_equal(write(fd, "back", 4), 4);
				assert_int_equal(read(s, buf, 4), 4);
				assert_memory_equal(buf, "back", 4);
			} else if (i == 1) { /* refused by the upstream */
				assert_int_equal(write(s, "HTTP/1.1 403 Forbidden\r\n\r\n", 26), 26);
				read_all(fd, buf, sizeof(buf));
				assert_non_null(strstr(buf, "502"));
				assert_non_null(strstr(buf, "upstream proxy refused the tunnel (status 403)"));
			} else { /* silent */
				read_all(fd, buf, sizeof(buf));
				assert_non_null(strstr(buf, "504"));
			}
			close(fd);
			close(s);
		}
		sum = ffix_stop(&x, &log, &ll);
		close(up_fd);
		allowed = log_check_lines(log, &lines);
		assert_int_equal(allowed, 3); /* allowed by the policy, each with its outcome */
		assert_non_null(strstr(log, "upstream proxy did not answer in time"));
		free(sum);
		free(log);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_connect_allowed_and_denied, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_dial_is_502, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tunnel_backpressure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_http_forward, setup, teardown),
		cmocka_unit_test_setup_teardown(test_http_one_request, setup, teardown),
		cmocka_unit_test_setup_teardown(test_http_answer_closes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rebinding_and_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slow_client_does_not_stall, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dns_stub, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_and_summary, setup, teardown),
		cmocka_unit_test(test_sni_checked_before_dial),
		cmocka_unit_test_setup_teardown(test_confine_failure_refuses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gate_from_plan, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lazy_start_and_log, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_denials_summary, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_bound_flood, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_full_refuses_allowed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stress, setup, teardown),
		cmocka_unit_test(test_netplan_tls_keys),
		cmocka_unit_test_setup_teardown(test_timeouts_and_upstream, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
