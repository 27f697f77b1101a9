// SPDX-License-Identifier: GPL-2.0-or-later
/* test-sessions.c — state dir reading for ps/inspect/logs/clean against a temp state dir */
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

#include "cli/sessions.h"
#include "util/util.h"

static char state[64];

static const char *fake_env_xdg;
static const char *fake_env_home;
static const char *fake_get(const char *name)
{
	if (streq(name, "XDG_STATE_HOME"))
		return fake_env_xdg;
	if (streq(name, "HOME"))
		return fake_env_home;
	return NULL;
}

static void put(const char *rel, const char *text)
{
	_cleanup_free_ char *p = path_join(state, rel), *dir = strdup(p);
	*strrchr(dir, '/') = 0;
	assert_int_equal(mkdir_p(dir, 0700), 0);
	assert_int_equal(write_file_at(AT_FDCWD, p, text, strlen(text), 0600), 0);
}

static unsigned long long my_start(void)
{
	_cleanup_free_ char *buf = NULL;
	char *p;
	assert_int_equal(read_file_at(AT_FDCWD, "/proc/self/stat", 4096, &buf, NULL), 0);
	p = strrchr(buf, ')');
	for (int f = 2; f < 22; f++)
		p = strchr(p + 1, ' ');
	return strtoull(p + 1, NULL, 10);
}

/* The session ids these tests make. sessions_list() also reads the caller's real run dirs
 * (/run/user/UID/aisb, /dev/shm/aisb-UID), where a live aisb of this user may have sessions: the
 * tests count only their own. */
static bool is_ours(const char *id)
{
	return streq(id, "aaaaaaaaaaaa") || streq(id, "bbbbbbbbbbbb") || streq(id, "cccccccccccc");
}

static size_t count_ours(const struct session_info *v, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += is_ours(v[i].id);
	return k;
}

static int setup(void **s)
{
	snprintf(state, sizeof(state), "/tmp/aisb-sesstest-XXXXXX");
	return mkdtemp(state) ? 0 : -1;
}

static int teardown(void **s)
{
	rm_rf(state);
	return 0;
}

static void test_state_dir(void **s)
{
	_cleanup_free_ char *a = NULL, *b = NULL, *want = NULL;
	fake_env_xdg = "/x/state";
	fake_env_home = state; /* a home must be a writable directory (util/homedir.h) */
	a = sessions_state_dir(fake_get);
	assert_string_equal(a, "/x/state/aisb");
	fake_env_xdg = "relative"; /* ignored, as the XDG spec says */
	b = sessions_state_dir(fake_get);
	want = path_join(state, ".local/state/aisb");
	assert_string_equal(b, want);
}

static void test_ids_and_age(void **s)
{
	char b[16];
	assert_true(sessions_id_valid("0a1b2c3d4e5f"));
	assert_false(sessions_id_valid(""));
	assert_false(sessions_id_valid("../etc"));
	assert_false(sessions_id_valid("ABC"));
	assert_false(sessions_id_valid("a/b"));
	sessions_format_age(5, b, sizeof(b));
	assert_string_equal(b, "5s");
	sessions_format_age(600, b, sizeof(b));
	assert_string_equal(b, "10m");
	sessions_format_age(3 * 3600, b, sizeof(b));
	assert_string_equal(b, "3h");
	sessions_format_age(5 * 86400, b, sizeof(b));
	assert_string_equal(b, "5d");
}

static void test_list_live_ended_remove(void **s)
{
	struct session_info *v = NULL, si;
	char sup[64];
	size_t n = 0;
	FILE *f;
	char *out = NULL;
	size_t outlen = 0;

	snprintf(sup, sizeof(sup), "%d %llu\n", (int)getpid(), my_start());
	put("sessions/aaaaaaaaaaaa/plan.json", "{\"net\":\"none\",\"rootfs\":\"host\",\"project\":\"/p\",\"env\":[\"TOKEN\"]}");
	put("sessions/aaaaaaaaaaaa/supervisor", sup);
	put("sessions/aaaaaaaaaaaa/init", "4242\n");
	/* same pid, other start time: a reused pid, so ended */
	snprintf(sup, sizeof(sup), "%d %llu\n", (int)getpid(), my_start() + 1);
	put("sessions/bbbbbbbbbbbb/plan.json", "{\"net\":\"none\"}");
	put("sessions/bbbbbbbbbbbb/supervisor", sup);
	put("sessions/bbbbbbbbbbbb/cgroup", "/sys/fs/cgroup/nope/aisb-cccccccccccc\n");
	put("sessions/not-a-session/plan.json", "{}");
	put("sessions.log", "{\"id\":\"bbbbbbbbbbbb\",\"exit\":0}\n{\"id\":\"aaaaaaaaaaaa\",\"exit\":1}\n"
			    "garbage\n{\"id\":\"bbbbbbbbbbbb\",\"exit\":3}\n");

	assert_int_equal(sessions_list(state, &v, &n), 0);
	assert_int_equal(count_ours(v, n), 2);
	for (size_t i = 0; i < n; i++) {
		if (!is_ours(v[i].id))
			continue;
		if (streq(v[i].id, "aaaaaaaaaaaa")) {
			assert_true(v[i].live);
			assert_int_equal(v[i].init, 4242);
			assert_non_null(v[i].plan);
		} else {
			assert_false(v[i].live);
			assert_string_equal(v[i].cgroup, "/sys/fs/cgroup/nope/aisb-cccccccccccc");
		}
	}
	sessions_list_free(v, n);

	assert_int_equal(sessions_load(state, "../x", &si), -EINVAL);
	assert_int_equal(sessions_load(state, "dddddddddddd", &si), -ENOENT);

	f = open_memstream(&out, &outlen);
	assert_int_equal(sessions_print_log_lines(state, "bbbbbbbbbbbb", f), 2);
	fclose(f);
	assert_non_null(strstr(out, "\"exit\":3"));
	assert_null(strstr(out, "aaaaaaaaaaaa"));
	free(out);

	/* a live session is never removed; an ended one is, even with a foreign cgroup path
	 * recorded (which is not touched: its name is not aisb-<this id>) */
	assert_int_equal(sessions_load(state, "aaaaaaaaaaaa", &si), 0);
	assert_int_equal(sessions_remove(&si), -EBUSY);
	sessions_info_done(&si);
	assert_int_equal(sessions_load(state, "bbbbbbbbbbbb", &si), 0);
	assert_int_equal(sessions_remove(&si), 0);
	assert_int_equal(access(si.dir, F_OK), -1);
	sessions_info_done(&si);
	/* stopping an ended session is refused */
	assert_int_equal(sessions_load(state, "aaaaaaaaaaaa", &si), 0);
	si.live = false;
	assert_int_equal(sessions_stop(&si, 10), -ESRCH);
	sessions_info_done(&si);
}

/* Live session dirs in the run dir (run/session.h) are listed and loaded next to the state
 * dir's; a run dir that is not the caller's own 0700 directory is not read at all. */
static void test_run_dir_sessions(void **st)
{
	char rt[64], sup[64], run[96];
	struct session_info *v = NULL, si;
	size_t n = 0;
	(void)st;

	snprintf(rt, sizeof(rt), "/dev/shm/aisb-sesstest-XXXXXX");
	assert_non_null(mkdtemp(rt));
	snprintf(run, sizeof(run), "%s/aisb", rt);
	assert_int_equal(setenv("XDG_RUNTIME_DIR", rt, 1), 0);
	snprintf(sup, sizeof(sup), "%d %llu\n", (int)getpid(), my_start());
	put("sessions/aaaaaaaaaaaa/supervisor", sup);
	{
		_cleanup_free_ char *d = path_join(run, "sessions/cccccccccccc"), *f = path_join(d, "supervisor"),
				    *dup = path_join(run, "sessions/aaaaaaaaaaaa");
		assert_int_equal(mkdir_p(d, 0700), 0);
		assert_int_equal(mkdir_p(dup, 0700), 0);
		assert_int_equal(write_file_at(AT_FDCWD, f, sup, strlen(sup), 0600), 0);
	}
	assert_int_equal(sessions_list(state, &v, &n), 0);
	assert_int_equal(count_ours(v, n), 2); /* aaaa once: the state dir's copy */
	sessions_list_free(v, n);
	assert_int_equal(sessions_load(state, "cccccccccccc", &si), 0);
	assert_true(si.live);
	assert_true(strncmp(si.dir, run, strlen(run)) == 0);
	sessions_info_done(&si);
	assert_int_equal(sessions_load(state, "aaaaaaaaaaaa", &si), 0);
	assert_true(strncmp(si.dir, state, strlen(state)) == 0);
	sessions_info_done(&si);

	/* a run dir others may enter is not read; nor a symlink to one that would be fine */
	assert_int_equal(chmod(run, 0755), 0);
	assert_int_equal(sessions_list(state, &v, &n), 0);
	assert_int_equal(count_ours(v, n), 1);
	sessions_list_free(v, n);
	assert_int_equal(sessions_load(state, "cccccccccccc", &si), -ENOENT);
	assert_int_equal(chmod(run, 0700), 0);
	{
		char moved[112];
		snprintf(moved, sizeof(moved), "%s/real", rt);
		assert_int_equal(rename(run, moved), 0);
		assert_int_equal(symlink(moved, run), 0);
		assert_int_equal(sessions_load(state, "cccccccccccc", &si), -ENOENT);
		assert_int_equal(unlink(run), 0);
		assert_int_equal(rename(moved, run), 0);
	}
	/* control: the same dir, the caller's own 0700 again, is read */
	assert_int_equal(sessions_load(state, "cccccccccccc", &si), 0);
	sessions_info_done(&si);
	assert_int_equal(setenv("XDG_RUNTIME_DIR", "/nonexistent-aisb-test", 1), 0);
	rm_rf(rt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_state_dir, setup, teardown),
		cmocka_unit_test(test_ids_and_age),
		cmocka_unit_test_setup_teardown(test_list_live_ended_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_dir_sessions, setup, teardown),
	};
	/* the caller's real run dir (live sessions of this user) is never listed by these tests */
	setenv("XDG_RUNTIME_DIR", "/nonexistent-aisb-test", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
