// SPDX-License-Identifier: GPL-2.0-or-later
/* ignore.c — .containerignore / .dockerignore pattern matching */
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "build/containerfile.h"
#include "build/ignore.h"
#include "util/util.h"

void ignore_done(struct ignore *ig)
{
	for (size_t i = 0; i < ig->n; i++)
		free(ig->rules[i].pattern);
	free(ig->rules);
	ig->rules = NULL;
	ig->n = 0;
}

/* Is every '[' closed by a ']' within its component? fnmatch(3) would quietly take an open one
 * literally; a typo in an ignore file should be said, not half-applied. */
static bool brackets_closed(const char *p)
{
	for (; *p; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			continue;
		}
		if (*p == '[') {
			const char *q = p + 1;
			if (*q == '!' || *q == '^')
				q++;
			if (*q == ']')
				q++;
			while (*q && *q != ']' && *q != '/')
				q++;
			if (*q != ']')
				return false;
			p = q;
		}
	}
	return true;
}

int ignore_parse(const char *text, size_t len, struct ignore *ig, unsigned *bad_line)
{
	struct ignore out = { 0 };
	size_t pos = 0;
	unsigned lineno = 0;
	int r = 0;

	*ig = out;
	if (len > IGNORE_MAX_FILE)
		return -EFBIG;
	while (pos < len) {
		const char *l = text + pos, *nl = memchr(l, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - l) : len - pos;
		bool exc = false;
		_cleanup_free_ char *raw = NULL;
		char *clean, *p;

		pos += n + (nl ? 1 : 0);
		lineno++;
		if (memchr(l, 0, n)) {
			r = -EINVAL;
			goto fail;
		}
		while (n > 0 && (l[n - 1] == ' ' || l[n - 1] == '\t' || l[n - 1] == '\r'))
			n--;
		while (n > 0 && (*l == ' ' || *l == '\t')) {
			l++;
			n--;
		}
		if (n == 0 || *l == '#')
			continue;
		if (*l == '!') {
			exc = true;
			l++;
			n--;
			while (n > 0 && (*l == ' ' || *l == '\t')) {
				l++;
				n--;
			}
		}
		raw = strndup(l, n);
		if (!raw) {
			r = -ENOMEM;
			goto fail;
		}
		if (!brackets_closed(raw)) {
			r = -EINVAL;
			goto fail;
		}
		p = raw;
		while (*p == '/')
			p++;
		clean = cf_path_clean(*p ? p : ".", NULL);
		if (!clean) {
			r = -ENOMEM;
			goto fail;
		}
		if (out.n >= IGNORE_MAX_RULES) {
			free(clean);
			r = -EFBIG;
			goto fail;
		}
		{
			struct ignore_rule *nr = realloc(out.rules, (out.n + 1) * sizeof(*nr));
			if (!nr) {
				free(clean);
				r = -ENOMEM;
				goto fail;
			}
			out.rules = nr;
			nr[out.n].pattern = clean;
			nr[out.n].exception = exc;
			out.n++;
		}
	}
	*ig = out;
	return 0;
fail:
	if (bad_line)
		*bad_line = lineno;
	ignore_done(&out);
	return r;
}

/* Matches the components of @p (length @pn) against those of @s (length @sn). */
static bool match_components(const char *p, size_t pn, const char *s, size_t sn, bool doublestar,
			     unsigned depth)
{
	const char *pe, *se;
	size_t pl, sl;
	char pc[4096], sc[4096];

	if (depth > 64)
		return false;
	if (pn == 0)
		return sn == 0;
	pe = memchr(p, '/', pn);
	pl = pe ? (size_t)(pe - p) : pn;
	if (doublestar && pl == 2 && p[0] == '*' && p[1] == '*') {
		const char *rest = pe ? pe + 1 : p + pn;
		size_t rn = pe ? pn - pl - 1 : 0;
		/* "**" takes zero, one, two... components of s */
		if (match_components(rest, rn, s, sn, doublestar, depth + 1))
			return true;
		while (sn > 0) {
			se = memchr(s, '/', sn);
			if (!se)
				return rn == 0;
			sn -= (size_t)(se - s) + 1;
			s = se + 1;
			if (match_components(rest, rn, s, sn, doublestar, depth + 1))
				return true;
		}
		return false;
	}
	if (sn == 0)
		return false;
	se = memchr(s, '/', sn);
	sl = se ? (size_t)(se - s) : sn;
	if (pl >= sizeof(pc) || sl >= sizeof(sc))
		return false;
	memcpy(pc, p, pl);
	pc[pl] = 0;
	memcpy(sc, s, sl);
	sc[sl] = 0;
	if (fnmatch(pc, sc, 0) != 0)
		return false;
	if (!pe)
		return !se;
	if (!se)
		/* pattern has more components; only a trailing "**" can match nothing */
		return doublestar && streq(pe + 1, "**");
	return match_components(pe + 1, pn - pl - 1, se + 1, sn - sl - 1, doublestar, depth + 1);
}

bool ignore_glob_match(const char *pattern, const char *path, bool doublestar)
{
	if (streq(pattern, "."))
		return true; /* the context root: everything */
	return match_components(pattern, strlen(pattern), path, strlen(path), doublestar, 0);
}

/* Does @pattern match @path or one of its parent directories? */
static bool matches_or_parent(const char *pattern, const char *path)
{
	size_t n = strlen(path);

	if (ignore_glob_match(pattern, path, true))
		return true;
	for (size_t i = 0; i < n; i++)
		if (path[i] == '/') {
			char buf[4096];
			if (i >= sizeof(buf))
				return false;
			memcpy(buf, path, i);
			buf[i] = 0;
			if (ignore_glob_match(pattern, buf, true))
				return true;
		}
	return false;
}

bool ignore_is_excluded(const struct ignore *ig, const char *path)
{
	bool excluded = false;

	for (size_t i = 0; ig && i < ig->n; i++)
		if (ig->rules[i].exception == excluded && matches_or_parent(ig->rules[i].pattern, path))
			excluded = !ig->rules[i].exception;
	return excluded;
}
