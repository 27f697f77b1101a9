// SPDX-License-Identifier: GPL-2.0-or-later
/* workspace-parse.c — bundle header, commit chain and object-list parsers (pure) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"
#include "git/gitrun.h"
#include "workspace/workspace-internal.h"

/* The next line of [*p, end): returns its start, sets *n to its length without '\n', advances
 * *p past it. NULL at the end or when the line has no '\n'. */
static const char *next_line(const char **p, const char *end, size_t *n)
{
	const char *s = *p, *nl;

	if (s >= end)
		return NULL;
	nl = memchr(s, '\n', (size_t)(end - s));
	if (!nl)
		return NULL;
	*n = (size_t)(nl - s);
	*p = nl + 1;
	return s;
}

/* Copies an object id from the start of @s (length @n) if it is one, followed by @n end or ' '. */
static bool take_oid(const char *s, size_t n, char out[65], size_t *used)
{
	size_t k = 0;
	char tmp[65];

	while (k < n && k < 64 && s[k] != ' ')
		k++;
	if ((k != 40 && k != 64) || (k < n && s[k] != ' '))
		return false;
	memcpy(tmp, s, k);
	tmp[k] = 0;
	if (!gitrun_is_oid(tmp))
		return false;
	memcpy(out, tmp, k + 1);
	*used = k;
	return true;
}

int ws_bundle_parse(const char *buf, size_t len, const char *base, struct ws_bundle *b, const char **why)
{
	const char *p = buf, *end = buf + (len < WS_BUNDLE_HEADER_MAX ? len : WS_BUNDLE_HEADER_MAX), *l;
	size_t n, used, nprereq = 0, nref = 0;

	memset(b, 0, sizeof(*b));
	*why = "not a git bundle";
	l = next_line(&p, end, &n);
	if (!l)
		return -EINVAL;
	if (n == 15 && memcmp(l, "# v2 git bundle", 15) == 0)
		b->version = 2;
	else if (n == 15 && memcmp(l, "# v3 git bundle", 15) == 0)
		b->version = 3;
	else
		return -EINVAL;
	for (;;) {
		l = next_line(&p, end, &n);
		if (!l) {
			*why = "the bundle header has no end (or is larger than 64 KiB)";
			return -EINVAL;
		}
		if (n == 0)
			break;
		if (l[0] == '@') {
			if (b->version != 3) {
				*why = "a capability in a v2 bundle";
				return -EINVAL;
			}
			if (!((n == 19 && memcmp(l, "@object-format=sha1", 19) == 0) ||
			      (n == 21 && memcmp(l, "@object-format=sha256", 21) == 0))) {
				*why = "a bundle capability other than @object-format (a filter or an unknown one)";
				return -EINVAL;
			}
			continue;
		}
		if (l[0] == '-') {
			if (!take_oid(l + 1, n - 1, b->prereq, &used)) {
				*why = "a malformed prerequisite line";
				return -EINVAL;
			}
			if (++nprereq > 1 || !streq(b->prereq, base)) {
				*why = "the bundle needs objects other than the base's: it was not made against the "
				       "recorded base";
				return -EINVAL;
			}
			continue;
		}
		if (!take_oid(l, n, b->tip, &used) || used + 1 >= n) {
			*why = "a malformed ref line";
			return -EINVAL;
		}
		if (++nref > 1 || n - used - 1 != strlen(WS_BUNDLE_REF) ||
		    memcmp(l + used + 1, WS_BUNDLE_REF, n - used - 1) != 0) {
			*why = "the bundle carries refs other than " WS_BUNDLE_REF;
			return -EINVAL;
		}
	}
	if (nprereq != 1) {
		*why = "the bundle has no prerequisite: it does not build on the recorded base";
		return -EINVAL;
	}
	if (nref != 1) {
		*why = "the bundle carries no ref";
		return -EINVAL;
	}
	if (strlen(b->tip) != strlen(base)) {
		*why = "the bundle's object format differs from the project's";
		return -EINVAL;
	}
	b->pack_offset = (size_t)(p - buf);
	*why = NULL;
	return 0;
}

int ws_chain_check(const char *text, const char *base, const char *tip, char ***chain, const char **why)
{
	const char *p = text, *end = text + strlen(text), *l;
	char prev[65], c[65], par[65];
	char **v = NULL;
	size_t n, used, used2;
	int count = 0;

	*chain = NULL;
	/* a merge anywhere is named as such, before the line's order is judged */
	for (const char *q = text; (l = next_line(&q, end, &n));) {
		const char *sp = memchr(l, ' ', n);
		if (sp && memchr(sp + 1, ' ', n - (size_t)(sp + 1 - l))) {
			*why = "a commit with more than one parent (a merge): only a line of commits is imported";
			return -EINVAL;
		}
	}
	snprintf(prev, sizeof(prev), "%s", base);
	while ((l = next_line(&p, end, &n))) {
		if (!take_oid(l, n, c, &used)) {
			*why = "git listed a malformed commit line";
			goto refuse;
		}
		if (used == n) {
			*why = "a commit without a parent (a new root): the history does not build on the base";
			goto refuse;
		}
		if (!take_oid(l + used + 1, n - used - 1, par, &used2)) {
			*why = "git listed a malformed parent";
			goto refuse;
		}
		if (used + 1 + used2 != n) {
			*why = "a commit with more than one parent (a merge): only a line of commits is imported";
			goto refuse;
		}
		if (!streq(par, prev)) {
			*why = count ? "the commits do not form one line" : "the first commit's parent is not the recorded base";
			goto refuse;
		}
		if (++count > WS_MAX_COMMITS) {
			*why = "more than 10000 commits";
			goto refuse;
		}
		if (strv_push(&v, c) < 0) {
			strv_free(v);
			return -ENOMEM;
		}
		memcpy(prev, c, sizeof(prev));
	}
	if (p != end) {
		*why = "git's listing has a truncated line";
		goto refuse;
	}
	if (count == 0 || !streq(prev, tip)) {
		*why = "the tip does not descend from the recorded base";
		goto refuse;
	}
	*chain = v;
	*why = NULL;
	return count;
refuse:
	strv_free(v);
	return -EINVAL;
}

int ws_commit_parse(const char *obj, size_t len, char tree[65], const char **msg, size_t *msg_len)
{
	const char *p = obj, *end = obj + len, *l, *nul;
	size_t n, used;
	bool have_tree = false;

	while ((l = next_line(&p, end, &n)) && n > 0) {
		if (!have_tree && n > 5 && memcmp(l, "tree ", 5) == 0 && take_oid(l + 5, n - 5, tree, &used) &&
		    used == n - 5)
			have_tree = true;
	}
	if (!have_tree)
		return -EINVAL;
	if (!l) {
		/* no blank line: no message */
		*msg = end;
		*msg_len = 0;
		return 0;
	}
	*msg = p;
	*msg_len = (size_t)(end - p);
	nul = memchr(p, 0, *msg_len);
	if (nul)
		*msg_len = (size_t)(nul - p);
	if (*msg_len > WS_MESSAGE_MAX)
		*msg_len = WS_MESSAGE_MAX;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int ws_oidset_from_show_index(const char *text, char ***out)
{
	const char *p = text, *end = text + strlen(text), *l;
	char **v = NULL;
	size_t n, used;
	int count = 0;

	*out = NULL;
	while ((l = next_line(&p, end, &n))) {
		const char *sp = memchr(l, ' ', n);
		char oid[65];

		if (!sp || !take_oid(sp + 1, n - (size_t)(sp + 1 - l), oid, &used)) {
			strv_free(v);
			return -EINVAL;
		}
		if (strv_push(&v, oid) < 0) {
			strv_free(v);
			return -ENOMEM;
		}
		count++;
	}
	if (v)
		qsort(v, (size_t)count, sizeof(char *), cmp_str);
	*out = v;
	return count;
}

bool ws_oidset_has(char *const *set, size_t n, const char *oid)
{
	return set && n && bsearch(&oid, set, n, sizeof(char *), cmp_str) != NULL;
}

int ws_ls_tree_filter(const char *ls, size_t len, char *const *paths, size_t n, char **out, size_t *out_len)
{
	char *buf = NULL;
	size_t used = 0;
	int kept = 0;

	*out = NULL;
	*out_len = 0;
	for (size_t off = 0; off < len;) {
		const char *rec = ls + off, *tab;
		size_t k = strnlen(rec, len - off);

		off += k + 1;
		if (!k)
			continue;
		tab = memchr(rec, '\t', k);
		if (!tab) {
			free(buf);
			return -EINVAL;
		}
		{
			_cleanup_free_ char *path = strndup(tab + 1, k - (size_t)(tab + 1 - rec));
			char *nb;
			if (!path) {
				free(buf);
				return -ENOMEM;
			}
			if (!ws_oidset_has(paths, n, path))
				continue;
			nb = realloc(buf, used + k + 1);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			memcpy(buf + used, rec, k);
			buf[used + k] = 0;
			used += k + 1;
			kept++;
		}
	}
	*out = buf;
	*out_len = used;
	return kept;
}

int ws_raw_parse(const char *raw, size_t len, struct ws_change **out, size_t *n)
{
	struct ws_change *v = NULL;
	size_t cap = 0, k = 0;

	*out = NULL;
	*n = 0;
	for (size_t off = 0; off < len;) {
		const char *rec = raw + off, *path;
		size_t rl = strnlen(rec, len - off), pl;
		unsigned om, nm;
		char st;
		int used = 0;

		if (!rl && off + 1 >= len)
			break;
		if (off + rl >= len || rec[0] != ':' || sscanf(rec, ":%o %o %*s %*s %c%n", &om, &nm, &st, &used) != 3 ||
		    !strchr("AMDT", st))
			goto bad;
		off += rl + 1;
		path = raw + off;
		pl = strnlen(path, len - off);
		if (!pl || off + pl >= len)
			goto bad;
		off += pl + 1;
		if (k == cap) {
			struct ws_change *nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));
			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		v[k++] = (struct ws_change){ .status = st, .old_mode = om, .new_mode = nm, .path = path };
	}
	*out = v;
	*n = k;
	return 0;
bad:
	free(v);
	return -EINVAL;
}

int ws_numstat_apply(const char *ns, size_t len, struct ws_change *c, size_t n)
{
	size_t off = 0;

	for (size_t i = 0; i < n; i++) {
		const char *rec = ns + off, *t1, *t2;
		size_t rl;

		if (off >= len)
			return -EINVAL;
		rl = strnlen(rec, len - off);
		if (off + rl >= len)
			return -EINVAL;
		t1 = memchr(rec, '\t', rl);
		t2 = t1 ? memchr(t1 + 1, '\t', rl - (size_t)(t1 + 1 - rec)) : NULL;
		if (!t2 || strcmp(t2 + 1, c[i].path) != 0)
			return -EINVAL;
		if (rec[0] == '-') {
			c[i].added = c[i].deleted = -1;
		} else {
			char *e1, *e2;
			c[i].added = strtoll(rec, &e1, 10);
			c[i].deleted = strtoll(t1 + 1, &e2, 10);
			if (e1 != t1 || e2 != t2)
				return -EINVAL;
		}
		off += rl + 1;
	}
	return 0;
}

/* Does a component of @path satisfy @pred? */
static bool any_component(const char *path, bool (*pred)(const char *c, size_t n))
{
	for (const char *c = path; *c;) {
		size_t n = strcspn(c, "/");
		if (n && pred(c, n))
			return true;
		c += n;
		if (*c == '/')
			c++;
	}
	return false;
}

static bool comp_is(const char *c, size_t n, const char *name)
{
	return n == strlen(name) && memcmp(c, name, n) == 0;
}

static bool comp_hooklike(const char *c, size_t n)
{
	return comp_is(c, n, "hooks") || comp_is(c, n, "githooks") || comp_is(c, n, ".githooks") || comp_is(c, n, ".husky");
}

static bool comp_dot(const char *c, size_t n)
{
	(void)n;
	return c[0] == '.';
}

const char *ws_review_flag(const struct ws_change *c, char *const *top, size_t ntop)
{
	const char *base = strrchr(c->path, '/');
	_cleanup_free_ char *first = strndup(c->path, strcspn(c->path, "/"));

	base = base ? base + 1 : c->path;
	if (c->status == 'D')
		return NULL;
	if (c->new_mode == 0160000 && (c->status == 'A' || c->old_mode != 0160000))
		return "submodule";
	if (streq(base, ".gitattributes") || streq(base, ".gitmodules"))
		return "git control file";
	if (c->status == 'A') {
		if (any_component(c->path, comp_hooklike))
			return "hook-like path";
		if (any_component(c->path, comp_dot))
			return "dotfile";
		if (!first || !ws_oidset_has(top, ntop, first))
			return "new top-level entry";
		if (c->new_mode == 0120000)
			return "symlink";
		if (c->new_mode == 0100755)
			return "executable";
		return NULL;
	}
	if (c->new_mode == 0120000 && c->old_mode != 0120000)
		return "made a symlink";
	if (c->new_mode == 0100755 && c->old_mode != 0100755)
		return "made executable";
	return NULL;
}

int ws_exclude_pattern(const char *path, char **out)
{
	size_t n = strlen(path);
	char *o = malloc(2 * n + 3), *q = o;

	if (!o)
		return -ENOMEM;
	*q++ = '/';
	for (size_t i = 0; i < n; i++) {
		if (strchr("*?[\\!# ", path[i]))
			*q++ = '\\';
		*q++ = path[i];
	}
	*q++ = '\n';
	*q = 0;
	*out = o;
	return 0;
}

bool ws_branch_name_valid(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n > 200 || name[0] == '-' || name[0] == '/' || name[n - 1] == '/' || name[n - 1] == '.' ||
	    streq(name, "@") || strstr(name, "..") || strstr(name, "//") || strstr(name, "@{") ||
	    strstr(name, "/.") || name[0] == '.')
		return false;
	if (n >= 5 && streq(name + n - 5, ".lock"))
		return false;
	if (strstr(name, ".lock/"))
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)name[i];
		if (ch < 0x21 || ch == 0x7f || strchr("~^:?*[\\", ch))
			return false;
	}
	return true;
}
