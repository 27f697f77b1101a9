// SPDX-License-Identifier: GPL-2.0-or-later
/* test-autophase.c — phase names, launcher words, commit subjects, delivered phases */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/autophase-internal.h"
#include "util/util.h"

static const struct {
	const char *file, *name; /* NULL: not a phase */
} names[] = {
	{ "01-setup.md", "01-setup" },
	{ "1-a.md", "1-a" },
	{ "10-two_words.v2.md", "10-two_words.v2" },
	{ "README.md", NULL },
	{ "01-.md", NULL },
	{ "-a.md", NULL },
	{ "01-a.txt", NULL },
	{ "01-a b.md", NULL },
	{ "01-a$(x).md", NULL },
	{ "01-a\n.md", NULL },
	{ "01a.md", NULL },
	{ ".md", NULL },
};

static void test_phase_names(void **state)
{
	char name[AUTOPHASE_MAX_NAME + 1];
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		bool ok = autophase_phase_name(names[i].file, name);
		assert_int_equal(ok, names[i].name != NULL);
		if (ok)
			assert_string_equal(name, names[i].name);
	}
	{
		char longname[AUTOPHASE_MAX_NAME + 8];
		memset(longname, 'a', sizeof(longname));
		memcpy(longname, "01-", 3);
		strcpy(longname + AUTOPHASE_MAX_NAME + 1, ".md");
		assert_false(autophase_phase_name(longname, name));
	}
}

static void test_split(void **state)
{
	char **v;
	(void)state;
	assert_int_equal(autophase_split_launcher("  claude  -p\t--x ", &v), 0);
	assert_int_equal(strv_length(v), 3);
	assert_string_equal(v[0], "claude");
	assert_string_equal(v[2], "--x");
	strv_free(v);
	assert_int_equal(autophase_split_launcher("'a b'", &v), 0); /* no quoting: two words */
	assert_int_equal(strv_length(v), 2);
	strv_free(v);
	assert_int_equal(autophase_split_launcher("   ", &v), -EINVAL);
	assert_int_equal(autophase_split_launcher("a\nb", &v), -EINVAL);
	{
		char many[AUTOPHASE_MAX_WORDS * 2 + 4];
		size_t n = 0;
		for (int i = 0; i <= AUTOPHASE_MAX_WORDS; i++) {
			many[n++] = 'x';
			many[n++] = ' ';
		}
		many[n] = 0;
		assert_int_equal(autophase_split_launcher(many, &v), -E2BIG);
	}
}

static void test_title(void **state)
{
	char *t;
	const char *text = "intro\n# Add the \x1b[31mparser\nbody\n";
	(void)state;
	t = autophase_title("01-p", text, strlen(text));
	assert_string_equal(t, "01-p: Add the [31mparser");
	free(t);
	t = autophase_title("02-q", "no heading\n", 11);
	assert_string_equal(t, "02-q");
	free(t);
	{
		char big[200] = "# ";
		memset(big + 2, 'x', 150);
		big[152] = 0;
		t = autophase_title("03", big, strlen(big));
		assert_int_equal(strlen(t), 4 + 72);
		free(t);
	}
}

static void test_history(void **state)
{
	const char *log = "c3\t\n"
			  "c2\t02-b\n"
			  "c1\t01-a, 02-b\n"
			  "c0\t01-a\n";
	char a[] = "01-a", b[] = "02-b", c[] = "03-c";
	char *ph[] = { a, b, c };
	char *got[3];
	(void)state;
	assert_int_equal(autophase_parse_history(log, ph, 3, got), 0);
	assert_string_equal(got[0], "c1"); /* the newest */
	assert_string_equal(got[1], "c2");
	assert_null(got[2]);
	for (int i = 0; i < 3; i++)
		free(got[i]);
	assert_int_equal(autophase_parse_history("c9\t01-ab\n", ph, 1, got), 0);
	assert_null(got[0]); /* a prefix is not the name */
}

static void test_preview_word(void **state)
{
	static const struct {
		const char *prev, *arg, *want;
	} t[] = {
		{ "--env", "FOO=VALUE_CANARY", "FOO=<redacted>" },
		{ "--env", "FOO=", "FOO=<redacted>" },
		{ "--env", "FOO", "FOO" },
		{ NULL, "--env=FOO=VALUE_CANARY", "--env=FOO=<redacted>" },
		{ NULL, "--env=FOO", "--env=FOO" },
		{ "--allow", "FOO=bar", "FOO=bar" },
		{ "--proxy", "http://u:TOKEN_CANARY@127.0.0.1:3128", "http://<redacted>@127.0.0.1:3128" },
		{ NULL, "--net", "--net" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char *w = autophase_preview_word(t[i].prev, t[i].arg);
		assert_non_null(w);
		assert_string_equal(w, t[i].want);
		free(w);
	}
}

static void test_host_launcher(void **state)
{
	(void)state;
	assert_true(autophase_launcher_name_ok("sandbox-pi"));
	assert_true(autophase_launcher_name_ok("my_pi.2"));
	assert_false(autophase_launcher_name_ok("-x"));
	assert_false(autophase_launcher_name_ok("a b"));
	assert_false(autophase_launcher_name_ok("a;b"));
	assert_false(autophase_launcher_name_ok("$(x)"));
	assert_false(autophase_launcher_name_ok(""));
	assert_true(autophase_forwards_args("sandbox-pi () \n{ \n    K=$(pass x) aisb --env K \"$@\"\n}"));
	assert_true(autophase_forwards_args("f () { aisb $*; }"));
	assert_true(autophase_forwards_args("f () { aisb \"${@:1}\"; }"));
	assert_false(autophase_forwards_args("sandbox-pi () \n{ \n    K=$(pass x) aisb --env K\n}"));
	assert_false(autophase_forwards_args(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_phase_names),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_title),
		cmocka_unit_test(test_history),
		cmocka_unit_test(test_preview_word),
		cmocka_unit_test(test_host_launcher),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
