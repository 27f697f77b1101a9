// SPDX-License-Identifier: GPL-2.0-or-later
/* fuzz-http.c — the gate's HTTP/1.x proxy request-head parser, its origin-form rewrite and the
 * HOST:PORT splitter. The input is copied to a buffer of exactly its size (no terminating NUL),
 * so a read past the bytes received is caught; a complete parse must stay inside them. The bytes
 * after a plain request's head go through the body framer in two pieces, split where the first
 * byte says: it may claim no more than it was given, and a complete body stays complete.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_request req;
	char host[HTTP_HOST_MAX + 1];
	uint16_t port;
	int status = 0, r;
	char *buf;

	if (size > HTTP_HEAD_MAX + 1024)
		return 0;
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	r = http_parse_head(buf, size, &req, &status);
	if (r > 0) {
		char *out = NULL;
		size_t out_len = 0;

		if ((size_t)r != req.head_len || req.head_len > size || req.port == 0 ||
		    memchr(req.host, 0, sizeof(req.host)) == NULL || memchr(req.method, 0, sizeof(req.method)) == NULL)
			abort();
		if (!req.connect) {
			if (req.target_off + req.target_len > req.head_len)
				abort();
			if (http_rewrite_origin(buf, &req, &out, &out_len) == 0) {
				/* each header line may gain a CR (bare LF in, CRLF out) */
				if (out_len > req.head_len + req.n_headers + 64 || (out_len && !out))
					abort();
				free(out);
			}
			{
				struct http_body_framer f;
				size_t rest = size - req.head_len, split = rest ? (unsigned char)buf[req.head_len] % (rest + 1) : 0;
				size_t u1 = 0, u2 = 0;
				int b;

				http_body_init(&f, &req);
				b = http_body_feed(&f, buf + req.head_len, split, &u1);
				if (u1 > split || (b == 0 && u1 != split) || (b < 0 && !f.bad))
					abort();
				if (b == 0) {
					b = http_body_feed(&f, buf + req.head_len + split, rest - split, &u2);
					if (u2 > rest - split || (b < 0 && !f.bad))
						abort();
				}
				if (b == 1 && (http_body_feed(&f, buf, size, &u2) != 1 || u2 != 0))
					abort();
			}
		}
	} else if (r < 0 && status != 400 && status != 431) {
		abort();
	}
	if (http_split_hostport(buf, size, host, sizeof(host), &port, 80) == 0 && memchr(host, 0, sizeof(host)) == NULL)
		abort();
	free(buf);
	return 0;
}
