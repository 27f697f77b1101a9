// SPDX-License-Identifier: GPL-2.0-or-later
/* test-containerfile.c — the Containerfile subset: tables of valid and invalid recipes */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build/containerfile.h"
#include "util/util.h"

#define S(x) ((char *)(x)) /* -Wwrite-strings: test tables are never written */

/* ---- invalid recipes: each names its line and the instruction or problem ---- */

static const struct bad_case {
	const char *text;
	unsigned line;
	const char *msg; /* substring of the message */
	int err;
} bad_cases[] = {
	{ "FROM a\nADD x /x\n", 2, "ADD is not supported", -EINVAL },
	{ "FROM a\nRUN true\nHEALTHCHECK CMD true\n", 3, "HEALTHCHECK is not supported", -EINVAL },
	{ "FROM a\nONBUILD RUN x\n", 2, "ONBUILD is not supported", -EINVAL },
	{ "FROM a\nshell [\"bash\"]\n", 2, "SHELL is not supported", -EINVAL },
	{ "FROM a\nVOLUME /data\n", 2, "VOLUME is not supported", -EINVAL },
	{ "FROM a\nEXPOSE 80\n", 2, "EXPOSE is not supported", -EINVAL },
	{ "FROM a\nSTOPSIGNAL SIGTERM\n", 2, "STOPSIGNAL is not supported", -EINVAL },
	{ "FROM a\nMAINTAINER me\n", 2, "MAINTAINER is not supported", -EINVAL },
	{ "FROM a\nFOO bar\n", 2, "unknown instruction 'FOO'", -EINVAL },
	{ "FROM a AS build\nRUN x\n", 1, "multi-stage", -EINVAL },
	{ "FROM a\nRUN x\nFROM b\n", 3, "second FROM", -EINVAL },
	{ "FROM --platform=linux/arm64 a\n", 1, "FROM flag '--platform=linux/arm64'", -EINVAL },
	{ "FROM a\nCOPY --from=build /x /x\n", 2, "COPY --from", -EINVAL },
	{ "FROM a\nCOPY --chown=1:1 x /x\n", 2, "COPY --chown", -EINVAL },
	{ "FROM a\nCOPY --link x /x\n", 2, "COPY flag '--link'", -EINVAL },
	{ "FROM a\nCOPY --chmod=9 x /x\n", 2, "octal", -EINVAL },
	{ "FROM a\nCOPY --chmod=17777 x /x\n", 2, "octal", -EINVAL },
	{ "FROM a\nRUN --mount=type=cache,target=/x true\n", 2, "RUN flag '--mount", -EINVAL },
	{ "FROM a\nRUN --network=none true\n", 2, "RUN flag", -EINVAL },
	{ "FROM a\nRUN <<EOF\necho hi\nEOF\n", 2, "heredoc", -EINVAL },
	{ "RUN true\nFROM a\n", 1, "RUN before FROM", -EINVAL },
	{ "ENV A=b\nFROM a\n", 1, "ENV before FROM", -EINVAL },
	{ "# comment only\n", 0, "no FROM", -EINVAL },
	{ "", 0, "no FROM", -EINVAL },
	{ "# escape=`\nFROM a\n", 1, "escape=`", -EINVAL },
	{ "# escape=\\\n# escape=\\\nFROM a\n", 2, "twice", -EINVAL },
	{ "FROM a\nRUN\n", 2, "RUN needs arguments", -EINVAL },
	{ "FROM a\nRUN []\n", 2, "no command", -EINVAL },
	{ "FROM a\nCOPY x\n", 2, "source and a destination", -EINVAL },
	{ "FROM a\nCOPY [\"x\"]\n", 2, "source and a destination", -EINVAL },
	{ "FROM a\nCMD\n", 2, "CMD needs arguments", -EINVAL },
	/* the line reported is the keyword's, even after continuations */
	{ "FROM a\nRUN a \\\n  b \\\n  c\nADD x y\n", 5, "ADD", -EINVAL },
	/* comment lines inside a continuation do not end it; the next line is an instruction */
	{ "FROM a\nRUN a \\\n# note\n  b\nVOLUME /x\n", 5, "VOLUME", -EINVAL },
};

static void test_bad(void **state)
{
	for (size_t i = 0; i < ELEMENTSOF(bad_cases); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct containerfile cf;
		struct cf_error err;
		int r = cf_parse(c->text, strlen(c->text), &cf, &err);

		if (r != c->err || err.line != c->line || !strstr(err.msg, c->msg))
			fail_msg("case %zu: r=%d line=%u msg='%s' (want %d line %u '%s')", i, r, err.line,
				 err.msg, c->err, c->line, c->msg);
		assert_null(cf.ins);
	}
}

/* ---- bounds ---- */

static void test_bounds(void **state)
{
	struct containerfile cf;
	struct cf_error err;
	size_t n = CF_MAX_FILE + 1;
	char *big = malloc(n + 1);
	int r;

	memset(big, '#', n);
	big[n] = 0;
	assert_int_equal(cf_parse(big, n, &cf, &err), -EFBIG);
	assert_non_null(strstr(err.msg, "larger"));

	/* one physical line over CF_MAX_LINE */
	memcpy(big, "FROM a\nRUN ", 11);
	memset(big + 11, 'x', CF_MAX_LINE + 2);
	big[11 + CF_MAX_LINE + 2] = 0;
	r = cf_parse(big, strlen(big), &cf, &err);
	assert_int_equal(r, -EFBIG);
	assert_int_equal(err.line, 2);

	/* a logical line over CF_MAX_LOGICAL, built from short continued lines */
	{
		size_t off = 0;
		off += (size_t)snprintf(big + off, n - off, "FROM a\nRUN ");
		while (off < 2 * CF_MAX_LOGICAL)
			off += (size_t)snprintf(big + off, n - off, "%s \\\n", "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy");
		off += (size_t)snprintf(big + off, n - off, "end\n");
		r = cf_parse(big, off, &cf, &err);
		assert_int_equal(r, -EFBIG);
		assert_non_null(strstr(err.msg, "instruction longer"));
	}

	/* instruction count */
	{
		size_t off = 0;
		off += (size_t)snprintf(big + off, n - off, "FROM a\n");
		for (unsigned i = 0; i < CF_MAX_INSTRUCTIONS; i++)
			off += (size_t)snprintf(big + off, n - off, "ENV A%u=1\n", i);
		r = cf_parse(big, off, &cf, &err);
		assert_int_equal(r, -EFBIG);
		assert_int_equal(err.line, CF_MAX_INSTRUCTIONS + 1);
	}
	/* NUL byte */
	assert_int_equal(cf_parse("FROM a\0\n", 8, &cf, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "NUL"));
	free(big);
}

/* ---- valid recipes ---- */

static void parse_ok(const char *text, struct containerfile *cf)
{
	struct cf_error err;
	int r = cf_parse(text, strlen(text), cf, &err);
	if (r != 0)
		fail_msg("parse failed: %d line %u: %s", r, err.line, err.msg);
}

static void resolve_ok(const struct containerfile *cf, char *const *args, const struct cf_base *base,
		       struct cf_recipe *rc)
{
	struct cf_error err;
	int r = cf_resolve(cf, args, base, rc, &err);
	if (r != 0)
		fail_msg("resolve failed: %d line %u: %s", r, err.line, err.msg);
}

static const char *env_get(char *const *env, const char *name)
{
	size_t n = strlen(name);
	const char *v = NULL;
	for (size_t i = 0; env && env[i]; i++)
		if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
			v = env[i] + n + 1;
	return v;
}

static void test_full_recipe(void **state)
{
	static const char text[] =
		"# syntax=docker/dockerfile:1\n"
		"# escape=\\\n"
		"ARG BASE=debian\n"
		"ARG TAG=bookworm\n"
		"from ${BASE}:${TAG}\n"
		"\n"
		"# a comment\n"
		"ARG TAG\n"
		"ARG VER=1.2\n"
		"ENV PATH=/opt/bin:$PATH HOME=/root\n"
		"ENV LEGACY a value with  blanks\n"
		"LABEL org.example.v=\"$VER\" other='x $VER'\n"
		"WORKDIR /src\n"
		"WORKDIR sub/../app\n"
		"RUN apt-get update && \\\n"
		"    # an inline comment line\n"
		"    apt-get install -y jq\n"
		"RUN [\"/bin/echo\", \"$VER\"]\n"
		"COPY a.txt b/ ./dest/\n"
		"COPY --chmod=0755 [\"script.sh\", \"/usr/local/bin/s\"]\n"
		"USER ${UNSET:-builder}\n"
		"ENTRYPOINT [\"/usr/bin/tini\", \"--\"]\n"
		"CMD echo hi\r\n";
	char *base_env[] = { S("PATH=/usr/bin:/bin"), S("TERM=xterm"), NULL };
	struct cf_base base = { .env = base_env, .workdir = "/", .user = NULL };
	char *args[] = { S("VER=9.9"), NULL };
	struct containerfile cf;
	struct cf_recipe rc;

	parse_ok(text, &cf);
	assert_int_equal(cf.n, 17);
	assert_int_equal(cf.ins[0].kind, CF_ARG);
	assert_int_equal(cf.ins[2].kind, CF_FROM);
	assert_int_equal(cf.ins[2].line, 5);
	assert_int_equal(cf.ins[10].kind, CF_RUN);
	assert_int_equal(cf.ins[10].line, 15);
	assert_false(cf.ins[10].json);
	assert_string_equal(cf.ins[10].args, "apt-get update &&     apt-get install -y jq");
	assert_true(cf.ins[11].json);
	assert_string_equal(cf.ins[11].words[1], "$VER");
	assert_int_equal(cf.ins[13].chmod, 0755);
	assert_true(cf.ins[13].json);

	resolve_ok(&cf, args, &base, &rc);
	assert_string_equal(rc.from, "debian:bookworm");
	assert_int_equal(rc.from_line, 5);
	assert_string_equal(env_get(rc.env, "PATH"), "/opt/bin:/usr/bin:/bin");
	assert_string_equal(env_get(rc.env, "TERM"), "xterm");
	assert_string_equal(env_get(rc.env, "LEGACY"), "a value with  blanks");
	assert_null(env_get(rc.env, "VER")); /* ARG values never reach the image */
	assert_int_equal(rc.n_labels, 2);
	assert_string_equal(rc.labels[0].key, "org.example.v");
	assert_string_equal(rc.labels[0].value, "9.9");
	assert_string_equal(rc.labels[1].value, "x $VER"); /* single quotes: literal */
	assert_string_equal(rc.workdir, "/src/app");
	assert_string_equal(rc.user, "builder");
	assert_true(rc.entrypoint_set);
	assert_string_equal(rc.entrypoint[0], "/usr/bin/tini");
	assert_true(rc.cmd_set);
	assert_string_equal(rc.cmd[0], "/bin/sh");
	assert_string_equal(rc.cmd[2], "echo hi");
	assert_int_equal(strv_length(rc.args_used), 3);
	assert_string_equal(rc.args_used[0], "BASE");
	assert_string_equal(rc.args_used[2], "VER");

	/* steps: WORKDIR, WORKDIR, RUN, RUN, COPY, COPY */
	assert_int_equal(rc.n_steps, 6);
	assert_int_equal(rc.steps[0].kind, CF_WORKDIR);
	assert_string_equal(rc.steps[0].workdir, "/src");
	assert_string_equal(rc.steps[1].workdir, "/src/app");
	assert_int_equal(rc.steps[2].kind, CF_RUN);
	assert_string_equal(rc.steps[2].argv[2], "apt-get update &&     apt-get install -y jq");
	assert_string_equal(rc.steps[2].workdir, "/src/app");
	assert_null(rc.steps[2].user);
	/* the build arg reaches RUN as environment, and TAG (re-declared global) too */
	assert_string_equal(env_get(rc.steps[2].env, "VER"), "9.9");
	assert_string_equal(env_get(rc.steps[2].env, "TAG"), "bookworm");
	assert_null(env_get(rc.steps[2].env, "BASE")); /* global ARG not re-declared: FROM only */
	assert_string_equal(env_get(rc.steps[2].env, "PATH"), "/opt/bin:/usr/bin:/bin");
	/* RUN exec form: no expansion by aisb */
	assert_string_equal(rc.steps[3].argv[1], "$VER");
	assert_int_equal(rc.steps[4].kind, CF_COPY);
	assert_string_equal(rc.steps[4].sources[0], "a.txt");
	assert_string_equal(rc.steps[4].sources[1], "b");
	assert_string_equal(rc.steps[4].dest, "/src/app/dest/");
	assert_int_equal(rc.steps[4].chmod, (mode_t)-1);
	assert_string_equal(rc.steps[5].dest, "/usr/local/bin/s");
	assert_int_equal(rc.steps[5].chmod, 0755);
	cf_recipe_done(&rc);

	/* without build args: defaults */
	resolve_ok(&cf, NULL, &base, &rc);
	assert_string_equal(rc.labels[0].value, "1.2");
	cf_recipe_done(&rc);
	cf_done(&cf);
}

static void test_build_args(void **state)
{
	struct containerfile cf;
	struct cf_recipe rc;
	struct cf_error err;
	char *a1[] = { S("TAG=trixie"), NULL };
	char *a2[] = { S("NOPE=1"), NULL };
	char *a3[] = { S("NOVALUE"), NULL };
	char *a4[] = { S("1BAD=x"), NULL };
	char *a5[] = { S("TAG="), NULL };

	parse_ok("ARG TAG=bookworm\nFROM debian:$TAG\nRUN echo\n", &cf);
	resolve_ok(&cf, a1, NULL, &rc);
	assert_string_equal(rc.from, "debian:trixie");
	/* a global ARG that is not re-declared does not reach RUN */
	assert_null(env_get(rc.steps[0].env, "TAG"));
	cf_recipe_done(&rc);
	resolve_ok(&cf, NULL, NULL, &rc);
	assert_string_equal(rc.from, "debian:bookworm");
	cf_recipe_done(&rc);

	assert_int_equal(cf_resolve(&cf, a2, NULL, &rc, &err), -EINVAL);
	assert_int_equal(err.line, 0);
	assert_non_null(strstr(err.msg, "--build-arg NOPE is not declared"));
	assert_int_equal(cf_resolve(&cf, a3, NULL, &rc, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "needs a value"));
	assert_int_equal(cf_resolve(&cf, a4, NULL, &rc, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not a valid name"));
	/* an empty value is a value: FROM debian: is then refused as a reference? no: kept */
	resolve_ok(&cf, a5, NULL, &rc);
	assert_string_equal(rc.from, "debian:");
	cf_recipe_done(&rc);
	cf_done(&cf);

	/* ${VAR:-default} in FROM; ENV wins over ARG of the same name in RUN */
	parse_ok("ARG IMG\nFROM ${IMG:-alpine}\nARG X=arg\nENV X=env\nRUN true\n", &cf);
	resolve_ok(&cf, NULL, NULL, &rc);
	assert_string_equal(rc.from, "alpine");
	assert_string_equal(env_get(rc.steps[0].env, "X"), "env");
	cf_recipe_done(&rc);
	cf_done(&cf);
}

static void test_resolve_errors(void **state)
{
	static const struct {
		const char *text;
		unsigned line;
		const char *msg;
	} cases[] = {
		{ "FROM scratch\n", 1, "scratch" },
		{ "ARG E\nFROM $E\n", 2, "exactly one" },
		{ "FROM a\nENV 1X=y\n", 2, "not a valid variable name" },
		{ "FROM a\nENV X\n", 2, "needs a value" },
		{ "FROM a\nENV X=1 Y\n", 2, "not NAME=VALUE" },
		{ "FROM a\nENV X=\"open\n", 2, "unterminated double quote" },
		{ "FROM a\nENV X='open\n", 2, "unterminated single quote" },
		{ "FROM a\nENV X=${Y#pre}\n", 2, "unsupported substitution" },
		{ "FROM a\nENV X=${Y:?boom}\n", 2, "unsupported substitution" },
		{ "FROM a\nENV X=${Y\n", 2, "unsupported substitution" },
		{ "FROM a\nENV X=${Y:-open\n", 2, "unterminated" },
		{ "FROM a\nENV X=${}\n", 2, "bad substitution" },
		{ "FROM a\nARG 9x\n", 2, "not a valid name" },
		{ "FROM a\nCOPY ../secret /x\n", 2, "outside the build context" },
		{ "FROM a\nCOPY a/../../b /x\n", 2, "outside the build context" },
		{ "FROM a\nCOPY a b /dir\n", 2, "ending in '/'" },
		{ "FROM a\nCOPY *.c /dir\n", 2, "ending in '/'" },
		{ "FROM a\nUSER\t\n", 2, "USER needs arguments" },
		{ "FROM a\nUSER \"a b\"\n", 2, "USER needs one" },
		{ "FROM a\nLABEL \"\"=x\n", 2, "LABEL: an empty" },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct containerfile cf;
		struct cf_recipe rc;
		struct cf_error err;
		int r = cf_parse(cases[i].text, strlen(cases[i].text), &cf, &err);

		if (r == 0)
			r = cf_resolve(&cf, NULL, NULL, &rc, &err);
		if (r != -EINVAL || err.line != cases[i].line || !strstr(err.msg, cases[i].msg))
			fail_msg("case %zu: r=%d line=%u '%s' (want line %u '%s')", i, r, err.line, err.msg,
				 cases[i].line, cases[i].msg);
		cf_done(&cf);
	}
}

/* ---- word processing ---- */

static void test_words(void **state)
{
	static const struct {
		const char *in;
		bool split;
		const char *out; /* words joined by '|' */
	} cases[] = {
		{ "a b  c", true, "a|b|c" },
		{ "\"a b\" 'c d' e\\ f", true, "a b|c d|e f" },
		{ "$A ${A} x${A}y", true, "1|1|x1y" },
		{ "$NOPE.", true, "." },
		{ "${NOPE:-def} ${A:-def} ${EMPTY:-def} ${EMPTY-def}", true, "def|1|def|" },
		{ "${A:+alt} ${NOPE:+alt}x ${EMPTY+alt} ${EMPTY:+alt}y", true, "alt|x|alt|y" },
		{ "${NOPE:-${A}-${B}}", true, "1-two words" },
		{ "${NOPE:-a b}", true, "a b" },
		{ "\\$A '$A' \"$A\" \"\\$A\"", true, "$A|$A|1|$A" },
		{ "\"\" ''", true, "|" },
		{ "a $ b$", true, "a|$|b$" },
		{ "  lead and  trail ", false, "  lead and  trail " },
		{ "${B}", true, "two words" },
		{ "x\\", true, "x\\" },
		{ "\"a\\\"b\\n\"", true, "a\"b\\n" },
		{ "$A_1 $A", true, "|1" },
	};
	char *vars[] = { S("A=0"), S("A=1"), S("B=two words"), S("EMPTY="), NULL };

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char **w = NULL;
		const char *why;
		char joined[256] = "";
		int r = cf_words(cases[i].in, vars, cases[i].split, &w, &why);

		if (r != 0)
			fail_msg("case %zu: r=%d %s", i, r, why);
		for (size_t k = 0; w[k]; k++) {
			if (k)
				strncat(joined, "|", sizeof(joined) - strlen(joined) - 1);
			strncat(joined, w[k], sizeof(joined) - strlen(joined) - 1);
		}
		if (!streq(joined, cases[i].out))
			fail_msg("case %zu: '%s' -> '%s' want '%s'", i, cases[i].in, joined, cases[i].out);
		strv_free(w);
	}
}

static void test_expansion_bounds(void **state)
{
	/* doubling by repetition is capped */
	char *v = malloc(CF_MAX_EXPANSION / 2 + 8);
	char *vars[2];
	char **w = NULL;
	const char *why;
	char nest[512] = "";

	memcpy(v, "X=", 2);
	memset(v + 2, 'x', CF_MAX_EXPANSION / 2 + 4);
	v[CF_MAX_EXPANSION / 2 + 6] = 0;
	vars[0] = v;
	vars[1] = NULL;
	assert_int_equal(cf_words("$X$X", vars, true, &w, &why), -E2BIG);
	assert_int_equal(cf_words("$X", vars, true, &w, &why), 0);
	strv_free(w);

	/* nesting depth is capped */
	for (int i = 0; i < 40; i++)
		strncat(nest, "${A:-", sizeof(nest) - strlen(nest) - 1);
	for (int i = 0; i < 40; i++)
		strncat(nest, "}", sizeof(nest) - strlen(nest) - 1);
	assert_int_equal(cf_words(nest, vars, true, &w, &why), -EINVAL);
	assert_non_null(strstr(why, "nested"));
	/* no vars: no expansion at all */
	assert_int_equal(cf_words("$X ${Y:?z}", NULL, true, &w, &why), 0);
	assert_string_equal(w[0], "$X");
	assert_string_equal(w[1], "${Y:?z}");
	strv_free(w);
	free(v);
}

static void test_path_clean(void **state)
{
	static const struct {
		const char *in, *out;
		bool esc;
	} cases[] = {
		{ "a/b/../c", "a/c", false }, { "./a//b/", "a/b", false }, { ".", ".", false },
		{ "", ".", false },          { "/", "/", false },          { "/../x", "/x", true },
		{ "../x", "x", true },       { "a/..", ".", false },       { "/a/./b/../../c", "/c", false },
		{ "a/../../b", "b", true },  { "...", "...", false },      { "..a/b", "..a/b", false },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		bool esc = !cases[i].esc;
		char *c = cf_path_clean(cases[i].in, &esc);
		if (!streq(c, cases[i].out) || esc != cases[i].esc)
			fail_msg("case %zu: '%s' -> '%s' esc=%d", i, cases[i].in, c, esc);
		free(c);
	}
}

static void test_forms(void **state)
{
	struct containerfile cf;
	struct cf_recipe rc;

	/* exec vs shell: not-JSON stays shell; JSON with non-strings is shell */
	parse_ok("FROM a\nRUN [ -f x ] && echo y\nRUN [\"a\", 1]\nCMD []\nENTRYPOINT [\"e\"]  \n"
		 "RUN [\"sh\",\"-c\",\"echo \\\"q\\\"\"]\n",
		 &cf);
	assert_false(cf.ins[1].json);
	assert_false(cf.ins[2].json);
	assert_true(cf.ins[3].json);
	assert_null(cf.ins[3].words[0]);
	assert_true(cf.ins[4].json);
	assert_string_equal(cf.ins[5].words[2], "echo \"q\"");
	resolve_ok(&cf, NULL, NULL, &rc);
	assert_true(rc.cmd_set);
	assert_null(rc.cmd[0]);
	assert_string_equal(rc.steps[0].argv[0], "/bin/sh");
	assert_string_equal(rc.steps[0].argv[2], "[ -f x ] && echo y");
	assert_string_equal(rc.steps[1].argv[2], "[\"a\", 1]");
	cf_recipe_done(&rc);
	cf_done(&cf);

	/* relative WORKDIR against the base's; COPY dest relative and '.' */
	parse_ok("FROM a\nCOPY x .\nWORKDIR w\nCOPY /x y\nCOPY . /\nCOPY [\"$D/\", \"z\"]\nENV D=dd\nCOPY $D $D/\n", &cf);
	{
		struct cf_base base = { .workdir = "/base" };
		resolve_ok(&cf, NULL, &base, &rc);
	}
	assert_string_equal(rc.steps[0].dest, "/base/");
	assert_string_equal(rc.steps[1].workdir, "/base/w");
	assert_string_equal(rc.steps[2].sources[0], "x");
	assert_string_equal(rc.steps[2].dest, "/base/w/y");
	assert_string_equal(rc.steps[3].sources[0], ".");
	assert_string_equal(rc.steps[3].dest, "/");
	assert_string_equal(rc.steps[4].sources[0], "."); /* $D unset: "/" → context root */
	assert_string_equal(rc.steps[4].dest, "/base/w/z");
	assert_string_equal(rc.steps[5].sources[0], "dd");
	assert_string_equal(rc.steps[5].dest, "/base/w/dd/");
	cf_recipe_done(&rc);
	cf_done(&cf);

	/* USER from the base is kept; a RUN sees it */
	parse_ok("FROM a\nRUN id\nUSER 1000:1000\nRUN id\n", &cf);
	{
		struct cf_base base = { .user = "daemon" };
		resolve_ok(&cf, NULL, &base, &rc);
	}
	assert_string_equal(rc.steps[0].user, "daemon");
	assert_string_equal(rc.steps[1].user, "1000:1000");
	assert_false(rc.cmd_set);
	assert_false(rc.entrypoint_set);
	cf_recipe_done(&rc);
	cf_done(&cf);
}

static void test_serialize(void **state)
{
	struct containerfile a, b, c;
	char *sa, *sb, *sc;

	/* comments, blank lines, keyword case and continuation layout do not matter */
	parse_ok("FROM x\nRUN a && b\nENV K=V\n", &a);
	parse_ok("# hi\nfrom x\n\nrun a && \\\n# inner\nb\n  ENV   K=V  \n", &b);
	parse_ok("FROM x\nRUN a && c\nENV K=V\n", &c);
	sa = cf_serialize(&a, NULL);
	sb = cf_serialize(&b, NULL);
	sc = cf_serialize(&c, NULL);
	assert_string_equal(sa, sb);
	assert_string_not_equal(sa, sc);
	free(sa);
	free(sb);
	free(sc);
	cf_done(&a);
	cf_done(&b);
	cf_done(&c);

	/* exec vs shell form and --chmod are part of the normal form */
	parse_ok("FROM x\nCMD [\"a\"]\n", &a);
	parse_ok("FROM x\nCMD \"a\"\n", &b);
	sa = cf_serialize(&a, NULL);
	sb = cf_serialize(&b, NULL);
	assert_string_not_equal(sa, sb);
	free(sa);
	free(sb);
	cf_done(&a);
	cf_done(&b);
	parse_ok("FROM x\nCOPY --chmod=755 a /a\n", &a);
	parse_ok("FROM x\nCOPY a /a\n", &b);
	sa = cf_serialize(&a, NULL);
	sb = cf_serialize(&b, NULL);
	assert_string_not_equal(sa, sb);
	free(sa);
	free(sb);
	cf_done(&a);
	cf_done(&b);
}

static void test_entrypoint_resets_cmd_flag(void **state)
{
	struct containerfile cf;
	struct cf_recipe rc;

	/* ENTRYPOINT here without CMD here: the builder must clear the base's CMD */
	parse_ok("FROM a\nENTRYPOINT [\"x\"]\n", &cf);
	resolve_ok(&cf, NULL, NULL, &rc);
	assert_true(rc.entrypoint_set);
	assert_false(rc.cmd_set);
	cf_recipe_done(&rc);
	cf_done(&cf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_full_recipe),
		cmocka_unit_test(test_build_args),
		cmocka_unit_test(test_resolve_errors),
		cmocka_unit_test(test_words),
		cmocka_unit_test(test_expansion_bounds),
		cmocka_unit_test(test_path_clean),
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_serialize),
		cmocka_unit_test(test_entrypoint_resets_cmd_flag),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
