// SPDX-License-Identifier: GPL-2.0-or-later
/* test-limits.c — the plan-time limits decision against fake cgroupfs and systemd trees */
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

#include "ns/limits.h"
#include "util/rlimit.h"
#include "util/util.h"

static char root[64], binpath[96], rtdir[96];
static const char *in_scope;

static const char *fake_get(const char *name)
{
	if (streq(name, "PATH"))
		return binpath;
	if (streq(name, "XDG_RUNTIME_DIR"))
		return rtdir;
	if (streq(name, "AISB_IN_SCOPE"))
		return in_scope;
	return NULL;
}

static void put(const char *rel, const char *text, mode_t mode)
{
	_cleanup_free_ char *p = path_join(root, rel), *dir = strdup(p);
	*strrchr(dir, '/') = 0;
	assert_int_equal(mkdir_p(dir, 0755), 0);
	assert_int_equal(write_file_at(AT_FDCWD, p, text, strlen(text), mode), 0);
}

static int setup(void **s)
{
	snprintf(root, sizeof(root), "/tmp/aisb-limtest-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	snprintf(binpath, sizeof(binpath), "%s/bin", root);
	snprintf(rtdir, sizeof(rtdir), "%s/run/user/1000", root);
	in_scope = NULL;
	return 0;
}

static int teardown(void **s)
{
	rm_rf(root);
	return 0;
}

static void hybrid(void)
{
	put("proc/self/mountinfo", "40 30 0:37 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n", 0644);
	put("proc/self/cgroup", "4:memory:/\n0::/\n", 0644);
	put("sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n", 0644);
	put("sys/fs/cgroup/unified/cgroup.subtree_control", "\n", 0644);
	put("sys/fs/cgroup/unified/cgroup.procs", "1\n", 0644);
}

static void test_delegated(void **s)
{
	struct aisb_plan p = { .host_uid = 1000, .run_uid = 1000 };
	char self[32], line[512];

	snprintf(self, sizeof(self), "%d\n", (int)getpid());
	put("proc/self/mountinfo", "40 30 0:37 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", 0644);
	put("proc/self/cgroup", "0::/app.slice/run.scope\n", 0644);
	put("sys/fs/cgroup/app.slice/run.scope/cgroup.controllers", "cpu memory pids\n", 0644);
	put("sys/fs/cgroup/app.slice/run.scope/cgroup.subtree_control", "\n", 0644);
	put("sys/fs/cgroup/app.slice/run.scope/cgroup.procs", self, 0644);
	put("sys/fs/cgroup/app.slice/run.scope/cgroup.events", "populated 1\n", 0644);
	assert_int_equal(limits_resolve(&p, "512M", NULL, "1.5", fake_get, root), 0);
	assert_int_equal(p.limits_mode, LIMITS_CGROUP);
	assert_false(p.limits_rlimit);
	limits_describe(&p, line, sizeof(line));
	assert_non_null(strstr(line, "memory 512 MiB (no swap), pids 4096, cpus 1.5: enforced"));
	/* everything max: nothing to enforce, no cgroup needed */
	assert_int_equal(limits_resolve(&p, "max", "max", NULL, fake_get, root), 0);
	assert_int_equal(p.limits_mode, LIMITS_NONE);
}

static void test_hybrid_degrades_or_refuses(void **s)
{
	struct aisb_plan p = { .host_uid = 1000, .run_uid = 1000 };
	char line[512];

	hybrid();
	assert_int_equal(limits_resolve(&p, NULL, NULL, NULL, fake_get, root), 0);
	assert_int_equal(p.limits_mode, LIMITS_DEGRADED);
	assert_true(p.limits_rlimit);
	assert_non_null(strstr(p.limits_why, "hugetlb"));
	limits_describe(&p, line, sizeof(line));
	assert_non_null(strstr(line, "RLIMIT_NPROC=4096"));
	/* a sandbox at kernel uid 0: RLIMIT_NPROC does not bind it, so it is not pretended; the pid
	 * namespace's pid_max is its bound where the kernel has one (issue 22) */
	p.host_uid = p.run_uid = 0;
	assert_int_equal(limits_resolve(&p, NULL, NULL, NULL, fake_get, root), 0);
	assert_false(p.limits_rlimit);
	assert_int_equal(p.limits_pidns, limits_pidns_supported());
	limits_describe(&p, line, sizeof(line));
	assert_non_null(strstr(line, p.limits_pidns ? "pid namespace's pid_max (4096)" : "NOT enforced"));
	/* a root caller remapped to USERNS_ROOT_RUN_ID: RLIMIT_NPROC binds that uid */
	p.run_uid = 1879048192u;
	assert_int_equal(limits_resolve(&p, NULL, NULL, NULL, fake_get, root), 0);
	assert_true(p.limits_rlimit);
	assert_false(p.limits_pidns);
	p.host_uid = p.run_uid = 1000;
	assert_int_equal(limits_resolve(&p, "1G", NULL, NULL, fake_get, root), 78);
	assert_int_equal(limits_resolve(&p, NULL, "100", NULL, fake_get, root), 78);
	assert_int_equal(limits_resolve(&p, "bogus", NULL, NULL, fake_get, root), 78);
}

static void test_systemd_scope(void **s)
{
	struct aisb_plan p = { .host_uid = 1000, .run_uid = 1000 };

	hybrid();
	/* systemd booted, a user bus, systemd-run on PATH: re-run in a scope */
	assert_int_equal(mkdir_p(rtdir, 0700), 0);
	put("run/user/1000/bus", "", 0600);
	put("run/systemd/system/.keep", "", 0644);
	assert_false(limits_systemd_usable(fake_get, root)); /* no systemd-run yet */
	put("bin/systemd-run", "#!/bin/sh\n", 0755);
	assert_true(limits_systemd_usable(fake_get, root));
	assert_int_equal(limits_resolve(&p, "1G", NULL, NULL, fake_get, root), 0);
	assert_int_equal(p.limits_mode, LIMITS_SCOPE);
	/* already re-run once and still no delegation: never loop, refuse/degrade instead */
	in_scope = "1";
	assert_false(limits_systemd_usable(fake_get, root));
	assert_int_equal(limits_resolve(&p, "1G", NULL, NULL, fake_get, root), 78);
	assert_int_equal(limits_resolve(&p, NULL, NULL, NULL, fake_get, root), 0);
	assert_int_equal(p.limits_mode, LIMITS_DEGRADED);
}

/* util/rlimit.h: a tighter inherited limit is kept, soft and hard alike; pinned, soft = hard */
static void test_rlimit_clamp(void **s)
{
	static const struct {
		rlim_t cur, max, want;
		bool pin;
		rlim_t out_cur, out_max;
	} rows[] = {
		{ RLIM_INFINITY, RLIM_INFINITY, 4096, false, 4096, 4096 }, /* the usual case */
		{ 200, 200, 4096, false, 200, 200 },                       /* prlimit --nproc=200:200 */
		{ 200, RLIM_INFINITY, 4096, false, 200, 4096 },            /* ulimit -Su 200 */
		{ 100, 5000, 4096, true, 100, 100 },                       /* pinned: the soft one */
		{ 1024, 4096, 1 << 30, true, 1024, 1024 },                 /* the gate's fsize */
		{ 64, 64, 0, true, 0, 0 },                                 /* NPROC 0 stays 0 */
		{ 8, 16, 64, false, 8, 16 },                               /* the resolver's fds */
	};
	struct aisb_plan p = { .host_uid = 1000, .run_uid = 1000 };
	struct rlimit cur, tight;
	char line[512];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct rlimit in = { rows[i].cur, rows[i].max }, o = rlimit_clamp(&in, rows[i].want, rows[i].pin);
		assert_int_equal(o.rlim_cur, rows[i].out_cur);
		assert_int_equal(o.rlim_max, rows[i].out_max);
	}
	/* the plan's preview names the caller's tighter process limit */
	assert_int_equal(getrlimit(RLIMIT_NPROC, &cur), 0);
	tight = (struct rlimit){ cur.rlim_cur < 200 ? cur.rlim_cur : 200, cur.rlim_max < 200 ? cur.rlim_max : 200 };
	assert_int_equal(setrlimit(RLIMIT_NPROC, &tight), 0);
	hybrid();
	assert_int_equal(limits_resolve(&p, NULL, NULL, NULL, fake_get, root), 0);
	assert_int_equal(p.limits_nproc, tight.rlim_cur);
	limits_describe(&p, line, sizeof(line));
	assert_non_null(strstr(line, "the caller's tighter limit, kept; aisb's would be 4096"));
	/* and applying it keeps it (no EPERM for a hard limit below 4096) */
	assert_int_equal(limits_apply_inside(&p), 0);
	assert_int_equal(getrlimit(RLIMIT_NPROC, &cur), 0);
	assert_int_equal(cur.rlim_max, tight.rlim_max);
}

/* pid_max for N processes: N + 1 (pids below it; init is one), within the kernel's 301..4194304 */
static void test_pidns_pid_max(void **s)
{
	(void)s;
	assert_int_equal(limits_pidns_pid_max(4096), 4097);
	assert_int_equal(limits_pidns_pid_max(1), 301);
	assert_int_equal(limits_pidns_pid_max(300), 301);
	assert_int_equal(limits_pidns_pid_max(301), 302);
	assert_int_equal(limits_pidns_pid_max(10000000), 4194304);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_delegated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hybrid_degrades_or_refuses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_systemd_scope, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rlimit_clamp, setup, teardown),
		cmocka_unit_test(test_pidns_pid_max),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
