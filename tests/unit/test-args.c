// SPDX-License-Identifier: GPL-2.0-or-later
/* test-args.c — flag parsing (the alias rule, --), config, AISB_* environment and precedence */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "cli/args.h"
#include "util/util.h"

static const char *const *fake_env;

static const char *fake_get(const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; fake_env && fake_env[i]; i++)
		if (strncmp(fake_env[i], name, n) == 0 && fake_env[i][n] == '=')
			return fake_env[i] + n + 1;
	return NULL;
}

static int parse(struct aisb_settings *s, const char **argv)
{
	int argc = 0;
	while (argv[argc])
		argc++;
	assert_int_equal(args_defaults(s), 0);
	return args_parse_flags(s, argc, (char **)argv);
}

static void test_alias_rule(void **state)
{
	struct aisb_settings s;
	const char *argv[] = { "aisb", "--net", "none", "--model", "x", "--keep", NULL };
	assert_int_equal(parse(&s, argv), 0);
	/* --model is unknown: it and everything after it belong to the harness, --keep included */
	assert_false(s.keep);
	assert_int_equal(strv_length(s.harness_args), 3);
	assert_string_equal(s.harness_args[0], "--model");
	assert_string_equal(s.harness_args[2], "--keep");
	assert_null(s.command);
	settings_free(&s);
}

static void test_positional_stops(void **state)
{
	struct aisb_settings s;
	const char *argv[] = { "aisb", "--keep", "fix", "the", "bug", "--read-only", NULL };
	assert_int_equal(parse(&s, argv), 0);
	assert_true(s.keep);
	assert_false(s.read_only);
	assert_int_equal(strv_length(s.harness_args), 4);
	assert_string_equal(s.harness_args[0], "fix");
	settings_free(&s);
}

static void test_double_dash(void **state)
{
	struct aisb_settings s;
	const char *argv[] = { "aisb", "--keep", "--", "ls", "--keep", NULL };
	assert_int_equal(parse(&s, argv), 0);
	assert_true(s.keep);
	assert_int_equal(strv_length(s.command), 2);
	assert_string_equal(s.command[0], "ls");
	assert_string_equal(s.command[1], "--keep");
	assert_int_equal(strv_length(s.harness_args), 0);
	settings_free(&s);
}

static void test_double_dash_needs_command(void **state)
{
	struct aisb_settings s;
	const char *argv[] = { "aisb", "--", NULL };
	assert_int_equal(parse(&s, argv), -E2BIG);
	settings_free(&s);
}

static void test_equals_and_lists(void **state)
{
	struct aisb_settings s;
	const char *argv[] = { "aisb", "--net=none", "--env", "A", "--env=B=1", "--mount", "/x:/y:rw", NULL };
	assert_int_equal(parse(&s, argv), 0);
	assert_int_equal(s.net, NET_NONE);
	assert_int_equal(strv_length(s.envs), 2);
	assert_string_equal(s.envs[1], "B=1");
	assert_string_equal(s.mounts[0], "/x:/y:rw");
	settings_free(&s);
}

static void test_strict_args(void **state)
{
	struct aisb_settings s;
	const char *argv[] = { "aisb", "--strict-args", "--bogus", NULL };
	const char *argv2[] = { "aisb", "--bogus", NULL };
	assert_int_equal(parse(&s, argv), -E2BIG);
	settings_free(&s);
	assert_int_equal(parse(&s, argv2), 0);
	assert_string_equal(s.harness_args[0], "--bogus");
	settings_free(&s);
}

static void test_bad_values(void **state)
{
	static const char *const cases[][4] = {
		{ "aisb", "--net", "wifi", NULL },
		{ "aisb", "--harness", "vim", NULL },
		{ "aisb", "--rootfs", "/", NULL },
		{ "aisb", "--keep=maybe", NULL, NULL },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct aisb_settings s;
		assert_int_equal(parse(&s, (const char **)cases[i]), -EINVAL);
		settings_free(&s);
	}
}

static void test_missing_value_is_usage(void **state)
{
	struct aisb_settings s;
	const char *argv[] = { "aisb", "--net", NULL };
	assert_int_equal(parse(&s, argv), -E2BIG);
	settings_free(&s);
}

static void test_config(void **state)
{
	struct aisb_settings s;
	args_defaults(&s);
	assert_int_equal(args_apply_config(&s, "# comment\n\nharness = codex\nkeep=true\n  mount = /a \n", "cfg"), 0);
	assert_string_equal(s.harness, "codex");
	assert_true(s.keep);
	assert_string_equal(s.mounts[0], "/a");
	settings_free(&s);

	args_defaults(&s);
	assert_int_equal(args_apply_config(&s, "nonsense\n", "cfg"), -EINVAL);
	settings_free(&s);
	args_defaults(&s);
	assert_int_equal(args_apply_config(&s, "no_such_key = 1\n", "cfg"), -EINVAL);
	settings_free(&s);
	args_defaults(&s);
	/* flag-only options are not config keys */
	assert_int_equal(args_apply_config(&s, "dry_run = true\n", "cfg"), -EINVAL);
	settings_free(&s);
}

/* defaults < config < AISB_* < flags; lists accumulate across sources */
static void test_precedence(void **state)
{
	static const char *const env[] = { "AISB_HARNESS=claude", "AISB_ENV=E1, E2", NULL };
	struct aisb_settings s;
	const char *argv[] = { "aisb", "--harness", "shell", "--env", "F", NULL };
	_cleanup_free_ char *path = NULL;
	char tmpl[] = "/tmp/aisb-test-cfg.XXXXXX";
	int fd = mkstemp(tmpl);

	assert_true(fd >= 0);
	assert_int_equal(write_full(fd, "harness = codex\nenv = C\nkeep = true\n", 36), 0);
	close(fd);
	fake_env = env;

	/* config only */
	assert_int_equal(args_load(&s, 1, (char **)argv, tmpl, fake_get), 0);
	assert_string_equal(s.harness, "claude"); /* env beats config */
	assert_true(s.keep);                      /* config beats default */
	settings_free(&s);

	/* all three */
	assert_int_equal(args_load(&s, 5, (char **)argv, tmpl, fake_get), 0);
	assert_string_equal(s.harness, "shell"); /* flag beats env */
	assert_int_equal(strv_length(s.envs), 4);
	assert_string_equal(s.envs[0], "C");
	assert_string_equal(s.envs[1], "E1");
	assert_string_equal(s.envs[2], "E2");
	assert_string_equal(s.envs[3], "F");
	settings_free(&s);

	/* a missing config file is fine; a broken one is 78 */
	assert_int_equal(args_load(&s, 1, (char **)argv, "/nonexistent/aisb/config", fake_get), 0);
	settings_free(&s);
	fd = open(tmpl, O_WRONLY | O_TRUNC);
	assert_int_equal(write_full(fd, "bogus\n", 6), 0);
	close(fd);
	assert_int_equal(args_load(&s, 1, (char **)argv, tmpl, fake_get), 78);
	settings_free(&s);
	fake_env = NULL;
	unlink(tmpl);
}

static void test_defaults(void **state)
{
	struct aisb_settings s;
	assert_int_equal(args_defaults(&s), 0);
	assert_int_equal(s.net, NET_ALLOW);
	assert_int_equal(s.net_source, SRC_DEFAULT);
	assert_string_equal(s.harness, "pi");
	assert_string_equal(s.rootfs, "host");
	assert_string_equal(s.workdir, "auto");
	assert_false(s.allow_ptrace);
	assert_false(s.writable_git);
	settings_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alias_rule),
		cmocka_unit_test(test_positional_stops),
		cmocka_unit_test(test_double_dash),
		cmocka_unit_test(test_double_dash_needs_command),
		cmocka_unit_test(test_equals_and_lists),
		cmocka_unit_test(test_strict_args),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_missing_value_is_usage),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_precedence),
		cmocka_unit_test(test_defaults),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
