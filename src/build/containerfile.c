// SPDX-License-Identifier: GPL-2.0-or-later
/* containerfile.c — the Containerfile subset: parse, normalise, evaluate */
#include <ctype.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "build/containerfile.h"
#include "util/strbuf.h"
#include "util/util.h"

#define CF_MAX_DEPTH 16 /* nesting of ${a:-${b:-...}} */

static const char *const kind_names[CF_KIND_MAX] = {
	[CF_FROM] = "FROM", [CF_ARG] = "ARG", [CF_ENV] = "ENV", [CF_LABEL] = "LABEL",
	[CF_RUN] = "RUN", [CF_WORKDIR] = "WORKDIR", [CF_COPY] = "COPY", [CF_USER] = "USER",
	[CF_ENTRYPOINT] = "ENTRYPOINT", [CF_CMD] = "CMD",
};

const char *cf_kind_name(enum cf_kind k)
{
	return k < CF_KIND_MAX ? kind_names[k] : "?";
}

/* Instructions of the full Dockerfile language that aisb refuses, with the way out. */
static const struct {
	const char *name;
	const char *why;
} refused[] = {
	{ "ADD", "use COPY for context files, and RUN with a checksum check for downloads" },
	{ "HEALTHCHECK", "aisb does not run health checks" },
	{ "ONBUILD", "triggers for later builds are not supported" },
	{ "SHELL", "RUN uses /bin/sh -c; write RUN [\"bash\", \"-c\", \"...\"] for another shell" },
	{ "VOLUME", "volumes are mounted at run time with --mount" },
	{ "EXPOSE", "aisb publishes no ports; the network policy is set at run time" },
	{ "STOPSIGNAL", "aisb stops the sandbox itself" },
	{ "MAINTAINER", "write LABEL maintainer=\"...\"" },
};

_printf_(3, 4) static int fail(struct cf_error *err, unsigned line, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		err->line = line;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* ---- words and variable expansion ---- */

struct lexer {
	const char *s;
	size_t i;
	char *const *vars;
	unsigned depth;
	const char *why;
};

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

static bool is_identifier(const char *s)
{
	if (!*s || isdigit((unsigned char)*s))
		return false;
	for (; *s; s++)
		if (!is_name_char(*s))
			return false;
	return true;
}

/* The value of the last "NAME=" in @vars, or NULL. */
static const char *var_lookup(char *const *vars, const char *name, size_t n)
{
	const char *found = NULL;

	for (size_t i = 0; vars && vars[i]; i++)
		if (strncmp(vars[i], name, n) == 0 && vars[i][n] == '=')
			found = vars[i] + n + 1;
	return found;
}

static int lex_bad(struct lexer *lx, const char *why)
{
	lx->why = why;
	return -EINVAL;
}

static int lex_word(struct lexer *lx, struct strbuf *b, bool split, char stop, bool *started);

/* At '$': appends the expansion. Only the forms Docker documents; the shell-only ones
 * (${V#p}, ${V%p}, ${V/p/r}, ${V:?}) are refused rather than passed through half-expanded. */
static int lex_dollar(struct lexer *lx, struct strbuf *b)
{
	const char *s = lx->s;
	size_t start;
	const char *val;
	int r;

	lx->i++;
	if (s[lx->i] == '{') {
		struct strbuf w = { .max = CF_MAX_EXPANSION };
		bool colon = false, st = false, set;
		char op;

		lx->i++;
		start = lx->i;
		while (is_name_char(s[lx->i]))
			lx->i++;
		if (lx->i == start)
			return lex_bad(lx, "bad substitution: '${' needs a variable name");
		val = var_lookup(lx->vars, s + start, lx->i - start);
		if (s[lx->i] == '}') {
			lx->i++;
			return val ? strbuf_puts(b, val) : 0;
		}
		if (s[lx->i] == ':') {
			colon = true;
			lx->i++;
		}
		op = s[lx->i];
		if (op != '-' && op != '+')
			return lex_bad(lx, "unsupported substitution (only ${VAR}, ${VAR:-word}, ${VAR:+word}, ${VAR-word}, ${VAR+word})");
		lx->i++;
		if (++lx->depth > CF_MAX_DEPTH)
			return lex_bad(lx, "substitutions nested too deeply");
		r = lex_word(lx, &w, false, '}', &st);
		lx->depth--;
		if (r < 0) {
			free(w.p);
			return r;
		}
		if (s[lx->i] != '}') {
			free(w.p);
			return lex_bad(lx, "unterminated '${'");
		}
		lx->i++;
		set = val && (!colon || *val);
		if (op == '-')
			r = set ? strbuf_puts(b, val) : strbuf_put(b, w.p ? w.p : "", w.n);
		else
			r = set ? strbuf_put(b, w.p ? w.p : "", w.n) : 0;
		free(w.p);
		return r;
	}
	if (isalpha((unsigned char)s[lx->i]) || s[lx->i] == '_') {
		start = lx->i;
		while (is_name_char(s[lx->i]))
			lx->i++;
		val = var_lookup(lx->vars, s + start, lx->i - start);
		return val ? strbuf_puts(b, val) : 0;
	}
	return strbuf_putc(b, '$'); /* a lone '$' is literal */
}

/* Appends one word from lx->s[lx->i] to @b; stops (without consuming) at an unquoted blank when
 * @split, at @stop when non-zero, or at the end. */
static int lex_word(struct lexer *lx, struct strbuf *b, bool split, char stop, bool *started)
{
	const char *s = lx->s;
	int r;

	for (;;) {
		char c = s[lx->i];

		if (!c || (stop && c == stop) || (split && is_blank(c)))
			return 0;
		*started = true;
		if (c == '\\') {
			if (s[lx->i + 1]) {
				r = strbuf_putc(b, s[lx->i + 1]);
				lx->i += 2;
			} else {
				r = strbuf_putc(b, '\\');
				lx->i++;
			}
		} else if (c == '\'') {
			const char *end = strchr(s + lx->i + 1, '\'');
			if (!end)
				return lex_bad(lx, "unterminated single quote");
			r = strbuf_put(b, s + lx->i + 1, (size_t)(end - (s + lx->i + 1)));
			lx->i = (size_t)(end - s) + 1;
		} else if (c == '"') {
			lx->i++;
			for (;;) {
				c = s[lx->i];
				if (!c)
					return lex_bad(lx, "unterminated double quote");
				if (c == '"') {
					lx->i++;
					break;
				}
				if (c == '$' && lx->vars) {
					r = lex_dollar(lx, b);
				} else if (c == '\\' && (s[lx->i + 1] == '"' || s[lx->i + 1] == '\\' ||
							 s[lx->i + 1] == '$')) {
					r = strbuf_putc(b, s[lx->i + 1]);
					lx->i += 2;
				} else {
					r = strbuf_putc(b, c);
					lx->i++;
				}
				if (r < 0)
					return r;
			}
			r = 0;
		} else if (c == '$' && lx->vars) {
			r = lex_dollar(lx, b);
		} else {
			r = strbuf_putc(b, c);
			lx->i++;
		}
		if (r < 0)
			return r;
	}
}

int cf_words(const char *s, char *const *vars, bool split, char ***words, const char **why)
{
	_cleanup_strv_free_ char **v = NULL;
	struct lexer lx = { .s = s, .vars = vars };
	size_t count = 0;
	int r;

	*why = NULL;
	for (;;) {
		struct strbuf b = { .max = CF_MAX_EXPANSION };
		bool started = false;

		while (split && is_blank(s[lx.i]))
			lx.i++;
		if (!s[lx.i])
			break;
		r = lex_word(&lx, &b, split, 0, &started);
		if (r < 0) {
			free(b.p);
			*why = r == -E2BIG ? "a variable expansion is too long" : lx.why;
			return r;
		}
		if (started) {
			if (++count > CF_MAX_WORDS) {
				free(b.p);
				*why = "too many words";
				return -E2BIG;
			}
			r = strv_push_take(&v, b.p ? b.p : strdup(""));
			if (r < 0)
				return r;
		} else {
			free(b.p);
		}
		if (!split)
			break;
	}
	if (!v) {
		v = calloc(1, sizeof(char *));
		if (!v)
			return -ENOMEM;
	}
	*words = TAKE_PTR(v);
	return 0;
}

char *cf_path_clean(const char *p, bool *escapes)
{
	bool abs = p[0] == '/', esc = false;
	struct strbuf b = { .max = SIZE_MAX / 2 };
	size_t *starts = NULL, depth = 0;
	const char *s = p;
	int r = 0;

	starts = calloc(strlen(p) / 2 + 2, sizeof(size_t));
	if (!starts)
		return NULL;
	while (*s && r >= 0) {
		const char *e = strchrnul(s, '/');
		size_t n = (size_t)(e - s);

		if (n == 0 || (n == 1 && s[0] == '.')) {
			/* skip */
		} else if (n == 2 && s[0] == '.' && s[1] == '.') {
			if (depth > 0) {
				b.n = starts[--depth];
				if (b.p)
					b.p[b.n] = 0;
			} else {
				esc = true;
			}
		} else {
			starts[depth++] = b.n;
			if (b.n > 0 || abs)
				r = strbuf_putc(&b, '/');
			if (r >= 0)
				r = strbuf_put(&b, s, n);
		}
		s = *e ? e + 1 : e;
	}
	free(starts);
	if (r < 0) {
		free(b.p);
		return NULL;
	}
	if (escapes)
		*escapes = esc;
	if (b.n == 0) {
		free(b.p);
		return strdup(abs ? "/" : ".");
	}
	return b.p;
}

/* ---- parse stage ---- */

static void instr_done(struct cf_instr *in)
{
	free(in->args);
	strv_free(in->words);
}

void cf_done(struct containerfile *cf)
{
	for (size_t i = 0; i < cf->n; i++)
		instr_done(&cf->ins[i]);
	free(cf->ins);
	cf->ins = NULL;
	cf->n = 0;
}

/* A JSON array of strings spanning all of @s (blanks around allowed): the exec form. Anything
 * else is not an error but the shell form, as in Docker. */
static int parse_json_array(const char *s, char ***out)
{
	_cleanup_strv_free_ char **v = NULL;
	struct json_tokener *tok;
	struct json_object *o;
	size_t len = strlen(s), end;
	int r = 0;

	tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	o = json_tokener_parse_ex(tok, s, (int)len);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!o)
		return 0;
	while (end < len && is_blank(s[end]))
		end++;
	if (end != len || !json_object_is_type(o, json_type_array)) {
		json_object_put(o);
		return 0;
	}
	for (size_t i = 0; i < json_object_array_length(o); i++) {
		struct json_object *e = json_object_array_get_idx(o, i);
		if (!json_object_is_type(e, json_type_string) ||
		    strlen(json_object_get_string(e)) != (size_t)json_object_get_string_len(e)) {
			json_object_put(o);
			return 0; /* non-strings or NUL inside: not the exec form */
		}
		r = strv_push(&v, json_object_get_string(e));
		if (r < 0)
			break;
	}
	json_object_put(o);
	if (r < 0)
		return r;
	if (!v) {
		v = calloc(1, sizeof(char *));
		if (!v)
			return -ENOMEM;
	}
	*out = TAKE_PTR(v);
	return 1;
}

static char *strndup_trim(const char *s, size_t n)
{
	while (n > 0 && is_blank(*s)) {
		s++;
		n--;
	}
	while (n > 0 && is_blank(s[n - 1]))
		n--;
	return strndup(s, n);
}

/* "# name=value" at the top of the file. Return: 1 and fills @name/@value, or 0. */
static int parse_directive(const char *l, size_t n, char name[32], char value[64])
{
	size_t i = 1, k = 0, vs;

	if (n == 0 || l[0] != '#')
		return 0;
	while (i < n && (l[i] == ' ' || l[i] == '\t'))
		i++;
	while (i < n && isalpha((unsigned char)l[i]) && k < 31)
		name[k++] = (char)tolower((unsigned char)l[i++]);
	name[k] = 0;
	if (k == 0)
		return 0;
	while (i < n && (l[i] == ' ' || l[i] == '\t'))
		i++;
	if (i >= n || l[i] != '=')
		return 0;
	i++;
	while (i < n && (l[i] == ' ' || l[i] == '\t'))
		i++;
	vs = i;
	while (n > vs && is_blank(l[n - 1]))
		n--;
	if (n - vs >= 64)
		n = vs + 63;
	memcpy(value, l + vs, n - vs);
	value[n - vs] = 0;
	return 1;
}

/* Does the physical line [l, l+n) end with the escape character, ignoring trailing blanks? If so,
 * *cut is its length without both. */
static bool ends_with_escape(const char *l, size_t n, size_t *cut)
{
	while (n > 0 && (l[n - 1] == ' ' || l[n - 1] == '\t'))
		n--;
	if (n == 0 || l[n - 1] != '\\')
		return false;
	*cut = n - 1;
	return true;
}

static bool is_blank_or_comment(const char *l, size_t n)
{
	size_t i = 0;
	while (i < n && is_blank(l[i]))
		i++;
	return i == n || l[i] == '#';
}

static int parse_copy_flag(const char *flag, struct cf_instr *in, struct cf_error *err)
{
	unsigned long long m;

	if (strncmp(flag, "--chmod=", 8) == 0) {
		const char *v = flag + 8;
		char *end;
		if (!*v || strspn(v, "01234567") != strlen(v))
			return fail(err, in->line, "COPY --chmod needs an octal mode, not '%s'", v);
		errno = 0;
		m = strtoull(v, &end, 8);
		if (errno || m > 07777)
			return fail(err, in->line, "COPY --chmod needs an octal mode, not '%s'", v);
		in->chmod = (mode_t)m;
		return 0;
	}
	if (strncmp(flag, "--from", 6) == 0)
		return fail(err, in->line, "COPY --from is not supported (multi-stage builds are not supported)");
	if (strncmp(flag, "--chown", 7) == 0)
		return fail(err, in->line, "COPY --chown is not supported: a fakeroot build keeps one owner for every file");
	return fail(err, in->line, "COPY flag '%.64s' is not supported", flag);
}

/* Splits the leading --flags off @in->args (FROM, RUN, COPY only). */
static int parse_flags(struct cf_instr *in, struct cf_error *err)
{
	char *a = in->args;
	int r;

	while (a[0] == '-' && a[1] == '-') {
		size_t n = strcspn(a, " \t");
		char flag[128];

		snprintf(flag, sizeof(flag), "%.*s", (int)(n < 127 ? n : 127), a);
		if (in->kind == CF_COPY) {
			r = parse_copy_flag(flag, in, err);
			if (r < 0)
				return r;
		} else {
			return fail(err, in->line, "%s flag '%.64s' is not supported", cf_kind_name(in->kind), flag);
		}
		a += n;
		while (*a == ' ' || *a == '\t')
			a++;
	}
	if (a != in->args)
		memmove(in->args, a, strlen(a) + 1);
	return 0;
}

static int finish_instr(struct cf_instr *in, bool have_from, struct cf_error *err)
{
	const char *why;
	int r;

	if (in->kind != CF_ARG && in->kind != CF_FROM && !have_from)
		return fail(err, in->line, "%s before FROM (only ARG may come before FROM)", cf_kind_name(in->kind));
	if (in->kind == CF_FROM || in->kind == CF_RUN || in->kind == CF_COPY) {
		r = parse_flags(in, err);
		if (r < 0)
			return r;
	}
	if ((in->kind == CF_RUN || in->kind == CF_COPY) && strncmp(in->args, "<<", 2) == 0)
		return fail(err, in->line, "%s with a heredoc is not supported", cf_kind_name(in->kind));
	if (in->kind == CF_RUN || in->kind == CF_CMD || in->kind == CF_ENTRYPOINT || in->kind == CF_COPY) {
		if (in->args[0] == '[') {
			r = parse_json_array(in->args, &in->words);
			if (r < 0)
				return r;
			in->json = r > 0;
		}
	}
	if (!in->args[0])
		return fail(err, in->line, "%s needs arguments", cf_kind_name(in->kind));
	if (in->kind == CF_RUN && in->json && !in->words[0])
		return fail(err, in->line, "RUN [] has no command");
	if (in->kind == CF_FROM) {
		_cleanup_strv_free_ char **w = NULL;
		r = cf_words(in->args, NULL, true, &w, &why);
		if (r < 0)
			return fail(err, in->line, "FROM: %s", why ? why : "cannot split");
		if (strv_length(w) == 3 && strcasecmp(w[1], "AS") == 0)
			return fail(err, in->line, "FROM ... AS: multi-stage builds are not supported");
		if (strv_length(w) != 1)
			return fail(err, in->line, "FROM takes exactly one image reference");
	}
	if (in->kind == CF_COPY && !in->json) {
		_cleanup_strv_free_ char **w = NULL;
		r = cf_words(in->args, NULL, true, &w, &why);
		if (r < 0)
			return fail(err, in->line, "COPY: %s", why ? why : "cannot split");
		if (strv_length(w) < 2)
			return fail(err, in->line, "COPY needs at least one source and a destination");
	}
	if (in->kind == CF_COPY && in->json && strv_length(in->words) < 2)
		return fail(err, in->line, "COPY needs at least one source and a destination");
	return 0;
}

/* The text being parsed and where the parser is in it. */
struct cf_reader {
	const char *text;
	size_t len, pos;
	unsigned lineno;
};

/* The next physical line as [*@l, *@l + *@n), a trailing CR dropped. Return: 1, 0 at the end, or
 * -EFBIG for a line over CF_MAX_LINE (rd->lineno is its number). Does not log. */
static int next_line(struct cf_reader *rd, const char **l, size_t *n)
{
	const char *nl;

	if (rd->pos >= rd->len)
		return 0;
	*l = rd->text + rd->pos;
	nl = memchr(*l, '\n', rd->len - rd->pos);
	*n = nl ? (size_t)(nl - *l) : rd->len - rd->pos;
	rd->pos += *n + (nl ? 1 : 0);
	rd->lineno++;
	if (*n > CF_MAX_LINE)
		return -EFBIG;
	if (*n > 0 && (*l)[*n - 1] == '\r')
		(*n)--;
	return 1;
}

/* A parser directive line (`# escape=\`, `# syntax=...`), allowed only before anything else.
 * Return: 1 when [@l, @l + @n) is one, 0 when it is not (directives end there), -EINVAL for an
 * escape other than the backslash or given twice (said in @err). */
static int directive_line(const char *l, size_t n, unsigned lineno, bool *saw_escape, struct cf_error *err)
{
	char name[32], value[64];

	if (!parse_directive(l, n, name, value))
		return 0;
	if (streq(name, "escape")) {
		if (*saw_escape)
			return fail(err, lineno, "the escape directive is given twice");
		*saw_escape = true;
		if (!streq(value, "\\"))
			return fail(err, lineno, "'# escape=%s' is not supported: only the backslash is", value);
	}
	/* "syntax" selects a BuildKit frontend; aisb's parser is the frontend, and any other name
	 * is a comment, as in Docker. */
	return 1;
}

/* One instruction from its first line [@l, @l + @n): continuation lines joined into @logical,
 * comment and blank lines inside dropped. Return: 0, -EFBIG (said) or -ENOMEM. */
static int read_logical(struct cf_reader *rd, const char *l, size_t n, struct strbuf *logical,
			struct cf_error *err)
{
	size_t cut;
	int r;

	for (;;) {
		bool more = ends_with_escape(l, n, &cut);

		r = strbuf_put(logical, l, more ? cut : n);
		if (r < 0 || !more || rd->pos >= rd->len)
			break;
		do
			r = next_line(rd, &l, &n);
		while (r > 0 && is_blank_or_comment(l, n) && rd->pos < rd->len);
		if (r < 0)
			break;
		r = 0;
		if (is_blank_or_comment(l, n))
			break; /* the file ended inside a continuation */
	}
	if (r == -E2BIG || r == -EFBIG) {
		fail(err, rd->lineno, "%s longer than %u bytes", r == -E2BIG ? "instruction" : "line",
		     r == -E2BIG ? CF_MAX_LOGICAL : CF_MAX_LINE);
		return -EFBIG;
	}
	return r < 0 ? r : 0;
}

/* The keyword of @logical: @in->kind set, *@args_at the offset of the arguments. Return: 0, or
 * -EINVAL for an unknown or unsupported instruction (said). */
static int parse_keyword(const struct strbuf *logical, struct cf_instr *in, size_t *args_at, struct cf_error *err)
{
	char kw[16];
	size_t k = 0, ai = 0;

	while (ai < logical->n && is_blank(logical->p[ai]))
		ai++;
	while (ai < logical->n && !is_blank(logical->p[ai])) {
		if (k < sizeof(kw) - 1)
			kw[k++] = (char)toupper((unsigned char)logical->p[ai]);
		ai++;
	}
	kw[k] = 0;
	*args_at = ai;
	for (unsigned i = 0; i < CF_KIND_MAX; i++)
		if (streq(kw, kind_names[i])) {
			in->kind = (enum cf_kind)i;
			return 0;
		}
	for (unsigned i = 0; i < ELEMENTSOF(refused); i++)
		if (streq(kw, refused[i].name))
			return fail(err, in->line, "%s is not supported (%s)", refused[i].name, refused[i].why);
	return fail(err, in->line, "unknown instruction '%.16s'", kw);
}

/* Moves @in to the end of @out. Return: 0 or -ENOMEM (@in is then still the caller's). */
static int push_instr(struct containerfile *out, struct cf_instr *in)
{
	struct cf_instr *ni = realloc(out->ins, (out->n + 1) * sizeof(*ni));

	if (!ni)
		return -ENOMEM;
	out->ins = ni;
	out->ins[out->n++] = *in;
	return 0;
}

/* One instruction whose first line is [@l, @l + @n), parsed and appended to @out. Return: 0
 * or -errno (said in @err). */
static int parse_instr(struct cf_reader *rd, const char *l, size_t n, struct containerfile *out, bool *have_from,
		       struct cf_error *err)
{
	struct strbuf logical = { .max = CF_MAX_LOGICAL };
	struct cf_instr in = { .chmod = (mode_t)-1, .kind = CF_KIND_MAX, .line = rd->lineno };
	size_t ai = 0;
	int r;

	r = read_logical(rd, l, n, &logical, err);
	if (r == 0)
		r = parse_keyword(&logical, &in, &ai, err);
	if (r == 0 && in.kind == CF_FROM && *have_from)
		r = fail(err, in.line, "a second FROM: multi-stage builds are not supported");
	if (r == 0 && out->n >= CF_MAX_INSTRUCTIONS) {
		fail(err, in.line, "more than %u instructions", CF_MAX_INSTRUCTIONS);
		r = -EFBIG;
	}
	if (r == 0 && !(in.args = strndup_trim(logical.p + ai, logical.n - ai)))
		r = -ENOMEM;
	free(logical.p);
	if (r < 0)
		return r;
	r = finish_instr(&in, *have_from, err);
	if (r == 0)
		r = push_instr(out, &in);
	if (r < 0) {
		instr_done(&in);
		return r;
	}
	if (in.kind == CF_FROM)
		*have_from = true;
	return 0;
}

int cf_parse(const char *text, size_t len, struct containerfile *cf, struct cf_error *err)
{
	struct containerfile out = { 0 };
	struct cf_reader rd = { .text = text, .len = len };
	bool directives = true, have_from = false, saw_escape = false;
	const char *l;
	size_t n;
	int r;

	*cf = out;
	if (err)
		*err = (struct cf_error){ 0 };
	if (len > CF_MAX_FILE) {
		fail(err, 0, "the file is larger than %u bytes", CF_MAX_FILE);
		return -EFBIG;
	}
	if (memchr(text, 0, len))
		return fail(err, 0, "the file contains a NUL byte");

	while ((r = next_line(&rd, &l, &n)) != 0) {
		if (r < 0) {
			fail(err, rd.lineno, "line longer than %u bytes", CF_MAX_LINE);
			goto fail;
		}
		if (directives) {
			r = directive_line(l, n, rd.lineno, &saw_escape, err);
			if (r < 0)
				goto fail;
			if (r > 0)
				continue;
			directives = false;
		}
		if (is_blank_or_comment(l, n))
			continue;
		r = parse_instr(&rd, l, n, &out, &have_from, err);
		if (r < 0)
			goto fail;
	}
	if (!have_from) {
		r = fail(err, 0, "no FROM instruction");
		goto fail;
	}
	*cf = out;
	return 0;
fail:
	cf_done(&out);
	return r;
}

/* ---- normalised form ---- */

static int ser_field(struct strbuf *b, const char *s)
{
	char num[32];
	int r;

	snprintf(num, sizeof(num), "%zu:", strlen(s));
	r = strbuf_puts(b, num);
	if (r >= 0)
		r = strbuf_puts(b, s);
	if (r >= 0)
		r = strbuf_putc(b, ' ');
	return r;
}

char *cf_serialize(const struct containerfile *cf, size_t *len)
{
	struct strbuf b = { .max = SIZE_MAX / 2 };
	int r = strbuf_puts(&b, "aisb-containerfile-1\n");

	for (size_t i = 0; i < cf->n && r >= 0; i++) {
		const struct cf_instr *in = &cf->ins[i];
		char head[64];

		snprintf(head, sizeof(head), "%s %s %o ", cf_kind_name(in->kind), in->json ? "json" : "text",
			 in->chmod == (mode_t)-1 ? 0xffffu : (unsigned)in->chmod);
		r = strbuf_puts(&b, head);
		if (in->json)
			for (size_t w = 0; in->words[w] && r >= 0; w++)
				r = ser_field(&b, in->words[w]);
		else if (r >= 0)
			r = ser_field(&b, in->args);
		if (r >= 0)
			r = strbuf_putc(&b, '\n');
	}
	if (r < 0) {
		free(b.p);
		return NULL;
	}
	if (len)
		*len = b.n;
	return b.p;
}

/* ---- evaluation ---- */

static void step_done(struct cf_step *s)
{
	strv_free(s->argv);
	strv_free(s->env);
	free(s->user);
	free(s->workdir);
	strv_free(s->sources);
	free(s->dest);
}

void cf_recipe_done(struct cf_recipe *r)
{
	free(r->from);
	for (size_t i = 0; i < r->n_steps; i++)
		step_done(&r->steps[i]);
	free(r->steps);
	strv_free(r->env);
	free(r->workdir);
	free(r->user);
	strv_free(r->entrypoint);
	strv_free(r->cmd);
	for (size_t i = 0; i < r->n_labels; i++) {
		free(r->labels[i].key);
		free(r->labels[i].value);
	}
	free(r->labels);
	strv_free(r->args_used);
	*r = (struct cf_recipe){ 0 };
}

/* Sets NAME=VALUE in @v, replacing an existing NAME in place (keeps the order stable). */
static int env_set(char ***v, const char *name, const char *value)
{
	size_t n = strlen(name);
	char *e;

	if (asprintf(&e, "%s=%s", name, value) < 0)
		return -ENOMEM;
	for (size_t i = 0; *v && (*v)[i]; i++)
		if (strncmp((*v)[i], name, n) == 0 && (*v)[i][n] == '=') {
			free((*v)[i]);
			(*v)[i] = e;
			return 0;
		}
	return strv_push_take(v, e);
}

static int strv_append(char ***dst, char *const *src)
{
	for (size_t i = 0; src && src[i]; i++) {
		int r = strv_push(dst, src[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

struct eval {
	char *const *build_args;
	bool *build_arg_used;
	char **global;     /* ARGs declared before FROM that have a value */
	char **stage;      /* ARGs declared after FROM that have a value */
	struct cf_error *err;
};

/* Variables visible to an instruction after FROM: stage ARGs, then ENV (which wins). */
static char **scope_vars(const struct eval *ev, char *const *env)
{
	char **v = calloc(1, sizeof(char *));
	if (!v)
		return NULL;
	if (strv_append(&v, ev->stage) < 0 || strv_append(&v, env) < 0) {
		strv_free(v);
		return NULL;
	}
	return v;
}

static int words_or_fail(const struct cf_instr *in, const char *s, char *const *vars, bool split, char ***w,
			 struct cf_error *err)
{
	const char *why;
	int r = cf_words(s, vars, split, w, &why);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		fail(err, in->line, "%s: %s", cf_kind_name(in->kind), why ? why : "bad word");
		return r;
	}
	return 0;
}

static int eval_arg(struct eval *ev, const struct cf_instr *in, bool before_from, char *const *vars,
		    char ***used)
{
	_cleanup_strv_free_ char **w = NULL;
	int r = words_or_fail(in, in->args, vars, true, &w, ev->err);

	if (r < 0)
		return r;
	for (size_t i = 0; w[i]; i++) {
		char *eq = strchr(w[i], '=');
		const char *value = NULL;
		size_t nl;

		if (eq)
			*eq = 0;
		if (!is_identifier(w[i]))
			return fail(ev->err, in->line, "ARG: '%.64s' is not a valid name", w[i]);
		nl = strlen(w[i]);
		for (size_t b = 0; ev->build_args && ev->build_args[b]; b++)
			if (strncmp(ev->build_args[b], w[i], nl) == 0 && ev->build_args[b][nl] == '=') {
				value = ev->build_args[b] + nl + 1;
				ev->build_arg_used[b] = true;
			}
		if (!value && eq)
			value = eq + 1;
		if (!value && !before_from)
			value = var_lookup(ev->global, w[i], nl); /* ARG NAME re-declares a global */
		if (value) {
			r = env_set(before_from ? &ev->global : &ev->stage, w[i], value);
			if (r < 0)
				return r;
		}
		if (!strv_contains(*used, w[i])) {
			r = strv_push(used, w[i]);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* ENV and LABEL: "K=V K2=V2" or the legacy "K value with blanks". */
static int eval_kv(struct eval *ev, const struct cf_instr *in, char *const *vars, char ***kv_out)
{
	_cleanup_strv_free_ char **w = NULL;
	size_t first = strcspn(in->args, " \t");
	bool legacy = memchr(in->args, '=', first) == NULL;
	int r;

	if (legacy) {
		_cleanup_strv_free_ char **key = NULL, **val = NULL;
		_cleanup_free_ char *k = strndup(in->args, first);
		const char *rest = in->args + first;

		if (!k)
			return -ENOMEM;
		while (*rest == ' ' || *rest == '\t')
			rest++;
		if (!*rest)
			return fail(ev->err, in->line, "%s %.64s needs a value (write %s NAME=VALUE)",
				    cf_kind_name(in->kind), k, cf_kind_name(in->kind));
		r = words_or_fail(in, k, vars, false, &key, ev->err);
		if (r >= 0)
			r = words_or_fail(in, rest, vars, false, &val, ev->err);
		if (r < 0)
			return r;
		r = strv_push(kv_out, key[0] ? key[0] : "");
		if (r >= 0)
			r = strv_push(kv_out, val[0] ? val[0] : "");
		return r;
	}
	r = words_or_fail(in, in->args, vars, true, &w, ev->err);
	if (r < 0)
		return r;
	for (size_t i = 0; w[i]; i++) {
		char *eq = strchr(w[i], '=');
		if (!eq)
			return fail(ev->err, in->line, "%s: '%.64s' is not NAME=VALUE", cf_kind_name(in->kind), w[i]);
		*eq = 0;
		r = strv_push(kv_out, w[i]);
		if (r >= 0)
			r = strv_push(kv_out, eq + 1);
		if (r < 0)
			return r;
	}
	return 0;
}

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

static int label_set(struct cf_recipe *out, const char *k, const char *v)
{
	struct cf_kv *nl;

	for (size_t i = 0; i < out->n_labels; i++)
		if (streq(out->labels[i].key, k)) {
			char *nv = strdup(v);
			if (!nv)
				return -ENOMEM;
			free(out->labels[i].value);
			out->labels[i].value = nv;
			return 0;
		}
	nl = realloc(out->labels, (out->n_labels + 1) * sizeof(*nl));
	if (!nl)
		return -ENOMEM;
	out->labels = nl;
	nl[out->n_labels].key = strdup(k);
	nl[out->n_labels].value = strdup(v);
	if (!nl[out->n_labels].key || !nl[out->n_labels].value) {
		free(nl[out->n_labels].key);
		free(nl[out->n_labels].value);
		return -ENOMEM;
	}
	out->n_labels++;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int push_step(struct cf_recipe *out, struct cf_step *s)
{
	struct cf_step *ns = realloc(out->steps, (out->n_steps + 1) * sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	out->steps = ns;
	ns[out->n_steps++] = *s;
	*s = (struct cf_step){ 0 };
	return 0;
}

static char *abs_path(const char *workdir, const char *p, bool keep_slash)
{
	_cleanup_free_ char *j = p[0] == '/' ? strdup(p) : path_join(workdir, p);
	size_t n = strlen(p);
	char *c, *r;

	if (!j)
		return NULL;
	c = cf_path_clean(j, NULL);
	if (!c || !keep_slash || streq(c, "/"))
		return c;
	if (n == 0 || (p[n - 1] != '/' && !streq(p, ".") && !(n >= 2 && streq(p + n - 2, "/."))))
		return c;
	if (asprintf(&r, "%s/", c) < 0)
		r = NULL;
	free(c);
	return r;
}

static char **shell_or_exec(const struct cf_instr *in)
{
	char **v = NULL;

	if (in->json) {
		v = strv_copy(in->words);
		if (!v)
			return NULL;
		return v;
	}
	if (strv_push(&v, "/bin/sh") < 0 || strv_push(&v, "-c") < 0 || strv_push(&v, in->args) < 0) {
		strv_free(v);
		return NULL;
	}
	return v;
}

static bool has_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

static int eval_copy(struct eval *ev, const struct cf_instr *in, char *const *vars, const char *workdir,
		     struct cf_step *st)
{
	_cleanup_strv_free_ char **w = NULL;
	size_t n;
	bool glob = false;
	int r;

	if (in->json) {
		for (size_t i = 0; in->words[i]; i++) {
			_cleanup_strv_free_ char **one = NULL;
			r = words_or_fail(in, in->words[i], vars, false, &one, ev->err);
			if (r < 0)
				return r;
			r = strv_push(&w, one[0] ? one[0] : "");
			if (r < 0)
				return r;
		}
	} else {
		r = words_or_fail(in, in->args, vars, true, &w, ev->err);
		if (r < 0)
			return r;
	}
	n = strv_length(w); /* n >= 2 below: w is not NULL, which the analyzer does not see */
	if (n < 2)
		return fail(ev->err, in->line, "COPY needs at least one source and a destination");
	for (size_t i = 0; i + 1 < n; i++) {
		bool esc = false;
		_cleanup_free_ char *c = NULL;
		const char *s = w[i]; /* NOLINT(clang-analyzer-core.NullDereference): n >= 2 */

		if (!*s)
			return fail(ev->err, in->line, "COPY: an empty source");
		while (*s == '/')
			s++; /* "/x" names the context's x, as in Docker */
		c = cf_path_clean(*s ? s : ".", &esc);
		if (!c)
			return -ENOMEM;
		if (esc)
			return fail(ev->err, in->line, "COPY source '%.64s' is outside the build context", w[i]);
		glob |= has_glob(c);
		r = strv_push_take(&st->sources, TAKE_PTR(c));
		if (r < 0)
			return r;
	}
	if (!w[n - 1][0])
		return fail(ev->err, in->line, "COPY: an empty destination");
	st->dest = abs_path(workdir, w[n - 1], true);
	if (!st->dest)
		return -ENOMEM;
	if ((n > 2 || glob) && st->dest[strlen(st->dest) - 1] != '/')
		return fail(ev->err, in->line, "COPY with several sources or a wildcard needs a destination ending in '/'");
	st->chmod = in->chmod;
	return 0;
}

/* FROM: one image reference, never scratch. Return: 0 or -errno (said). */
static int eval_from(const struct cf_instr *in, char *const *vars, struct cf_recipe *rc, struct cf_error *err)
{
	_cleanup_strv_free_ char **w = NULL;
	int r = words_or_fail(in, in->args, vars, true, &w, err);

	if (r < 0)
		return r;
	if (strv_length(w) != 1 || !w[0][0])
		return fail(err, in->line, "FROM takes exactly one image reference");
	if (streq(w[0], "scratch"))
		return fail(err, in->line, "FROM scratch is not supported: the tag needs a base digest");
	if (has_control(w[0]) || strpbrk(w[0], " \t$"))
		return fail(err, in->line, "FROM: '%.64s' is not an image reference", w[0]);
	rc->from = strdup(w[0]);
	rc->from_line = in->line;
	return rc->from ? 0 : -ENOMEM;
}

/* ENV and LABEL: KEY=VALUE pairs into the recipe's environment or labels. Return: 0 or -errno
 * (said). */
static int eval_env_label(struct eval *ev, const struct cf_instr *in, char *const *vars, struct cf_recipe *rc)
{
	_cleanup_strv_free_ char **kv = NULL;
	struct cf_error *err = ev->err;
	int r = eval_kv(ev, in, vars, &kv);

	for (size_t k = 0; r >= 0 && kv && kv[k]; k += 2) {
		if (in->kind == CF_ENV && !is_identifier(kv[k]))
			r = fail(err, in->line, "ENV: '%.64s' is not a valid variable name", kv[k]);
		else if (in->kind == CF_LABEL && (!kv[k][0] || has_control(kv[k])))
			r = fail(err, in->line, "LABEL: an empty or unprintable key");
		else if (in->kind == CF_ENV)
			r = env_set(&rc->env, kv[k], kv[k + 1]);
		else
			r = label_set(rc, kv[k], kv[k + 1]);
	}
	return r;
}

/* WORKDIR: the new working directory, and a step that creates it. Return: 0 or -errno (said). */
static int eval_workdir(const struct cf_instr *in, char *const *vars, struct cf_recipe *rc, struct cf_step *st,
			struct cf_error *err)
{
	_cleanup_strv_free_ char **w = NULL;
	int r = words_or_fail(in, in->args, vars, false, &w, err);

	if (r < 0)
		return r;
	if (!w[0] || !w[0][0] || has_control(w[0]))
		return fail(err, in->line, "WORKDIR needs a path");
	st->workdir = abs_path(rc->workdir, w[0], false);
	if (!st->workdir)
		return -ENOMEM;
	free(rc->workdir);
	rc->workdir = strdup(st->workdir);
	return rc->workdir ? push_step(rc, st) : -ENOMEM;
}

/* USER: the user[:group] of the following RUN steps. Return: 0 or -errno (said). */
static int eval_user(const struct cf_instr *in, char *const *vars, struct cf_recipe *rc, struct cf_error *err)
{
	_cleanup_strv_free_ char **w = NULL;
	int r = words_or_fail(in, in->args, vars, false, &w, err);

	if (r < 0)
		return r;
	if (!w[0] || !w[0][0] || strpbrk(w[0], " \t") || has_control(w[0]))
		return fail(err, in->line, "USER needs one user[:group]");
	free(rc->user);
	rc->user = strdup(w[0]);
	return rc->user ? 0 : -ENOMEM;
}

/* RUN: a step with the command, working directory, user and environment in force. Return: 0 or
 * -ENOMEM (@st is freed on failure). */
static int eval_run(const struct eval *ev, const struct cf_instr *in, struct cf_recipe *rc, struct cf_step *st)
{
	int r = 0;

	st->argv = shell_or_exec(in);
	st->workdir = strdup(rc->workdir);
	st->user = rc->user ? strdup(rc->user) : NULL;
	st->env = strv_copy(rc->env);
	if (!st->argv || !st->workdir || (rc->user && !st->user) || !st->env) {
		step_done(st);
		return -ENOMEM;
	}
	/* Build args reach RUN as environment, below any ENV of the same name. */
	for (size_t k = 0; ev->stage && ev->stage[k] && r >= 0; k++) {
		size_t nl = strcspn(ev->stage[k], "=");
		if (!var_lookup(rc->env, ev->stage[k], nl))
			r = strv_push(&st->env, ev->stage[k]);
	}
	if (r >= 0)
		r = push_step(rc, st);
	else
		step_done(st);
	return r;
}

/* CMD and ENTRYPOINT: replace the recipe's. Return: 0 or -ENOMEM. */
static int eval_cmd(const struct cf_instr *in, struct cf_recipe *rc)
{
	char **v = shell_or_exec(in);

	if (!v)
		return -ENOMEM;
	if (in->kind == CF_CMD) {
		strv_free(rc->cmd);
		rc->cmd = v;
		rc->cmd_set = true;
	} else {
		strv_free(rc->entrypoint);
		rc->entrypoint = v;
		rc->entrypoint_set = true;
	}
	return 0;
}

/* Instruction @in with the variables @vars in scope, into @rc. Return: 0 or -errno (said). */
static int eval_instr(struct eval *ev, const struct cf_instr *in, char *const *vars, bool *before_from,
		      struct cf_recipe *rc)
{
	struct cf_step st = { .kind = in->kind, .line = in->line, .chmod = (mode_t)-1 };
	int r;

	switch (in->kind) {
	case CF_ARG:
		return eval_arg(ev, in, *before_from, vars, &rc->args_used);
	case CF_FROM:
		*before_from = false;
		return eval_from(in, vars, rc, ev->err);
	case CF_ENV:
	case CF_LABEL:
		return eval_env_label(ev, in, vars, rc);
	case CF_WORKDIR:
		return eval_workdir(in, vars, rc, &st, ev->err);
	case CF_USER:
		return eval_user(in, vars, rc, ev->err);
	case CF_RUN:
		return eval_run(ev, in, rc, &st);
	case CF_COPY:
		r = eval_copy(ev, in, vars, rc->workdir, &st);
		if (r >= 0) {
			st.workdir = strdup(rc->workdir);
			r = st.workdir ? push_step(rc, &st) : -ENOMEM;
		}
		if (r < 0)
			step_done(&st);
		return r;
	case CF_ENTRYPOINT:
	case CF_CMD:
		return eval_cmd(in, rc);
	case CF_KIND_MAX:
		break;
	}
	return fail(ev->err, in->line, "internal: unknown instruction");
}

/* Every --build-arg is NAME=VALUE with a valid name, and there are not too many. Return: 0 or
 * -errno (said). */
static int check_build_args(char *const *build_args, size_t nba, struct cf_error *err)
{
	if (nba > CF_MAX_BUILD_ARGS)
		return fail(err, 0, "more than %u build args", CF_MAX_BUILD_ARGS);
	for (size_t i = 0; i < nba; i++) {
		const char *eq = strchr(build_args[i], '=');
		_cleanup_free_ char *name = eq ? strndup(build_args[i], (size_t)(eq - build_args[i])) : NULL;
		if (!eq)
			return fail(err, 0, "--build-arg '%.64s' needs a value (NAME=VALUE)", build_args[i]);
		if (!name)
			return -ENOMEM;
		if (!is_identifier(name))
			return fail(err, 0, "--build-arg '%.64s' is not a valid name", name);
	}
	return 0;
}

int cf_resolve(const struct containerfile *cf, char *const *build_args, const struct cf_base *base,
	       struct cf_recipe *out, struct cf_error *err)
{
	static char *const no_vars[] = { NULL };
	struct eval ev = { .build_args = build_args, .err = err };
	struct cf_recipe rc = { 0 };
	bool before_from = true;
	size_t nba = strv_length(build_args);
	int r = 0;

	*out = rc;
	if (err)
		*err = (struct cf_error){ 0 };
	r = check_build_args(build_args, nba, err);
	if (r < 0)
		return r;
	ev.build_arg_used = calloc(nba + 1, sizeof(bool));
	if (!ev.build_arg_used)
		return -ENOMEM;
	rc.env = strv_copy(base && base->env ? base->env : no_vars);
	rc.workdir = cf_path_clean(base && base->workdir && base->workdir[0] == '/' ? base->workdir : "/", NULL);
	rc.user = base && base->user && base->user[0] ? strdup(base->user) : NULL;
	rc.args_used = calloc(1, sizeof(char *));
	if (!rc.env || !rc.workdir || (base && base->user && base->user[0] && !rc.user) || !rc.args_used) {
		r = -ENOMEM;
		goto out;
	}

	for (size_t i = 0; i < cf->n && r >= 0; i++) {
		_cleanup_strv_free_ char **vars =
			before_from ? strv_copy(ev.global ? ev.global : no_vars) : scope_vars(&ev, rc.env);

		r = vars ? eval_instr(&ev, &cf->ins[i], vars, &before_from, &rc) : -ENOMEM;
	}
	if (r < 0)
		goto out;
	for (size_t i = 0; i < nba; i++)
		if (!ev.build_arg_used[i]) {
			size_t nl = strcspn(build_args[i], "=");
			r = fail(err, 0, "--build-arg %.*s is not declared by an ARG in the recipe", (int)(nl < 64 ? nl : 64),
				 build_args[i]);
			goto out;
		}
	qsort(rc.args_used, strv_length(rc.args_used), sizeof(char *), cmp_str);
	*out = rc;
	rc = (struct cf_recipe){ 0 };
out:
	cf_recipe_done(&rc);
	strv_free(ev.global);
	strv_free(ev.stage);
	free(ev.build_arg_used);
	return r;
}
