/* SPDX-License-Identifier: GPL-2.0-or-later */
/* http.h — bounded HTTP/1.x proxy request-head parser and the origin-form rewrite.
 *
 * The proxy listener accepts `CONNECT host:port` and absolute-form `GET http://host[:port]/...`.
 * A head is at most HTTP_HEAD_MAX bytes and HTTP_HEADERS_MAX header lines; beyond that the
 * answer is 431, malformed input 400. The parser never copies a path, query or header value
 * anywhere but into the rewritten head that goes to the checked upstream. Pure.
 *
 * Request smuggling (issue 22): a head whose message framing two parsers could read differently
 * is refused with 400 (the list and its RFC 9112 sections are in docs/networking.md), and the
 * body of an accepted request is framed here (http_body_feed()), so the gate forwards exactly
 * one request's bytes and nothing after them.
 */
#ifndef AISB_NET_HTTP_H
#define AISB_NET_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP_HEAD_MAX 65536
#define HTTP_HEADERS_MAX 100
#define HTTP_HOST_MAX 255

enum http_body {
	HTTP_BODY_NONE,    /* no Content-Length, no Transfer-Encoding: a request has no body */
	HTTP_BODY_LENGTH,  /* Content-Length: N */
	HTTP_BODY_CHUNKED, /* Transfer-Encoding: chunked */
	HTTP_BODY_MAX,
};

struct http_request {
	char method[16];
	char host[HTTP_HOST_MAX + 1]; /* name or IP literal (IPv6 without brackets) */
	uint16_t port;
	bool connect;
	size_t target_off, target_len;/* absolute-form: origin-form path ("/..." ) inside the head */
	size_t head_len;              /* bytes of the head incl. the empty line */
	unsigned version_minor;
	size_t n_headers;
	bool host_mismatch;           /* absolute-form with a Host header naming another host */
	enum http_body body;
	uint64_t content_length;      /* HTTP_BODY_LENGTH */
	const char *bad;              /* on -EBADMSG: what was refused (static text, no input) */
};

/* Longest chunk-size line: 15 hex digits (2^60 bytes) is any real chunk; longer is refused. */
#define HTTP_CHUNK_DIGITS_MAX 15

/* The streaming framer of one request body. */
struct http_body_framer {
	enum http_body body;
	uint8_t st;                   /* chunked: where in the chunk grammar */
	uint8_t digits;               /* chunk-size digits read */
	uint64_t left;                /* bytes of the body (or of this chunk's data) still to come */
	const char *bad;              /* on -EBADMSG: what was refused */
};

/* Return values of http_parse_head() besides a head length. */
#define HTTP_NEED_MORE 0

int http_parse_head(const char *buf, size_t len, struct http_request *req, int *status);
int http_parse_origin_head(const char *buf, size_t len, const char *host, uint16_t port, struct http_request *req,
			   int *status);
void http_body_init(struct http_body_framer *f, const struct http_request *req);
int http_body_feed(struct http_body_framer *f, const char *buf, size_t len, size_t *used);
int http_rewrite_origin(const char *buf, const struct http_request *req, char **out, size_t *out_len);
int http_put_key(const char *head, size_t len, const char *placeholder, const char *value, char **out,
		 size_t *out_len);
int http_error_response(int status, const char *reason, char *buf, size_t size);
const char *http_status_text(int status);
int http_split_hostport(const char *s, size_t len, char *host, size_t host_size, uint16_t *port,
			uint16_t default_port);

#endif
