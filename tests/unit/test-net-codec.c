// SPDX-License-Identifier: GPL-2.0-or-later
/* test-net-codec.c — HTTP proxy head parser and DNS codec (table-driven) */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "net/dns.h"
#include "net/http.h"

static void test_http_heads(void **state)
{
	static const struct {
		const char *in;
		int result;        /* >0: complete, 0: need more, <0 error */
		int status;
		const char *host;
		unsigned port;
		int connect;
	} t[] = {
		{ "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 1, 0, "example.com", 443, 1 },
		{ "CONNECT Example.COM:8443 HTTP/1.0\r\n\r\n", 1, 0, "example.com", 8443, 1 },
		{ "CONNECT [2001:db8::1]:443 HTTP/1.1\r\n\r\n", 1, 0, "2001:db8::1", 443, 1 },
		{ "CONNECT 10.0.0.1:22 HTTP/1.1\n\n", 1, 0, "10.0.0.1", 22, 1 },
		{ "GET http://example.com/a?b=c HTTP/1.1\r\nHost: example.com\r\n\r\n", 1, 0, "example.com", 80, 0 },
		{ "GET http://example.com:8080 HTTP/1.1\r\n\r\n", 1, 0, "example.com", 8080, 0 },
		{ "POST HTTP://example.com?x HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", 1, 0, "example.com", 80, 0 },
		{ "CONNECT example.com:443 HTTP/1.1\r\nHost: exa", 0, 0, NULL, 0, 0 },
		{ "CONN", 0, 0, NULL, 0, 0 },
		{ "CONNECT example.com HTTP/1.1\r\n\r\n", -1, 400, NULL, 0, 0 },     /* port required */
		{ "CONNECT example.com:0 HTTP/1.1\r\n\r\n", -1, 400, NULL, 0, 0 },
		{ "CONNECT example.com:99999 HTTP/1.1\r\n\r\n", -1, 400, NULL, 0, 0 },
		{ "CONNECT 2001:db8::1:443 HTTP/1.1\r\n\r\n", -1, 400, NULL, 0, 0 },
		{ "GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n", -1, 400, NULL, 0, 0 },  /* origin-form */
		{ "GET https://example.com/ HTTP/1.1\r\n\r\n", -1, 400, NULL, 0, 0 },
		{ "GET http://user:pw@example.com/ HTTP/1.1\r\n\r\n", -1, 400, NULL, 0, 0 },
		{ "GET http://exa mple.com/ HTTP/1.1\r\n\r\n", -1, 400, NULL, 0, 0 },
		{ "GET http://example.com/ HTTP/2.0\r\n\r\n", -1, 400, NULL, 0, 0 },
		{ "GET http://example.com/ HTTP/1.1\r\n folded\r\n\r\n", -1, 400, NULL, 0, 0 },
		{ "GET http://example.com/ HTTP/1.1\r\nBad Name: x\r\n\r\n", -1, 400, NULL, 0, 0 },
		{ "GET http://example.com/ HTTP/1.1\r\nNoColon\r\n\r\n", -1, 400, NULL, 0, 0 },
		{ "\x16\x03\x01\x02\x00", -1, 400, NULL, 0, 0 },             /* TLS to the proxy port */
		{ "GE\x01T x", -1, 400, NULL, 0, 0 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct http_request req;
		int status = -1;
		int r = http_parse_head(t[i].in, strlen(t[i].in), &req, &status);

		if ((t[i].result > 0 && r <= 0) || (t[i].result == 0 && r != 0) || (t[i].result < 0 && r >= 0))
			fail_msg("case %zu '%s': r=%d", i, t[i].in, r);
		if (t[i].result < 0)
			assert_int_equal(status, t[i].status);
		if (t[i].result > 0) {
			assert_string_equal(req.host, t[i].host);
			assert_int_equal(req.port, t[i].port);
			assert_int_equal(req.connect, t[i].connect);
		}
	}
}

static void test_http_host_header(void **state)
{
	static const struct {
		const char *in;
		bool mismatch;
	} t[] = {
		{ "GET http://a.com/ HTTP/1.1\r\nHost: a.com\r\n\r\n", false },
		{ "GET http://a.com/ HTTP/1.1\r\nHost: A.COM:80\r\n\r\n", false },
		{ "GET http://a.com:8080/ HTTP/1.1\r\nHost: a.com:8080\r\n\r\n", false },
		{ "GET http://a.com/ HTTP/1.1\r\n\r\n", false },
		{ "GET http://a.com/ HTTP/1.1\r\nHost: evil.com\r\n\r\n", true },
		{ "GET http://a.com:8080/ HTTP/1.1\r\nHost: a.com\r\n\r\n", false }, /* no port: the name counts */
		{ "GET http://a.com:8080/ HTTP/1.1\r\nHost: a.com:9090\r\n\r\n", true },
		{ "CONNECT a.com:443 HTTP/1.1\r\nHost: b.com\r\n\r\n", false }, /* SNI is checked instead */
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct http_request req;
		int status;

		assert_true(http_parse_head(t[i].in, strlen(t[i].in), &req, &status) > 0);
		if (req.host_mismatch != t[i].mismatch)
			fail_msg("case %zu: mismatch=%d", i, req.host_mismatch);
	}
}

/* Request smuggling (issue 22, RFC 9112): each head is refused with 400 and a reason, next to
 * its control, the same request framed one way only, which is accepted with that framing. */
static void test_http_framing(void **state)
{
	static const struct {
		const char *in;
		int body;          /* -1: refused with 400 */
		uint64_t length;
		const char *why;   /* a word of req.bad */
	} t[] = {
		{ "POST http://a.com/ HTTP/1.1\r\nHost: a.com\r\nContent-Length: 5\r\n\r\n", HTTP_BODY_LENGTH, 5, NULL },
		{ "POST http://a.com/ HTTP/1.1\r\nContent-Length:  007 \r\n\r\n", HTTP_BODY_LENGTH, 7, NULL },
		{ "POST http://a.com/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", HTTP_BODY_CHUNKED, 0, NULL },
		{ "POST http://a.com/ HTTP/1.1\r\ntransfer-encoding:\tChunked\r\n\r\n", HTTP_BODY_CHUNKED, 0, NULL },
		{ "GET http://a.com/ HTTP/1.1\r\nHost: a.com\r\n\r\n", HTTP_BODY_NONE, 0, NULL },
		{ "GET http://a.com/ HTTP/1.1\r\nX-Content_Length: 5\r\n\r\n", HTTP_BODY_NONE, 0, NULL },
		/* RFC 9112 6.1 / 6.3 item 3: both */
		{ "POST http://a.com/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", -1, 0, "both" },
		{ "POST http://a.com/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", -1, 0, "both" },
		/* 6.3 item 5: duplicate, conflicting, list, signed, empty, overflowing Content-Length */
		{ "POST http://a.com/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", -1, 0, "more than one" },
		{ "POST http://a.com/ HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: 6\r\n\r\n", -1, 0, "more than one" },
		{ "POST http://a.com/ HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n", -1, 0, "invalid" },
		{ "POST http://a.com/ HTTP/1.1\r\nContent-Length: +5\r\n\r\n", -1, 0, "invalid" },
		{ "POST http://a.com/ HTTP/1.1\r\nContent-Length: 0x5\r\n\r\n", -1, 0, "invalid" },
		{ "POST http://a.com/ HTTP/1.1\r\nContent-Length: \r\n\r\n", -1, 0, "invalid" },
		{ "POST http://a.com/ HTTP/1.1\r\nContent-Length: 1 2\r\n\r\n", -1, 0, "invalid" },
		{ "POST http://a.com/ HTTP/1.1\r\nContent-Length: 1234567890123456789\r\n\r\n", -1, 0, "invalid" },
		/* 6.3 item 4: a coding other than chunked last, or a list; duplicates; 6.1: HTTP/1.0 */
		{ "POST http://a.com/ HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", -1, 0, "other than" },
		{ "POST http://a.com/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", -1, 0, "other than" },
		{ "POST http://a.com/ HTTP/1.1\r\nTransfer-Encoding: chunked, identity\r\n\r\n", -1, 0, "other than" },
		{ "POST http://a.com/ HTTP/1.1\r\nTransfer-Encoding: xchunked\r\n\r\n", -1, 0, "other than" },
		{ "POST http://a.com/ HTTP/1.1\r\nTransfer-Encoding: \"chunked\"\r\n\r\n", -1, 0, "other than" },
		{ "POST http://a.com/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", -1, 0,
		  "more than one" },
		{ "POST http://a.com/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", -1, 0, "HTTP/1.0" },
		/* '_' spellings that CGI/WSGI servers read as the framing header */
		{ "POST http://a.com/ HTTP/1.1\r\nContent_Length: 5\r\n\r\n", -1, 0, "'_'" },
		{ "POST http://a.com/ HTTP/1.1\r\nTransfer_Encoding: chunked\r\n\r\n", -1, 0, "'_'" },
		/* 5.2 obs-fold (also of a framing header), 3.2 two Host headers */
		{ "POST http://a.com/ HTTP/1.1\r\nX: a\r\n Transfer-Encoding: chunked\r\n\r\n", -1, 0, "obs-fold" },
		{ "POST http://a.com/ HTTP/1.1\r\nTransfer-Encoding:\r\n chunked\r\n\r\n", -1, 0, "other than" },
		{ "GET http://a.com/ HTTP/1.1\r\nHost: a.com\r\nHost: a.com\r\n\r\n", -1, 0, "Host" },
		{ "GET http://a.com/ HTTP/1.1\r\nHost: a.com\r\nHost: evil.com\r\n\r\n", -1, 0, "Host" },
		/* 5.1: whitespace between name and colon (no reason: a malformed head) */
		{ "POST http://a.com/ HTTP/1.1\r\nContent-Length : 5\r\n\r\n", -1, 0, NULL },
		{ "POST http://a.com/ HTTP/1.1\r\nTransfer-Encoding\t: chunked\r\n\r\n", -1, 0, NULL },
		/* brackets are for IPv6 literals only (control: CONNECT [2001:db8::1]:443 in test_http_heads) */
		{ "CONNECT [good.test]:443 HTTP/1.1\r\n\r\n", -1, 0, "brackets" },
		{ "CONNECT [10.0.0.1]:443 HTTP/1.1\r\n\r\n", -1, 0, "brackets" },
		{ "CONNECT [::1:]:443 HTTP/1.1\r\n\r\n", -1, 0, "brackets" },
		{ "GET http://[good.test]/ HTTP/1.1\r\n\r\n", -1, 0, "brackets" },
		{ "GET http://[good.test]:80/ HTTP/1.1\r\n\r\n", -1, 0, "brackets" },
		{ "GET http://[2001:db8::1]:80/ HTTP/1.1\r\nHost: [2001:db8::1]\r\n\r\n", HTTP_BODY_NONE, 0, NULL },
		{ "GET http://good.test/ HTTP/1.1\r\nHost: [good.test]\r\n\r\n", HTTP_BODY_NONE, 0, NULL }, /* mismatch */
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct http_request req;
		int status = -1;
		int r = http_parse_head(t[i].in, strlen(t[i].in), &req, &status);

		if (t[i].body < 0) {
			if (r != -EBADMSG || status != 400)
				fail_msg("case %zu '%s': r=%d status %d", i, t[i].in, r, status);
			if (t[i].why && (!req.bad || !strstr(req.bad, t[i].why)))
				fail_msg("case %zu: reason '%s'", i, req.bad ? req.bad : "(none)");
			continue;
		}
		if (r <= 0)
			fail_msg("case %zu '%s': r=%d (%s)", i, t[i].in, r, req.bad ? req.bad : "");
		assert_int_equal(req.body, t[i].body);
		assert_int_equal(req.content_length, t[i].length);
	}
	/* a Host header in brackets names no host: a mismatch (403), never this host */
	{
		struct http_request req;
		int status;
		const char *in = "GET http://good.test/ HTTP/1.1\r\nHost: [good.test]\r\n\r\n";

		assert_true(http_parse_head(in, strlen(in), &req, &status) > 0);
		assert_true(req.host_mismatch);
	}
}

/* The body framer over every split of each stream: how many bytes are the body's, or the
 * refusal (RFC 9112 7.1, strictly). */
static void test_http_body(void **state)
{
	static const struct {
		const char *head, *in;
		int result;        /* 1 complete, 0 more needed, -1 refused */
		size_t used;       /* bytes of @in that are the body's (when 1) */
		const char *why;
	} t[] = {
		{ "Content-Length: 5", "helloGET /evil", 1, 5, NULL },
		{ "Content-Length: 5", "hel", 0, 0, NULL },
		{ "Content-Length: 0", "GET /evil", 1, 0, NULL },
		{ "", "GET http://evil.test/ HTTP/1.1\r\n\r\n", 1, 0, NULL },
		{ "Transfer-Encoding: chunked", "5\r\nhello\r\n0\r\n\r\nGET /evil", 1, 15, NULL },
		{ "Transfer-Encoding: chunked", "A\r\n0123456789\r\nb\r\n0123456789a\r\n000\r\n\r\n", 1, 38, NULL },
		{ "Transfer-Encoding: chunked", "5\r\nhello\r\n", 0, 0, NULL },
		{ "Transfer-Encoding: chunked", "5;ext=1\r\nhello\r\n0\r\n\r\n", -1, 0, "extension" },
		{ "Transfer-Encoding: chunked", "5\nhello\r\n0\r\n\r\n", -1, 0, "malformed" },
		{ "Transfer-Encoding: chunked", "5\r\nhello\n0\r\n\r\n", -1, 0, "longer" },
		{ "Transfer-Encoding: chunked", "5\r\nhelloXX\r\n0\r\n\r\n", -1, 0, "longer" },
		{ "Transfer-Encoding: chunked", "5 \r\nhello\r\n0\r\n\r\n", -1, 0, "malformed" },
		{ "Transfer-Encoding: chunked", " 5\r\nhello\r\n0\r\n\r\n", -1, 0, "malformed" },
		{ "Transfer-Encoding: chunked", "-5\r\nhello\r\n0\r\n\r\n", -1, 0, "malformed" },
		{ "Transfer-Encoding: chunked", "\r\n", -1, 0, "malformed" },
		{ "Transfer-Encoding: chunked", "1000000000000000\r\n", -1, 0, "digits" },
		{ "Transfer-Encoding: chunked", "5\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n", -1, 0, "trailer" },
		{ "Transfer-Encoding: chunked", "0\r\n\n", -1, 0, "trailer" },
		{ "Transfer-Encoding: chunked", "5\r\nhello\r\r", -1, 0, "CRLF" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		size_t len = strlen(t[i].in);

		for (size_t split = 0; split <= len; split++) {
			char head[256];
			struct http_request req;
			struct http_body_framer f;
			int status, r;
			size_t used = 0, u2 = 0;

			snprintf(head, sizeof(head), "POST http://a.com/ HTTP/1.1\r\n%s%s\r\n", t[i].head,
				 t[i].head[0] ? "\r\n" : "");
			assert_true(http_parse_head(head, strlen(head), &req, &status) > 0);
			http_body_init(&f, &req);
			r = http_body_feed(&f, t[i].in, split, &used);
			if (r == 0) {
				assert_int_equal(used, split);
				r = http_body_feed(&f, t[i].in + split, len - split, &u2);
				used += u2;
			}
			if (r < 0)
				assert_int_equal(r, -EBADMSG);
			if ((r < 0 ? -1 : r) != t[i].result)
				fail_msg("case %zu split %zu: r=%d (%s)", i, split, r, f.bad ? f.bad : "");
			if (r == 1)
				assert_int_equal(used, t[i].used);
			if (r < 0 && (!f.bad || !t[i].why || !strstr(f.bad, t[i].why)))
				fail_msg("case %zu: reason '%s'", i, f.bad ? f.bad : "(none)");
			/* complete stays complete, and takes nothing more */
			if (r == 1) {
				assert_int_equal(http_body_feed(&f, "more", 4, &u2), 1);
				assert_int_equal(u2, 0);
			}
		}
	}
}

static void test_http_bounds(void **state)
{
	struct http_request req;
	int status;
	size_t n = HTTP_HEAD_MAX + 10;
	char *big = malloc(n + 1);
	size_t len;

	assert_non_null(big);
	/* a 64 KiB head without its end: 431 */
	len = (size_t)snprintf(big, n, "GET http://example.com/ HTTP/1.1\r\nX: ");
	memset(big + len, 'a', n - len);
	assert_int_equal(http_parse_head(big, n, &req, &status), -EMSGSIZE);
	assert_int_equal(status, 431);
	/* too many header lines: 431 */
	len = (size_t)snprintf(big, n, "GET http://example.com/ HTTP/1.1\r\n");
	for (int i = 0; i <= HTTP_HEADERS_MAX; i++)
		len += (size_t)snprintf(big + len, n - len, "X-%d: y\r\n", i);
	len += (size_t)snprintf(big + len, n - len, "\r\n");
	assert_int_equal(http_parse_head(big, len, &req, &status), -EMSGSIZE);
	assert_int_equal(status, 431);
	/* NUL byte: 400 */
	assert_int_equal(http_parse_head("GET \0 HTTP/1.1\r\n\r\n", 18, &req, &status), -EBADMSG);
	assert_int_equal(status, 400);
	free(big);
}

/* --key-via-gate: the key goes exactly where a harness sends its key, nowhere else. */
static void test_http_put_key(void **state)
{
#define PH "aisb-placeholder-0123456789abcdef0123456789abcdef"
	static const struct {
		const char *in, *out; /* out NULL: nothing replaced */
		int count;
	} t[] = {
		{ "POST /v1 HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer " PH "\r\nConnection: close\r\n\r\n",
		  "POST /v1 HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer sk-REAL\r\nConnection: close\r\n"
		  "Accept-Encoding: identity\r\n\r\n", 1 },
		{ "POST /v1 HTTP/1.1\r\nx-api-key: " PH "\r\nauthorization:bearer   " PH "  \r\n\r\n",
		  "POST /v1 HTTP/1.1\r\nx-api-key: sk-REAL\r\nAuthorization: Bearer sk-REAL\r\n"
		  "Accept-Encoding: identity\r\n\r\n", 2 },
		{ "GET /v1 HTTP/1.1\r\nX-API-KEY:" PH "\r\n\r\n",
		  "GET /v1 HTTP/1.1\r\nx-api-key: sk-REAL\r\nAccept-Encoding: identity\r\n\r\n", 1 },
		/* a keyed head asks for an uncompressed answer: its Accept-Encoding lines (before or
		 * after the key, any case) become one identity line; a head's bare LF lines too */
		{ "POST /v1 HTTP/1.1\r\naccept-encoding: gzip, br\r\nx-api-key: " PH "\r\nACCEPT-ENCODING:zstd\r\n"
		  "Content-Length: 2\r\n\r\n",
		  "POST /v1 HTTP/1.1\r\nx-api-key: sk-REAL\r\nContent-Length: 2\r\nAccept-Encoding: identity\r\n\r\n", 1 },
		{ "GET /v1 HTTP/1.1\nAccept-Encoding: gzip\nx-api-key: " PH "\n\n",
		  "GET /v1 HTTP/1.1\nx-api-key: sk-REAL\r\nAccept-Encoding: identity\r\n\n", 1 },
		/* Accept-Encoding-X is another header */
		{ "GET /v1 HTTP/1.1\r\nAccept-Encoding-X: gzip\r\nx-api-key: " PH "\r\n\r\n",
		  "GET /v1 HTTP/1.1\r\nAccept-Encoding-X: gzip\r\nx-api-key: sk-REAL\r\nAccept-Encoding: identity\r\n\r\n", 1 },
		/* not an auth header, a URL, another scheme, a longer or shorter value: left as they are */
		{ "GET /" PH " HTTP/1.1\r\nX-Other: " PH "\r\nAuthorization: Basic " PH "\r\n"
		  "Authorization: Bearer " PH "x\r\nx-api-key: " PH "ab\r\nx-api-key: Bearer " PH "\r\n"
		  "x-api-key-2: " PH "\r\nAuthorization: Bearer aisb-placeholder-0123\r\n\r\n", NULL, 0 },
		{ "GET / HTTP/1.1\r\nAuthorization: Bearer sk-own\r\n\r\n", NULL, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char *out = NULL;
		size_t len = 0;

		assert_int_equal(http_put_key(t[i].in, strlen(t[i].in), PH, "sk-REAL", &out, &len), t[i].count);
		if (!t[i].out) {
			assert_null(out);
			continue;
		}
		assert_int_equal(len, strlen(t[i].out));
		assert_memory_equal(out, t[i].out, len);
		free(out);
	}
#undef PH
}

/* --key-via-gate: the heads inside a tunnel to the model endpoint, checked like proxy heads. */
static void test_http_origin_head(void **state)
{
	static const struct {
		const char *in;
		int ok;        /* 1 accepted, 0 refused (-EBADMSG) */
		bool mismatch;
	} t[] = {
		{ "POST /v1/chat HTTP/1.1\r\nHost: host.aisb.internal:8080\r\nContent-Length: 2\r\n\r\n", 1, false },
		{ "GET / HTTP/1.1\r\n\r\n", 1, false },
		{ "GET / HTTP/1.1\r\nHost: evil.test:8080\r\n\r\n", 1, true },
		{ "GET / HTTP/1.1\r\nHost: host.aisb.internal:9\r\n\r\n", 1, true },
		{ "GET http://host.aisb.internal:8080/ HTTP/1.1\r\n\r\n", 0, false },
		{ "CONNECT /x HTTP/1.1\r\n\r\n", 0, false },
		{ "POST / HTTP/1.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n", 0, false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct http_request req;
		int status, r = http_parse_origin_head(t[i].in, strlen(t[i].in), "host.aisb.internal", 8080, &req, &status);

		if (t[i].ok) {
			assert_int_equal(r, (int)strlen(t[i].in));
			assert_int_equal(req.host_mismatch, t[i].mismatch);
		} else {
			assert_int_equal(r, -EBADMSG);
		}
	}
}

static void test_http_rewrite(void **state)
{
	static const struct {
		const char *in, *out;
	} t[] = {
		{ "GET http://example.com/a/b?c=d HTTP/1.1\r\nHost: example.com\r\nProxy-Connection: keep-alive\r\n"
		  "Proxy-Authorization: Basic x\r\nAccept: */*\r\nConnection: keep-alive\r\n\r\n",
		  "GET /a/b?c=d HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nConnection: close\r\n\r\n" },
		/* no upgrade to a tunnel (h2c, websocket): Upgrade goes with Connection */
		{ "GET http://example.com/ HTTP/1.1\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n"
		  "Connection: Upgrade, HTTP2-Settings\r\n\r\n",
		  "GET / HTTP/1.1\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\nConnection: close\r\n\r\n" },
		{ "HEAD http://example.com HTTP/1.0\nHost: example.com\n\n",
		  "HEAD / HTTP/1.0\r\nHost: example.com\r\nConnection: close\r\n\r\n" },
		{ "GET http://example.com?q HTTP/1.1\r\n\r\n", "GET /?q HTTP/1.1\r\nConnection: close\r\n\r\n" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct http_request req;
		int status;
		char *out = NULL;
		size_t len;

		assert_true(http_parse_head(t[i].in, strlen(t[i].in), &req, &status) > 0);
		assert_int_equal(http_rewrite_origin(t[i].in, &req, &out, &len), 0);
		assert_int_equal(len, strlen(t[i].out));
		assert_memory_equal(out, t[i].out, len);
		free(out);
	}
}

static void test_http_error(void **state)
{
	char buf[512];
	int n = http_error_response(403, "example.org:443 is not in the allowlist", buf, sizeof(buf));

	assert_true(n > 0);
	assert_non_null(strstr(buf, "HTTP/1.1 403 Forbidden\r\n"));
	assert_non_null(strstr(buf, "X-Aisb-Denied: example.org:443 is not in the allowlist\r\n"));
	n = http_error_response(431, NULL, buf, sizeof(buf));
	assert_true(n > 0);
	assert_null(strstr(buf, "X-Aisb-Denied"));
}

/* Build a query for @name/@type into @buf. */
static size_t mkquery(uint8_t *buf, const char *name, uint16_t type)
{
	size_t n = 12;
	const char *p = name;

	memset(buf, 0, 12);
	buf[0] = 0x12, buf[1] = 0x34, buf[2] = 0x01; /* RD */
	buf[5] = 1;
	while (*p) {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);

		buf[n++] = (uint8_t)l;
		memcpy(buf + n, p, l);
		n += l;
		p += l + (dot ? 1 : 0);
	}
	buf[n++] = 0;
	buf[n++] = (uint8_t)(type >> 8), buf[n++] = (uint8_t)type;
	buf[n++] = 0, buf[n++] = 1;
	return n;
}

static void test_dns_parse(void **state)
{
	uint8_t m[600];
	struct dns_query q;
	size_t n = mkquery(m, "WWW.Example.com", DNS_TYPE_A);

	assert_int_equal(dns_parse_query(m, n, &q), 0);
	assert_string_equal(q.name, "www.example.com");
	assert_int_equal(q.qtype, DNS_TYPE_A);
	assert_int_equal(q.id, 0x1234);
	assert_true(q.name_ok);
	/* truncated everywhere: never reads past the end */
	for (size_t cut = 0; cut < n; cut++)
		assert_true(dns_parse_query(m, cut, &q) < 0);
	/* a dot inside a label is never matched */
	n = mkquery(m, "x.com", DNS_TYPE_A);
	m[13] = '.';
	assert_int_equal(dns_parse_query(m, n, &q), 0);
	assert_false(q.name_ok);
	/* a response is not a query */
	n = mkquery(m, "x.com", DNS_TYPE_A);
	m[2] |= 0x80;
	assert_int_equal(dns_parse_query(m, n, &q), -EOPNOTSUPP);
	/* two questions */
	n = mkquery(m, "x.com", DNS_TYPE_A);
	m[5] = 2;
	assert_int_equal(dns_parse_query(m, n, &q), -EBADMSG);
	/* compression pointer to itself, forwards, and a chain backwards */
	n = mkquery(m, "x.com", DNS_TYPE_A);
	m[12] = 0xc0, m[13] = 12;
	assert_int_equal(dns_parse_query(m, n, &q), -EBADMSG);
	m[12] = 0xc0, m[13] = 40;
	assert_int_equal(dns_parse_query(m, n, &q), -EBADMSG);
	m[12] = 0xc0, m[13] = 2;  /* backwards into the header: bytes there are not a name */
	(void)dns_parse_query(m, n, &q); /* must not crash or loop */
	/* a name longer than 255 */
	{
		char longname[400];
		size_t l = 0;

		for (int i = 0; i < 5; i++) {
			memset(longname + l, 'a', 60);
			l += 60;
			longname[l++] = '.';
		}
		memcpy(longname + l, "com", 4);
		n = mkquery(m, longname, DNS_TYPE_A);
		assert_int_equal(dns_parse_query(m, n, &q), -EBADMSG);
	}
	/* label-type bits 01/10 */
	n = mkquery(m, "x.com", DNS_TYPE_A);
	m[12] = 0x41;
	assert_int_equal(dns_parse_query(m, n, &q), -EBADMSG);
}

static void test_dns_answers(void **state)
{
	uint8_t m[600], out[DNS_MSG_MAX];
	struct dns_query q;
	size_t n = mkquery(m, "example.com", DNS_TYPE_A);
	static const uint8_t a[4] = { 198, 18, 0, 1 };
	static const uint8_t expect_a[] = {
		0x12, 0x34, 0x85, 0x80, 0, 1, 0, 1, 0, 0, 0, 0,
		7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0, 1, 0, 1,
		0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 198, 18, 0, 1,
	};
	int r;

	assert_int_equal(dns_parse_query(m, n, &q), 0);
	r = dns_build_response(&q, DNS_RCODE_NOERROR, a, out, sizeof(out));
	assert_int_equal(r, sizeof(expect_a));
	assert_memory_equal(out, expect_a, sizeof(expect_a));
	/* the answer parses back as a response (QR set) */
	assert_int_equal(dns_parse_query(out, (size_t)r, &q), -EOPNOTSUPP);

	n = mkquery(m, "example.com", DNS_TYPE_AAAA);
	assert_int_equal(dns_parse_query(m, n, &q), 0);
	r = dns_build_response(&q, DNS_RCODE_NOERROR, NULL, out, sizeof(out));
	assert_int_equal(r, (int)n);
	assert_int_equal(out[3] & 0xf, 0);
	assert_int_equal(out[7], 0); /* no answers */

	n = mkquery(m, "nope.test", DNS_TYPE_A);
	assert_int_equal(dns_parse_query(m, n, &q), 0);
	r = dns_build_response(&q, DNS_RCODE_NXDOMAIN, NULL, out, sizeof(out));
	assert_int_equal(r, (int)n);
	assert_int_equal(out[3] & 0xf, DNS_RCODE_NXDOMAIN);

	assert_int_equal(dns_build_error(m, n, DNS_RCODE_FORMERR, out, sizeof(out)), 12);
	assert_int_equal(out[3] & 0xf, DNS_RCODE_FORMERR);
	m[2] |= 0x80;
	assert_int_equal(dns_build_error(m, n, DNS_RCODE_FORMERR, out, sizeof(out)), -EBADMSG);
}

static void test_dns_pool(void **state)
{
	struct dns_pool p = { 0 };
	uint8_t a[4], b[4];

	assert_int_equal(dns_pool_lookup_or_add(&p, "a.com", a), 0);
	assert_int_equal(a[0], 198);
	assert_int_equal(a[1], 18);
	assert_int_equal(a[3], 1);
	assert_int_equal(dns_pool_lookup_or_add(&p, "b.com", b), 0);
	assert_int_equal(b[3], 2);
	assert_int_equal(dns_pool_lookup_or_add(&p, "a.com", b), 0);
	assert_memory_equal(a, b, 4);
	assert_string_equal(dns_pool_name(&p, a), "a.com");
	b[3] = 9;
	assert_null(dns_pool_name(&p, b));
	b[0] = 198, b[1] = 18, b[2] = 0, b[3] = 0;
	assert_null(dns_pool_name(&p, b));
	for (int i = 0; i < 300; i++) {
		char name[32];

		snprintf(name, sizeof(name), "n%d.com", i);
		assert_int_equal(dns_pool_lookup_or_add(&p, name, b), 0);
		assert_string_equal(dns_pool_name(&p, b), name);
	}
	dns_pool_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_http_heads),  cmocka_unit_test(test_http_bounds), cmocka_unit_test(test_http_host_header),
		cmocka_unit_test(test_http_framing),cmocka_unit_test(test_http_body),
		cmocka_unit_test(test_http_rewrite),cmocka_unit_test(test_http_put_key),cmocka_unit_test(test_http_origin_head),cmocka_unit_test(test_http_error),
		cmocka_unit_test(test_dns_parse),   cmocka_unit_test(test_dns_answers),
		cmocka_unit_test(test_dns_pool),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
