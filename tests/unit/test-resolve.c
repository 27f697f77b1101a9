// SPDX-License-Identifier: GPL-2.0-or-later
/* test-resolve.c — reserved paths, mount specs, project placement, env policy, redaction */
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

#include "cli/args.h"
#include "cli/resolve.h"
#include "net/netplan.h"
#include "util/util.h"

#define CANARY "canary-7f3e9a1c-value"

static const char *const *fake_env;

static const char *fake_get(const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; fake_env && fake_env[i]; i++)
		if (strncmp(fake_env[i], name, n) == 0 && fake_env[i][n] == '=')
			return fake_env[i] + n + 1;
	return NULL;
}

static void test_reserved(void **state)
{
	static const struct { const char *path; bool reserved; } t[] = {
		{ "/", true }, { "/usr", true }, { "/usr/src/x", true }, { "/etc", true },
		{ "/var/tmp/p", true }, { "/tmp", true }, { "/tmp/proj", true }, { "/root/p", true },
		{ "/home", true }, { "/home/sandbox", true }, { "/home/sandbox/x", true },
		{ "/home/sandboxes", true }, { "/proc/1", true }, { "/run/user/1000", true },
		{ "/lib64", true }, { "/project", true }, { "relative", true },
		{ "/home/alice/proj", false }, { "/srv/code", false }, { "/work/main", false },
		{ "/usrx", false }, { "/tmpfoo", false }, { "/opt2", false },
	};
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		if (plan_path_is_reserved(t[i].path) != t[i].reserved)
			fail_msg("plan_path_is_reserved(%s) != %d", t[i].path, t[i].reserved);
	}
}

static void test_forbidden_sources(void **state)
{
	assert_true(plan_path_is_forbidden_source("/", NULL));
	assert_true(plan_path_is_forbidden_source("/proc/self", NULL));
	assert_true(plan_path_is_forbidden_source("/run/docker.sock", NULL));
	assert_true(plan_path_is_forbidden_source("/var/run", NULL));
	assert_true(plan_path_is_forbidden_source("/sys", NULL));
	assert_true(plan_path_is_forbidden_source("/dev/sda", NULL));
	assert_true(plan_path_is_forbidden_source("/xdg/rt/podman", "/xdg/rt"));
	assert_true(plan_path_is_forbidden_source("/xdg", "/xdg/rt")); /* contains it */
	assert_false(plan_path_is_forbidden_source("/home/alice/data", "/run/user/1000"));
	assert_false(plan_path_is_forbidden_source("/srv/x", NULL));
	assert_false(plan_path_is_forbidden_source("/runner", NULL));
}

static void test_mount_spec(void **state)
{
	static const struct { const char *spec; int r; const char *src, *dst; bool ro; } t[] = {
		{ "/a", 0, "/a", NULL, true },
		{ "/a:ro", 0, "/a", NULL, true },
		{ "/a:rw", 0, "/a", NULL, false },
		{ "/a:/b", 0, "/a", "/b", true },
		{ "/a:/b:rw", 0, "/a", "/b", false },
		{ "rel/dir:/b:ro", 0, "rel/dir", "/b", true },
		{ "/a:b", -EINVAL, NULL, NULL, false },
		{ "/a:/b:rx", -EINVAL, NULL, NULL, false },
		{ "/a:rx", -EINVAL, NULL, NULL, false },
		{ "/a:/b:ro:x", -EINVAL, NULL, NULL, false },
		{ ":/b", -EINVAL, NULL, NULL, false },
		{ "/a/../etc:/b", -EINVAL, NULL, NULL, false },
		{ "/a:/b/../c", -EINVAL, NULL, NULL, false },
	};
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		char *src = NULL, *dst = NULL;
		bool ro = false;
		int r = plan_parse_mount_spec(t[i].spec, &src, &dst, &ro);
		if (r != t[i].r)
			fail_msg("spec %s: r=%d want %d", t[i].spec, r, t[i].r);
		if (r == 0) {
			assert_string_equal(src, t[i].src);
			if (t[i].dst)
				assert_string_equal(dst, t[i].dst);
			else
				assert_null(dst);
			assert_int_equal(ro, t[i].ro);
		}
		free(src);
		free(dst);
	}
}

static void test_project_dst(void **state)
{
	char *dst = NULL;
	bool rel;
	assert_int_equal(plan_project_dst("/home/a/p", "auto", &dst, &rel), 0);
	assert_string_equal(dst, "/home/a/p");
	assert_false(rel);
	free(dst);
	assert_int_equal(plan_project_dst("/tmp/p", "auto", &dst, &rel), 0);
	assert_string_equal(dst, "/project");
	assert_true(rel);
	free(dst);
	assert_int_equal(plan_project_dst("/tmp/p", "/src/app", &dst, &rel), 0);
	assert_string_equal(dst, "/src/app");
	free(dst);
	assert_int_equal(plan_project_dst("/tmp/p", "/etc/app", &dst, &rel), -EINVAL);
	assert_int_equal(plan_project_dst("/tmp/p", "src", &dst, &rel), -EINVAL);
	assert_int_equal(plan_project_dst("/tmp/p", "/a/../etc", &dst, &rel), -EINVAL);
}

static void test_env_names(void **state)
{
	assert_true(plan_env_name_valid("A"));
	assert_true(plan_env_name_valid("_x1"));
	assert_false(plan_env_name_valid("1A"));
	assert_false(plan_env_name_valid("A-B"));
	assert_false(plan_env_name_valid(""));
	assert_false(plan_env_name_valid("A=B"));
}

static const char *env_value(const struct aisb_plan *p, const char *name)
{
	for (size_t i = 0; i < p->n_env; i++)
		if (strcmp(p->env[i].name, name) == 0)
			return p->env[i].value;
	return NULL;
}

static void test_env_policy(void **state)
{
	static const char *const env[] = { "TERM=xterm", "LANG=C.UTF-8", "SECRET=" CANARY, "HOME=/home/x",
					   "SSH_AUTH_SOCK=/run/x", "AWS_SECRET_ACCESS_KEY=k", NULL };
	struct aisb_settings s;
	struct aisb_plan p = { 0 };

	fake_env = env;
	args_defaults(&s);
	strv_push(&s.envs, "SECRET");
	strv_push(&s.envs, "LIT=v1");
	assert_int_equal(plan_build_env(&p, &s, fake_get), 0);
	assert_string_equal(env_value(&p, "TERM"), "xterm");
	assert_string_equal(env_value(&p, "LANG"), "C.UTF-8");
	assert_string_equal(env_value(&p, "HOME"), "/home/sandbox");
	assert_string_equal(env_value(&p, "SECRET"), CANARY);
	assert_string_equal(env_value(&p, "LIT"), "v1");
	/* nothing else of the host passes */
	assert_null(env_value(&p, "SSH_AUTH_SOCK"));
	assert_null(env_value(&p, "AWS_SECRET_ACCESS_KEY"));
	for (size_t i = 0; i < p.n_env; i++)
		if (!strcmp(p.env[i].name, "SECRET") || !strcmp(p.env[i].name, "LIT"))
			assert_true(p.env[i].secret);
		else
			assert_false(p.env[i].secret);
	plan_free(&p);
	settings_free(&s);

	/* unset NAME is an error */
	args_defaults(&s);
	strv_push(&s.envs, "NOT_SET_ANYWHERE");
	assert_int_equal(plan_build_env(&p, &s, fake_get), -EINVAL);
	plan_free(&p);
	settings_free(&s);
	args_defaults(&s);
	strv_push(&s.envs, "BAD-NAME=1");
	assert_int_equal(plan_build_env(&p, &s, fake_get), -EINVAL);
	plan_free(&p);
	settings_free(&s);
	fake_env = NULL;
}

static void write_env_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write_full(fd, text, strlen(text)), 0);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void test_env_file(void **state)
{
	char dir[] = "/tmp/aisb-test-env.XXXXXX";
	_cleanup_free_ char *path = NULL;
	struct aisb_settings s;
	struct aisb_plan p = { 0 };

	assert_non_null(mkdtemp(dir));
	path = path_join(dir, "env");
	write_env_file(path, "# c\nA=1\nexport B=\"two words\"\n\nC='x'\n", 0600);
	args_defaults(&s);
	strv_push(&s.env_files, path);
	assert_int_equal(plan_build_env(&p, &s, fake_get), 0);
	assert_string_equal(env_value(&p, "A"), "1");
	assert_string_equal(env_value(&p, "B"), "two words");
	assert_string_equal(env_value(&p, "C"), "x");
	plan_free(&p);

	write_env_file(path, "A=1\n", 0644);
	assert_int_equal(plan_build_env(&p, &s, fake_get), -EINVAL);
	plan_free(&p);
	write_env_file(path, "A=1\nthis line has no equals " CANARY "\n", 0600);
	assert_int_equal(plan_build_env(&p, &s, fake_get), -EINVAL);
	plan_free(&p);
	settings_free(&s);
	unlink(path);
	rmdir(dir);
}

static void test_redaction(void **state)
{
	static const char *const env[] = { "TOKEN=" CANARY, "HOME=/home/x", NULL };
	struct aisb_settings s;
	struct aisb_plan p = { 0 };
	char *buf = NULL, *json;
	size_t len = 0;
	FILE *f;

	fake_env = env;
	args_defaults(&s);
	s.no_cwd = true;
	strv_push(&s.command, "true"); /* a `--` command: the bridge has nothing to do */
	strv_push(&s.envs, "TOKEN");
	strv_push(&s.envs, "OTHER=" CANARY);
	assert_int_equal(plan_resolve(&p, &s, fake_get, NULL), 0);
	f = open_memstream(&buf, &len);
	plan_print(&p, f);
	plan_print_policy(&p, f);
	fclose(f);
	assert_null(strstr(buf, CANARY));
	assert_non_null(strstr(buf, "TOKEN=<redacted>"));
	assert_non_null(strstr(buf, "env=OTHER"));
	json = plan_to_json(&p, netplan_mode(p.netp), NULL);
	assert_null(strstr(json, CANARY));
	assert_non_null(strstr(json, "\"TOKEN\""));
	free(json);
	free(buf);
	plan_free(&p);
	settings_free(&s);
	fake_env = NULL;
}

static void test_refusals(void **state)
{
	static const char *const env[] = { "HOME=/home/x", NULL };
	struct aisb_settings s;
	struct aisb_plan p = { 0 };

	fake_env = env;
	args_defaults(&s);
	s.no_cwd = true;
	/* an explicit --net allow with an empty allowlist allows nothing: 78 */
	s.net = NET_ALLOW;
	s.net_source = SRC_FLAG;
	assert_int_equal(plan_resolve(&p, &s, fake_get, NULL), 78);
	plan_free(&p);
	/* the default allow mode with nothing allowed runs as none (a `--` command: a harness's
	 * bridge would refuse a model endpoint nothing allows, test-bridge.c) */
	s.net_source = SRC_DEFAULT;
	strv_push(&s.command, "true");
	assert_int_equal(plan_resolve(&p, &s, fake_get, NULL), 0);
	assert_int_equal(netplan_mode(p.netp), NET_NONE);
	plan_free(&p);
	strv_free(s.command);
	s.command = NULL;
	/* an invalid entry is 78 */
	strv_push(&s.allows, "exa mple.com");
	assert_int_equal(plan_resolve(&p, &s, fake_get, NULL), 78);
	plan_free(&p);
	strv_free(s.allows);
	s.allows = NULL;
	s.net = NET_NONE;
	s.memory = strdup("lots"); /* invalid on every host; enforcement is tested in test-cgroup */
	assert_int_equal(plan_resolve(&p, &s, fake_get, NULL), 78);
	plan_free(&p);
	free(s.memory);
	s.memory = NULL;
	strv_push(&s.mounts, "/proc");
	assert_int_equal(plan_resolve(&p, &s, fake_get, NULL), 78);
	plan_free(&p);
	strv_free(s.mounts);
	s.mounts = NULL;
	strv_push(&s.mounts, "/srv:/usr/local");
	assert_int_equal(plan_resolve(&p, &s, fake_get, NULL), 78);
	plan_free(&p);
	strv_free(s.mounts);
	s.mounts = NULL;
	/* control: the same plan without the bad parts resolves (offline, the user's choice: the
	 * harness's bridge then needs no allowed endpoint) */
	s.net = NET_NONE;
	s.net_source = SRC_FLAG;
	assert_int_equal(plan_resolve(&p, &s, fake_get, NULL), 0);
	assert_string_equal(p.cwd, "/home/sandbox");
	assert_string_equal(p.argv[0], "pi");
	plan_free(&p);
	settings_free(&s);
	fake_env = NULL;
}

/* The network mode has one home, the net plan (netplan_mode()): every mode --net can name comes
 * back from it as resolved, the default allow mode with nothing to allow as none, and a plan
 * without a net part (one built by hand, as the mount tests do) reads as none. */
static void test_net_mode_one_home(void **state)
{
	static const char *const env[] = { "HOME=/home/x", NULL };
	static const struct { enum net_mode in; enum setting_source src; const char *allow; enum net_mode out; } t[] = {
		{ NET_NONE, SRC_FLAG, NULL, NET_NONE },
		{ NET_FULL, SRC_FLAG, NULL, NET_FULL },
		{ NET_ALLOW, SRC_FLAG, "example.com", NET_ALLOW },
		{ NET_ALLOW, SRC_DEFAULT, NULL, NET_NONE },
	};
	char *buf = NULL;
	size_t len = 0;

	assert_int_equal(netplan_mode(NULL), NET_NONE);
	fake_env = env;
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		struct aisb_settings s;
		struct aisb_plan p = { 0 };
		char want[32];
		FILE *f;

		args_defaults(&s);
		s.no_cwd = true;
		strv_push(&s.command, "true"); /* a `--` command: the bridge has nothing to do */
		s.net = t[i].in;
		s.net_source = t[i].src;
		if (t[i].allow)
			strv_push(&s.allows, t[i].allow);
		assert_int_equal(plan_resolve(&p, &s, fake_get, NULL), 0);
		assert_int_equal(netplan_mode(p.netp), t[i].out);
		/* --print-policy's first line reads it from there too */
		f = open_memstream(&buf, &len);
		plan_print_policy(&p, f);
		fclose(f);
		snprintf(want, sizeof(want), "net=%s\n", net_mode_to_string(t[i].out));
		assert_true(strncmp(buf, want, strlen(want)) == 0);
		free(buf);
		buf = NULL;
		plan_free(&p);
		settings_free(&s);
	}
	fake_env = NULL;
}

/* What a run makes is its session's, not the plan's (core/session.h): plan.json takes the id, the
 * etc dir and the canonical home from the session it is written for, and plan_project_src() is
 * the session's clone when there is one, else the plan's project. */
static void test_session_is_not_the_plan(void **state)
{
	struct aisb_plan p = { .project_src = (char *)"/home/a/proj", .home_src = (char *)"/link/aisb/homes/default",
			       .cwd = (char *)"/home/a/proj" };
	struct aisb_session ss = { .id = (char *)"0123456789ab", .etc_dir = (char *)"/run/aisb/0123456789ab",
				   .home_src = (char *)"/real/aisb/homes/default" };
	char *json;

	(void)state;
	assert_string_equal(plan_project_src(&p, NULL), "/home/a/proj");
	assert_string_equal(plan_project_src(&p, &ss), "/home/a/proj");
	ss.project_src = (char *)"/real/aisb/workspaces/0123456789ab/repo";
	assert_string_equal(plan_project_src(&p, &ss), ss.project_src);
	json = plan_to_json(&p, NET_NONE, &ss);
	assert_non_null(strstr(json, "\"session\":\"0123456789ab\""));
	assert_non_null(strstr(json, "\"etc_dir\":\"/run/aisb/0123456789ab\""));
	assert_non_null(strstr(json, "\"home\":\"/real/aisb/homes/default\""));
	assert_non_null(strstr(json, "\"project\":\"/home/a/proj\"")); /* the plan's: what was asked */
	free(json);
	/* no session yet: the plan's own home, no id */
	json = plan_to_json(&p, NET_NONE, NULL);
	assert_non_null(strstr(json, "\"session\":\"\""));
	assert_null(strstr(json, "etc_dir"));
	assert_non_null(strstr(json, "\"home\":\"/link/aisb/homes/default\""));
	free(json);
}

static void test_command(void **state)
{
	static const char *const env[] = { "HOME=/home/x", NULL };
	struct aisb_settings s;
	struct aisb_plan p = { 0 };
	const char *argv[] = { "aisb", "--harness", "codex", "--net", "none", "--no-cwd", "exec", "x", NULL };

	fake_env = env;
	args_defaults(&s);
	assert_int_equal(args_parse_flags(&s, 8, (char **)argv), 0);
	assert_int_equal(plan_resolve(&p, &s, fake_get, NULL), 0);
	assert_int_equal(strv_length(p.argv), 3);
	assert_string_equal(p.argv[0], "codex");
	assert_string_equal(p.argv[1], "exec");
	plan_free(&p);
	settings_free(&s);
	fake_env = NULL;
}

/* Where an image run's upper goes: a tmpfs unless --keep (--keep --ephemeral: the tmpfs again);
 * AISB_TEST_UPPER_SIZE is parsed as a size, and a bad one is 78. */
static void test_image_upper(void **state)
{
	static const char *const env[] = { "HOME=/home/x", NULL };
	static const char *const env_hook[] = { "HOME=/home/x", "AISB_TEST_UPPER_SIZE=4M", NULL };
	static const char *const env_bad[] = { "HOME=/home/x", "AISB_TEST_UPPER_SIZE=lots", NULL };
	static const struct {
		bool keep, ephemeral, tmpfs;
	} t[] = { { false, false, true }, { true, false, false }, { true, true, true }, { false, true, true } };
	struct aisb_settings s;
	struct aisb_plan p = { 0 };

	(void)state;
	fake_env = env;
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		args_defaults(&s);
		s.no_cwd = true;
		s.image = strdup("oci:/nonexistent/layout:v1");
		s.net = NET_NONE; /* the harness's bridge needs no allowed endpoint offline */
		s.net_source = SRC_FLAG;
		s.keep = t[i].keep;
		s.ephemeral = t[i].ephemeral;
		assert_int_equal(plan_resolve(&p, &s, fake_get, NULL), 0);
		assert_int_equal(p.image_ephemeral, t[i].tmpfs);
		assert_int_equal(p.image_upper_max, 0);
		plan_free(&p);
		settings_free(&s);
	}
	args_defaults(&s);
	s.no_cwd = true;
	s.image = strdup("oci:/nonexistent/layout:v1");
	s.net = NET_NONE;
	s.net_source = SRC_FLAG;
	fake_env = env_hook;
	assert_int_equal(plan_resolve(&p, &s, fake_get, NULL), 0);
	assert_int_equal(p.image_upper_max, 4 << 20);
	plan_free(&p);
	fake_env = env_bad;
	assert_int_equal(plan_resolve(&p, &s, fake_get, NULL), 78);
	plan_free(&p);
	settings_free(&s);
	fake_env = NULL;
}

/* --harness-from: read-only, relocated below /aisb-host when its path is the sandbox's, its bin
 * first on PATH; never the home. --home NAME picks homes/NAME. */
static void test_harness_from_and_home(void **state)
{
	char dir[] = "/tmp/aisb-test-hf.XXXXXX", bin[64], want[128];
	const char *env[] = { "HOME=/home/x", "XDG_STATE_HOME=/home/x/.st", NULL };
	struct aisb_settings s;
	struct aisb_plan p = { 0 };
	const char *path = NULL;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(bin, sizeof(bin), "%s/bin", dir);
	assert_int_equal(mkdir(bin, 0755), 0);
	fake_env = env;
	args_defaults(&s);
	s.no_cwd = true;
	s.net = NET_NONE;
	s.home = strdup("work");
	strv_push(&s.harness_from, dir);
	assert_int_equal(plan_resolve(&p, &s, fake_get, NULL), 0);
	assert_string_equal(p.home_src, "/home/x/.st/aisb/homes/work");
	assert_int_equal(p.n_mounts, 1);
	assert_string_equal(p.mounts[0].src, dir);
	snprintf(want, sizeof(want), "/aisb-host%s", dir);
	assert_string_equal(p.mounts[0].dst, want);
	assert_true(p.mounts[0].ro);
	for (size_t i = 0; i < p.n_env; i++)
		if (streq(p.env[i].name, "PATH"))
			path = p.env[i].value;
	snprintf(want, sizeof(want), "/aisb-host%s/bin:/usr/local/sbin:", dir);
	assert_non_null(path);
	assert_int_equal(strncmp(path, want, strlen(want)), 0);
	plan_free(&p);
	/* the home itself, or a dir holding it, is refused */
	strv_free(s.harness_from);
	s.harness_from = NULL;
	strv_push(&s.harness_from, "/");
	assert_int_equal(plan_resolve(&p, &s, fake_get, NULL), 78);
	plan_free(&p);
	settings_free(&s);
	fake_env = NULL;
	assert_int_equal(rm_rf(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reserved),
		cmocka_unit_test(test_forbidden_sources),
		cmocka_unit_test(test_mount_spec),
		cmocka_unit_test(test_project_dst),
		cmocka_unit_test(test_env_names),
		cmocka_unit_test(test_env_policy),
		cmocka_unit_test(test_env_file),
		cmocka_unit_test(test_redaction),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_net_mode_one_home),
		cmocka_unit_test(test_session_is_not_the_plan),
		cmocka_unit_test(test_command),
		cmocka_unit_test(test_image_upper),
		cmocka_unit_test(test_harness_from_and_home),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
