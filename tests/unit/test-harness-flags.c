// SPDX-License-Identifier: GPL-2.0-or-later
/* test-harness-flags.c — every row of the harness table (agents/harness.h) has its switch
 * (--no-NAME-config) in the flag parser, the config file, the environment, completion and
 * `aisb --help`, all made from the row: adding a harness adds its flag (docs/agents.md, "Adding
 * a harness"). A row without one fails here; the control shows the check fails for a harness
 * that is not in the table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agents/harness.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/complete.h"
#include "util/log.h"
#include "util/util.h"

static const char *env_name, *env_value;

static const char *fake_get(const char *name)
{
	return env_name && streq(name, env_name) ? env_value : NULL;
}

/* Which harnesses' bridges @s turns off, as a bit per row. */
static unsigned off_bits(const struct aisb_settings *s)
{
	unsigned bits = 0;

	for (size_t i = 0; harness_at(i); i++)
		if (harness_config_off(harness_at(i), s))
			bits |= 1u << i;
	return bits;
}

/* The flag @flag given alone: which bridges are off then (~0u: the parser refused it or did not
 * take it as an aisb flag). */
static unsigned parsed(const char *flag)
{
	struct aisb_settings s;
	char *argv[] = { (char *)"aisb", (char *)flag, NULL };
	unsigned bits;

	assert_int_equal(args_defaults(&s), 0);
	s.strict_args = true; /* an unknown flag is an error, not the harness's first argument */
	bits = args_parse_flags(&s, 2, argv) < 0 || s.harness_args[0] ? ~0u : off_bits(&s);
	settings_free(&s);
	return bits;
}

/* The config line "@key = true": which bridges are off (~0u: refused). */
static unsigned configured(const char *key)
{
	struct aisb_settings s;
	char line[96];
	unsigned bits;

	snprintf(line, sizeof(line), "%s = true\n", key);
	assert_int_equal(args_defaults(&s), 0);
	bits = args_apply_config(&s, line, "test") < 0 ? ~0u : off_bits(&s);
	settings_free(&s);
	return bits;
}

/* AISB_@KEY=1 in the environment: which bridges are off. */
static unsigned from_env(const char *key)
{
	struct aisb_settings s;
	char name[96];
	unsigned bits;

	snprintf(name, sizeof(name), "AISB_%s", key);
	for (char *p = name; *p; p++)
		*p = (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
	env_name = name;
	env_value = "1";
	assert_int_equal(args_defaults(&s), 0);
	bits = args_apply_env(&s, fake_get) < 0 ? ~0u : off_bits(&s);
	env_name = NULL;
	settings_free(&s);
	return bits;
}

/* Is @flag (with "--") among run's completion candidates for its own prefix? */
static bool completed(const char *flag)
{
	static const struct complete_env env = { NULL, NULL, NULL, NULL };
	char *words[] = { (char *)flag, NULL }, **out = NULL;
	bool found;

	assert_int_equal(complete_words(words, 1, &env, &out), 0);
	found = strv_contains(out, flag);
	strv_free(out);
	return found;
}

/* Is @flag (without "--") in run's flag table, the one completion and the man check read? */
static bool in_table(const char *flag)
{
	struct cli_flag f;

	for (size_t i = 0; cli_command_flag(cli_command_find("run"), i, &f); i++)
		if (streq(f.name, flag))
			return f.value == CLI_VALUE_NONE;
	return false;
}

/* `aisb --help`, as printed. */
static char *help_text(void)
{
	char *text = NULL;
	FILE *f = tmpfile();
	int saved = dup(STDOUT_FILENO);

	assert_non_null(f);
	fflush(stdout);
	assert_true(dup2(fileno(f), STDOUT_FILENO) >= 0);
	args_print_help("aisb");
	fflush(stdout);
	assert_true(dup2(saved, STDOUT_FILENO) >= 0);
	close(saved);
	text = calloc(1, 1 << 16);
	assert_non_null(text);
	rewind(f);
	(void)!fread(text, 1, (1 << 16) - 1, f);
	fclose(f);
	return text;
}

/* Is there a help line for @flag naming each of @h's host files? */
static bool in_help(const char *help, const char *flag, const struct harness *h)
{
	char want[96];
	const char *line, *end;

	snprintf(want, sizeof(want), "\n  %s ", flag);
	if (!(line = strstr(help, want)))
		return false;
	end = strchr(line + 1, '\n');
	for (size_t i = 0; i < HARNESS_FILES_MAX && h->files[i].rel; i++) {
		const char *f = strstr(line, h->files[i].rel);
		if (!f || (end && f > end))
			return false;
	}
	return true;
}

/* Every place a harness's switch must be, checked for @h (row @i; SIZE_MAX: not in the table).
 * Return: the first place it is missing, or NULL. */
static const char *missing(const struct harness *h, size_t i, const char *help)
{
	char key[64];
	unsigned want = i == SIZE_MAX ? 0 : 1u << i;
	const char *flag = h->no_config_flag;

	if (!flag || strncmp(flag, "--no-", 5) != 0 || strlen(flag) >= sizeof(key))
		return "a --no-NAME-config switch in its row";
	for (size_t k = 0; k < sizeof(key); k++)
		if (!(key[k] = flag[k + 2] == '-' ? '_' : flag[k + 2]))
			break;
	if (i == SIZE_MAX || parsed(flag) != want)
		return "the flag parser (args_parse_flags)";
	if (configured(key) != want)
		return "the config file (args_apply_config)";
	if (from_env(key) != want)
		return "the environment (args_apply_env)";
	if (!in_table(flag + 2))
		return "run's flag table (args_flag: completion, the man check)";
	if (!completed(flag))
		return "completion (complete_words)";
	if (!in_help(help, flag, h))
		return "aisb --help (with its host files)";
	return NULL;
}

static void test_every_row_has_its_switch(void **state)
{
	char *help = help_text();
	const struct harness *h;
	size_t n;

	(void)state;
	for (n = 0; (h = harness_at(n)); n++) {
		const char *m = missing(h, n, help);
		if (m)
			fail_msg("harness '%s': its switch '%s' is missing from %s", h->name,
				 h->no_config_flag ? h->no_config_flag : "(none)", m);
	}
	assert_true(n >= 3);
	/* control: nothing is on by default, and a harness that is not in the table is missing */
	assert_int_equal(parsed("--quiet"), 0);
	assert_int_equal(parsed("--no-gemini-config"), ~0u);
	assert_false(completed("--no-gemini-config"));
	assert_non_null(missing(&(struct harness){ .name = "gemini", .no_config_flag = "--no-gemini-config",
						   .files = { { ".gemini/settings.json", BRIDGE_JSON } } },
				SIZE_MAX, help));
	assert_non_null(missing(&(struct harness){ .name = "gemini" }, SIZE_MAX, help));
	free(help);
}

/* The harnesses' names in --help come from the table too. */
static void test_help_names_the_harnesses(void **state)
{
	char *help = help_text();
	char want[160];

	(void)state;
	for (size_t i = 0; harness_at(i); i++) {
		snprintf(want, sizeof(want), "%s%s", i ? ", " : "(", harness_at(i)->name);
		assert_non_null(strstr(help, want));
	}
	snprintf(want, sizeof(want), "--harness NAME");
	assert_non_null(strstr(help, want));
	assert_null(strstr(help, "%H"));
	free(help);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_row_has_its_switch),
		cmocka_unit_test(test_help_names_the_harnesses),
	};
	log_set_quiet(true);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
