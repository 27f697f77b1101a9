// SPDX-License-Identifier: GPL-2.0-or-later
/* http.c — proxy request-head parser */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/http.h"
#include "util/util.h"

static bool is_tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Find the end of the head: "\r\n\r\n" or "\n\n". Returns its length incl. the blank line, or 0. */
static size_t head_end(const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (i + 1 < len && buf[i + 1] == '\n')
			return i + 2;
		if (i + 2 < len && buf[i + 1] == '\r' && buf[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

/**
 * http_split_hostport() - split "host[:port]" or "[v6][:port]"
 * @s: text (not NUL-terminated)
 * @len: its length
 * @host: output (brackets removed, lower-cased)
 * @host_size: size of @host
 * @port: output
 * @default_port: port when none is given; 0 makes a port mandatory
 *
 * Return: 0, or -EINVAL. Does not log.
 */
int http_split_hostport(const char *s, size_t len, char *host, size_t host_size, uint16_t *port,
			uint16_t default_port)
{
	const char *h = s, *p = NULL;
	size_t hlen;

	if (len == 0)
		return -EINVAL;
	if (s[0] == '[') {
		const char *close = memchr(s, ']', len);

		if (!close)
			return -EINVAL;
		h = s + 1;
		hlen = (size_t)(close - h);
		if ((size_t)(close + 1 - s) < len) {
			if (close[1] != ':')
				return -EINVAL;
			p = close + 2;
		}
	} else {
		const char *colon = memchr(s, ':', len);

		hlen = colon ? (size_t)(colon - s) : len;
		if (colon) {
			if (memchr(colon + 1, ':', len - hlen - 1))
				return -EINVAL; /* bare IPv6 needs brackets */
			p = colon + 1;
		}
	}
	if (hlen == 0 || hlen >= host_size)
		return -EINVAL;
	for (size_t i = 0; i < hlen; i++) {
		char c = h[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
		      c == '_' || (s[0] == '[' && c == ':')))
			return -EINVAL;
		host[i] = c;
	}
	host[hlen] = '\0';
	/* Brackets are for IPv6 literals only (RFC 3986 3.2.2): "[good.test]:443" was accepted as
	 * the name good.test, a spelling no client needs and any other parser may read otherwise. */
	if (s[0] == '[') {
		struct in6_addr a6;

		if (!memchr(host, ':', hlen) || inet_pton(AF_INET6, host, &a6) != 1)
			return -EINVAL;
	}
	if (p) {
		size_t plen = len - (size_t)(p - s);
		unsigned v = 0;

		if (plen == 0 || plen > 5)
			return -EINVAL;
		for (size_t i = 0; i < plen; i++) {
			if (p[i] < '0' || p[i] > '9')
				return -EINVAL;
			v = v * 10 + (unsigned)(p[i] - '0');
		}
		if (v == 0 || v > 65535)
			return -EINVAL;
		*port = (uint16_t)v;
	} else {
		if (!default_port)
			return -EINVAL;
		*port = default_port;
	}
	return 0;
}

/* The request line "METHOD SP TARGET SP HTTP/1.x" of @buf (the line ends at @line_end): the
 * method and version into @req, the target in *@target and *@tlen (printable, non-empty). Return: 0
 * or -EBADMSG. */
static int parse_request_line(const char *buf, size_t line_end, struct http_request *req, const char **target,
			      size_t *tlen)
{
	const char *sp1 = memchr(buf, ' ', line_end), *sp2, *v;
	size_t mlen, vlen;

	if (!sp1)
		return -EBADMSG;
	mlen = (size_t)(sp1 - buf);
	if (mlen == 0 || mlen >= sizeof(req->method))
		return -EBADMSG;
	for (size_t i = 0; i < mlen; i++)
		if (!is_tchar(buf[i]))
			return -EBADMSG;
	memcpy(req->method, buf, mlen);
	*target = sp1 + 1;
	sp2 = memchr(*target, ' ', line_end - mlen - 1);
	if (!sp2)
		return -EBADMSG;
	*tlen = (size_t)(sp2 - *target);
	vlen = line_end - (size_t)(sp2 + 1 - buf);
	v = sp2 + 1;
	if (vlen > 0 && v[vlen - 1] == '\r')
		vlen--;
	if (vlen != 8 || memcmp(v, "HTTP/1.", 7) != 0 || (v[7] != '0' && v[7] != '1'))
		return -EBADMSG;
	req->version_minor = (unsigned)(v[7] - '0');
	if (*tlen == 0)
		return -EBADMSG;
	for (size_t i = 0; i < *tlen; i++)
		if ((unsigned char)(*target)[i] <= ' ' || (*target)[i] == 0x7f)
			return -EBADMSG;
	return 0;
}

/* The target of a CONNECT (authority-form) or of a plain request (absolute http:// form only)
 * into @req's host, port and path; @buf is the head, for the path's offset. Return: 0 or
 * -EBADMSG. */
static int parse_target(const char *buf, const char *target, size_t tlen, struct http_request *req)
{
	const char *authority, *slash, *q;
	size_t alen;

	if (streq(req->method, "CONNECT")) {
		req->connect = true;
		if (http_split_hostport(target, tlen, req->host, sizeof(req->host), &req->port, 0) < 0) {
			if (target[0] == '[')
				req->bad = "malformed request target: brackets are for IPv6 addresses only";
			return -EBADMSG;
		}
		return 0;
	}
	if (tlen < 8 || strncasecmp(target, "http://", 7) != 0)
		return -EBADMSG; /* origin-form or https:// (use CONNECT) */
	authority = target + 7;
	slash = memchr(authority, '/', tlen - 7);
	q = memchr(authority, '?', tlen - 7);
	if (q && (!slash || q < slash))
		slash = q;
	alen = slash ? (size_t)(slash - authority) : tlen - 7;
	if (memchr(authority, '@', alen))
		return -EBADMSG; /* userinfo in a proxy request: refuse, never log it */
	if (http_split_hostport(authority, alen, req->host, sizeof(req->host), &req->port, 80) < 0) {
		if (alen && authority[0] == '[')
			req->bad = "malformed request target: brackets are for IPv6 addresses only";
		return -EBADMSG;
	}
	req->target_off = slash ? (size_t)(slash - buf) : 0;
	req->target_len = slash ? tlen - 7 - alen : 0;
	return 0;
}

/* A plain request's Host header value [@v, @e) must name the checked host (and port, when it
 * gives one): otherwise one allowed address could serve another (fronting) name. The value is
 * compared, never kept or logged. */
static void check_host_header(const char *v, const char *e, struct http_request *req)
{
	char h[HTTP_HOST_MAX + 1];
	uint16_t hp;

	while (v < e && (*v == ' ' || *v == '\t'))
		v++;
	while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	if (http_split_hostport(v, (size_t)(e - v), h, sizeof(h), &hp, req->port) < 0 || !streq(h, req->host) ||
	    hp != req->port)
		req->host_mismatch = true;
}

/* Whether the header name [@line, @line + @nlen) is @name (lower case), ignoring case; '_' in
 * the name also matches '-' and sets *@underscore: some servers (CGI and WSGI environments,
 * which map both to HTTP_CONTENT_LENGTH) read "Content_Length" as "Content-Length". */
static bool name_is(const char *line, size_t nlen, const char *name, bool *underscore)
{
	bool u = false;

	if (nlen != strlen(name))
		return false;
	for (size_t i = 0; i < nlen; i++) {
		char c = line[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c == '_' && name[i] == '-')
			u = true;
		else if (c != name[i])
			return false;
	}
	*underscore = u;
	return true;
}

/* The value [@v, @e) without the optional whitespace around it (RFC 9110 5.5). */
static void trim_ows(const char **v, const char **e)
{
	while (*v < *e && (**v == ' ' || **v == '\t'))
		(*v)++;
	while (*e > *v && ((*e)[-1] == ' ' || (*e)[-1] == '\t'))
		(*e)--;
}

/* Content-Length [@v, @e): 1*DIGIT only (RFC 9112 6.3 item 5: anything else is an unrecoverable
 * framing error; a list "5, 5" is refused too), at most 18 digits so it cannot overflow.
 * Return: 0 or -EBADMSG. */
static int parse_content_length(const char *v, const char *e, struct http_request *req)
{
	uint64_t n = 0;

	trim_ows(&v, &e);
	if (v == e || e - v > 18) {
		req->bad = "ambiguous request framing: an invalid Content-Length";
		return -EBADMSG;
	}
	for (; v < e; v++) {
		if (*v < '0' || *v > '9') {
			req->bad = "ambiguous request framing: an invalid Content-Length";
			return -EBADMSG;
		}
		n = n * 10 + (uint64_t)(*v - '0');
	}
	req->content_length = n;
	return 0;
}

enum { SEEN_CL = 1, SEEN_TE = 2, SEEN_HOST = 4 };

/* One header line's framing rules (RFC 9112 6.1, 6.3, 3.2): at most one Content-Length, one
 * Transfer-Encoding (and only "chunked"), one Host, no '_' spelling of a framing header.
 * @seen: bits of what was seen. Return: 0 or -EBADMSG with req->bad set. */
static int check_framing_header(const char *line, size_t nlen, const char *v, const char *e,
				struct http_request *req, unsigned *seen)
{
	bool u = false;

	if ((name_is(line, nlen, "content-length", &u) || name_is(line, nlen, "transfer-encoding", &u)) && u) {
		req->bad = "ambiguous request framing: a framing header spelled with '_'";
		return -EBADMSG;
	}
	if (name_is(line, nlen, "content-length", &u)) {
		if (*seen & SEEN_CL) {
			req->bad = "ambiguous request framing: more than one Content-Length";
			return -EBADMSG;
		}
		*seen |= SEEN_CL;
		return parse_content_length(v, e, req);
	}
	if (name_is(line, nlen, "transfer-encoding", &u)) {
		if (*seen & SEEN_TE) {
			req->bad = "ambiguous request framing: more than one Transfer-Encoding";
			return -EBADMSG;
		}
		*seen |= SEEN_TE;
		trim_ows(&v, &e);
		/* RFC 9112 6.3 item 4: chunked must be the final coding, or the length cannot be
		 * known; any other coding (or a list) is refused, fail closed */
		if (e - v != 7 || strncasecmp(v, "chunked", 7) != 0) {
			req->bad = "ambiguous request framing: a Transfer-Encoding other than 'chunked'";
			return -EBADMSG;
		}
		req->body = HTTP_BODY_CHUNKED;
		return 0;
	}
	if (name_is(line, nlen, "host", &u) && !u) {
		if (*seen & SEEN_HOST) {
			req->bad = "ambiguous request: more than one Host header"; /* RFC 9112 3.2 */
			return -EBADMSG;
		}
		*seen |= SEEN_HOST;
	}
	return 0;
}

/* The header lines "NAME: VALUE" from @pos to the empty line before @end (no obs-fold, no bare
 * CR, token names, at most HTTP_HEADERS_MAX, the framing rules of check_framing_header()), and
 * the body framing they give. Return: the number of headers, -EBADMSG, or -EMSGSIZE with
 * *@status 431. */
static int parse_headers(const char *buf, size_t pos, size_t end, struct http_request *req, int *status)
{
	size_t n_headers = 0;
	unsigned seen = 0;

	while (pos < end) {
		const char *line = buf + pos, *colon;
		size_t l = (size_t)((const char *)memchr(line, '\n', end - pos) - line);
		size_t content = l > 0 && line[l - 1] == '\r' ? l - 1 : l;

		if (content == 0)
			break;
		if (line[0] == ' ' || line[0] == '\t') {
			/* RFC 9112 5.2: obs-fold; 2.2: whitespace before the first header */
			req->bad = "ambiguous request: a header line folded onto the next (obs-fold)";
			return -EBADMSG;
		}
		colon = memchr(line, ':', content);
		if (!colon || colon == line)
			return -EBADMSG;
		for (const char *c = line; c < colon; c++)
			if (!is_tchar(*c))
				return -EBADMSG; /* incl. whitespace before the colon (RFC 9112 5.1) */
		for (const char *c = colon + 1; c < line + content; c++)
			if (*c == '\r')
				return -EBADMSG;
		if (++n_headers > HTTP_HEADERS_MAX) {
			*status = 431;
			return -EMSGSIZE;
		}
		if (check_framing_header(line, (size_t)(colon - line), colon + 1, line + content, req, &seen) < 0)
			return -EBADMSG;
		if (!req->connect && (size_t)(colon - line) == 4 && strncasecmp(line, "host", 4) == 0)
			check_host_header(colon + 1, line + content, req);
		pos += l + 1;
	}
	if ((seen & SEEN_CL) && req->body == HTTP_BODY_CHUNKED) {
		/* RFC 9112 6.1: a recipient MAY reject; 6.3 item 3: the classic smuggling pair */
		req->bad = "ambiguous request framing: both Content-Length and Transfer-Encoding";
		return -EBADMSG;
	}
	if (req->body == HTTP_BODY_CHUNKED && req->version_minor == 0) {
		/* RFC 9112 6.1: Transfer-Encoding in HTTP/1.0 must be treated as faulty framing */
		req->bad = "ambiguous request framing: Transfer-Encoding in an HTTP/1.0 request";
		return -EBADMSG;
	}
	if (seen & SEEN_CL)
		req->body = HTTP_BODY_LENGTH;
	return (int)n_headers;
}

/* The common start of a head's parse: @req cleared, the head's end in *@end. Return: 1 (a
 * complete head within the bounds), HTTP_NEED_MORE, -EBADMSG, -EMSGSIZE (*@status 431). */
static int head_bounds(const char *buf, size_t len, struct http_request *req, int *status, size_t *end)
{
	memset(req, 0, sizeof(*req));
	*status = 400;
	if (memchr(buf, '\0', len))
		return -EBADMSG;
	*end = head_end(buf, len < HTTP_HEAD_MAX ? len : HTTP_HEAD_MAX);
	if (*end)
		return 1;
	if (len >= HTTP_HEAD_MAX) {
		*status = 431;
		return -EMSGSIZE;
	}
	/* Reject a garbage request line early instead of waiting for 64 KiB of it. */
	for (size_t i = 0; i < len && buf[i] != ' '; i++)
		if (!is_tchar(buf[i]) || i >= sizeof(req->method) - 1)
			return -EBADMSG;
	return HTTP_NEED_MORE;
}

/* A proxy head (@host NULL: CONNECT or absolute-form) or an origin-form head inside a tunnel to
 * @host:@port. */
static int parse_head(const char *buf, size_t len, const char *host, uint16_t port, struct http_request *req,
		      int *status)
{
	const char *target;
	size_t end, line_end, tlen;
	int r;

	if ((r = head_bounds(buf, len, req, status, &end)) <= 0)
		return r;
	line_end = (size_t)((const char *)memchr(buf, '\n', end) - buf);
	if ((r = parse_request_line(buf, line_end, req, &target, &tlen)) < 0)
		return r;
	if (!host) {
		r = parse_target(buf, target, tlen, req);
	} else if (target[0] != '/' || streq(req->method, "CONNECT")) {
		req->bad = "a request inside the tunnel to the model endpoint must be origin-form (\"/...\")";
		r = -EBADMSG;
	} else {
		snprintf(req->host, sizeof(req->host), "%s", host);
		req->port = port;
	}
	if (r < 0 || (r = parse_headers(buf, line_end + 1, end, req, status)) < 0)
		return r;
	req->n_headers = (size_t)r;
	req->head_len = end;
	*status = 0;
	return (int)end;
}

/**
 * http_parse_head() - parse a proxy request head
 * @buf: bytes received so far
 * @len: their count
 * @req: result
 * @status: on error, the HTTP status to answer (400 or 431)
 *
 * Return: the head length (> 0) when complete, HTTP_NEED_MORE (0) when more bytes are needed,
 * -EBADMSG for malformed input, -EMSGSIZE when the head exceeds a bound. Does not log.
 */
int http_parse_head(const char *buf, size_t len, struct http_request *req, int *status)
{
	return parse_head(buf, len, NULL, 0, req, status);
}

/**
 * http_parse_origin_head() - parse an origin-form request head inside a tunnel to a known server
 * @buf: bytes received so far
 * @len: their count
 * @host: the server the tunnel leads to (a Host header must name it)
 * @port: its port
 * @req: result (host_mismatch when a Host header names another host or port)
 * @status: on error, 400 or 431
 *
 * For --key-via-gate: a CONNECT tunnel or transparent connection to an http:// model endpoint
 * carries plain requests, one after another (undici tunnels http:// through a proxy too), and the
 * gate reads each head to put the key in. The same bounds and smuggling refusals as
 * http_parse_head(); the target must be origin-form ("/..."), so the server can only be @host.
 * Return: as http_parse_head(). Does not log.
 */
int http_parse_origin_head(const char *buf, size_t len, const char *host, uint16_t port, struct http_request *req,
			   int *status)
{
	return parse_head(buf, len, host, port, req, status);
}

/* Where a chunked body's reader is (RFC 9112 7.1), strictly: no chunk extensions, no trailer
 * fields, CRLF only. */
enum chunk_state {
	CH_SIZE,      /* hex digits of a chunk-size */
	CH_SIZE_LF,   /* the size line's CR was read */
	CH_DATA,
	CH_DATA_CR,   /* the CRLF after chunk-data */
	CH_DATA_LF,
	CH_LAST_CR,   /* after the last-chunk line: the empty line that ends the trailer section */
	CH_LAST_LF,
	CH_DONE,
};

/**
 * http_body_init() - start framing the body of a parsed request
 * @f: the framer
 * @req: the request (http_parse_head() accepted it)
 *
 * Does not log.
 */
void http_body_init(struct http_body_framer *f, const struct http_request *req)
{
	memset(f, 0, sizeof(*f));
	f->body = req->body;
	f->left = req->body == HTTP_BODY_LENGTH ? req->content_length : 0;
	f->st = req->body == HTTP_BODY_NONE || (req->body == HTTP_BODY_LENGTH && f->left == 0) ? CH_DONE : CH_SIZE;
}

static int chunk_bad(struct http_body_framer *f, const char *why)
{
	f->bad = why;
	return -EBADMSG;
}

/**
 * http_body_feed() - how many of the next bytes belong to the request body
 * @f: the framer (http_body_init())
 * @buf: bytes the client sent after what was fed before
 * @len: their count
 * @used: output: how many of them belong to the body (the rest is not this request's)
 *
 * A chunked body is refused at the first byte that is not strictly RFC 9112 7.1: a chunk
 * extension, a trailer field, a bare LF, whitespace, a size of more than
 * HTTP_CHUNK_DIGITS_MAX digits. The gate forwards only the @used bytes.
 * Return: 1 when the body is complete, 0 when all @len bytes were the body's and more are
 * needed, -EBADMSG with f->bad set. Does not log.
 */
int http_body_feed(struct http_body_framer *f, const char *buf, size_t len, size_t *used)
{
	size_t i = 0;

	*used = 0;
	if (f->st == CH_DONE)
		return 1;
	if (f->body == HTTP_BODY_LENGTH) {
		size_t k = (uint64_t)len < f->left ? len : (size_t)f->left;

		f->left -= k;
		*used = k;
		if (f->left)
			return 0;
		f->st = CH_DONE;
		return 1;
	}
	while (i < len) {
		char c = buf[i];

		switch ((enum chunk_state)f->st) {
		case CH_SIZE: {
			int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
				c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;

			if (v >= 0) {
				if (++f->digits > HTTP_CHUNK_DIGITS_MAX)
					return chunk_bad(f, "ambiguous request framing: a chunk size of too many digits");
				f->left = f->left * 16 + (uint64_t)v;
			} else if (c == '\r' && f->digits) {
				f->st = CH_SIZE_LF;
			} else if (c == ';') {
				return chunk_bad(f, "ambiguous request framing: a chunk extension");
			} else {
				return chunk_bad(f, "ambiguous request framing: a malformed chunk size line");
			}
			i++;
			break;
		}
		case CH_SIZE_LF:
			if (c != '\n')
				return chunk_bad(f, "ambiguous request framing: a chunk size line not ended by CRLF");
			f->digits = 0;
			f->st = f->left ? CH_DATA : CH_LAST_CR;
			i++;
			break;
		case CH_DATA: {
			size_t k = (uint64_t)(len - i) < f->left ? len - i : (size_t)f->left;

			f->left -= k;
			i += k;
			if (!f->left)
				f->st = CH_DATA_CR;
			break;
		}
		case CH_DATA_CR:
		case CH_LAST_CR:
			if (c != '\r')
				return chunk_bad(f, f->st == CH_LAST_CR ? "ambiguous request framing: a chunked trailer section" :
					"ambiguous request framing: chunk data longer than its size");
			f->st++;
			i++;
			break;
		case CH_DATA_LF:
		case CH_LAST_LF:
			if (c != '\n')
				return chunk_bad(f, "ambiguous request framing: a chunk not ended by CRLF");
			i++;
			if (f->st == CH_LAST_LF) {
				f->st = CH_DONE;
				*used = i;
				return 1;
			}
			f->st = CH_SIZE;
			break;
		case CH_DONE:
			*used = i;
			return 1;
		}
	}
	*used = i;
	return 0;
}

static bool header_is(const char *line, size_t len, const char *name)
{
	size_t n = strlen(name);

	return len > n && line[n] == ':' && strncasecmp(line, name, n) == 0;
}

/**
 * http_rewrite_origin() - the head to send upstream for an absolute-form request
 * @buf: the client's head
 * @req: its parse
 * @out: the new head (malloc'd)
 * @out_len: its length
 *
 * The request line gets the origin-form target; Proxy-Connection, Proxy-Authorization,
 * Connection, Keep-Alive and Upgrade are dropped and "Connection: close" added: the upstream
 * connection carries this one checked request (the gate forwards its body as framed by
 * http_body_feed() and nothing after it), and never turns into a tunnel (101).
 * Return: 0, or -ENOMEM. Does not log.
 */
int http_rewrite_origin(const char *buf, const struct http_request *req, char **out, size_t *out_len)
{
	size_t line_end = (size_t)((const char *)memchr(buf, '\n', req->head_len) - buf) + 1;
	size_t cap = req->head_len + 2 * (size_t)HTTP_HEADERS_MAX + 128, n = 0, pos = line_end;
	char *o = malloc(cap);

	if (!o)
		return -ENOMEM;
	n += (size_t)snprintf(o, cap, "%s ", req->method);
	if (req->target_len) {
		if (buf[req->target_off] == '?')
			o[n++] = '/';
		memcpy(o + n, buf + req->target_off, req->target_len);
		n += req->target_len;
	} else {
		o[n++] = '/';
	}
	n += (size_t)snprintf(o + n, cap - n, " HTTP/1.%u\r\n", req->version_minor);
	while (pos < req->head_len) {
		const char *line = buf + pos;
		size_t l = (size_t)((const char *)memchr(line, '\n', req->head_len - pos) - line);
		size_t content = l > 0 && line[l - 1] == '\r' ? l - 1 : l;

		pos += l + 1;
		if (content == 0)
			break;
		if (header_is(line, content, "proxy-connection") || header_is(line, content, "proxy-authorization") ||
		    header_is(line, content, "connection") || header_is(line, content, "keep-alive") ||
		    header_is(line, content, "upgrade"))
			continue;
		memcpy(o + n, line, content);
		n += content;
		o[n++] = '\r';
		o[n++] = '\n';
	}
	n += (size_t)snprintf(o + n, cap - n, "Connection: close\r\n\r\n");
	*out = o;
	*out_len = n;
	return 0;
}

/* The value of the header line [@line, @line + @len) named @name, without its optional
 * whitespace, or NULL. */
static const char *header_value(const char *line, size_t len, const char *name, size_t *vlen)
{
	const char *v, *e = line + len;

	if (!header_is(line, len, name))
		return NULL;
	v = line + strlen(name) + 1;
	trim_ows(&v, &e);
	*vlen = (size_t)(e - v);
	return v;
}

/* Drops every Accept-Encoding line of the head [@o, +*@n) and puts `Accept-Encoding: identity`
 * before its empty line (after every line when it has none); @o has room for that line. */
static void identity_only(char *o, size_t *n)
{
	static const char ae[] = "Accept-Encoding: identity\r\n";
	size_t r = 0, w = 0, end = SIZE_MAX;

	while (r < *n) {
		const char *line = o + r, *nl = memchr(line, '\n', *n - r);
		size_t l = nl ? (size_t)(nl - line) + 1 : *n - r, content = l - (nl ? 1 : 0), vlen;

		if (content && line[content - 1] == '\r')
			content--;
		if (end == SIZE_MAX && !content)
			end = w;
		if (end != SIZE_MAX || !header_value(line, content, "accept-encoding", &vlen)) {
			memmove(o + w, line, l);
			w += l;
		}
		r += l;
	}
	if (end == SIZE_MAX)
		end = w;
	memmove(o + end + sizeof(ae) - 1, o + end, w - end);
	memcpy(o + end, ae, sizeof(ae) - 1);
	*n = w + sizeof(ae) - 1;
}

/**
 * http_put_key() - the model key in place of its placeholder in a head's auth headers
 * @head: a head as http_rewrite_origin() wrote it (CRLF lines, the empty line last)
 * @len: its length
 * @placeholder: the session's placeholder (GATE_PLACEHOLDER_PREFIX + hex)
 * @value: the real key
 * @out: the new head (malloc'd), when a line was replaced
 * @out_len: its length
 *
 * Replaced are exactly the lines `Authorization: Bearer <placeholder>` and `x-api-key:
 * <placeholder>` (names case-insensitive, the scheme too, optional whitespace around the value):
 * the two ways pi, codex and claude send their key. The placeholder anywhere else (a URL, another
 * header) is left as it is: the key goes where the harness sends a key, nowhere else. A head that
 * gets the key also asks for an uncompressed answer: its Accept-Encoding lines become one
 * `Accept-Encoding: identity` (added when it had none: RFC 9110 12.5.3, no such line means any
 * coding), so that an answer quoting the key can be masked (net/keymask.h: compressed bytes
 * cannot be, short of decompressing them in the gate).
 * Return: the number of lines replaced (0: *@out untouched), or -ENOMEM. Does not log.
 */
int http_put_key(const char *head, size_t len, const char *placeholder, const char *value, char **out,
		 size_t *out_len)
{
	size_t pl = strlen(placeholder), vl = strlen(value), pos = 0, n = 0, lines = 1;
	int count = 0;
	char *o = NULL;

	for (const char *p = head; (p = memchr(p, '\n', len - (size_t)(p - head))); p++)
		lines++;
	while (pos < len) {
		const char *line = head + pos, *nl = memchr(line, '\n', len - pos), *v;
		size_t l = nl ? (size_t)(nl - line) + 1 : len - pos;
		size_t content = l - (nl ? 1 : 0), vlen = 0;
		bool bearer = false;

		if (content && line[content - 1] == '\r')
			content--;
		if ((v = header_value(line, content, "authorization", &vlen)) && vlen > 7 &&
		    strncasecmp(v, "bearer ", 7) == 0) {
			bearer = true;
			v += 7, vlen -= 7;
			while (vlen && (*v == ' ' || *v == '\t'))
				v++, vlen--;
		} else if (!(v = header_value(line, content, "x-api-key", &vlen))) {
			v = NULL;
		}
		if (v && vlen == pl && memcmp(v, placeholder, pl) == 0) {
			/* each line may become a key line, and Accept-Encoding: identity comes in */
			if (!o && !(o = malloc(len + lines * (vl + 32) + 32)))
				return -ENOMEM;
			if (!count) {
				memcpy(o, head, pos);
				n = pos;
			}
			n += (size_t)snprintf(o + n, vl + 32, "%s: %s%s\r\n", bearer ? "Authorization" : "x-api-key",
					      bearer ? "Bearer " : "", value);
			count++;
		} else if (count) {
			memcpy(o + n, line, l);
			n += l;
		}
		pos += l;
	}
	if (count) {
		identity_only(o, &n);
		*out = o;
		*out_len = n;
	}
	return count;
}

const char *http_status_text(int status)
{
	switch (status) {
	case 200: return "Connection established";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 408: return "Request Timeout";
	case 431: return "Request Header Fields Too Large";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Error";
	}
}

/**
 * http_error_response() - a complete error response that closes the connection
 * @status: HTTP status
 * @reason: one-line reason (becomes the X-Aisb-Denied header for 403 and the body), or NULL
 * @buf: output
 * @size: size of @buf
 *
 * Return: its length, or -ENOSPC. Does not log.
 */
int http_error_response(int status, const char *reason, char *buf, size_t size)
{
	int n;

	if (!reason)
		reason = http_status_text(status);
	n = snprintf(buf, size,
		     "HTTP/1.1 %d %s\r\n%s%s%sContent-Type: text/plain\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n\r\naisb: %s\n",
		     status, http_status_text(status), status == 403 ? "X-Aisb-Denied: " : "",
		     status == 403 ? reason : "", status == 403 ? "\r\n" : "", strlen(reason) + 7, reason);
	return n < 0 || (size_t)n >= size ? -ENOSPC : n;
}
