// SPDX-License-Identifier: GPL-2.0-or-later
/* fuzz-ttyfilter.c — the pty relay's terminal filter over arbitrary output, split into reads
 * at points taken from the input's first byte. Aborts when the output grows past its bound,
 * differs from the unsplit run, or holds what the filter must never pass: an OSC other than
 * the colour queries and resets, a DCS/SOS/PM/APC introducer, ESC %, a CSI with the '*'
 * intermediate (DECRQCRA reads the screen back), or a C1 control; and when the output, filtered
 * again, is not unchanged (everything that passed must pass the allowlists again).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ns/ttyfilter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t run(const char *in, size_t n, size_t chunk, char *out)
{
	struct ttyfilter f;
	size_t w = 0;

	ttyfilter_init(&f, false);
	for (size_t off = 0; off < n; off += chunk) {
		size_t k = n - off < chunk ? n - off : chunk;
		size_t got = ttyfilter_feed(&f, in + off, k, out + w);
		if (got > k + TTYFILTER_HOLD_MAX)
			abort();
		w += got;
	}
	if (w > n)
		abort(); /* over a whole stream the filter only ever removes */
	return w;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *a, *b;
	size_t na, nb, chunk;

	if (size < 1 || size > (1u << 16))
		return 0;
	chunk = 1 + data[0] % 64;
	a = malloc(size + TTYFILTER_HOLD_MAX);
	b = malloc(size + TTYFILTER_HOLD_MAX);
	if (!a || !b)
		abort();
	na = run((const char *)data + 1, size - 1, size, a);
	nb = run((const char *)data + 1, size - 1, chunk, b);
	if (na != nb || memcmp(a, b, na) != 0)
		abort();
	nb = run(a, na, na ? na : 1, b);
	/* a 0xC2 that ends the output is held by the second run: it waits for its next byte */
	if (!(nb == na || (nb + 1 == na && (unsigned char)a[nb] == 0xc2)) || memcmp(a, b, nb) != 0)
		abort();
	for (size_t i = 0; i < na; i++) {
		unsigned char c = (unsigned char)a[i], d = i + 1 < na ? (unsigned char)a[i + 1] : 0;
		if (c == 0x1b && d == '[')
			for (size_t j = i + 2; j < na && a[j] >= 0x20 && a[j] <= 0x3f; j++)
				if (a[j] == '*')
					abort();
		if (c == 0xc2 && d >= 0x80 && d <= 0x9f)
			abort();
		if (c == 0x1b && (d == 'P' || d == 'X' || d == '^' || d == '_' || d == '%'))
			abort();
		if (c == 0x1b && d == ']') {
			/* only 4;N;?, 10..19;?, 104, 110..119 */
			const char *p = a + i + 2;
			long ps = strtol(p, NULL, 10);
			if (!(ps == 4 || (ps >= 10 && ps <= 19) || ps == 104 || (ps >= 110 && ps <= 119)))
				abort();
		}
	}
	free(a);
	free(b);
	return 0;
}
