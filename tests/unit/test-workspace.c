// SPDX-License-Identifier: GPL-2.0-or-later
/* test-workspace.c — the import's judges: bundle header, commit line, commit object, object sets;
 * the hardened git's fixed options and environment */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/util.h"
#include "workspace/workspace-internal.h"

#define B "1111111111111111111111111111111111111111"
#define T "2222222222222222222222222222222222222222"
#define C "3333333333333333333333333333333333333333"
#define X "4444444444444444444444444444444444444444"

static const struct {
	const char *text;
	bool ok;
	const char *why;   /* part of the refusal */
} bundles[] = {
	{ "# v2 git bundle\n-" B "\n" T " refs/heads/aisb-export\n\nPACK", true, NULL },
	{ "# v2 git bundle\n-" B " comment\n" T " refs/heads/aisb-export\n\nPACK", true, NULL },
	{ "# v3 git bundle\n@object-format=sha1\n-" B "\n" T " refs/heads/aisb-export\n\nPACK", true, NULL },
	{ "# v3 git bundle\n@filter=blob:none\n-" B "\n" T " refs/heads/aisb-export\n\n", false, "capability" },
	{ "# v2 git bundle\n@object-format=sha1\n-" B "\n" T " refs/heads/aisb-export\n\n", false, "v2" },
	{ "# v2 git bundle\n-" X "\n" T " refs/heads/aisb-export\n\n", false, "other than the base" },
	{ "# v2 git bundle\n-" B "\n-" X "\n" T " refs/heads/aisb-export\n\n", false, "other than the base" },
	{ "# v2 git bundle\n" T " refs/heads/aisb-export\n\n", false, "no prerequisite" },
	{ "# v2 git bundle\n-" B "\n" T " refs/heads/main\n\n", false, "refs other" },
	{ "# v2 git bundle\n-" B "\n" T " refs/heads/aisb-export\n" C " refs/heads/aisb-export\n\n", false, "refs other" },
	{ "# v2 git bundle\n-" B "\n\n", false, "no ref" },
	{ "# v2 git bundle\n-" B "\n" T " refs/heads/aisb-export\n", false, "no end" },
	{ "# v2 git bundle\n-" B "\nzz refs/heads/aisb-export\n\n", false, "malformed" },
	{ "# v4 git bundle\n", false, "not a git bundle" },
	{ "", false, "not a git bundle" },
};

static void test_bundle(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bundles) / sizeof(bundles[0]); i++) {
		struct ws_bundle b;
		const char *why = NULL;
		int r = ws_bundle_parse(bundles[i].text, strlen(bundles[i].text), B, &b, &why);
		if (bundles[i].ok) {
			assert_int_equal(r, 0);
			assert_string_equal(b.tip, T);
			assert_string_equal(b.prereq, B);
			assert_memory_equal(bundles[i].text + b.pack_offset, "PACK", 4);
		} else {
			if (r != -EINVAL || !why || !strstr(why, bundles[i].why))
				fail_msg("bundle %zu: r=%d why=%s", i, r, why ? why : "(null)");
		}
	}
}

static const struct {
	const char *text;
	int want;
	const char *why;
} chains[] = {
	{ C " " B "\n" T " " C "\n", 2, NULL },
	{ T " " B "\n", 1, NULL },
	{ "", -EINVAL, "does not descend" },
	{ T "\n", -EINVAL, "new root" },
	{ C " " B "\n" T " " C " " X "\n", -EINVAL, "more than one parent" },
	{ C " " X "\n" T " " C "\n", -EINVAL, "not the recorded base" },
	{ C " " B "\n" T " " B "\n", -EINVAL, "one line" },
	{ C " " B "\n", -EINVAL, "does not descend" },
	{ C " " B "\n" T " " C, -EINVAL, "truncated" },
};

static void test_chain(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(chains) / sizeof(chains[0]); i++) {
		char **v = NULL;
		const char *why = NULL;
		int r = ws_chain_check(chains[i].text, B, T, &v, &why);
		if (r != chains[i].want || (chains[i].why && (!why || !strstr(why, chains[i].why))))
			fail_msg("chain %zu: r=%d why=%s", i, r, why ? why : "(null)");
		if (r > 0) {
			assert_int_equal(strv_length(v), (size_t)r);
			assert_string_equal(v[r - 1], T);
		} else
			assert_null(v);
		strv_free(v);
	}
}

static void test_chain_bound(void **state)
{
	size_t n = WS_MAX_COMMITS + 1;
	size_t cap = n * 82 + 1, off = 0;
	char *text = malloc(cap), prev[41], cur[41];
	char **v = NULL;
	const char *why;

	(void)state;
	assert_non_null(text);
	snprintf(prev, sizeof(prev), "%s", B);
	for (size_t i = 0; i < n; i++) {
		snprintf(cur, sizeof(cur), "%040zx", i + 0x100);
		off += (size_t)snprintf(text + off, cap - off, "%s %s\n", cur, prev);
		memcpy(prev, cur, sizeof(prev));
	}
	assert_int_equal(ws_chain_check(text, B, prev, &v, &why), -EINVAL);
	assert_non_null(strstr(why, "10000"));
	free(text);
}

static void test_commit_parse(void **state)
{
	static const char obj[] = "tree " X "\nparent " B "\nauthor a <a> 1 +0000\ncommitter a <a> 1 +0000\n"
				  "gpgsig -----BEGIN PGP SIGNATURE-----\n -----END PGP SIGNATURE-----\n\nsubject\n\nbody\n";
	char tree[65];
	const char *msg;
	size_t len;

	(void)state;
	assert_int_equal(ws_commit_parse(obj, strlen(obj), tree, &msg, &len), 0);
	assert_string_equal(tree, X);
	assert_int_equal(len, strlen("subject\n\nbody\n"));
	assert_memory_equal(msg, "subject\n\nbody\n", len);
	assert_int_equal(ws_commit_parse("parent " B "\n\nx", 10 + 40, tree, &msg, &len), -EINVAL);
	/* a NUL ends the message */
	{
		static const char nul[] = "tree " X "\n\nab\0cd";
		assert_int_equal(ws_commit_parse(nul, sizeof(nul) - 1, tree, &msg, &len), 0);
		assert_int_equal(len, 2);
	}
}

static void test_oidset(void **state)
{
	char **set = NULL;
	int n;

	(void)state;
	n = ws_oidset_from_show_index("12 " T " (3c8213a2)\n264 " B " (3cf7d553)\n", &set);
	assert_int_equal(n, 2);
	assert_true(ws_oidset_has(set, 2, B));
	assert_true(ws_oidset_has(set, 2, T));
	assert_false(ws_oidset_has(set, 2, X));
	strv_free(set);
	assert_int_equal(ws_oidset_from_show_index("12 zz (1)\n", &set), -EINVAL);
	assert_false(ws_oidset_has(NULL, 0, X));
}

static void test_exclude_pattern(void **state)
{
	char *p;

	(void)state;
	assert_int_equal(ws_exclude_pattern("a/b.txt", &p), 0);
	assert_string_equal(p, "/a/b.txt\n");
	free(p);
	assert_int_equal(ws_exclude_pattern("#x *?[y] !z", &p), 0);
	assert_string_equal(p, "/\\#x\\ \\*\\?\\[y]\\ \\!z\n");
	free(p);
}

static void test_ls_tree_filter(void **state)
{
	static const char ls[] = "100644 blob " B "\tkeep.txt\0"
				 "100644 blob " T "\tother\0"
				 "100755 blob " C "\tsub/dir/keep too\0";
	char p0[] = "keep.txt", p1[] = "missing", p2[] = "sub/dir/keep too";
	char *paths[] = { p0, p1, p2 }; /* sorted */
	char *out;
	size_t len;
	(void)state;
	assert_int_equal(ws_ls_tree_filter(ls, sizeof(ls) - 1, paths, 3, &out, &len), 2);
	assert_int_equal(len, strlen("100644 blob " B "\tkeep.txt") + 1 + strlen("100755 blob " C "\tsub/dir/keep too") + 1);
	assert_string_equal(out, "100644 blob " B "\tkeep.txt");
	assert_string_equal(out + strlen(out) + 1, "100755 blob " C "\tsub/dir/keep too");
	free(out);
	/* none kept */
	assert_int_equal(ws_ls_tree_filter(ls, sizeof(ls) - 1, paths + 1, 1, &out, &len), 0);
	assert_null(out);
	assert_int_equal(len, 0);
	/* a record without a tab */
	assert_int_equal(ws_ls_tree_filter("100644 blob x", 13, paths, 3, &out, &len), -EINVAL);
}

static void test_review_parse(void **state)
{
	static const char raw[] = ":000000 100644 " X " " B " A\0new file\0"
				  ":100644 100755 " B " " C " M\0run.sh\0";
	static const char ns[] = "3\t0\tnew file\0-\t-\trun.sh\0";
	struct ws_change *c = NULL;
	size_t n = 0;
	(void)state;
	assert_int_equal(ws_raw_parse(raw, sizeof(raw) - 1, &c, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(c[0].status, 'A');
	assert_int_equal(c[0].new_mode, 0100644);
	assert_string_equal(c[0].path, "new file");
	assert_int_equal(c[1].old_mode, 0100644);
	assert_int_equal(c[1].new_mode, 0100755);
	assert_int_equal(ws_numstat_apply(ns, sizeof(ns) - 1, c, n), 0);
	assert_int_equal(c[0].added, 3);
	assert_int_equal(c[0].deleted, 0);
	assert_int_equal(c[1].added, -1);
	/* another path in the numstat, a cut record, a bad status */
	assert_int_equal(ws_numstat_apply("3\t0\tother\0", 10, c, 1), -EINVAL);
	free(c);
	{
		static const char nopath[] = ":100644 100644 " B " " C " M\0";
		static const char badst[] = ":100644 100644 " B " " C " Z\0p\0";
		static const char good[] = ":100644 100644 " B " " C " M\0p\0";
		assert_int_equal(ws_raw_parse(nopath, sizeof(nopath) - 1, &c, &n), -EINVAL);
		assert_int_equal(ws_raw_parse(badst, sizeof(badst) - 1, &c, &n), -EINVAL);
		assert_int_equal(ws_raw_parse(good, sizeof(good) - 1, &c, &n), 0);
		assert_int_equal(n, 1);
		free(c);
	}
	assert_int_equal(ws_raw_parse("", 0, &c, &n), 0);
	assert_int_equal(n, 0);
	free(c);
}

static void test_review_flag(void **state)
{
	char t0[] = "README", t1[] = "src";
	char *top[] = { t0, t1 };
	static const struct {
		char status;
		unsigned om, nm;
		const char *path, *why;
	} cases[] = {
		{ 'A', 0, 0100644, "src/x.c", NULL },
		{ 'A', 0, 0100644, "README", NULL },
		{ 'M', 0100644, 0100644, "src/x.c", NULL },
		{ 'D', 0100755, 0, ".husky/pre-commit", NULL },
		{ 'A', 0, 0100644, "newdir/f", "new top-level entry" },
		{ 'A', 0, 0100644, "LICENSE", "new top-level entry" },
		{ 'A', 0, 0100644, ".envrc", "dotfile" },
		{ 'A', 0, 0100644, ".github/workflows/ci.yml", "dotfile" },
		{ 'A', 0, 0100644, "src/.hidden", "dotfile" },
		{ 'A', 0, 0100755, "src/hooks/post-checkout", "hook-like path" },
		{ 'A', 0, 0100755, ".husky/pre-commit", "hook-like path" },
		{ 'A', 0, 0100644, "src/githooks/x", "hook-like path" },
		{ 'A', 0, 0100644, "src/.gitattributes", "git control file" },
		{ 'M', 0100644, 0100644, ".gitmodules", "git control file" },
		{ 'A', 0, 0160000, "src/sub", "submodule" },
		{ 'T', 0100644, 0160000, "src/x", "submodule" },
		{ 'A', 0, 0120000, "src/link", "symlink" },
		{ 'A', 0, 0100755, "src/run.sh", "executable" },
		{ 'M', 0100644, 0100755, "src/x.sh", "made executable" },
		{ 'T', 0100644, 0120000, "src/y", "made a symlink" },
		{ 'M', 0100755, 0100755, "src/run.sh", NULL },
		{ 'A', 0, 0100644, "srcx/f", "new top-level entry" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ws_change c = { .status = cases[i].status, .old_mode = cases[i].om, .new_mode = cases[i].nm,
				       .path = cases[i].path };
		const char *why = ws_review_flag(&c, top, 2);
		if (!cases[i].why)
			assert_null(why);
		else {
			assert_non_null(why);
			assert_string_equal(why, cases[i].why);
		}
	}
}

static void test_branch_names(void **state)
{
	static const char *const good[] = { "aisb/abc123", "feature", "a.b", "x-y_z", "current-work" };
	static const char *const bad[] = { "", "-x", "a..b", "a/", "/a", "a.lock", "a b", "a~1", "a^", "a:b",
					   "a?", "a*", "a[", "a\\b", "@", "a@{1}", ".a", "a/.b", "a//b", "a." };

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!ws_branch_name_valid(good[i]))
			fail_msg("'%s' refused", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (ws_branch_name_valid(bad[i]))
			fail_msg("'%s' accepted", bad[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bundle),
		cmocka_unit_test(test_chain),
		cmocka_unit_test(test_chain_bound),
		cmocka_unit_test(test_commit_parse),
		cmocka_unit_test(test_oidset),
		cmocka_unit_test(test_exclude_pattern),
		cmocka_unit_test(test_branch_names),
		cmocka_unit_test(test_ls_tree_filter),
		cmocka_unit_test(test_review_parse),
		cmocka_unit_test(test_review_flag),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
