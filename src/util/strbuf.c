// SPDX-License-Identifier: GPL-2.0-or-later
/* strbuf.c — growable byte buffer */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

int strbuf_put(struct strbuf *b, const void *s, size_t n)
{
	if (b->max && b->n + n > b->max)
		return -E2BIG;
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		char *np;
		while (cap < b->n + n + 1)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np)
			return -ENOMEM;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
	return 0;
}

int strbuf_putc(struct strbuf *b, char c)
{
	return strbuf_put(b, &c, 1);
}

int strbuf_puts(struct strbuf *b, const char *s)
{
	return strbuf_put(b, s, strlen(s));
}

int strbuf_printf(struct strbuf *b, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	int n, r;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	r = strbuf_put(b, s, (size_t)n);
	free(s);
	return r;
}

char *shell_word(const char *s)
{
	struct strbuf b = { 0 };
	bool plain = true;
	int r = 0;

	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		plain &= *c >= 0x20 && *c < 0x7f;
	if (plain) {
		r |= strbuf_putc(&b, '\'');
		for (const char *c = s; *c && r >= 0; c++)
			r |= *c == '\'' ? strbuf_puts(&b, "'\\''") : strbuf_putc(&b, *c);
		r |= strbuf_putc(&b, '\'');
	} else {
		r |= strbuf_puts(&b, "$'");
		for (const unsigned char *c = (const unsigned char *)s; *c && r >= 0; c++)
			r |= (*c < 0x20 || *c >= 0x7f || *c == '\\' || *c == '\'') ? strbuf_printf(&b, "\\x%02x", *c)
										: strbuf_putc(&b, (char)*c);
		r |= strbuf_putc(&b, '\'');
	}
	if (r < 0) {
		free(b.p);
		return NULL;
	}
	return b.p;
}
