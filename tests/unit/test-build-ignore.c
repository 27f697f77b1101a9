// SPDX-License-Identifier: GPL-2.0-or-later
/* test-build-ignore.c — .containerignore / .dockerignore pattern matching */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "build/ignore.h"
#include "util/util.h"

static void test_glob(void **state)
{
	static const struct {
		const char *pat, *path;
		bool ds, want;
	} cases[] = {
		{ "*.c", "a.c", true, true },
		{ "*.c", "d/a.c", true, false },     /* '*' stays within a component */
		{ "**/*.c", "a.c", true, true },     /* "**" may match nothing */
		{ "**/*.c", "d/e/a.c", true, true },
		{ "**/*.c", "d/e/a.h", true, false },
		{ "d/**", "d", true, true },
		{ "d/**", "d/x/y", true, true },
		{ "d/**/z", "d/z", true, true },
		{ "d/**/z", "d/a/b/z", true, true },
		{ "d/**/z", "d/a/b/y", true, false },
		{ "**", "anything/at/all", true, true },
		{ "d/**/z", "d/a/b/z", false, false }, /* without doublestar "**" is one component */
		{ "d/**/z", "d/abc/z", false, true },
		{ "?.txt", "a.txt", true, true },
		{ "?.txt", "ab.txt", true, false },
		{ "[abc].txt", "b.txt", true, true },
		{ "[!abc].txt", "b.txt", true, false },
		{ "[^abc].txt", "d.txt", true, true },
		{ "\\*.txt", "*.txt", true, true },
		{ "\\*.txt", "a.txt", true, false },
		{ ".", "x/y", true, true },
		{ "a", "a/b", true, false },          /* whole path only; parents are the rule's job */
		{ ".env", ".env", true, true },
		{ "*", ".hidden", true, true },       /* no special case for dot files */
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++)
		if (ignore_glob_match(cases[i].pat, cases[i].path, cases[i].ds) != cases[i].want)
			fail_msg("case %zu: '%s' vs '%s'", i, cases[i].pat, cases[i].path);
}

static void test_rules(void **state)
{
	static const char text[] =
		"# comment\n"
		"\n"
		"  node_modules  \n"
		"/build/\n"
		"*.log\n"
		"!keep.log\n"
		"**/*.tmp\n"
		"secrets\n"
		"!secrets/public.pem\n"
		"docs/../private\r\n"
		"! spaced\n";
	static const struct {
		const char *path;
		bool excluded;
	} cases[] = {
		{ "node_modules", true },
		{ "node_modules/x/y.js", true },  /* below an excluded directory */
		{ "src/node_modules", false },    /* patterns are anchored at the root */
		{ "build", true },
		{ "build/out.o", true },
		{ "buildx", false },
		{ "a.log", true },
		{ "keep.log", false },            /* exception after the rule */
		{ "d/a.log", false },
		{ "d/e/f.tmp", true },
		{ "f.tmp", true },
		{ "secrets/key", true },
		{ "secrets/public.pem", false },  /* re-included below an excluded dir */
		{ "private", true },              /* pattern cleaned */
		{ "docs", false },
		{ "src/main.c", false },
		{ "spaced", false },
	};
	struct ignore ig;
	unsigned bad = 0;

	assert_int_equal(ignore_parse(text, strlen(text), &ig, &bad), 0);
	assert_int_equal(ig.n, 9);
	assert_string_equal(ig.rules[0].pattern, "node_modules");
	assert_string_equal(ig.rules[1].pattern, "build");
	assert_true(ig.rules[3].exception);
	assert_string_equal(ig.rules[7].pattern, "private");
	assert_string_equal(ig.rules[8].pattern, "spaced");
	for (size_t i = 0; i < ELEMENTSOF(cases); i++)
		if (ignore_is_excluded(&ig, cases[i].path) != cases[i].excluded)
			fail_msg("case %zu: %s", i, cases[i].path);
	ignore_done(&ig);

	/* order matters: an exception before the rule is overridden */
	assert_int_equal(ignore_parse("!keep.log\n*.log\n", 16, &ig, &bad), 0);
	assert_true(ignore_is_excluded(&ig, "keep.log"));
	ignore_done(&ig);

	/* exclude everything but one directory */
	assert_int_equal(ignore_parse("*\n!src\n", 7, &ig, &bad), 0);
	assert_true(ignore_is_excluded(&ig, "README"));
	assert_false(ignore_is_excluded(&ig, "src"));
	assert_false(ignore_is_excluded(&ig, "src/a/b.c"));
	ignore_done(&ig);

	/* empty file: nothing excluded */
	assert_int_equal(ignore_parse("", 0, &ig, &bad), 0);
	assert_false(ignore_is_excluded(&ig, "x"));
	ignore_done(&ig);
	assert_false(ignore_is_excluded(NULL, "x"));
}

static void test_bad_files(void **state)
{
	struct ignore ig;
	unsigned bad = 0;
	char *big;

	assert_int_equal(ignore_parse("ok\n[abc\n", 8, &ig, &bad), -EINVAL);
	assert_int_equal(bad, 2);
	assert_int_equal(ignore_parse("a\0b\n", 4, &ig, &bad), -EINVAL);
	assert_int_equal(bad, 1);
	big = malloc(IGNORE_MAX_FILE + 1);
	memset(big, 'a', IGNORE_MAX_FILE + 1);
	assert_int_equal(ignore_parse(big, IGNORE_MAX_FILE + 1, &ig, &bad), -EFBIG);
	/* too many rules */
	for (size_t i = 0; i < 2 * (IGNORE_MAX_RULES + 1); i += 2) {
		big[i] = 'x';
		big[i + 1] = '\n';
	}
	assert_int_equal(ignore_parse(big, 2 * (IGNORE_MAX_RULES + 1), &ig, &bad), -EFBIG);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_glob),
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_bad_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
