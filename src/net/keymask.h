/* SPDX-License-Identifier: GPL-2.0-or-later */
/* keymask.h — copies of a model key masked in a stream of answer bytes (--key-via-gate)
 *
 * The gate adds the model key to the requests of a keyed connection (net/gate.h); an endpoint
 * may quote what it got back (an error message "invalid key sk-...", a debugging route), and the
 * sandbox must not read the key there. Every answer byte of such a connection goes through
 * keymask_feed(), which overwrites each occurrence of the key with "REDACTEDREDA..." of the same
 * length, so Content-Length and chunk sizes stay right. Looked for, besides the key itself
 * (keymask_init(), each one more needle, all computed once when the gate starts):
 *   - its base64 forms, standard and URL-safe alphabets: a key that starts at an offset of 0, 1
 *     or 2 (mod 3) of the encoded text gives three different strings, each the encoding of the
 *     whole 3-byte groups that hold key bytes only (the first 0, 2 or 1 key bytes and the last
 *     partial group mix with their neighbours' bytes, and so stay readable: at most 2 bytes at
 *     each end, and the 1-3 base64 characters around them);
 *   - its percent-encoded forms (every byte but RFC 3986's unreserved ones as %XX, upper and
 *     lower hex), when they differ from the key.
 * A needle may be cut by chunk boundaries of a chunked body (RFC 9112 7.1: CRLF, hex size, an
 * extension, CRLF) anywhere between two of its bytes, as on the wire; none holds CR or LF.
 * A tail of a chunk of bytes that may begin a needle is held back until the next bytes decide
 * (at most twice the longest needle; a possible needle longer than that is masked as far as it
 * went). Not caught: compressed answers (the gate asks for none: http_identity_encoding()),
 * base64 wrapped into lines, JSON or other escapes of the key's bytes, any other encoding.
 * Pure: no system call but malloc/free. Does not log.
 */
#ifndef AISB_NET_KEYMASK_H
#define AISB_NET_KEYMASK_H

#include <stdbool.h>
#include <stddef.h>

#define KEYMASK_KEY_MAX ((size_t)4096)     /* the longest key (GATE_KEY_VALUE_MAX) */
#define KEYMASK_FORMS 9           /* the key, base64 and base64url at 3 offsets, %XX and %xx */
#define KEYMASK_ENCODED_MIN 8     /* an encoded form shorter than this is not looked for */
/* the longest needle is a key's percent-encoding (3 bytes a byte); a held tail is at most twice
 * a needle */
#define KEYMASK_NEEDLE_MAX ((size_t)3 * KEYMASK_KEY_MAX)
#define KEYMASK_HOLD_MAX ((size_t)2 * KEYMASK_NEEDLE_MAX)

struct keymask_needle {
	char *s;
	size_t len;
};

/* The needles of one key. */
struct keymask {
	struct keymask_needle needle[KEYMASK_FORMS];
	size_t n;
	size_t longest;
};

/* The bytes held back between two keymask_feed() calls of one stream. */
struct keymask_stream {
	char *hold;          /* KEYMASK_HOLD_MAX, allocated at the first tail held */
	size_t hold_len;
};

/* Where keymask_feed() puts the bytes it lets through: 0 or -errno. */
typedef int (*keymask_emit)(void *ctx, const char *p, size_t n);

int keymask_init(struct keymask *m, const char *key, size_t len);
void keymask_done(struct keymask *m);
size_t keymask_scan(const struct keymask *const *m, size_t n_m, char *b, size_t n, bool final);
int keymask_feed(const struct keymask *const *m, size_t n_m, struct keymask_stream *st, const char *data,
		 size_t len, bool final, keymask_emit emit, void *ctx);
void keymask_stream_done(struct keymask_stream *st);

#endif
