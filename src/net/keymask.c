// SPDX-License-Identifier: GPL-2.0-or-later
/* keymask.c — copies of a model key, plain or encoded, masked in a stream of answer bytes */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/keymask.h"

static const char b64_std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64_url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* The base64 of the whole 3-byte groups of [@p, +@n) (the rest dropped, no padding) into
 * @out. Return: its length. */
static size_t b64_groups(const unsigned char *p, size_t n, const char *alpha, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];

		out[o++] = alpha[v >> 18 & 63];
		out[o++] = alpha[v >> 12 & 63];
		out[o++] = alpha[v >> 6 & 63];
		out[o++] = alpha[v & 63];
	}
	return o;
}

static bool is_unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
	       c == '_' || c == '~';
}

/* The percent-encoding of [@p, +@n) (RFC 3986: every byte but the unreserved ones) into @out,
 * @hex the digits. Return: its length. */
static size_t percent(const unsigned char *p, size_t n, const char *hex, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		if (is_unreserved(p[i])) {
			out[o++] = (char)p[i];
			continue;
		}
		out[o++] = '%';
		out[o++] = hex[p[i] >> 4];
		out[o++] = hex[p[i] & 15];
	}
	return o;
}

/* Adds [@s, +@len) as a needle of @m unless it is one already (or, @encoded, too short).
 * Return: 0, -ENOMEM. */
static int add(struct keymask *m, const char *s, size_t len, bool encoded)
{
	char *c;

	if (!len || (encoded && len < KEYMASK_ENCODED_MIN))
		return 0;
	for (size_t i = 0; i < m->n; i++)
		if (m->needle[i].len == len && memcmp(m->needle[i].s, s, len) == 0)
			return 0;
	if (!(c = malloc(len)))
		return -ENOMEM;
	memcpy(c, s, len);
	m->needle[m->n++] = (struct keymask_needle){ .s = c, .len = len };
	if (len > m->longest)
		m->longest = len;
	return 0;
}

/**
 * keymask_init() - the needles of a key: itself, its base64 and percent-encoded forms
 * @m: filled (keymask_done() frees it, also after a failure)
 * @key: the key (no CR or LF: netplan_add_key() refuses them)
 * @len: its length, 1..KEYMASK_KEY_MAX
 *
 * Return: 0, -EINVAL (an empty, too long or CR/LF key), -ENOMEM. Does not log.
 */
int keymask_init(struct keymask *m, const char *key, size_t len)
{
	const unsigned char *k = (const unsigned char *)key;
	char *buf;
	int r = 0;

	*m = (struct keymask){ 0 };
	if (!len || len > KEYMASK_KEY_MAX || memchr(key, '\r', len) || memchr(key, '\n', len))
		return -EINVAL;
	if (!(buf = malloc(KEYMASK_NEEDLE_MAX)))
		return -ENOMEM;
	r = add(m, key, len, false);
	/* the key at an offset of 0, 1, 2 (mod 3) of the encoded text: its first whole group
	 * starts 0, 2, 1 bytes in */
	for (size_t a = 0; a < 3 && r == 0; a++) {
		size_t s = (3 - a) % 3;

		if (len <= s)
			continue;
		r = add(m, buf, b64_groups(k + s, len - s, b64_std, buf), true);
		if (r == 0)
			r = add(m, buf, b64_groups(k + s, len - s, b64_url, buf), true);
	}
	if (r == 0)
		r = add(m, buf, percent(k, len, "0123456789ABCDEF", buf), true);
	if (r == 0)
		r = add(m, buf, percent(k, len, "0123456789abcdef", buf), true);
	explicit_bzero(buf, KEYMASK_NEEDLE_MAX);
	free(buf);
	return r;
}

/* keymask_done() - zeroes and frees the needles of @m (NULL or zeroed: nothing). Does not log. */
void keymask_done(struct keymask *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		explicit_bzero(m->needle[i].s, m->needle[i].len);
		free(m->needle[i].s);
	}
	*m = (struct keymask){ 0 };
}

/* Whether the needle @nd starts at @b[@pos], allowing a chunk boundary of a chunked answer
 * (CRLF, hex digits, an optional ";extension", CRLF: RFC 9112 7.1) between any two of its bytes:
 * on the wire a key quoted in a chunked body can be cut by one, and the client joins it again.
 * A needle holds no CR or LF, so a boundary can never be read as part of it. With @mask, its
 * bytes (not the boundaries) are overwritten with "REDACTED..." as they match.
 * Return: 1 (*@end after its last byte), 0 no needle here, 2 the buffer ended inside a
 * possible one. */
static int match(char *b, size_t n, size_t pos, const struct keymask_needle *nd, bool mask, size_t *end)
{
	size_t i = 0, j = pos;

	while (i < nd->len) {
		size_t q, hex = 0;

		if (j >= n)
			return 2;
		if (b[j] == nd->s[i]) {
			if (mask)
				b[j] = "REDACTED"[i % 8];
			i++, j++;
			continue;
		}
		if (i == 0 || b[j] != '\r')
			return 0;
		q = j + 1;
		if (q < n && b[q] != '\n')
			return 0;
		for (q++; q < n && ((b[q] >= '0' && b[q] <= '9') || ((b[q] | 0x20) >= 'a' && (b[q] | 0x20) <= 'f')); q++)
			hex++;
		if (q < n && !hex)
			return 0;
		if (q < n && b[q] == ';')
			while (q < n && b[q] != '\r')
				q++;
		if (q + 1 >= n)
			return 2;
		if (b[q] != '\r' || b[q + 1] != '\n')
			return 0;
		j = q + 2;
	}
	*end = j;
	return 1;
}

/**
 * keymask_scan() - masks, in place, every needle of @m found in a buffer
 * @m: the keys of the connection
 * @n_m: how many
 * @b: the bytes
 * @n: their length
 * @final: no bytes follow: a possible needle that the buffer ends in is none
 *
 * Every occurrence, also one cut by chunk boundaries, is overwritten with "REDACTED..." of the
 * same length. A possible needle never hides the bytes after its start: the scan goes on from
 * the next byte (found by fuzz-keytunnel: a key's first byte, CRLF, "3;" and the key itself
 * inside what read as a chunk extension to the buffer's end). Return: how many bytes at the end
 * may be the start of a needle (completed by the next bytes), for the caller to hold back: at
 * most twice the longest needle; a possible needle that reaches further back is masked as far
 * as it went; 0 with @final. Does not log.
 */
size_t keymask_scan(const struct keymask *const *m, size_t n_m, char *b, size_t n, bool final)
{
	size_t keep = 0, hold_max = 0;

	for (size_t i = 0; i < n_m; i++)
		if (2 * m[i]->longest > hold_max)
			hold_max = 2 * m[i]->longest;
	for (size_t i = 0; i < n_m; i++)
		for (size_t k = 0; k < m[i]->n; k++) {
			const struct keymask_needle *nd = &m[i]->needle[k];
			size_t pos = 0, end;
			const char *p;

			while (pos < n && (p = memchr(b + pos, nd->s[0], n - pos))) {
				int r;

				pos = (size_t)(p - b);
				r = match(b, n, pos, nd, false, &end);
				if (r == 1) {
					(void)match(b, n, pos, nd, true, &end);
					pos = end;
					continue;
				}
				if (r == 2 && !final && n - pos > hold_max)
					(void)match(b, n, pos, nd, true, &end);
				else if (r == 2 && !final && n - pos > keep)
					keep = n - pos;
				pos++;
			}
		}
	return keep;
}

/**
 * keymask_feed() - the next bytes of a stream, masked, to @emit
 * @m: the keys of the connection
 * @n_m: how many
 * @st: the stream's held tail (zeroed at its start; keymask_stream_done() at its end)
 * @data: the next bytes
 * @len: how many (0 with @final: the end)
 * @final: the stream ends after @data: nothing is held back
 * @emit: gets the bytes let through, in order
 * @ctx: for @emit
 *
 * A tail that may begin a needle is held back until the next call decides. Every copy of the
 * bytes made here is zeroed. Return: 0, -ENOMEM, or @emit's error. Does not log.
 */
int keymask_feed(const struct keymask *const *m, size_t n_m, struct keymask_stream *st, const char *data,
		 size_t len, bool final, keymask_emit emit, void *ctx)
{
	char b[16384 + KEYMASK_HOLD_MAX];
	size_t n, keep;
	int r = 0;

	while (len && r == 0) {
		size_t take = len < sizeof(b) - st->hold_len ? len : sizeof(b) - st->hold_len;

		if (st->hold_len)
			memcpy(b, st->hold, st->hold_len);
		memcpy(b + st->hold_len, data, take);
		n = st->hold_len + take;
		data += take, len -= take;
		keep = keymask_scan(m, n_m, b, n, final && !len);
		if (keep && !st->hold && !(st->hold = malloc(KEYMASK_HOLD_MAX)))
			r = -ENOMEM;
		if (r == 0 && n > keep)
			r = emit(ctx, b, n - keep);
		if (r == 0 && keep)
			memcpy(st->hold, b + n - keep, keep);
		st->hold_len = r == 0 ? keep : 0;
		explicit_bzero(b, n);
	}
	if (r == 0 && final && st->hold_len) {
		r = emit(ctx, st->hold, st->hold_len);
		explicit_bzero(st->hold, st->hold_len);
		st->hold_len = 0;
	}
	return r;
}

/* keymask_stream_done() - zeroes and frees a stream's held tail. Does not log. */
void keymask_stream_done(struct keymask_stream *st)
{
	if (st->hold) {
		explicit_bzero(st->hold, KEYMASK_HOLD_MAX);
		free(st->hold);
	}
	*st = (struct keymask_stream){ 0 };
}
