// SPDX-License-Identifier: GPL-2.0-or-later
/* tlsgate.c — what the tlsgate costs (docs/key-via-gate-tls.md, open question 6): time to first
 * byte and throughput of a TLS connection through the tlsgate (terminated, the plaintext relayed
 * by a stand-in for the gate, a second TLS connection upstream) against the same TLS connection
 * through a plain socket relay (today's CONNECT tunnel: the client's TLS goes end to end).
 *
 *   tlsgate-bench [CONNECTIONS [MIB]]    (default 200 connections, 256 MiB)
 *
 * Everything runs on this machine over unix socketpairs (no network stack, no netns): the
 * numbers are the TLS and relay work alone. The upstream is a libssl server thread with a
 * self-signed P-256 certificate for model.test, trusted by the tlsgate through SSL_CERT_FILE;
 * the client trusts the session CA (tlsgate) or that certificate (plain). Built and run by
 * bench/tlsgate.sh. Not part of aisb; bench only.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "net/tlsgate.h"

#define NAME "model.test"

static X509 *up_cert;
static EVP_PKEY *up_key;
static SSL_CTX *up_ctx;
static size_t bulk;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "tlsgate-bench: %s\n", what);
	exit(1);
}

static void cert_make(const char *path)
{
	X509V3_CTX v;
	X509_EXTENSION *e;
	FILE *f;

	up_key = EVP_EC_gen("P-256");
	up_cert = X509_new();
	ASN1_INTEGER_set(X509_get_serialNumber(up_cert), 1);
	X509_set_version(up_cert, X509_VERSION_3);
	X509_gmtime_adj(X509_getm_notBefore(up_cert), -60);
	X509_gmtime_adj(X509_getm_notAfter(up_cert), 3600);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(up_cert), "CN", MBSTRING_ASC, (const unsigned char *)NAME, -1, -1, 0);
	X509_set_issuer_name(up_cert, X509_get_subject_name(up_cert));
	X509_set_pubkey(up_cert, up_key);
	X509V3_set_ctx_nodb(&v);
	X509V3_set_ctx(&v, up_cert, up_cert, NULL, NULL, 0);
	e = X509V3_EXT_conf_nid(NULL, &v, NID_subject_alt_name, "DNS:" NAME);
	X509_add_ext(up_cert, e, -1);
	X509_EXTENSION_free(e);
	if (X509_sign(up_cert, up_key, EVP_sha256()) <= 0 || !(f = fopen(path, "w")))
		die("cannot make the upstream certificate");
	PEM_write_X509(f, up_cert);
	fclose(f);
	up_ctx = SSL_CTX_new(TLS_server_method());
	SSL_CTX_use_certificate(up_ctx, up_cert);
	SSL_CTX_use_PrivateKey(up_ctx, up_key);
}

/* upstream: handshake, read the request (one line), answer "bulk" bytes (at least 1), close */
static void *upstream_run(void *arg)
{
	static __thread unsigned char b[65536];
	int fd = (int)(long)arg;
	SSL *s = SSL_new(up_ctx);
	char req[64];

	SSL_set_fd(s, fd);
	if (SSL_accept(s) == 1 && SSL_read(s, req, sizeof(req)) > 0) {
		memset(b, 'a', sizeof(b));
		for (size_t off = 0; off < bulk;) {
			int k = SSL_write(s, b, (int)(bulk - off < sizeof(b) ? bulk - off : sizeof(b)));
			if (k <= 0)
				break;
			off += (size_t)k;
		}
		SSL_shutdown(s);
	}
	SSL_free(s);
	close(fd);
	return NULL;
}

/* a plain relay between two sockets, EOF passed on: the gate's part */
struct pair {
	int a, b;
};

static void *relay_run(void *arg)
{
	static __thread char buf[65536];
	struct pair *p = arg;
	struct pollfd f[2] = { { .fd = p->a, .events = POLLIN }, { .fd = p->b, .events = POLLIN } };
	int open = 2;

	while (open > 0 && poll(f, 2, 10000) > 0)
		for (int i = 0; i < 2; i++) {
			ssize_t k;

			if (!(f[i].revents & (POLLIN | POLLHUP)))
				continue;
			k = read(f[i].fd, buf, sizeof(buf));
			if (k <= 0) {
				shutdown(f[1 - i].fd, SHUT_WR);
				f[i].fd = -1;
				open--;
				continue;
			}
			for (ssize_t o = 0; o < k;) {
				ssize_t w = write(f[1 - i].fd, buf + o, (size_t)(k - o));
				if (w <= 0)
					goto out;
				o += w;
			}
		}
out:
	close(p->a);
	close(p->b);
	free(p);
	return NULL;
}

static void relay_start(int a, int b, pthread_t *t)
{
	struct pair *p = malloc(sizeof(*p));

	*p = (struct pair){ a, b };
	pthread_create(t, NULL, relay_run, p);
}

/* One connection: returns its time to first byte; *total gets the time to its last byte. */
static double one(SSL_CTX *cctx, int ctl, double *total)
{
	int cs[2], us[2], pc[2], pu[2];
	pthread_t ut, rt;
	unsigned char b[65536];
	double t0 = now(), first = 0;
	size_t got = 0;
	SSL *c;

	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cs);
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, us);
	pthread_create(&ut, NULL, upstream_run, (void *)(long)us[0]);
	if (ctl < 0) {
		relay_start(cs[1], us[1], &rt);
	} else {
		socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pc);
		socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pu);
		if (tlsgate_handoff(ctl, 1, NAME, NULL, 0, cs[1], us[1], pc[1], pu[1]) < 0)
			die("handoff failed");
		close(cs[1]);
		close(us[1]);
		close(pc[1]);
		close(pu[1]);
		relay_start(pc[0], pu[0], &rt);
	}
	c = SSL_new(cctx);
	SSL_set_tlsext_host_name(c, NAME);
	SSL_set1_host(c, NAME);
	SSL_set_fd(c, cs[0]);
	if (SSL_connect(c) != 1 || SSL_write(c, "GET / HTTP/1.1\r\n\r\n", 18) != 18)
		die("client handshake failed");
	for (int k; (k = SSL_read(c, b, sizeof(b))) > 0; got += (size_t)k)
		if (!first)
			first = now();
	*total = now() - t0;
	if (got != bulk)
		die("short answer");
	SSL_free(c);
	close(cs[0]);
	pthread_join(ut, NULL);
	pthread_join(rt, NULL);
	return first - t0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void run(const char *label, SSL_CTX *cctx, int ctl, int n, size_t mib)
{
	double *t = calloc((size_t)n, sizeof(*t)), total;
	struct tlsgate_event ev;

	bulk = 1;
	for (int i = 0; i < n; i++) {
		t[i] = one(cctx, ctl, &total);
		while (ctl >= 0 && tlsgate_event_read(ctl, &ev) == 1)
			if (ev.status != 0)
				die(ev.reason);
	}
	qsort(t, (size_t)n, sizeof(*t), cmp);
	bulk = mib << 20;
	(void)one(cctx, ctl, &total);
	printf("%-8s time to first byte: median %.2f ms, p90 %.2f ms (%d connections); %zu MiB in %.2f s: %.0f MiB/s\n",
	       label, t[n / 2] * 1e3, t[n * 9 / 10] * 1e3, n, mib, total, (double)mib / total);
	free(t);
}

static SSL_CTX *client_ctx(X509 *trust)
{
	SSL_CTX *c = SSL_CTX_new(TLS_client_method());

	X509_STORE_add_cert(SSL_CTX_get_cert_store(c), trust);
	SSL_CTX_set_verify(c, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_alpn_protos(c, (const unsigned char *)"\x08http/1.1", 9);
	return c;
}

int main(int argc, char **argv)
{
	struct tlsgate_config cfg = { .names = { NAME }, .n_names = 1 };
	int n = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 200, ctl;
	size_t mib = argc > 2 ? (size_t)strtoul(argv[2], NULL, 10) : 256;
	char path[] = "/tmp/tlsgate-bench-XXXXXX", why[256], *pem;
	double t0;
	pid_t pid;
	X509 *ca;
	BIO *b;

	close(mkstemp(path));
	cert_make(path);
	setenv("SSL_CERT_FILE", path, 1);
	t0 = now();
	if (tlsgate_spawn(&cfg, &pid, &ctl, &pem, why, sizeof(why)) < 0)
		die(why);
	printf("spawn (set-up, CA and leaf, confinement): %.1f ms\n", (now() - t0) * 1e3);
	unlink(path);
	b = BIO_new_mem_buf(pem, -1);
	ca = PEM_read_bio_X509(b, NULL, NULL, NULL);
	run("plain", client_ctx(up_cert), -1, n, mib);
	run("tlsgate", client_ctx(ca), ctl, n, mib);
	close(ctl);
	waitpid(pid, NULL, 0);
	return 0;
}
