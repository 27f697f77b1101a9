// SPDX-License-Identifier: GPL-2.0-or-later
/* test-args.c — flag parsing (the alias rule, --), config, AISB_* environment and precedence */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/args.h"
#include "cli/flags.h"
#include "cli/regflags.h"
#include "cli/harness.h"
#include "cli/home.h"
#include "cli/trust.h"
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

/* --tls-verify, --cert-dir, --authfile for --image's registry: pull's grammar (cli/regflags.h);
 * flags only, so neither the config nor AISB_* can turn verification off. */
static void test_registry_flags(void **state)
{
	struct aisb_settings s;
	const char *ok[] = { "aisb", "--tls-verify=false", "--cert-dir", "/c", "--authfile", "/a1",
			     "--authfile=/a2", "--", "true", NULL };
	const char *bare[] = { "aisb", "--tls-verify", "--", "true", NULL };
	const char *bad[] = { "aisb", "--tls-verify=no", "--", "true", NULL };
	(void)state;
	assert_int_equal(parse(&s, ok), 0);
	assert_string_equal(s.tls_verify, "false");
	assert_string_equal(s.cert_dir, "/c");
	assert_int_equal(strv_length(s.authfiles), 2);
	assert_string_equal(s.authfiles[1], "/a2");
	settings_free(&s);
	assert_int_equal(parse(&s, bare), 0);
	assert_string_equal(s.tls_verify, "true");
	settings_free(&s);
	assert_int_equal(parse(&s, bad), -EINVAL); /* "no" is a bool elsewhere, not here */
	settings_free(&s);
	args_defaults(&s);
	assert_int_equal(args_apply_config(&s, "tls_verify = false\n", "cfg"), -EINVAL);
	assert_null(s.tls_verify);
	settings_free(&s);
}

/* One applier for every command: --authfile goes before the environment's files, the last given
 * first (pull's order since issue 4); a bad --tls-verify leaves verification on. */
static void test_regflag_apply(void **state)
{
	struct registry_opts reg = { .tls_verify = true };
	const struct regflags f = { .tls_verify = "false", .cert_dir = "/certs",
				    .authfiles = (char *[]){ (char *)"/a1", (char *)"/a2", NULL } };
	(void)state;
	reg.auth_files = calloc(1, sizeof(char *));
	assert_non_null(reg.auth_files);
	assert_int_equal(strv_push(&reg.auth_files, "/env.json"), 0);
	assert_int_equal(regflags_apply(&reg, &f), 0);
	assert_false(reg.tls_verify);
	assert_string_equal(reg.cert_dir, "/certs");
	assert_int_equal(strv_length(reg.auth_files), 3);
	assert_string_equal(reg.auth_files[0], "/a2");
	assert_string_equal(reg.auth_files[1], "/a1");
	assert_string_equal(reg.auth_files[2], "/env.json");
	reg.tls_verify = true;
	assert_int_equal(regflag_apply(&reg, REGFLAG_TLS_VERIFY, "False"), -EINVAL);
	assert_true(reg.tls_verify);
	assert_int_equal(regflag_apply(&reg, REGFLAG_CERT_DIR, ""), -EINVAL);
	strv_free(reg.auth_files);
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

	/* autophase's key: skipped by run's parser, found by args_config_lookup(); not a project key */
	{
		const char *text = "autophase_launcher = a b\nharness = codex\n# autophase_launcher = no\n"
				   "autophase_launcher =  claude -p \n";
		char *v = NULL;
		args_defaults(&s);
		assert_int_equal(args_apply_config(&s, text, "cfg"), 0);
		assert_string_equal(s.harness, "codex");
		settings_free(&s);
		assert_int_equal(args_config_lookup(text, "autophase_launcher", &v), 1);
		assert_string_equal(v, "claude -p"); /* the last line wins, blanks stripped */
		free(v);
		assert_int_equal(args_config_lookup("harness = pi\n", "autophase_launcher", &v), 0);
		assert_null(v);
		args_defaults(&s);
		assert_int_equal(args_apply_project(&s, "autophase_launcher = x\n", "proj"), -EINVAL);
		settings_free(&s);
	}
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


/* The shared-flags rule: --harness-args ends sandbox flags without replacing the harness. */
static void test_harness_args(void **state)
{
	struct aisb_settings s;
	const char *argv[] = { "aisb", "--net", "none", "--harness-args", "--image", "x.png", "--help", "--version", NULL };
	const char *argv2[] = { "aisb", "--help", NULL };

	(void)state;
	assert_int_equal(parse(&s, argv), 0);
	assert_int_equal(s.net, NET_NONE);
	assert_false(s.help);
	assert_false(s.version);
	assert_null(s.image);
	assert_null(s.command);
	assert_int_equal(strv_length(s.harness_args), 4);
	assert_string_equal(s.harness_args[0], "--image");
	assert_string_equal(s.harness_args[3], "--version");
	settings_free(&s);
	/* control: without it, --help is aisb's */
	assert_int_equal(parse(&s, argv2), 0);
	assert_true(s.help);
	assert_int_equal(strv_length(s.harness_args), 0);
	settings_free(&s);
}

/* A project policy may set allow, env, harness and limits; anything else is refused by name. */
static void test_project_keys(void **state)
{
	static const char *const refused[] = { "mount = /etc", "net = full", "allow_ptrace = true", "writable_git = true",
					       "agents_dir = /", "allow_file = /etc/shadow", "env_file = /x",
					       "add_host = a=127.0.0.1", "allow_host_port = 22", "home = default",
					       "harness_from = /", "proxy = a:1", "no_agents = true", "read_only = false" };
	struct aisb_settings s;

	(void)state;
	assert_int_equal(args_defaults(&s), 0);
	assert_int_equal(args_apply_project(&s, "allow = a.test\nenv = X\nharness = codex\nmemory = 1G\npids = 9\ncpus = 1\n",
					    "p"), 0);
	assert_string_equal(s.allows[0], "a.test");
	assert_string_equal(s.harness, "codex");
	settings_free(&s);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		assert_int_equal(args_defaults(&s), 0);
		assert_true(args_apply_project(&s, refused[i], "p") < 0);
		/* control: the same line is fine in the user's own config */
		settings_free(&s);
		assert_int_equal(args_defaults(&s), 0);
		if (strncmp(refused[i], "agents_dir", 10) && strncmp(refused[i], "harness_from", 12))
			assert_int_equal(args_apply_config(&s, refused[i], "c"), 0);
		settings_free(&s);
	}
}

/* Project entries come between user config and flags; an explicit --net none drops them. */
static void test_project_precedence(void **state)
{
	struct aisb_settings s;
	const char *argv[] = { "aisb", "--harness", "claude", "--allow", "f.test", NULL };
	const char *argv2[] = { "aisb", "--net", "none", NULL };

	(void)state;
	fake_env = NULL;
	assert_int_equal(args_load_project(&s, 5, (char **)argv, NULL, "harness = codex\nallow = p.test\n", "p", fake_get), 0);
	assert_string_equal(s.harness, "claude");
	assert_int_equal(strv_length(s.allows), 2);
	assert_string_equal(s.allows[0], "p.test");
	assert_string_equal(s.allows[1], "f.test");
	settings_free(&s);
	assert_int_equal(args_load_project(&s, 3, (char **)argv2, NULL, "allow = p.test\nharness = codex\n", "p", fake_get), 0);
	assert_int_equal(strv_length(s.allows), 0);
	assert_string_equal(s.harness, "codex");
	settings_free(&s);
}

static void test_home_names(void **state)
{
	static const char *const good[] = { "default", "project", "work", "a.b_c-1" };
	static const char *const bad[] = { "", ".", "..", "../x", "a/b", ".hidden", "-x", "a b",
					   "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" };
	char *n = NULL, *m = NULL;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(args_home_name_valid(good[i]));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(args_home_name_valid(bad[i]));
	assert_int_equal(home_resolve_name(NULL, "/src/app", &n), 0);
	assert_string_equal(n, "default");
	free(n);
	assert_int_equal(home_resolve_name("project", "/src/my app!", &n), 0);
	assert_int_equal(strncmp(n, "project-myapp-", 14), 0);
	assert_int_equal(strlen(n), 14 + 12);
	assert_true(args_home_name_valid(n));
	/* two checkouts with the same name get different homes */
	assert_int_equal(home_resolve_name("project", "/other/my app!", &m), 0);
	assert_string_not_equal(n, m);
	free(n);
	free(m);
	assert_int_equal(home_resolve_name("project", NULL, &n), -EINVAL);
}

static void test_harness_suggest(void **state)
{
	static const struct {
		const char *dir, *real, *want0, *want1;
	} t[] = {
		{ "/h/.nvm/versions/node/v22.1.0/bin", "/h/.nvm/versions/node/v22.1.0/lib/node_modules/p/cli.js",
		  "/h/.nvm/versions/node/v22.1.0", NULL },
		{ "/h/.npm-global/bin", "/h/.npm-global/lib/node_modules/p/cli.js", "/h/.npm-global", NULL },
		{ "/h/.volta/bin", "/h/.volta/bin/volta-shim", "/h/.volta", NULL },
		{ "/h/.bun/bin", "/h/.bun/install/global/node_modules/p/cli.js", "/h/.bun", NULL },
		{ "/h/.local/bin", "/h/.local/lib/node_modules/p/dist/cli.js", "/h/.local/bin", "/h/.local/lib/node_modules" },
		{ "/h/.local/bin", "/h/.local/bin/tool", "/h/.local/bin", NULL },
		{ "/h/.local/bin", "/h/.local/share/pipx/venvs/t/bin/t", "/h/.local/bin", "/h/.local/share/pipx" },
		{ "/h/tools/node/bin", "/h/tools/node/lib/x.js", "/h/tools/node", NULL },
		/* never the home itself, nor a prefix holding the state dir */
		{ "/h/bin", "/h/lib/x.js", "/h/bin", "/h/lib" },
		{ "/s/bin", "/s/lib/x", "/s/bin", "/s/lib" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char *out[2];
		int n = harness_suggest_dirs(t[i].dir, t[i].real, "/h", "/s/state/aisb", out);
		assert_int_equal(n, t[i].want1 ? 2 : 1);
		assert_string_equal(out[0], t[i].want0);
		if (t[i].want1)
			assert_string_equal(out[1], t[i].want1);
		free(out[0]);
		free(out[1]);
	}
	assert_true(harness_dir_is_private("/h/.local", "/h"));
	assert_true(harness_dir_is_private("/h", "/h"));
	assert_false(harness_dir_is_private("/h/.local/bin", "/h"));
}

static void put(const char *dir, const char *name, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(write_file_at(AT_FDCWD, path, text, strlen(text), 0644), 0);
}

/* The trust record follows the exact content of both files; what is not a plain file is refused. */
static void test_trust(void **state)
{
	char root[] = "/tmp/aisb-test-trust.XXXXXX", aisb[600], st[600], big[600];
	struct project_policy pp, pq;
	char h1[65];
	_cleanup_free_ char *text = NULL;

	(void)state;
	assert_non_null(mkdtemp(root));
	snprintf(aisb, sizeof(aisb), "%s/proj/.aisb", root);
	snprintf(st, sizeof(st), "%s/state", root);
	assert_int_equal(mkdir_p(aisb, 0700), 0);
	snprintf(big, sizeof(big), "%s/proj", root);
	/* nothing yet */
	assert_int_equal(trust_read_policy(big, &pp), 0);
	trust_policy_done(&pp);
	put(aisb, "config", "allow = a.test");
	put(aisb, "allow", "# c\n b.test\n\n");
	assert_int_equal(trust_read_policy(big, &pp), 1);
	text = trust_policy_text(&pp);
	assert_string_equal(text, "allow = a.test\nallow = b.test\n");
	assert_int_equal(trust_state_of(st, &pp), TRUST_UNTRUSTED);
	assert_int_equal(trust_record(st, &pp, false), 0);
	assert_int_equal(trust_state_of(st, &pp), TRUST_TRUSTED);
	memcpy(h1, pp.hash, sizeof(h1));
	trust_policy_done(&pp);
	/* the same bytes moved from one file to the other are another policy */
	put(aisb, "config", "allow = a.test# c\n b.test\n\n");
	put(aisb, "allow", "");
	assert_int_equal(trust_read_policy(big, &pq), 1);
	assert_string_not_equal(pq.hash, h1);
	assert_int_equal(trust_state_of(st, &pq), TRUST_CHANGED);
	trust_policy_done(&pq);
	/* a symlink, a fifo and an oversized file are refused */
	{
		char p[700], q[700];
		snprintf(p, sizeof(p), "%s/config", aisb);
		snprintf(q, sizeof(q), "%s/elsewhere", root);
		put(root, "elsewhere", "allow = evil.test");
		assert_int_equal(unlink(p), 0);
		assert_int_equal(symlink(q, p), 0);
		assert_int_equal(trust_read_policy(big, &pq), -ELOOP);
		trust_policy_done(&pq);
		assert_int_equal(unlink(p), 0);
		assert_int_equal(mkfifo(p, 0600), 0);
		assert_int_equal(trust_read_policy(big, &pq), -EINVAL);
		trust_policy_done(&pq);
		assert_int_equal(unlink(p), 0);
		{
			char *huge = malloc(TRUST_FILE_MAX + 2);
			assert_non_null(huge);
			memset(huge, '#', TRUST_FILE_MAX + 1);
			huge[TRUST_FILE_MAX + 1] = 0;
			put(aisb, "config", huge);
			free(huge);
		}
		assert_int_equal(trust_read_policy(big, &pq), -EFBIG);
		trust_policy_done(&pq);
	}
	/* an escape sequence (it would reach the terminal in messages) or a NUL byte */
	put(aisb, "config", "allow = a.test\n\033]0;owned\007\n");
	assert_int_equal(trust_read_policy(big, &pq), -EILSEQ);
	trust_policy_done(&pq);
	{
		char p[700];
		snprintf(p, sizeof(p), "%s/config", aisb);
		assert_int_equal(write_file_at(AT_FDCWD, p, "allow = a\0b\n", 12, 0644), 0);
	}
	assert_int_equal(trust_read_policy(big, &pq), -EILSEQ);
	trust_policy_done(&pq);
	/* the record keeps the policy for --show, env values only as fingerprints */
	put(aisb, "config", "allow = a.test\n  env\t= TOK=canary-unit-9\nenv = NAME\n");
	put(aisb, "allow", "");
	assert_int_equal(trust_read_policy(big, &pq), 1);
	assert_int_equal(trust_record(st, &pq, false), 0);
	{
		_cleanup_free_ char *rec = trust_recorded_text(st, &pq), *fp = trust_redact_env("TOK=canary-unit-9");
		assert_non_null(rec);
		assert_null(strstr(rec, "canary-unit-9"));
		assert_non_null(strstr(rec, "allow = a.test\n"));
		assert_non_null(strstr(rec, "env = NAME\n"));
		assert_int_equal(strncmp(fp, "TOK=<sha256:", 12), 0);
		assert_non_null(strstr(rec, fp));
	}
	trust_policy_done(&pq);
	/* revoke */
	put(aisb, "config", "allow = a.test");
	put(aisb, "allow", "# c\n b.test\n\n");
	assert_int_equal(trust_read_policy(big, &pp), 1);
	/* one record per project: trusting the other content above replaced this one */
	assert_int_equal(trust_state_of(st, &pp), TRUST_CHANGED);
	assert_int_equal(trust_record(st, &pp, false), 0);
	assert_int_equal(trust_state_of(st, &pp), TRUST_TRUSTED);
	assert_int_equal(trust_record(st, &pp, true), 0);
	assert_int_equal(trust_state_of(st, &pp), TRUST_UNTRUSTED);
	trust_policy_done(&pp);
	assert_int_equal(rm_rf(root), 0);
}

/* A subcommand's words read against its flag table (cli/flags.h): every spelling getopt_long()
 * accepts, and each way to get it wrong. */
static const struct cli_flag flags_table[] = {
	{ "all", 'a', CLI_VALUE_NONE, NULL, false },
	{ "quiet", 'q', CLI_VALUE_NONE, NULL, false },
	{ "tag", 't', CLI_VALUE_WORD, NULL, false },
	{ "volumes", 0, CLI_VALUE_WORD, NULL, true },
	{ NULL, 0, 0, NULL, false },
};

/* Reads @words (NULL-terminated) into "a,q,t=X,w=Y,..." and returns the last kind read. */
static enum cli_arg flags_read(const char *const *words, bool stop, char *out, size_t size)
{
	struct cli_args a = { .cmd = "t", .flags = flags_table, .argv = (char *const *)words, .i = 1,
			       .stop_at_word = stop };
	const struct cli_flag *f;
	const char *v;
	enum cli_arg k;
	size_t o = 0;

	while (words[a.argc])
		a.argc++;
	out[0] = '\0';
	while ((k = cli_args_next(&a, &f, &v)) == CLI_ARG_FLAG || k == CLI_ARG_WORD)
		o += (size_t)snprintf(out + o, size - o, "%s%s%s%s", o ? "," : "", k == CLI_ARG_WORD ? "w" : f->name,
				      v ? "=" : "", v ? v : "");
	return k;
}

static void test_flags(void **state)
{
	char out[256];

	(void)state;
	assert_int_equal(flags_read((const char *[]){ "t", "--all", "-q", "x", "--tag", "v1", "--tag=v2", NULL }, false, out,
				    sizeof(out)), CLI_ARG_END);
	assert_string_equal(out, "all,quiet,w=x,tag=v1,tag=v2");
	assert_int_equal(flags_read((const char *[]){ "t", "-aq", "-tv3", "-at", "v4", "-", NULL }, false, out, sizeof(out)),
			 CLI_ARG_END);
	assert_string_equal(out, "all,quiet,tag=v3,all,tag=v4,w=-");
	/* an optional value only after '=' */
	assert_int_equal(flags_read((const char *[]){ "t", "--volumes", "x", "--volumes=g*", NULL }, false, out, sizeof(out)),
			 CLI_ARG_END);
	assert_string_equal(out, "volumes,w=x,volumes=g*");
	/* "--" ends the flags; so does the first word with stop_at_word */
	assert_int_equal(flags_read((const char *[]){ "t", "--", "--all", "-q", NULL }, false, out, sizeof(out)), CLI_ARG_END);
	assert_string_equal(out, "w=--all,w=-q");
	assert_int_equal(flags_read((const char *[]){ "t", "-a", "ref", "--all", NULL }, true, out, sizeof(out)), CLI_ARG_END);
	assert_string_equal(out, "all,w=ref,w=--all");
	/* wrong: an unknown long or short flag, a missing value, a value for a flag without one */
	assert_int_equal(flags_read((const char *[]){ "t", "--alll", NULL }, false, out, sizeof(out)), CLI_ARG_BAD);
	assert_int_equal(flags_read((const char *[]){ "t", "-ax", NULL }, false, out, sizeof(out)), CLI_ARG_BAD);
	assert_string_equal(out, "all");
	assert_int_equal(flags_read((const char *[]){ "t", "--tag", NULL }, false, out, sizeof(out)), CLI_ARG_BAD);
	assert_int_equal(flags_read((const char *[]){ "t", "-t", NULL }, false, out, sizeof(out)), CLI_ARG_BAD);
	assert_int_equal(flags_read((const char *[]){ "t", "--all=1", NULL }, false, out, sizeof(out)), CLI_ARG_BAD);
	assert_int_equal(flags_read((const char *[]){ "t", "--passwd=canary-3f9a", NULL }, false, out, sizeof(out)),
			 CLI_ARG_BAD);
	assert_int_equal(flags_read((const char *[]){ "t", NULL }, false, out, sizeof(out)), CLI_ARG_END);
	assert_string_equal(out, "");
}

/* Every subcommand's table is one the parser can read: a name, short names unique. */
static void test_flag_tables(void **state)
{
	(void)state;
	for (const struct cli_command *c = cli_commands; c->name; c++) {
		struct cli_flag f, g;

		for (size_t i = 0; c->flags && cli_command_flag(c, i, &f); i++) {
			assert_true(f.name && *f.name && f.name[0] != '-');
			for (size_t j = i + 1; f.short_name && cli_command_flag(c, j, &g); j++)
				assert_false(g.short_name == f.short_name);
		}
	}
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
		cmocka_unit_test(test_registry_flags),
		cmocka_unit_test(test_regflag_apply),
		cmocka_unit_test(test_missing_value_is_usage),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_precedence),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_harness_args),
		cmocka_unit_test(test_project_keys),
		cmocka_unit_test(test_project_precedence),
		cmocka_unit_test(test_home_names),
		cmocka_unit_test(test_harness_suggest),
		cmocka_unit_test(test_trust),
		cmocka_unit_test(test_flags),
		cmocka_unit_test(test_flag_tables),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
