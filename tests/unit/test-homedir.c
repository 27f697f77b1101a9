// SPDX-License-Identifier: GPL-2.0-or-later
/* test-homedir.c — the one rule for aisb's state, cache and config dirs, and the engine fixes */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/container.h"

#define PROC_TRADE "; or, accepting that the sandbox then sees the container's processes and their argv (never their environ, memory or fds), and nested user namespaces are refused by seccomp alone, pass --container-proc"
#include "util/homedir.h"
#include "util/util.h"

static const char *v_home, *v_state, *v_cache, *v_config;

static const char *get(const char *name)
{
	if (streq(name, "HOME"))
		return v_home;
	if (streq(name, "XDG_STATE_HOME"))
		return v_state;
	if (streq(name, "XDG_CACHE_HOME"))
		return v_cache;
	if (streq(name, "XDG_CONFIG_HOME"))
		return v_config;
	return NULL;
}

static const char *pw_home(void)
{
	struct passwd *pw = getpwuid(getuid());
	return pw ? pw->pw_dir : NULL;
}

static void test_normalize(void **s)
{
	char a[] = "//x//y///z/", b[] = "/", c[] = "rel//x";
	homedir_normalize(a);
	homedir_normalize(b);
	homedir_normalize(c);
	assert_string_equal(a, "/x/y/z/");
	assert_string_equal(b, "/");
	assert_string_equal(c, "rel/x");
}

static void test_home_rule(void **s)
{
	char tmp[] = "/tmp/aisb-homedir-XXXXXX", dbl[96];
	_cleanup_free_ char *h = NULL, *st = NULL;
	bool fb;

	assert_non_null(mkdtemp(tmp));
	/* a writable $HOME is taken as it is */
	v_home = tmp;
	h = homedir_home(get, &fb);
	assert_string_equal(h, tmp);
	assert_false(fb);
	free(h);
	/* unset, relative or missing: the passwd home, for every command alike */
	v_home = NULL;
	h = homedir_home(get, &fb);
	assert_string_equal(h, pw_home());
	assert_false(fb); /* nothing to fall back from */
	free(h);
	v_home = "relative/home";
	h = homedir_home(get, &fb);
	assert_string_equal(h, pw_home());
	free(h);
	v_home = "/nonexistent/aisb-homedir";
	h = homedir_home(get, &fb);
	assert_string_equal(h, pw_home());
	assert_true(fb);
	free(h);
	h = NULL;
	/* the dirs below it, without "//" */
	snprintf(dbl, sizeof(dbl), "/%s//", tmp);
	v_home = dbl;
	st = homedir_aisb(get, HOMEDIR_STATE);
	assert_non_null(st);
	assert_null(strstr(st, "//"));
	assert_true(path_startswith(st, tmp));
	assert_non_null(strstr(st, "/.local/state/aisb"));
	free(st);
	st = homedir_aisb(get, HOMEDIR_CACHE);
	assert_non_null(strstr(st, "/.cache/aisb"));
	free(st);
	st = homedir_aisb(get, HOMEDIR_CONFIG);
	assert_non_null(strstr(st, "/.config/aisb"));
	free(st);
	/* an absolute XDG variable wins; a relative one is ignored */
	v_state = "/srv/state/";
	st = homedir_aisb(get, HOMEDIR_STATE);
	assert_string_equal(st, "/srv/state/aisb");
	free(st);
	v_state = "state";
	st = homedir_aisb(get, HOMEDIR_STATE);
	assert_true(path_startswith(st, tmp));
	free(st);
	st = NULL;
	v_state = NULL;
	v_home = NULL;
	rmdir(tmp);
}

/* Every command's check (issue 24): a directory that does not exist yet is usable when its
 * nearest existing ancestor is writable; one below a file is refused naming the variable. */
static void test_usable_rule(void **s)
{
	char tmp[] = "/tmp/aisb-homedir-XXXXXX", deep[96], file[96], below[128], why[512], fix[128];
	_cleanup_free_ char *d = NULL;
	FILE *f;

	assert_non_null(mkdtemp(tmp));
	snprintf(deep, sizeof(deep), "%s/not/yet", tmp);
	snprintf(file, sizeof(file), "%s/file", tmp);
	snprintf(below, sizeof(below), "%s/file/x", tmp);
	assert_non_null(f = fopen(file, "w"));
	fclose(f);
	v_home = NULL;
	v_cache = v_config = NULL;

	/* control: a variable naming a path that mkdir -p can make is taken, with /aisb */
	v_state = deep;
	assert_int_equal(homedir_aisb_check(get, HOMEDIR_STATE, &d, why, sizeof(why), fix, sizeof(fix)), 0);
	assert_non_null(d);
	assert_non_null(strstr(d, "/not/yet/aisb"));
	free(d);
	d = NULL;
	assert_int_equal(homedir_aisb_usable(get, HOMEDIR_STATE, &d), 0);
	free(d);
	d = NULL;

	/* below a file: refused, and the message names the path and the variable to set */
	v_state = below;
	assert_int_equal(homedir_aisb_check(get, HOMEDIR_STATE, &d, why, sizeof(why), fix, sizeof(fix)), -ENOTDIR);
	assert_null(d);
	assert_non_null(strstr(why, below));
	assert_non_null(strstr(why, "XDG_STATE_HOME"));
	assert_string_equal(fix, "set XDG_STATE_HOME to a writable directory");
	/* the same rule for the cache, with its own variable */
	v_state = NULL;
	v_cache = below;
	assert_int_equal(homedir_aisb_check(get, HOMEDIR_CACHE, &d, why, sizeof(why), fix, sizeof(fix)), -ENOTDIR);
	assert_non_null(strstr(why, "image cache"));
	assert_string_equal(fix, "set XDG_CACHE_HOME to a writable directory");
	assert_true(homedir_aisb_usable(get, HOMEDIR_CACHE, &d) < 0);
	assert_null(d);
	v_cache = NULL;
	unlink(file);
	rmdir(tmp);
}

static void test_engine_fixes(void **s)
{
	char msg[384], fix[384];

	/* every need has a fix for every engine, and the unknown engine names all of them */
	for (int n = 0; n < CONTAINER_NEED_MAX; n++)
		for (int e = 0; e < CONTAINER_ENGINE_MAX; e++)
			assert_true(strlen(container_fix((enum container_engine)e, (enum container_need)n)) > 20);
	assert_non_null(strstr(container_fix(CONTAINER_NONE, CONTAINER_NEED_PROC), "unmask=ALL"));
	assert_non_null(strstr(container_fix(CONTAINER_NONE, CONTAINER_NEED_PROC), "systempaths=unconfined"));
	assert_non_null(strstr(container_fix(CONTAINER_NONE, CONTAINER_NEED_PROC), "procMount: Unmasked"));
	assert_non_null(strstr(container_fix(CONTAINER_PODMAN, CONTAINER_NEED_TUN), "--device /dev/net/tun"));
	assert_non_null(strstr(container_fix(CONTAINER_PODMAN, CONTAINER_NEED_CGROUP), "--cgroups=split"));
	assert_null(strstr(container_fix(CONTAINER_DOCKER, CONTAINER_NEED_CGROUP), "boot"));
	container_proc_refusal(CONTAINER_DOCKER, EPERM, 1, msg, sizeof(msg), fix, sizeof(fix));
	assert_non_null(strstr(msg, "Docker masks 1 path of /proc"));
	assert_string_equal(fix, "run the container with --security-opt systempaths=unconfined (docker)" PROC_TRADE); /* the unmask first, the trade second */
	container_proc_refusal(CONTAINER_NONE, EACCES, 0, msg, sizeof(msg), fix, sizeof(fix));
	assert_null(strstr(msg, "masks"));
	/* mountinfo: only mounts strictly below /proc count, binfmt_misc does not */
	assert_int_equal(container_proc_overmounts("1 0 0:1 / /proc rw - proc proc rw\n"
						   "2 1 0:2 / /proc/kcore rw - tmpfs t rw\n"
						   "3 1 0:3 / /proc/sys/fs/binfmt_misc rw - binfmt_misc b rw\n"
						   "4 0 0:4 / /procx rw - tmpfs t rw\n", "/proc"), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normalize),
		cmocka_unit_test(test_home_rule),
		cmocka_unit_test(test_usable_rule),
		cmocka_unit_test(test_engine_fixes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
