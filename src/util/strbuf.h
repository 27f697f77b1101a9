/* SPDX-License-Identifier: GPL-2.0-or-later */
/* strbuf.h — a growable, NUL-terminated byte buffer with an optional size cap.
 *
 * Shared by the Containerfile evaluator (bounded words) and the build-tag serializer. Zero-init
 * a `struct strbuf`; set .max to bound it (0: unbounded); free .p when done. Does not log.
 */
#ifndef AISB_UTIL_STRBUF_H
#define AISB_UTIL_STRBUF_H

#include <stddef.h>

#include "util/macro.h"

struct strbuf {
	char *p;
	size_t n, cap;
	size_t max; /* 0: no cap */
};

/* Appends @n bytes. Return: 0, -E2BIG past .max, -ENOMEM. */
int strbuf_put(struct strbuf *b, const void *s, size_t n);
int strbuf_putc(struct strbuf *b, char c);
int strbuf_puts(struct strbuf *b, const char *s);
int strbuf_printf(struct strbuf *b, const char *fmt, ...) _printf_(2, 3);

/* @s as one word for the user's shell (bash, zsh, ksh, dash 0.5.12+), for every command aisb
 * prints for pasting: '...' with each ' as '\'' when every byte is printable ASCII, else $'...'
 * with every other byte, ' and \ as \xNN, so that no quote, ;, $(), backquote, newline or control
 * byte in a path can run anything or drive the terminal (issue 21). Return: malloc'd, NULL on
 * ENOMEM. Does not log. */
char *shell_word(const char *s);

#endif
