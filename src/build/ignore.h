/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ignore.h — .containerignore / .dockerignore patterns for the build context (pure).
 *
 * The format Docker and Podman read: one pattern per line; blank lines and lines starting with
 * '#' are skipped; surrounding blanks are trimmed; a leading '!' makes an exception that
 * re-includes what an earlier pattern excluded; the last pattern that matches a path decides.
 * A pattern is cleaned like a path and is relative to the context root (a leading '/' is
 * dropped). Within one path component '*', '?', '[...]' and '\' work as in fnmatch(3); a
 * component that is exactly "**" matches any number of components, including none. A pattern
 * that matches a directory also matches everything below it.
 */
#ifndef AISB_BUILD_IGNORE_H
#define AISB_BUILD_IGNORE_H

#include <stdbool.h>
#include <stddef.h>

#define IGNORE_MAX_FILE (256u << 10)
#define IGNORE_MAX_RULES 4096u

struct ignore_rule {
	char *pattern; /* cleaned, relative, without the '!' */
	bool exception;
};

struct ignore {
	struct ignore_rule *rules;
	size_t n;
};

/* Parses @len bytes of @text into @ig. Return: 0, -EFBIG over the bounds, -EINVAL for a line
 * with a NUL byte or an unterminated '[' (*bad_line gets its 1-based number), -ENOMEM.
 * Does not log. */
int ignore_parse(const char *text, size_t len, struct ignore *ig, unsigned *bad_line);

/* Frees the members of @ig (accepts a zeroed one). */
void ignore_done(struct ignore *ig);

/* Is @path (relative to the context root, cleaned, '/'-separated) excluded from the context? */
bool ignore_is_excluded(const struct ignore *ig, const char *path);

/* Does @pattern match all of @path (no parent rule)? With @doublestar, a "**" component matches
 * any number of components; without, it is an ordinary '*' (COPY source wildcards, which
 * follow Go's filepath.Match). */
bool ignore_glob_match(const char *pattern, const char *path, bool doublestar);

#endif
