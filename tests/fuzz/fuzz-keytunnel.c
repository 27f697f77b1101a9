// SPDX-License-Identifier: GPL-2.0-or-later
/* fuzz-keytunnel.c — the gate's reading of a keyed connection (--key-via-gate: a CONNECT tunnel
 * or transparent connection to the model endpoint, gate.c key_pump()), both directions:
 *   - the client's bytes as requests one after another, as key_pump() reads them: each head
 *     checked as origin-form for the endpoint (http_parse_origin_head()), the key put in
 *     (http_put_key()), the body framed (http_body_feed(), fed in pieces) and skipped, then the
 *     next head. A head may claim no byte it was not given; a head that got the key holds the
 *     value and exactly one `Accept-Encoding: identity`, and no auth line whose value is the
 *     placeholder; the loop always ends.
 *   - the same bytes as the endpoint's answer, through the key masker (keymask_feed(), the
 *     needles of the key and its encodings), cut into reads where the first two bytes say: every
 *     byte comes out, in order, no more and no fewer, and neither the key nor any of its
 *     encoded forms is left whole in what comes out.
 * Each piece is copied to a buffer of exactly its size (no terminating NUL), so a read past the
 * bytes received is caught. The gate runs this code under its seccomp filter: `make fuzz` also
 * links it with gate-seccomp.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/http.h"
#include "net/keymask.h"

#define HOST "host.aisb.internal"
#define PORT 4000
#define PH "aisb-placeholder-0123456789abcdef0123456789abcdef"
/* +, / and = so that the base64 and %XX forms differ from the key */
#define VALUE "sk-fuzz+/=KEY-0123456789"

/* whole auth lines that carry the placeholder: each is replaced (another header that ends so,
 * or a longer value, is not) */
#define AUTH_LINE "\nAuthorization: Bearer " PH "\r\n"
#define XKEY_LINE "\nx-api-key: " PH "\r\n"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t count(const char *h, size_t n, const char *s)
{
	size_t k = 0, l = strlen(s);

	for (const char *p = h; (p = memmem(p, n - (size_t)(p - h), s, l)); p += l)
		k++;
	return k;
}

/* The client's bytes [@buf, +@n) as key_pump() reads them; bodies come in reads of @step. */
static void requests(const char *buf, size_t n, size_t step)
{
	struct http_body_framer f;
	bool in_body = false;
	size_t pos = 0;

	for (unsigned turns = 0; pos < n; turns++) {
		struct http_request req;
		char *out = NULL;
		size_t used = 0, ol = 0;
		int r, status = 0;

		if (turns > n + 1) /* every turn consumes a byte or stops */
			abort();
		if (in_body) {
			size_t len = n - pos < step ? n - pos : step;
			char *piece = malloc(len ? len : 1);

			if (!piece)
				return;
			memcpy(piece, buf + pos, len);
			r = http_body_feed(&f, piece, len, &used);
			free(piece);
			if (used > len || (r < 0 && !f.bad))
				abort();
			if (r < 0 || (r == 0 && used < len))
				return; /* refused, or wants more than there is: the connection ends */
			pos += used;
			in_body = r != 1;
			continue;
		}
		{
			char *head = malloc(n - pos);

			if (!head)
				return;
			memcpy(head, buf + pos, n - pos);
			r = http_parse_origin_head(head, n - pos, HOST, PORT, &req, &status);
			if (r < 0 && status != 400 && status != 431)
				abort();
			if (r <= 0 || req.host_mismatch) {
				free(head);
				return;
			}
			if ((size_t)r > n - pos || (size_t)r != req.head_len)
				abort();
			if (http_put_key(head, (size_t)r, PH, VALUE, &out, &ol) > 0) {
				if (!memmem(out, ol, VALUE, strlen(VALUE)) ||
				    count(out, ol, "\nAccept-Encoding: identity\r\n") != 1 ||
				    memmem(out, ol, AUTH_LINE, strlen(AUTH_LINE)) || memmem(out, ol, XKEY_LINE, strlen(XKEY_LINE)) ||
				    count(out, ol, PH) >= count(head, (size_t)r, PH))
					abort();
				free(out);
			} else if (out) {
				abort();
			}
			free(head);
		}
		http_body_init(&f, &req);
		in_body = req.body != HTTP_BODY_NONE;
		pos += (size_t)r;
	}
}

struct sink {
	char *b;
	size_t n, cap;
};

static int emit(void *ctx, const char *p, size_t n)
{
	struct sink *s = ctx;

	if (s->n + n > s->cap)
		abort();
	memcpy(s->b + s->n, p, n);
	s->n += n;
	return 0;
}

/* The bytes as the endpoint's answer, in three reads cut at @a <= @b. */
static void answers(const char *buf, size_t n, size_t a, size_t b)
{
	static struct keymask k;
	static bool ready;
	const struct keymask *m[] = { &k };
	struct keymask_stream st = { 0 };
	struct sink s = { .b = malloc(n ? n : 1), .cap = n };
	size_t cuts[] = { 0, a, b, n };

	if (!ready) {
		if (keymask_init(&k, VALUE, strlen(VALUE)) < 0)
			abort();
		ready = true;
	}
	if (!s.b)
		return;
	for (size_t i = 0; i + 1 < sizeof(cuts) / sizeof(cuts[0]); i++) {
		size_t len = cuts[i + 1] - cuts[i];
		char *piece = malloc(len ? len : 1);

		if (!piece)
			abort();
		memcpy(piece, buf + cuts[i], len);
		if (keymask_feed(m, 1, &st, piece, len, i + 2 == sizeof(cuts) / sizeof(cuts[0]), emit, &s) < 0)
			abort();
		free(piece);
		if (s.n + st.hold_len != cuts[i + 1] || st.hold_len > KEYMASK_HOLD_MAX)
			abort();
	}
	if (s.n != n || st.hold_len)
		abort();
	for (size_t i = 0; i < k.n; i++)
		if (memmem(s.b, s.n, k.needle[i].s, k.needle[i].len))
			abort();
	keymask_stream_done(&st);
	free(s.b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n, a, b;

	if (size < 2 || size > HTTP_HEAD_MAX + 4096)
		return 0;
	n = size - 2;
	a = n ? data[0] % (n + 1) : 0;
	b = n ? data[1] % (n + 1) : 0;
	if (a > b) {
		size_t t = a;
		a = b, b = t;
	}
	requests((const char *)data + 2, n, (size_t)data[0] + 1);
	answers((const char *)data + 2, n, a, b);
	return 0;
}
