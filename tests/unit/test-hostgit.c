// SPDX-License-Identifier: GPL-2.0-or-later
/* test-hostgit.c — URL redaction, the hardened argv and environment, identity, .git snapshots */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "git/gitguard.h"
#include "git/hostgit.h"
#include "util/util.h"

static const struct {
	const char *in, *out;
} redactions[] = {
	{ "https://user:s3cret@example.test/r.git", "https://<redacted>@example.test/r.git" },
	{ "https://tok@example.test", "https://<redacted>@example.test" },
	{ "fatal: unable to access 'https://u:p@h/x/': 403", "fatal: unable to access 'https://<redacted>@h/x/': 403" },
	{ "http://a:b@h:1/x and ssh://git@h/y", "http://<redacted>@h:1/x and ssh://<redacted>@h/y" },
	{ "https://u:p@ss@h/x", "https://<redacted>@h/x" },            /* the last '@' ends it */
	{ "https://h/x?u=a@b", "https://h/x?u=a@b" },                  /* '@' after the path */
	{ "https://h/x", "https://h/x" },
	{ "git@github.com:o/r.git", "git@github.com:o/r.git" },        /* scp form: no secret */
	{ "/srv/bare.git", "/srv/bare.git" },
	{ "://@", "://@" },                                            /* empty user info */
	{ "", "" },
};

static void test_redact(void **state)
{
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(redactions); i++) {
		char *r = hostgit_redact(redactions[i].in);
		assert_non_null(r);
		assert_string_equal(r, redactions[i].out);
		assert_int_equal(hostgit_has_credentials(redactions[i].in), !streq(redactions[i].in, redactions[i].out));
		free(r);
	}
}

static bool has(char **v, const char *s)
{
	for (; v && *v; v++)
		if (streq(*v, s))
			return true;
	return false;
}

static void test_argv_env(void **state)
{
	const char *args[] = { "status", NULL };
	struct hostgit g = { .worktree = "/w", .home = "/h", .name = "N", .email = "e@x", .index_file = "/i" };
	char **v = hostgit_argv(args), **e = hostgit_env(&g);
	(void)state;
	assert_non_null(v);
	assert_non_null(e);
	assert_string_equal(v[0], "git");
	assert_string_equal(v[strv_length(v) - 1], "status"); /* the caller's args come last */
	assert_true(has(v, "core.hooksPath=/dev/null"));
	assert_true(has(v, "core.fsmonitor=false"));
	assert_true(has(v, "protocol.ext.allow=never"));
	assert_true(has(v, "credential.helper="));
	assert_true(has(e, "GIT_CONFIG_NOSYSTEM=1"));
	assert_true(has(e, "GIT_CONFIG_GLOBAL=/dev/null"));
	assert_true(has(e, "GIT_TERMINAL_PROMPT=0"));
	assert_true(has(e, "GIT_NO_REPLACE_OBJECTS=1"));
	assert_true(has(e, "GIT_AUTHOR_NAME=N"));
	assert_true(has(e, "GIT_COMMITTER_EMAIL=e@x"));
	assert_true(has(e, "GIT_INDEX_FILE=/i"));
	assert_true(has(e, "HOME=/h"));
	for (char **p = e; *p; p++) /* nothing else of the caller's environment */
		assert_true(strncmp(*p, "GIT_DIR=", 8) != 0 && strncmp(*p, "LD_", 3) != 0);
	strv_free(v);
	strv_free(e);
}

static char dir[] = "/tmp/test-hostgit.XXXXXX";

static void put(const char *rel, const char *text, mode_t mode)
{
	char *p = path_join(dir, rel), *slash;
	assert_non_null(p);
	slash = strrchr(p, '/');
	*slash = 0;
	assert_int_equal(mkdir_p(p, 0755), 0);
	*slash = '/';
	assert_int_equal(write_file_at(AT_FDCWD, p, text, strlen(text), mode), 0);
	chmod(p, mode);
	free(p);
}

static void test_identity(void **state)
{
	char *a, *b, *name, *email;
	(void)state;
	put("id/local", "[user]\n\tname = Local\n\tname = Later\n", 0644);
	put("id/global", "[user]\n\tname = G\n\temail = g@x\n[user \"x\"]\n\temail = no@x\n", 0644);
	a = path_join(dir, "id/local");
	b = path_join(dir, "id/global");
	{
		const char *files[] = { a, "/nonexistent/x", b, NULL };
		assert_int_equal(hostgit_identity(files, &name, &email), 0);
		assert_string_equal(name, "Later"); /* the first file wins, its last line */
		assert_string_equal(email, "g@x");
		free(name);
		free(email);
	}
	put("id/bad", "[user\n", 0644);
	{
		char *c = path_join(dir, "id/bad");
		const char *files[] = { c, b, NULL };
		assert_int_equal(hostgit_identity(files, &name, &email), -EINVAL);
		assert_null(name);
		free(c);
	}
	free(a);
	free(b);
}

/* Takes a snapshot and compares it with @s0: the difference must name @want (NULL: none). */
static void expect_diff(const struct gitguard_snapshot *s0, const char *wt, const char *gd, const char *want)
{
	struct gitguard_snapshot *s1;
	char *what = NULL;
	assert_int_equal(gitguard_snapshot_take(wt, gd, gd, NULL, &s1), 0);
	assert_int_equal(gitguard_snapshot_diff(s0, s1, &what), want ? 1 : 0);
	if (want)
		assert_non_null(strstr(what, want));
	free(what);
	gitguard_snapshot_free(s1);
}

/* A snapshot changes with each kind of change the driver must refuse, and only then. */
static void test_snapshot(void **state)
{
	struct gitguard_snapshot *s0;
	char *wt = path_join(dir, "wt"), *gd = path_join(dir, "wt/.git");
	(void)state;
	put("wt/.git/config", "[core]\n\tbare = false\n[include]\n\tpath = ../inc.cfg\n", 0644);
	put("wt/inc.cfg", "[user]\n\tname = x\n", 0644);
	put("wt/.git/hooks/pre-commit.sample", "#!/bin/sh\n", 0755);
	assert_int_equal(gitguard_snapshot_take(wt, gd, gd, NULL, &s0), 0);
	assert_true(gitguard_snapshot_size(s0) > 5);

	/* unchanged: equal */
	expect_diff(s0, wt, gd, NULL);

	/* a new hook */
	put("wt/.git/hooks/pre-commit", "#!/bin/sh\ntouch /tmp/x\n", 0755);
	expect_diff(s0, wt, gd, "hooks/pre-commit' appeared");
	{
		char *h = path_join(gd, "hooks/pre-commit");
		unlink(h);
		free(h);
	}
	expect_diff(s0, wt, gd, NULL);

	/* an included file (outside .git) changed */
	put("wt/inc.cfg", "[core]\n\tfsmonitor = touch /tmp/x\n", 0644);
	expect_diff(s0, wt, gd, "inc.cfg' changed");
	put("wt/inc.cfg", "[user]\n\tname = x\n", 0644);

	/* a mode change of the config */
	put("wt/.git/config", "[core]\n\tbare = false\n[include]\n\tpath = ../inc.cfg\n", 0600);
	expect_diff(s0, wt, gd, ".git/config' changed");
	put("wt/.git/config", "[core]\n\tbare = false\n[include]\n\tpath = ../inc.cfg\n", 0644);
	expect_diff(s0, wt, gd, NULL);

	/* alternates appeared */
	put("wt/.git/objects/info/alternates", "/elsewhere\n", 0644);
	expect_diff(s0, wt, gd, "alternates' appeared");
	gitguard_snapshot_free(s0);

	/* core.hooksPath (relative to the work tree): its directory's entries are recorded */
	put("wt/.git/config", "[core]\n\thooksPath = .githooks\n", 0644);
	put("wt/.githooks/pre-push", "#!/bin/sh\n", 0755);
	assert_int_equal(gitguard_snapshot_take(wt, gd, gd, NULL, &s0), 0);
	put("wt/.githooks/pre-push", "#!/bin/sh\ntouch /tmp/x\n", 0755);
	expect_diff(s0, wt, gd, ".githooks/pre-push' changed");
	put("wt/.githooks/pre-push", "#!/bin/sh\n", 0755);
	/* a hook replaced by a symlink with the same target content is still a change */
	{
		char *h = path_join(wt, ".githooks/pre-push");
		unlink(h);
		assert_int_equal(symlink("/bin/true", h), 0);
		free(h);
	}
	expect_diff(s0, wt, gd, ".githooks/pre-push' changed");

	gitguard_snapshot_free(s0);
	free(wt);
	free(gd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_redact),
		cmocka_unit_test(test_argv_env),
		cmocka_unit_test(test_identity),
		cmocka_unit_test(test_snapshot),
	};
	int r;
	if (!mkdtemp(dir))
		return 1;
	r = cmocka_run_group_tests(tests, NULL, NULL);
	rm_rf(dir);
	return r;
}
