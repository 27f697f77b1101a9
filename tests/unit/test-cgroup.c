// SPDX-License-Identifier: GPL-2.0-or-later
/* test-cgroup.c — limits parsing, cgroup discovery and delegation checks on a fake cgroupfs,
 * OOM reporting, the no-delegation decision */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ns/cgroup.h"
#include "util/util.h"

static void test_parse_size(void **state)
{
	static const struct {
		const char *in;
		int r;
		uint64_t out;
	} t[] = {
		{ "1048576", 0, 1048576 },
		{ "512M", 0, 512ULL << 20 },
		{ "512m", 0, 512ULL << 20 },
		{ "512MiB", 0, 512ULL << 20 },
		{ "512MB", 0, 512ULL << 20 },
		{ "2G", 0, 2ULL << 30 },
		{ "1.5g", 0, 3ULL << 29 },
		{ "0.5k", 0, 512 },
		{ "1T", 0, 1ULL << 40 },
		{ "max", 0, 0 },
		{ "4096b", 0, 4096 },
		{ "", -EINVAL, 0 },
		{ "M", -EINVAL, 0 },
		{ "-1G", -EINVAL, 0 },
		{ " 1G", -EINVAL, 0 },
		{ "1G ", -EINVAL, 0 },
		{ "1.G", -EINVAL, 0 },
		{ "1.0001G", -EINVAL, 0 },
		{ "1.5", -EINVAL, 0 },
		{ "1X", -EINVAL, 0 },
		{ "0", -ERANGE, 0 },
		{ "99999999999999999999", -ERANGE, 0 },
		{ "99999999999T", -ERANGE, 0 },
	};
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		uint64_t v = 12345;
		int r = cgroup_parse_size(t[i].in, &v);
		if (r != t[i].r)
			fail_msg("'%s': got %d want %d", t[i].in, r, t[i].r);
		if (r == 0 && v != t[i].out)
			fail_msg("'%s': got %llu", t[i].in, (unsigned long long)v);
	}
}

static void test_parse_cpus(void **state)
{
	static const struct {
		const char *in;
		int r;
		uint64_t quota;
	} t[] = {
		{ "1", 0, 100000 },
		{ "1.5", 0, 150000 },
		{ "0.25", 0, 25000 },
		{ "0.01", 0, 1000 },
		{ "2", 0, 200000 },
		{ "max", 0, 0 },
		{ "4096", 0, 409600000 },
		{ "0", -ERANGE, 0 },
		{ "0.005", -ERANGE, 0 },
		{ "4097", -ERANGE, 0 },
		{ "1.2345", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },
		{ "1c", -EINVAL, 0 },
		{ "", -EINVAL, 0 },
	};
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		uint64_t q = 7;
		int r = cgroup_parse_cpus(t[i].in, &q);
		if (r != t[i].r)
			fail_msg("'%s': got %d want %d", t[i].in, r, t[i].r);
		if (r == 0 && q != t[i].quota)
			fail_msg("'%s': got %llu", t[i].in, (unsigned long long)q);
	}
	char buf[64];
	cgroup_format_cpu_max(150000, buf, sizeof(buf));
	assert_string_equal(buf, "150000 100000\n");
	cgroup_format_cpu_max(0, buf, sizeof(buf));
	assert_string_equal(buf, "max 100000\n");
}

static void test_parse_pids(void **state)
{
	uint64_t v;
	assert_int_equal(cgroup_parse_pids("64", &v), 0);
	assert_int_equal(v, 64);
	assert_int_equal(cgroup_parse_pids("max", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(cgroup_parse_pids("1", &v), -ERANGE);
	assert_int_equal(cgroup_parse_pids("99999999", &v), -ERANGE);
	assert_int_equal(cgroup_parse_pids("12a", &v), -EINVAL);
	assert_int_equal(cgroup_parse_pids("-5", &v), -EINVAL);
}

static void test_format_size(void **state)
{
	char b[32];
	cgroup_format_size(512ULL << 20, b, sizeof(b));
	assert_string_equal(b, "512 MiB");
	cgroup_format_size(4ULL << 30, b, sizeof(b));
	assert_string_equal(b, "4 GiB");
	cgroup_format_size(3ULL << 29, b, sizeof(b));
	assert_string_equal(b, "1.5 GiB");
	cgroup_format_size(1000, b, sizeof(b));
	assert_string_equal(b, "1000 bytes");
}

static void test_limits_parse(void **state)
{
	struct cgroup_limits l;
	assert_int_equal(cgroup_limits_parse(NULL, NULL, NULL, &l), 0);
	assert_int_equal(l.memory_max, 4ULL << 30);
	assert_int_equal(l.pids_max, 4096);
	assert_int_equal(l.cpu_quota_us, 0);
	assert_false(l.memory_explicit || l.pids_explicit || l.cpus_explicit);
	assert_int_equal(cgroup_limits_wanted(&l), CGROUP_MEMORY | CGROUP_PIDS);

	assert_int_equal(cgroup_limits_parse("512M", "64", "1.5", &l), 0);
	assert_true(l.memory_explicit && l.pids_explicit && l.cpus_explicit);
	assert_int_equal(l.cpu_quota_us, 150000);
	assert_int_equal(cgroup_limits_wanted(&l), CGROUP_CTRL_ALL);

	assert_int_equal(cgroup_limits_parse("max", "max", NULL, &l), 0);
	assert_int_equal(cgroup_limits_wanted(&l), 0);

	assert_int_equal(cgroup_limits_parse("1M", NULL, NULL, &l), -EINVAL); /* below 8M */
	assert_int_equal(cgroup_limits_parse("lots", NULL, NULL, &l), -EINVAL);
	assert_int_equal(cgroup_limits_parse(NULL, "0", NULL, &l), -EINVAL);
	assert_int_equal(cgroup_limits_parse(NULL, NULL, "all", &l), -EINVAL);
}

static void test_parse_proc_cgroup(void **state)
{
	char *own = NULL;
	assert_int_equal(cgroup_parse_proc_cgroup("0::/user.slice/a.scope\n", &own), 0);
	assert_string_equal(own, "/user.slice/a.scope");
	free(own);
	own = NULL;
	/* hybrid: v1 lines first */
	assert_int_equal(cgroup_parse_proc_cgroup("9:name=systemd:/\n4:memory:/x\n0::/\n", &own), 0);
	assert_string_equal(own, "/");
	free(own);
	own = NULL;
	assert_int_equal(cgroup_parse_proc_cgroup("4:memory:/x\n1:cpu:/\n", &own), -ENOENT);
	assert_int_equal(cgroup_parse_proc_cgroup("0::\n", &own), -EINVAL);
	assert_int_equal(cgroup_parse_proc_cgroup("", &own), -ENOENT);
}

static void test_parse_mountinfo(void **state)
{
	char *m = NULL, *root = NULL;
	const char *hybrid =
		"30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
		"31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
		"40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
	const char *escaped =
		"1 0 0:1 / / rw - ext4 /dev/sda rw\n"
		"41 1 0:38 /sub /mnt/cg\\040two rw,nosuid shared:4 - cgroup2 none rw,nsdelegate\n";

	assert_int_equal(cgroup_parse_mountinfo(hybrid, &m, &root), 0);
	assert_string_equal(m, "/sys/fs/cgroup/unified");
	assert_string_equal(root, "/");
	free(m);
	free(root);
	assert_int_equal(cgroup_parse_mountinfo(escaped, &m, &root), 0);
	assert_string_equal(m, "/mnt/cg two");
	assert_string_equal(root, "/sub");
	free(m);
	free(root);
	assert_int_equal(cgroup_parse_mountinfo("1 0 0:1 / / rw - ext4 /dev/sda rw\n", &m, &root),
			 -ENOENT);
	/* "cgroup2" as a mount point or source is not the fstype */
	assert_int_equal(cgroup_parse_mountinfo("1 0 0:1 / /cgroup2 rw - cgroup cgroup2 rw\n", &m,
						&root), -ENOENT);
}

static void test_controllers(void **state)
{
	char b[64];
	assert_int_equal(cgroup_parse_controllers("cpuset cpu io memory hugetlb pids rdma misc\n"),
			 CGROUP_CTRL_ALL);
	assert_int_equal(cgroup_parse_controllers("hugetlb\n"), 0);
	assert_int_equal(cgroup_parse_controllers("cpuset memory\n"), CGROUP_MEMORY);
	assert_int_equal(cgroup_parse_controllers(""), 0);
	cgroup_mask_to_string(CGROUP_MEMORY | CGROUP_CPU, b, sizeof(b));
	assert_string_equal(b, "memory cpu");
}

/* ---- a fake cgroupfs tree ---- */

static char tmpl[64];

static void put(const char *rel, const char *text)
{
	_cleanup_free_ char *p = path_join(tmpl, rel), *dir = NULL;
	char *slash;
	assert_non_null(p);
	dir = strdup(p);
	slash = strrchr(dir, '/');
	*slash = 0;
	assert_int_equal(mkdir_p(dir, 0755), 0);
	assert_int_equal(write_file_at(AT_FDCWD, p, text, strlen(text), 0644), 0);
}

static int setup_tree(void **state)
{
	snprintf(tmpl, sizeof(tmpl), "/tmp/aisb-cgtest-XXXXXX");
	if (!mkdtemp(tmpl))
		return -1;
	return 0;
}

static int teardown_tree(void **state)
{
	rm_rf(tmpl);
	return 0;
}

static void fake_cgroup(const char *own, const char *controllers, const char *subtree,
			const char *procs, bool root_cg)
{
	char buf[512], base[256];
	snprintf(buf, sizeof(buf), "0::%s\n", own);
	put("proc/self/cgroup", buf);
	put("proc/self/mountinfo",
	    "1 0 8:1 / / rw - ext4 /dev/sda rw\n"
	    "40 30 0:37 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n");
	snprintf(base, sizeof(base), "sys/fs/cgroup%s", streq(own, "/") ? "" : own);
	snprintf(buf, sizeof(buf), "%s/cgroup.controllers", base);
	put(buf, controllers);
	snprintf(buf, sizeof(buf), "%s/cgroup.subtree_control", base);
	put(buf, subtree);
	snprintf(buf, sizeof(buf), "%s/cgroup.procs", base);
	put(buf, procs);
	if (!root_cg) {
		snprintf(buf, sizeof(buf), "%s/cgroup.events", base);
		put(buf, "populated 1\nfrozen 0\n");
	}
}

static void test_place_find(void **state)
{
	struct cgroup_place pl;
	fake_cgroup("/user.slice/u.service/app.slice/run.scope", "memory pids cpu\n", "\n", "1\n",
		    false);
	assert_int_equal(cgroup_place_find(tmpl, &pl), 0);
	assert_string_equal(pl.mount, "/sys/fs/cgroup");
	assert_string_equal(pl.own, "/user.slice/u.service/app.slice/run.scope");
	assert_string_equal(pl.dir, "/sys/fs/cgroup/user.slice/u.service/app.slice/run.scope");
	cgroup_place_done(&pl);

	fake_cgroup("/", "memory pids cpu\n", "\n", "1\n", true);
	assert_int_equal(cgroup_place_find(tmpl, &pl), 0);
	assert_string_equal(pl.dir, "/sys/fs/cgroup");
	cgroup_place_done(&pl);

	/* outside the cgroup namespace's view */
	put("proc/self/cgroup", "0::/../sibling\n");
	assert_int_equal(cgroup_place_find(tmpl, &pl), -ENOENT);
	/* v1 only */
	put("proc/self/cgroup", "1:memory:/\n");
	assert_int_equal(cgroup_place_find(tmpl, &pl), -ENOENT);
}

static void test_delegation(void **state)
{
	struct cgroup_check c;
	char why[256];
	const char *own = "/deleg/run1";
	char dir[128], self[32];
	pid_t me = getpid();

	snprintf(dir, sizeof(dir), "/sys/fs/cgroup%s", own);
	snprintf(self, sizeof(self), "%d\n", (int)me);

	/* delegated, alone: usable by moving ourselves into a leaf first */
	fake_cgroup(own, "cpu memory pids\n", "\n", self, false);
	assert_int_equal(cgroup_check_dir(tmpl, dir, me, &c), 0);
	assert_int_equal(c.available, CGROUP_CTRL_ALL);
	assert_int_equal(c.enabled, 0);
	assert_true(c.only_self);
	assert_int_equal(c.n_procs, 1);
	assert_false(c.is_root);
	if (geteuid() != 0 || access("/", W_OK) == 0)
		assert_true(c.writable);
	assert_true(cgroup_check_usable(&c, CGROUP_MEMORY | CGROUP_PIDS, why, sizeof(why)));
	assert_true(cgroup_probe(tmpl, CGROUP_CTRL_ALL, why, sizeof(why)));

	/* shared with the shell that started us: "no internal processes" forbids enabling */
	fake_cgroup(own, "cpu memory pids\n", "\n", "4242\n4243\n", false);
	put("sys/fs/cgroup/deleg/run1/cgroup.procs", "4242\n");
	{
		char procs[64];
		snprintf(procs, sizeof(procs), "4242\n%d\n", (int)me);
		put("sys/fs/cgroup/deleg/run1/cgroup.procs", procs);
	}
	assert_int_equal(cgroup_check_dir(tmpl, dir, me, &c), 0);
	assert_false(c.only_self);
	assert_int_equal(c.n_procs, 2);
	assert_false(cgroup_check_usable(&c, CGROUP_MEMORY, why, sizeof(why)));
	assert_non_null(strstr(why, "1 other process"));

	/* ... unless the controllers are already enabled for children */
	put("sys/fs/cgroup/deleg/run1/cgroup.subtree_control", "memory pids\n");
	assert_int_equal(cgroup_check_dir(tmpl, dir, me, &c), 0);
	assert_true(cgroup_check_usable(&c, CGROUP_MEMORY | CGROUP_PIDS, why, sizeof(why)));
	assert_false(cgroup_check_usable(&c, CGROUP_CTRL_ALL, why, sizeof(why)));

	/* the hybrid host of docs/machine-facts.md: v2 offers only hugetlb */
	fake_cgroup("/", "hugetlb\n", "\n", self, true);
	assert_int_equal(cgroup_check_dir(tmpl, "/sys/fs/cgroup", me, &c), 0);
	assert_true(c.is_root);
	assert_false(cgroup_check_usable(&c, CGROUP_MEMORY | CGROUP_PIDS, why, sizeof(why)));
	assert_non_null(strstr(why, "'memory pids' are not available"));
	assert_false(cgroup_probe(tmpl, CGROUP_MEMORY, why, sizeof(why)));
	assert_non_null(strstr(why, "offers: 'hugetlb'"));

	/* create refuses the same way, without touching the tree */
	{
		struct cgroup cg;
		struct cgroup_limits l;
		assert_int_equal(cgroup_limits_parse(NULL, NULL, NULL, &l), 0);
		assert_int_equal(cgroup_create(tmpl, "abc", &l, &cg, why, sizeof(why)), -EOPNOTSUPP);
		assert_non_null(strstr(why, "hugetlb"));
		cgroup_done(&cg);
	}

	/* missing controller file: unreadable, not usable */
	assert_int_equal(cgroup_check_dir(tmpl, "/sys/fs/cgroup/nope", me, &c), -ENOENT);
}

static void test_delegation_not_writable(void **state)
{
	struct cgroup_check c;
	char why[256], self[32];

	if (geteuid() == 0)
		skip(); /* root passes every access check */
	snprintf(self, sizeof(self), "%d\n", (int)getpid());
	fake_cgroup("/ro", "memory pids cpu\n", "\n", self, false);
	put("sys/fs/cgroup/ro/x", "");
	{
		_cleanup_free_ char *d = path_join(tmpl, "sys/fs/cgroup/ro");
		chmod(d, 0555);
		assert_int_equal(cgroup_check_dir(tmpl, "/sys/fs/cgroup/ro", getpid(), &c), 0);
		chmod(d, 0755);
	}
	assert_false(c.writable);
	assert_false(cgroup_check_usable(&c, CGROUP_MEMORY, why, sizeof(why)));
	assert_non_null(strstr(why, "not delegated"));
}

static void test_oom_report(void **state)
{
	char msg[128];
	const char *ev = "low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n";

	assert_int_equal(cgroup_parse_oom_kills(ev), 1);
	assert_int_equal(cgroup_parse_oom_kills("low 0\noom_group_kill 3\n"), 0);
	assert_int_equal(cgroup_parse_oom_kills(""), 0);

	assert_int_equal(cgroup_oom_report(137, 1, 512ULL << 20, msg, sizeof(msg)), 137);
	assert_string_equal(msg, "killed: out of memory (limit 512 MiB)");
	assert_int_equal(cgroup_oom_report(128 + SIGKILL, 2, 2ULL << 30, msg, sizeof(msg)), 137);
	assert_string_equal(msg, "killed: out of memory (limit 2 GiB)");
	/* a child was OOM-killed, the command carried on */
	assert_int_equal(cgroup_oom_report(3, 1, 512ULL << 20, msg, sizeof(msg)), 3);
	assert_string_equal(msg, "1 process in the sandbox was killed: out of memory (limit 512 MiB)");
	/* no OOM: nothing to say, code unchanged (even a SIGKILL from elsewhere) */
	assert_int_equal(cgroup_oom_report(137, 0, 512ULL << 20, msg, sizeof(msg)), 137);
	assert_string_equal(msg, "");
	assert_int_equal(cgroup_oom_report(0, 0, 0, msg, sizeof(msg)), 0);
}

static void test_degrade(void **state)
{
	struct cgroup_limits l;
	char warn[512];

	assert_int_equal(cgroup_limits_parse(NULL, NULL, NULL, &l), 0);
	assert_int_equal(cgroup_degrade(&l, "no v2", false, warn, sizeof(warn)), 0);
	assert_non_null(strstr(warn, "memory limit (4 GiB)"));
	assert_non_null(strstr(warn, "RLIMIT_NPROC=4096"));
	assert_int_equal(cgroup_degrade(&l, "no v2", true, warn, sizeof(warn)), 0);
	assert_non_null(strstr(warn, "RLIMIT_NPROC does not bind root"));

	assert_int_equal(cgroup_limits_parse("512M", NULL, NULL, &l), 0);
	assert_int_equal(cgroup_degrade(&l, "no v2", false, warn, sizeof(warn)), -EPERM);
	assert_int_equal(cgroup_limits_parse(NULL, NULL, "1", &l), 0);
	assert_int_equal(cgroup_degrade(&l, "no v2", false, warn, sizeof(warn)), -EPERM);
	/* an explicit "max" asks for nothing to be enforced */
	assert_int_equal(cgroup_limits_parse("max", "max", "max", &l), 0);
	assert_int_equal(cgroup_degrade(&l, "no v2", false, warn, sizeof(warn)), 0);
	assert_string_equal(warn, "");
}

static void test_systemd_argv(void **state)
{
	char a0[] = "aisb", a1[] = "--memory", a2[] = "1G", a3[] = "--", a4[] = "true";
	char *argv[] = { a0, a1, a2, a3, a4, NULL };
	_cleanup_strv_free_ char **v = NULL;
	assert_int_equal(cgroup_systemd_argv(argv, "/usr/bin/aisb", &v), 0);
	assert_string_equal(v[0], "systemd-run");
	assert_true(strv_contains(v, "Delegate=yes"));
	assert_true(strv_contains(v, "--scope"));
	assert_true(strv_contains(v, "--user"));
	assert_string_equal(v[8], "/usr/bin/aisb");
	assert_string_equal(v[9], "--memory");
	assert_string_equal(v[12], "true");
	assert_null(v[13]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_parse_cpus),
		cmocka_unit_test(test_parse_pids),
		cmocka_unit_test(test_format_size),
		cmocka_unit_test(test_limits_parse),
		cmocka_unit_test(test_parse_proc_cgroup),
		cmocka_unit_test(test_parse_mountinfo),
		cmocka_unit_test(test_controllers),
		cmocka_unit_test_setup_teardown(test_place_find, setup_tree, teardown_tree),
		cmocka_unit_test_setup_teardown(test_delegation, setup_tree, teardown_tree),
		cmocka_unit_test_setup_teardown(test_delegation_not_writable, setup_tree, teardown_tree),
		cmocka_unit_test(test_oom_report),
		cmocka_unit_test(test_degrade),
		cmocka_unit_test(test_systemd_argv),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
