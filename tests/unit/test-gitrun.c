// SPDX-License-Identifier: GPL-2.0-or-later
/* test-gitrun.c — host git (gitrun.h): URL redaction, messages, the hardened argv and environment per
 * transport, the identity and its precedence, .git snapshots */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "git/gitguard.h"
#include "git/gitrun.h"
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
		char *r = gitrun_redact(redactions[i].in);
		assert_non_null(r);
		assert_string_equal(r, redactions[i].out);
		assert_int_equal(gitrun_has_credentials(redactions[i].in), !streq(redactions[i].in, redactions[i].out));
		free(r);
	}
}

/* Every git message shown goes through gitrun_message(): credentials hidden, control bytes out */
static void test_message(void **state)
{
	char *m = gitrun_message("fatal: 'https://u:tok@h/x' \x1b]52;c;x\x07\nremote: ok\r\n");
	(void)state;
	assert_non_null(m);
	assert_string_equal(m, "fatal: 'https://<redacted>@h/x' ?]52;c;x?\nremote: ok?\n");
	free(m);
}

static bool has(const char **v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (streq(v[i], s))
			return true;
	return false;
}

/* The merged hardening (what both former runners set) and the per-call transports. */
static void test_argv_env(void **state)
{
	const char *v[128], *e[64], *lt[16], *rt[16];
	size_t nv = gitrun_hardening_args(v, ELEMENTSOF(v)), ne = gitrun_base_env(e, ELEMENTSOF(e));
	size_t nl = gitrun_transport_args(false, lt, ELEMENTSOF(lt)), nr = gitrun_transport_args(true, rt, ELEMENTSOF(rt));
	(void)state;
	assert_true(has(v, nv, "core.hooksPath=/dev/null"));
	assert_true(has(v, nv, "core.fsmonitor=false"));
	assert_true(has(v, nv, "protocol.ext.allow=never"));
	assert_true(has(v, nv, "protocol.allow=never"));
	assert_true(has(v, nv, "credential.helper="));
	assert_true(has(v, nv, "push.gpgSign=false"));
	assert_true(has(v, nv, "safe.bareRepository=explicit"));
	assert_true(has(v, nv, "submodule.recurse=false"));
	assert_true(has(e, ne, "GIT_CONFIG_NOSYSTEM=1"));
	assert_true(has(e, ne, "GIT_CONFIG_GLOBAL=/dev/null"));
	assert_true(has(e, ne, "GIT_TERMINAL_PROMPT=0"));
	assert_true(has(e, ne, "GIT_NO_REPLACE_OBJECTS=1"));
	assert_true(has(e, ne, "GIT_ASKPASS="));
	assert_true(has(e, ne, "HOME=/nonexistent"));
	/* local: file only, and no ssh program; remote: git's known-safe list, never ext:: */
	assert_true(has(lt, nl, "protocol.file.allow=always"));
	assert_true(has(lt, nl, "core.sshCommand=false"));
	assert_false(has(lt, nl, "protocol.ssh.allow=always"));
	assert_false(has(lt, nl, "protocol.https.allow=always"));
	assert_true(has(rt, nr, "protocol.ssh.allow=always"));
	assert_true(has(rt, nr, "protocol.https.allow=always"));
	assert_true(has(rt, nr, "protocol.file.allow=always"));
	assert_false(has(rt, nr, "core.sshCommand=false"));
	for (size_t i = 0; i < nr; i++)
		assert_null(strstr(rt[i], "ext."));
	for (size_t i = 0; i < ne; i++) /* nothing of the caller's environment */
		assert_true(strncmp(e[i], "GIT_DIR=", 8) != 0 && strncmp(e[i], "LD_", 3) != 0);
}

static char dir[] = "/tmp/test-gitrun.XXXXXX";

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
		assert_int_equal(gitrun_identity(files, &name, &email), 0);
		assert_string_equal(name, "Later"); /* the first file wins, its last line */
		assert_string_equal(email, "g@x");
		free(name);
		free(email);
	}
	put("id/bad", "[user\n", 0644);
	{
		char *c = path_join(dir, "id/bad");
		const char *files[] = { c, b, NULL };
		assert_int_equal(gitrun_identity(files, &name, &email), -EINVAL);
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

/* The contract docs/workspace.md states: each of these is on every host git's command line or
 * in its environment, and nothing of aisb's own environment is. */
static void test_hardening(void **state)
{
	static const char *const want_args[] = {
		"--no-pager", "core.hooksPath=/dev/null", "core.fsmonitor=false", "credential.helper=", "gc.auto=0",
		"maintenance.auto=0", "protocol.allow=never", "protocol.ext.allow=never",
		"core.askPass=", "commit.gpgSign=false", "core.pager=cat",
	};
	static const char *const want_env[] = { "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
						"GIT_TERMINAL_PROMPT=0", "PATH=/usr/bin:/bin", "GIT_EDITOR=false",
						"GIT_PAGER=cat" };
	const char *argv[128], *env[64];
	size_t na = gitrun_hardening_args(argv, 128), ne = gitrun_base_env(env, 64);

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(want_args); i++)
		if (!has(argv, na, want_args[i]))
			fail_msg("'%s' is not among the hardening options", want_args[i]);
	for (size_t i = 0; i < ELEMENTSOF(want_env); i++)
		if (!has(env, ne, want_env[i]))
			fail_msg("'%s' is not in the environment", want_env[i]);
	for (size_t k = 0; k < ne; k++) /* GIT_ASKPASS only empty: no askpass program (git's prompt.c) */
		if (strncmp(env[k], "GIT_EXTERNAL_DIFF=", 18) == 0 || (strncmp(env[k], "GIT_ASKPASS=", 12) == 0 && env[k][12]) ||
		    strncmp(env[k], "SSH_ASKPASS=", 12) == 0 || strncmp(env[k], "GIT_DIR=", 8) == 0)
			fail_msg("'%s' must not be set", env[k]);
	{
		char m[] = "fatal: \x1b]52;c;x\x07 bad\n";
		gitrun_sanitize(m);
		assert_string_equal(m, "fatal: ?]52;c;x? bad?");
	}
	{
		/* the C1 range: a single 0x9b (CSI in an 8-bit terminal), U+009B as UTF-8 (0xc2 0x9b),
		 * 0x85 (NEL), a stray continuation byte, overlong and cut-short forms; same length */
		static const struct {
			const char *in, *out;
		} c1[] = {
			{ "a\x9b" "31mb", "a?31mb" },
			{ "a\xc2\x9b" "31mb", "a??31mb" },
			{ "\xc2\x80\xc2\x9f\xc2\xa0", "????\xc2\xa0" }, /* U+00A0 is not a control */
			{ "x\x85y", "x?y" },
			{ "\xc0\x9b", "??" },                /* overlong ESC-like */
			{ "\xe2\x82", "??" },                /* cut short */
			{ "\xed\xa0\x80", "???" },          /* a surrogate */
			{ "caf\xc3\xa9 \xc3\xbcn\xc3\xaf" "code \xe2\x82\xac \xf0\x9f\x99\x82",
			  "caf\xc3\xa9 \xc3\xbcn\xc3\xaf" "code \xe2\x82\xac \xf0\x9f\x99\x82" }, /* the control: kept */
		};
		for (size_t i = 0; i < ELEMENTSOF(c1); i++) {
			_cleanup_free_ char *m = strdup(c1[i].in), *g = gitrun_message(c1[i].in);
			assert_non_null(m);
			gitrun_sanitize(m);
			assert_string_equal(m, c1[i].out);
			assert_string_equal(g, c1[i].out);
		}
		_cleanup_free_ char *nl = gitrun_message("one\ntwo\xc2\x9b\x1b");
		assert_string_equal(nl, "one\ntwo???");
	}
	assert_true(gitrun_is_oid("1111111111111111111111111111111111111111"));
	assert_false(gitrun_is_oid("HEAD"));
	assert_false(gitrun_is_oid("1111111111111111111111111111111111111Z11"));
}

static char fake_home[64];

static const char *fake_get(const char *name)
{
	if (strcmp(name, "HOME") == 0)
		return fake_home;
	if (strcmp(name, "GIT_EXTERNAL_DIFF") == 0 || strcmp(name, "GIT_CONFIG_PARAMETERS") == 0)
		return "evil";
	return NULL;
}

/* A real git, run the way the import runs it: the user's global config gives the identity
 * (read explicitly), but no call sees it, nor anything of the caller's environment. */
static void test_hardening_live(void **state)
{
	_cleanup_free_ char *cfg = NULL;
	const char *const args[] = { "config", "--list", "--show-scope", NULL };
	struct gitrun_call c = { .args = args, .in_fd = -1 };
	struct gitrun g;
	FILE *f;

	(void)state;
	if (access("/usr/bin/git", X_OK) < 0)
		skip();
	snprintf(fake_home, sizeof(fake_home), "/tmp/aisb-test-gitrun-live.XXXXXX");
	assert_non_null(mkdtemp(fake_home));
	assert_true(asprintf(&cfg, "%s/.gitconfig", fake_home) > 0);
	f = fopen(cfg, "w");
	assert_non_null(f);
	fputs("[user]\n\tname = From Global\n\temail = g@example.com\n[core]\n\tpager = evil-pager\n", f);
	fclose(f);
	/* what a caller's environment could carry: none of it may reach git */
	setenv("GIT_CONFIG_PARAMETERS", "'core.pager'='evil-env'", 1);
	setenv("GIT_EXTERNAL_DIFF", "evil-diff", 1);
	assert_int_equal(gitrun_init(&g, fake_home, GITRUN_IDENT, fake_get), 0);
	assert_string_equal(g.name, "From Global");
	assert_string_equal(g.email, "g@example.com");
	c.dir = fake_home;
	assert_int_equal(gitrun_call(&g, &c), 0);
	assert_non_null(strstr(c.out, "command\tcore.hookspath=/dev/null"));
	assert_non_null(strstr(c.out, "command\tprotocol.ext.allow=never"));
	assert_null(strstr(c.out, "global\t"));
	assert_null(strstr(c.out, "system\t"));
	assert_null(strstr(c.out, "evil"));
	gitrun_call_done(&c);
	/* the environment git sees: built here, nothing inherited */
	{
		const char *const vargs[] = { "var", "GIT_PAGER", NULL };
		struct gitrun_call v = { .args = vargs, .in_fd = -1, .dir = fake_home };
		assert_int_equal(gitrun_call(&g, &v), 0);
		assert_string_equal(v.out, "cat\n");
		gitrun_call_done(&v);
	}
	unsetenv("GIT_CONFIG_PARAMETERS");
	unsetenv("GIT_EXTERNAL_DIFF");
	gitrun_done(&g);
	unlink(cfg);
	rmdir(fake_home);
}


/* Runs `git ARGS` in @d with @c's flags; returns stdout's first line (static buffer). */
static const char *run_line(const struct gitrun *g, struct gitrun_call *c)
{
	static char line[512];
	char *nl;
	assert_int_equal(gitrun_call(g, c), 0);
	nl = strchr(c->out, '\n');
	if (nl)
		*nl = 0;
	snprintf(line, sizeof(line), "%s", c->out);
	gitrun_call_done(c);
	return line;
}

/* The environment of one call (formerly read from hostgit_env()): the identity as
 * GIT_AUTHOR_* and GIT_COMMITTER_*, the caller's extra GIT_INDEX_FILE, HOME only for .remote
 * (with SSH_AUTH_SOCK), and the transports: ext:: and a remote helper refused, local and, with
 * .remote, https allowed by policy. */
static void test_call_env(void **state)
{
	_cleanup_free_ char *repo = path_join(dir, "envrepo"), *home = path_join(dir, "envhome");
	const struct gitrun_user u = { .home = home, .env_name = "Env N", .env_email = "env@x", .ssh_auth_sock = "/sock" };
	struct gitrun g;
	(void)state;
	if (access("/usr/bin/git", X_OK) < 0)
		skip();
	assert_int_equal(mkdir_p(home, 0755), 0);
	assert_int_equal(gitrun_setup(&g, &u), 0);
	assert_int_equal(gitrun_read_user(&g, NULL, GITRUN_IDENT), 0);
	assert_int_equal(gitrun_ok(&g, NULL, "init", "init", "-q", repo, (char *)NULL), 0);
	{
		const char *const a[] = { "var", "GIT_COMMITTER_IDENT", NULL };
		struct gitrun_call c = { .dir = repo, .args = a, .in_fd = -1, .ident = true };
		assert_non_null(strstr(run_line(&g, &c), "Env N <env@x>"));
	}
	{
		const char *const a[] = { "var", "GIT_AUTHOR_IDENT", NULL };
		struct gitrun_call c = { .dir = repo, .args = a, .in_fd = -1, .ident = true };
		assert_non_null(strstr(run_line(&g, &c), "Env N <env@x>"));
	}
	{
		const char *const a[] = { "rev-parse", "--git-path", "index", NULL };
		const char *const env[] = { "GIT_INDEX_FILE=/tmp/other-index", NULL };
		struct gitrun_call c = { .dir = repo, .args = a, .env = env, .in_fd = -1 };
		assert_string_equal(run_line(&g, &c), "/tmp/other-index");
	}
	{
		/* HOME as git expands "~/": /nonexistent, but the user's for a .remote call */
		const char *const a[] = { "-c", "t.p=~/x", "config", "--path", "--get", "t.p", NULL };
		struct gitrun_call c = { .dir = repo, .args = a, .in_fd = -1 };
		_cleanup_free_ char *want = path_join(home, "x");
		assert_string_equal(run_line(&g, &c), "/nonexistent/x");
		c = (struct gitrun_call){ .dir = repo, .args = a, .in_fd = -1, .remote = true };
		assert_string_equal(run_line(&g, &c), want);
	}
	{
		/* transports: ext:: never, a remote helper never, https only for .remote */
		static const struct {
			const char *url;
			bool remote, allowed;
		} t[] = {
			{ "ext::sh -c touch% /tmp/aisb-gitrun-ext", false, false },
			{ "ext::sh -c touch% /tmp/aisb-gitrun-ext", true, false },
			{ "fd::3", true, false },
			{ "https://127.0.0.1:9/x.git", false, false },
			{ "https://127.0.0.1:9/x.git", true, true },
		};
		for (size_t i = 0; i < ELEMENTSOF(t); i++) {
			const char *const a[] = { "ls-remote", t[i].url, NULL };
			struct gitrun_call c = { .dir = repo, .args = a, .in_fd = -1, .remote = t[i].remote };
			assert_true(gitrun_call(&g, &c) != 0);
			/* refused by policy names the transport; allowed fails connecting (port 9 on loopback) */
			if (t[i].allowed)
				assert_null(strstr(c.err, "not allowed"));
			else
				assert_non_null(strstr(c.err, "not allowed"));
			gitrun_call_done(&c);
		}
		assert_int_equal(access("/tmp/aisb-gitrun-ext", F_OK), -1);
	}
	{
		/* a bare repository: never entered by discovery (-C), only when the caller names it */
		_cleanup_free_ char *bare = path_join(dir, "env.git"), *out = NULL;
		assert_int_equal(gitrun_ok(&g, NULL, "init", "init", "-q", "--bare", bare, (char *)NULL), 0);
		assert_true(gitrun_line(&g, bare, &out, "rev-parse", "--is-bare-repository", (char *)NULL) > 0);
		g.bare = bare;
		assert_int_equal(gitrun_line(&g, bare, &out, "rev-parse", "--is-bare-repository", (char *)NULL), 0);
		assert_string_equal(out, "true");
		g.bare = NULL;
	}
	gitrun_done(&g);
}

/* One precedence for every caller: env, then the repository's config, ~/.gitconfig, XDG. */
static void test_read_user(void **state)
{
	_cleanup_free_ char *cd = path_join(dir, "ru/repo.git"), *home = path_join(dir, "ru/home"),
			    *xdg = path_join(dir, "ru/xdg");
	struct gitrun_user u = { .home = home, .xdg_config = xdg };
	struct gitrun g;
	(void)state;
	put("ru/xdg/git/config", "[user]\n\tname = Xdg\n\temail = x@x\n[core]\n\texcludesFile = ~/ign\n", 0644);
	assert_int_equal(gitrun_setup(&g, &u), 0);
	assert_int_equal(gitrun_read_user(&g, cd, GITRUN_IDENT | GITRUN_EXCLUDES), 0);
	assert_string_equal(g.name, "Xdg");
	{
		_cleanup_free_ char *want = path_join(home, "ign");
		assert_string_equal(g.excludes, want); /* ~/ expanded */
	}
	put("ru/home/.gitconfig", "[user]\n\tname = Home\n", 0644);
	assert_int_equal(gitrun_read_user(&g, cd, GITRUN_IDENT), 0);
	assert_string_equal(g.name, "Home");
	assert_string_equal(g.email, "x@x"); /* per key: the email still from XDG */
	put("ru/repo.git/config", "[user]\n\tname = Repo\n", 0644);
	assert_int_equal(gitrun_read_user(&g, cd, GITRUN_IDENT), 0);
	assert_string_equal(g.name, "Repo");
	gitrun_done(&g);
	u.env_name = "Env";
	assert_int_equal(gitrun_setup(&g, &u), 0);
	assert_int_equal(gitrun_read_user(&g, cd, GITRUN_IDENT), 0);
	assert_string_equal(g.name, "Env");
	gitrun_done(&g);
	/* none: -ENODATA (the callers' message names the fix) */
	u = (struct gitrun_user){ .home = "/nonexistent" };
	assert_int_equal(gitrun_setup(&g, &u), 0);
	assert_int_equal(gitrun_read_user(&g, NULL, GITRUN_IDENT), -ENODATA);
	assert_int_equal(gitrun_read_user(&g, NULL, 0), 0); /* the control: not asked for */
	gitrun_done(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_redact),
		cmocka_unit_test(test_message),
		cmocka_unit_test(test_argv_env),
		cmocka_unit_test(test_identity),
		cmocka_unit_test(test_snapshot),
		cmocka_unit_test(test_hardening),
		cmocka_unit_test(test_hardening_live),
		cmocka_unit_test(test_call_env),
		cmocka_unit_test(test_read_user),
	};
	int r;
	if (!mkdtemp(dir))
		return 1;
	r = cmocka_run_group_tests(tests, NULL, NULL);
	rm_rf(dir);
	return r;
}
