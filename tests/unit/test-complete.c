// SPDX-License-Identifier: GPL-2.0-or-later
/* test-complete.c — completion candidates: the seed's rules, table-driven */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/complete.h"
#include "util/util.h"

static int allow_file_calls;

static char **strv_of(const char *const *w)
{
	char **v = calloc(1, sizeof(char *));
	for (size_t i = 0; w[i]; i++)
		strv_push(&v, w[i]);
	return v;
}

static char **fake_images(void *data)
{
	static const char *const w[] = { "docker.io/library/debian:12", "localhost/tools:latest", NULL };
	return strv_of(w);
}

static char **fake_sessions(void *data)
{
	static const char *const w[] = { "0a1b2c", NULL };
	return strv_of(w);
}

static char **fake_allow_file(void *data, const char *path)
{
	static const char *const site[] = { "registry.npmjs.org", "example.com:8443", NULL };
	static const char *const none[] = { NULL };
	allow_file_calls++;
	return strv_of(strcmp(path, "site.allow") == 0 ? site : none);
}

static const struct complete_env env = { fake_images, fake_sessions, fake_allow_file, NULL };

/* Completes @line (space-separated words; a trailing space means an empty current word) and
 * returns the candidates joined by spaces. */
static char *complete(const char *line)
{
	char *copy = strdup(line), **words = calloc(1, sizeof(char *)), **out = NULL, *p, *next;
	char *res = NULL;
	size_t len = 0;
	FILE *f;

	for (p = copy; p; p = next) {
		next = strchr(p, ' ');
		if (next)
			*next++ = 0;
		strv_push(&words, p);
	}
	assert_int_equal(complete_words(words, strv_length(words), &env, &out), 0);
	f = open_memstream(&res, &len);
	assert_non_null(f);
	for (size_t i = 0; out[i]; i++)
		fprintf(f, "%s%s", i ? " " : "", out[i]);
	fclose(f);
	strv_free(out);
	strv_free(words);
	free(copy);
	return res;
}

static void expect(const char *line, const char *want)
{
	char *got = complete(line);
	if (strcmp(got, want) != 0)
		fail_msg("'%s': got '%s', want '%s'", line, got, want);
	free(got);
}

static void expect_has(const char *line, const char *word, bool has)
{
	char *got = complete(line), *pad;
	assert_true(asprintf(&pad, " %s ", got) > 0);
	char *w;
	assert_true(asprintf(&w, " %s ", word) > 0);
	if ((strstr(pad, w) != NULL) != has)
		fail_msg("'%s': '%s' %s in '%s'", line, word, has ? "missing" : "unexpected", got);
	free(w);
	free(pad);
	free(got);
}

static void test_first_word(void **state)
{
	expect("b", "build");
	expect("i", "images inspect import");
	expect("--net", "--net");
	expect_has("", "doctor", true);
	expect_has("", "--allow", true); /* run is the default: its flags too */
	expect_has("", "__complete", false);
}

static void test_values(void **state)
{
	expect("--net ", "none allow full");
	expect("--net a", "allow");
	expect("--net=f", "--net=full");
	expect("--harness c", "codex claude");
	expect("--mount ", ":dirs");
	expect("--workdir=/x", ":dirs");
	expect("--env ", ":env");
	expect("--env-file ", ":files");
	expect("--image d", "docker.io/library/debian:12");
	expect("--image=l", "--image=localhost/tools:latest");
	expect("--memory ", ""); /* free text */
	expect("run --net ", "none allow full");
}

static void test_allow_from_files(void **state)
{
	allow_file_calls = 0;
	expect("--allow ", "");
	assert_int_equal(allow_file_calls, 1); /* ./.aisb/allow only */
	expect("--allow-file site.allow --allow r", "registry.npmjs.org");
	expect("--allow-file=site.allow --allow=e", "--allow=example.com:8443");
	expect("build --allow-file site.allow --allow ", "registry.npmjs.org example.com:8443");
}

static void test_harness_words_end_flags(void **state)
{
	/* a positional word is the harness's: nothing after it, not even aisb's flags */
	expect("fix --", "");
	expect("fix --net ", "");
	expect("--net none fix --ke", "");
	expect("run fix --", "");
	/* an unknown flag is the first harness argument */
	expect("--model --ke", "");
	expect("--model x --net ", "");
	/* '--' replaces the harness with a command */
	expect("-- ls --", "");
	/* a single-dash word is positional for run */
	expect("-p --", "");
	/* a subcommand name after flags is a harness argument, not a subcommand */
	expect("--keep build --fi", "");
	/* before any of that, flags are offered */
	expect("--net none --kee", "--keep");
	expect("--dry-run --net=none --read", "--read-only");
}

static void test_subcommand_flags(void **state)
{
	/* each subcommand offers only its own flags */
	expect("build --f", "--file");
	expect("build --d", "--dry-run --default");
	expect_has("build --", "--net", false);
	expect_has("ps --", "--json", true);
	expect_has("ps --", "--deep", false);
	expect("doctor --", "--deep --container-proc --help");
	expect("build --builder ", "native podman");
	expect("build -f ", ":files");
	expect("build ", ":dirs");
	expect("build -t x ", ":dirs");
	expect_has("build -", "-f", true);
	expect("clean --v", "--volumes");
	expect("clean --volumes ", "--all --volumes --discard --help"); /* optional value: not consumed */
	expect("pull --tls-verify=", "--tls-verify=true --tls-verify=false");
	expect("rmi ", "docker.io/library/debian:12 localhost/tools:latest");
	expect("rmi l", "localhost/tools:latest");
	expect("logs ", "0a1b2c");
	expect("inspect ", "0a1b2c docker.io/library/debian:12 localhost/tools:latest");
	expect("ps ", "--all --json --help");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_word),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_allow_from_files),
		cmocka_unit_test(test_harness_words_end_flags),
		cmocka_unit_test(test_subcommand_flags),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
