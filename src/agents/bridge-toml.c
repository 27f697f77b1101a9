// SPDX-License-Identifier: GPL-2.0-or-later
/* bridge-toml.c — the TOML subset of codex's config.toml, read into and written from json-c
 *
 * Written for the bridge, not as a general TOML library: what codex configs use is supported,
 * everything else (dates, times, special floats) is refused with the line number, so a config
 * this reader does not understand is never half-bridged.
 */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/bridge-internal.h"
#include "util/strbuf.h"
#include "util/util.h"

/* A growable buffer whose first failure sticks (util/strbuf.h underneath). */
struct sb {
	struct strbuf s;
	bool oom;
};
#define STRBUF_INIT { .s = { NULL, 0, 0, (size_t)BRIDGE_FILE_MAX * 2 }, .oom = false }

static void strbuf_append(struct sb *b, const char *p, size_t n)
{
	if (!b->oom && strbuf_put(&b->s, p, n) < 0)
		b->oom = true;
}

static _printf_(2, 3) void strbuf_appendf(struct sb *b, const char *fmt, ...)
{
	va_list ap;
	char *t;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&t, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = true;
		return;
	}
	strbuf_append(b, t, (size_t)n);
	free(t);
}

static bool strbuf_oom(const struct sb *b)
{
	return b->oom;
}

static void strbuf_free(struct sb *b)
{
	free(b->s.p);
	b->s.p = NULL;
}

static char *strbuf_take(struct sb *b)
{
	char *p = b->s.p ? b->s.p : strdup("");
	b->s.p = NULL;
	return p;
}

struct tp {
	const char *s;
	unsigned line;
	char *err;
	size_t err_size;
	bool failed;
};

static _printf_(2, 3) int fail(struct tp *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->failed)
		return -EINVAL;
	t->failed = true;
	n = snprintf(t->err, t->err_size, "line %u: ", t->line);
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < t->err_size)
		vsnprintf(t->err + n, t->err_size - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static void skip_ws(struct tp *t)
{
	while (*t->s == ' ' || *t->s == '\t')
		t->s++;
}

/* Skips whitespace, comments and newlines. */
static void skip_all(struct tp *t)
{
	for (;;) {
		skip_ws(t);
		if (*t->s == '#')
			while (*t->s && *t->s != '\n')
				t->s++;
		if (*t->s == '\r' && t->s[1] == '\n')
			t->s++;
		if (*t->s != '\n')
			return;
		t->s++;
		t->line++;
	}
}

/* After a statement: only a comment may follow on the line. */
static int end_of_line(struct tp *t)
{
	skip_ws(t);
	if (*t->s == '#')
		while (*t->s && *t->s != '\n')
			t->s++;
	if (*t->s == '\r')
		t->s++;
	if (*t->s == '\n') {
		t->s++;
		t->line++;
		return 0;
	}
	if (!*t->s)
		return 0;
	return fail(t, "unexpected text after a value");
}

static void put_utf8(struct sb *b, unsigned long cp)
{
	char u[4];
	size_t n;
	if (cp < 0x80)
		u[0] = (char)cp, n = 1;
	else if (cp < 0x800)
		u[0] = (char)(0xc0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
	else if (cp < 0x10000)
		u[0] = (char)(0xe0 | (cp >> 12)), u[1] = (char)(0x80 | ((cp >> 6) & 0x3f)),
		u[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
	else
		u[0] = (char)(0xf0 | (cp >> 18)), u[1] = (char)(0x80 | ((cp >> 12) & 0x3f)),
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), u[3] = (char)(0x80 | (cp & 0x3f)), n = 4;
	strbuf_append(b, u, n);
}

/* A string starting at t->s (at its first quote). Result in @b (NUL-terminated). */
static int parse_string(struct tp *t, struct sb *b, bool allow_multi)
{
	char q = *t->s;
	bool multi = allow_multi && t->s[1] == q && t->s[2] == q;

	t->s += multi ? 3 : 1;
	if (multi && *t->s == '\n') { /* a newline right after the opening quotes is trimmed */
		t->s++;
		t->line++;
	}
	for (;;) {
		char ch = *t->s;
		if (!ch)
			return fail(t, "unterminated string");
		if (ch == q && (!multi || (t->s[1] == q && t->s[2] == q))) {
			t->s += multi ? 3 : 1;
			break;
		}
		if (ch == '\n') {
			if (!multi)
				return fail(t, "newline in a string");
			t->line++;
		}
		if (ch == '\\' && q == '"') {
			char e = t->s[1];
			unsigned long cp;
			int nd;
			t->s += 2;
			switch (e) {
			case 'b': strbuf_append(b, "\b", 1); continue;
			case 't': strbuf_append(b, "\t", 1); continue;
			case 'n': strbuf_append(b, "\n", 1); continue;
			case 'f': strbuf_append(b, "\f", 1); continue;
			case 'r': strbuf_append(b, "\r", 1); continue;
			case '"': strbuf_append(b, "\"", 1); continue;
			case '\\': strbuf_append(b, "\\", 1); continue;
			case 'u': nd = 4; break;
			case 'U': nd = 8; break;
			default:
				if (multi && (e == '\n' || e == ' ' || e == '\t' || e == '\r')) {
					/* line-ending backslash: trim whitespace up to the next text */
					t->s--;
					while (*t->s == ' ' || *t->s == '\t' || *t->s == '\n' || *t->s == '\r') {
						if (*t->s == '\n')
							t->line++;
						t->s++;
					}
					continue;
				}
				return fail(t, "unknown escape in a string");
			}
			cp = 0;
			for (int i = 0; i < nd; i++) {
				char h = t->s[i];
				if (!isxdigit((unsigned char)h))
					return fail(t, "bad \\u escape");
				cp = cp * 16 + (unsigned long)(isdigit((unsigned char)h) ? h - '0' : (tolower((unsigned char)h) - 'a' + 10));
			}
			t->s += nd;
			/* a NUL could not survive the C strings the bridge works with */
			if (cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
				return fail(t, "bad \\u escape");
			put_utf8(b, cp);
			continue;
		}
		strbuf_append(b, t->s, 1);
		t->s++;
	}
	return strbuf_oom(b) ? -ENOMEM : 0;
}

static bool bare_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '-';
}

/* A dotted key: components into @parts (strv). */
static int parse_key(struct tp *t, char ***parts)
{
	for (;;) {
		struct sb b = STRBUF_INIT;
		int r;

		skip_ws(t);
		if (*t->s == '"' || *t->s == '\'') {
			if ((r = parse_string(t, &b, false)) < 0) {
				strbuf_free(&b);
				return r;
			}
		} else {
			const char *st = t->s;
			while (bare_char(*t->s))
				t->s++;
			if (t->s == st)
				return fail(t, "expected a key");
			strbuf_append(&b, st, (size_t)(t->s - st));
		}
		if (strbuf_oom(&b) || strv_push_take(parts, strbuf_take(&b)) < 0)
			return -ENOMEM;
		if (strv_length(*parts) > BRIDGE_DEPTH_MAX)
			return fail(t, "key nested too deeply");
		skip_ws(t);
		if (*t->s != '.')
			return 0;
		t->s++;
	}
}

static int parse_value(struct tp *t, json_object **out, unsigned depth);

static int parse_number(struct tp *t, json_object **out)
{
	char buf[64];
	size_t n = 0;
	bool is_float = false;
	const char *st = t->s;

	while (*t->s && (isalnum((unsigned char)*t->s) || strchr("+-._:", *t->s))) {
		if (*t->s == ':' || (*t->s == '-' && t->s != st && isdigit((unsigned char)t->s[-1]) && n >= 4 && !is_float))
			return fail(t, "dates and times are not supported");
		if (*t->s != '_') {
			if (n + 1 >= sizeof(buf))
				return fail(t, "number too long");
			if (*t->s == '.' || *t->s == 'e' || *t->s == 'E')
				is_float = is_float || !(n >= 2 && buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X'));
			buf[n++] = *t->s;
		}
		t->s++;
	}
	buf[n] = 0;
	if (!n)
		return fail(t, "expected a value");
	if (strstr(buf, "inf") || strstr(buf, "nan"))
		return fail(t, "inf and nan are not supported");
	{
		char *end;
		errno = 0;
		if (is_float) {
			double d = strtod(buf, &end);
			if (*end || errno || !isfinite(d))
				return fail(t, "bad number");
			*out = json_object_new_double(d);
		} else {
			int base = 10;
			const char *p = buf;
			bool neg = false;
			long long v;
			if (*p == '+' || *p == '-')
				neg = *p++ == '-';
			if (p[0] == '0' && (p[1] == 'x' || p[1] == 'o' || p[1] == 'b')) {
				base = p[1] == 'x' ? 16 : p[1] == 'o' ? 8 : 2;
				p += 2;
			}
			v = strtoll(p, &end, base);
			if (*end || errno || end == p)
				return fail(t, "bad number");
			*out = json_object_new_int64(neg ? -v : v);
		}
	}
	return *out ? 0 : -ENOMEM;
}

/* Sets @parts (relative to @o) to @v, creating tables; a key set twice is an error. Takes @v. */
static int set_path(struct tp *t, json_object *o, char **parts, json_object *v)
{
	size_t n = strv_length(parts);

	assert(parts && n > 0); /* parse_key() returned at least one component */
	for (size_t i = 0; i + 1 < n; i++) {
		json_object *c = NULL;
		if (!json_object_object_get_ex(o, parts[i], &c)) {
			c = json_object_new_object();
			if (!c || json_object_object_add(o, parts[i], c) < 0) {
				json_object_put(c);
				json_object_put(v);
				return -ENOMEM;
			}
		} else if (!json_object_is_type(c, json_type_object)) {
			json_object_put(v);
			return fail(t, "a key is both a value and a table");
		}
		o = c;
	}
	if (json_object_object_get_ex(o, parts[n - 1], NULL)) {
		json_object_put(v);
		return fail(t, "a key is defined twice");
	}
	if (json_object_object_add(o, parts[n - 1], v) < 0) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

static int parse_inline_table(struct tp *t, json_object **out, unsigned depth)
{
	json_object *o = json_object_new_object();
	int r;

	if (!o)
		return -ENOMEM;
	t->s++;
	skip_ws(t);
	if (*t->s == '}') {
		t->s++;
		*out = o;
		return 0;
	}
	for (;;) {
		_cleanup_strv_free_ char **key = NULL;
		json_object *v = NULL;

		if ((r = parse_key(t, &key)) < 0)
			goto err;
		if (*t->s != '=') {
			r = fail(t, "expected '=' after a key");
			goto err;
		}
		t->s++;
		skip_ws(t);
		if ((r = parse_value(t, &v, depth + 1)) < 0 || (r = set_path(t, o, key, v)) < 0)
			goto err;
		skip_ws(t);
		if (*t->s == ',') {
			t->s++;
			continue;
		}
		if (*t->s == '}') {
			t->s++;
			*out = o;
			return 0;
		}
		r = fail(t, "expected ',' or '}' in an inline table");
		goto err;
	}
err:
	json_object_put(o);
	return r;
}

static int parse_array(struct tp *t, json_object **out, unsigned depth)
{
	json_object *a = json_object_new_array();
	int r;

	if (!a)
		return -ENOMEM;
	t->s++;
	for (;;) {
		json_object *v = NULL;
		skip_all(t);
		if (*t->s == ']') {
			t->s++;
			*out = a;
			return 0;
		}
		if ((r = parse_value(t, &v, depth + 1)) < 0)
			goto err;
		if (json_object_array_add(a, v) < 0) {
			json_object_put(v);
			r = -ENOMEM;
			goto err;
		}
		skip_all(t);
		if (*t->s == ',') {
			t->s++;
			continue;
		}
		if (*t->s == ']') {
			t->s++;
			*out = a;
			return 0;
		}
		r = fail(t, "expected ',' or ']' in an array");
		goto err;
	}
err:
	json_object_put(a);
	return r;
}

static int parse_value(struct tp *t, json_object **out, unsigned depth)
{
	if (depth > BRIDGE_DEPTH_MAX)
		return fail(t, "value nested too deeply");
	if (*t->s == '"' || *t->s == '\'') {
		struct sb b = STRBUF_INIT;
		int r = parse_string(t, &b, true);
		if (r < 0) {
			strbuf_free(&b);
			return r;
		}
		*out = json_object_new_string_len(b.s.p ? b.s.p : "", (int)b.s.n);
		strbuf_free(&b);
		return *out ? 0 : -ENOMEM;
	}
	if (strncmp(t->s, "true", 4) == 0 && !bare_char(t->s[4])) {
		t->s += 4;
		*out = json_object_new_boolean(true);
		return *out ? 0 : -ENOMEM;
	}
	if (strncmp(t->s, "false", 5) == 0 && !bare_char(t->s[5])) {
		t->s += 5;
		*out = json_object_new_boolean(false);
		return *out ? 0 : -ENOMEM;
	}
	if (*t->s == '[')
		return parse_array(t, out, depth);
	if (*t->s == '{')
		return parse_inline_table(t, out, depth);
	return parse_number(t, out);
}

/* [a.b] or [[a.b]]: the table the following keys go to. */
static int parse_header(struct tp *t, json_object *root, json_object **cur)
{
	_cleanup_strv_free_ char **key = NULL;
	bool aot = t->s[1] == '[';
	json_object *o = root;
	size_t n;
	int r;

	t->s += aot ? 2 : 1;
	if ((r = parse_key(t, &key)) < 0)
		return r;
	if (*t->s != ']' || (aot && t->s[1] != ']'))
		return fail(t, "expected ']' after a table name");
	t->s += aot ? 2 : 1;
	n = strv_length(key);
	assert(key && n > 0); /* parse_key() returned at least one component */
	for (size_t i = 0; i < n; i++) {
		json_object *c = NULL;
		bool last = i + 1 == n;

		if (!json_object_object_get_ex(o, key[i], &c)) {
			c = last && aot ? json_object_new_array() : json_object_new_object();
			if (!c || json_object_object_add(o, key[i], c) < 0) {
				json_object_put(c);
				return -ENOMEM;
			}
		}
		if (json_object_is_type(c, json_type_array)) {
			if (last && aot) {
				json_object *e = json_object_new_object();
				if (!e || json_object_array_add(c, e) < 0) {
					json_object_put(e);
					return -ENOMEM;
				}
				c = e;
			} else {
				size_t len = json_object_array_length(c);
				c = len ? json_object_array_get_idx(c, len - 1) : NULL;
			}
		} else if (last && aot)
			return fail(t, "a table is also an array of tables");
		if (!c || !json_object_is_type(c, json_type_object))
			return fail(t, "a key is both a value and a table");
		o = c;
	}
	*cur = o;
	return end_of_line(t);
}

int bridge_toml_parse(const char *text, json_object **out, char *err, size_t err_size)
{
	struct tp t = { .s = text, .line = 1, .err = err, .err_size = err_size };
	json_object *root = json_object_new_object(), *cur = root;
	int r = 0;

	if (!root)
		return -ENOMEM;
	if (err_size)
		err[0] = 0;
	for (;;) {
		skip_all(&t);
		if (!*t.s)
			break;
		if (*t.s == '[') {
			if ((r = parse_header(&t, root, &cur)) < 0)
				break;
			continue;
		}
		{
			_cleanup_strv_free_ char **key = NULL;
			json_object *v = NULL;
			if ((r = parse_key(&t, &key)) < 0)
				break;
			if (*t.s != '=') {
				r = fail(&t, "expected '=' after a key");
				break;
			}
			t.s++;
			skip_ws(&t);
			if ((r = parse_value(&t, &v, 1)) < 0 || (r = set_path(&t, cur, key, v)) < 0 ||
			    (r = end_of_line(&t)) < 0)
				break;
		}
	}
	if (r < 0) {
		json_object_put(root);
		return r;
	}
	*out = root;
	return 0;
}

/* ---- writer ------------------------------------------------------------------------------- */

static void put_string(struct sb *b, const char *s)
{
	strbuf_append(b, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			char e[2] = { '\\', (char)c };
			strbuf_append(b, e, 2);
		} else if (c == '\n')
			strbuf_append(b, "\\n", 2);
		else if (c == '\t')
			strbuf_append(b, "\\t", 2);
		else if (c < 0x20 || c == 0x7f)
			strbuf_appendf(b, "\\u%04x", c);
		else
			strbuf_append(b, s, 1);
	}
	strbuf_append(b, "\"", 1);
}

static void put_key(struct sb *b, const char *k)
{
	bool bare = *k != 0;
	for (const char *p = k; *p; p++)
		bare = bare && bare_char(*p);
	if (bare)
		strbuf_append(b, k, strlen(k));
	else
		put_string(b, k);
}

static void put_inline(struct sb *b, json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_string:
		put_string(b, json_object_get_string(v));
		break;
	case json_type_boolean:
		strbuf_appendf(b, "%s", json_object_get_boolean(v) ? "true" : "false");
		break;
	case json_type_int:
		strbuf_appendf(b, "%lld", (long long)json_object_get_int64(v));
		break;
	case json_type_double: {
		char num[40];
		snprintf(num, sizeof(num), "%.17g", json_object_get_double(v));
		strbuf_appendf(b, "%s%s", num, strpbrk(num, ".eE") ? "" : ".0");
		break;
	}
	case json_type_array:
		strbuf_append(b, "[", 1);
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			if (i)
				strbuf_append(b, ", ", 2);
			put_inline(b, json_object_array_get_idx(v, i));
		}
		strbuf_append(b, "]", 1);
		break;
	case json_type_object: {
		bool first = true;
		strbuf_append(b, "{", 1);
		json_object_object_foreach(v, k, e) {
			if (json_object_is_type(e, json_type_null))
				continue;
			strbuf_appendf(b, "%s", first ? " " : ", ");
			first = false;
			put_key(b, k);
			strbuf_append(b, " = ", 3);
			put_inline(b, e);
		}
		strbuf_appendf(b, "%s}", first ? "" : " ");
		break;
	}
	default:
		strbuf_append(b, "\"\"", 2); /* null never gets here: callers skip it */
	}
}

static bool is_table_array(json_object *v)
{
	size_t n;
	if (!json_object_is_type(v, json_type_array) || !(n = json_object_array_length(v)))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!json_object_is_type(json_object_array_get_idx(v, i), json_type_object))
			return false;
	return true;
}

static void put_table(struct sb *b, json_object *o, const char *path)
{
	json_object_object_foreach(o, k, v) {
		if (json_object_is_type(v, json_type_null) || json_object_is_type(v, json_type_object) ||
		    is_table_array(v))
			continue;
		put_key(b, k);
		strbuf_append(b, " = ", 3);
		put_inline(b, v);
		strbuf_append(b, "\n", 1);
	}
	json_object_object_foreach(o, k2, v2) {
		struct sb sub = STRBUF_INIT;
		bool obj = json_object_is_type(v2, json_type_object);

		if (!obj && !is_table_array(v2))
			continue;
		strbuf_appendf(&sub, "%s%s", path, *path ? "." : "");
		put_key(&sub, k2);
		if (strbuf_oom(&sub)) {
			b->oom = true;
			strbuf_free(&sub);
			return;
		}
		if (obj) {
			strbuf_appendf(b, "\n[%s]\n", sub.s.p);
			put_table(b, v2, sub.s.p);
		} else
			for (size_t i = 0; i < json_object_array_length(v2); i++) {
				strbuf_appendf(b, "\n[[%s]]\n", sub.s.p);
				put_table(b, json_object_array_get_idx(v2, i), sub.s.p);
			}
		strbuf_free(&sub);
	}
}

char *bridge_toml_format(json_object *doc)
{
	struct sb b = STRBUF_INIT;
	strbuf_appendf(&b, "# written by aisb from ~/.codex/config.toml (docs/agents.md)\n");
	put_table(&b, doc, "");
	if (strbuf_oom(&b)) {
		strbuf_free(&b);
		return NULL;
	}
	return strbuf_take(&b);
}
