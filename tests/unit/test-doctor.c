// SPDX-License-Identifier: GPL-2.0-or-later
/* test-doctor.c — doctor's checks against fake /proc, /sys, /etc and cgroupfs trees */
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
#include <unistd.h>

#include "cli/doctor.h"
#include "util/container.h"

#define PROC_TRADE "; or, accepting that the sandbox then sees the container's processes and their argv (never their environ, memory or fds), and nested user namespaces are refused by seccomp alone, pass --container-proc"
#include "util/util.h"

static char root[64];
static char statebuf[128], cachebuf[128];
static const char *st_val, *cache_val;

static const char *fake_get(const char *name)
{
	if (streq(name, "XDG_STATE_HOME"))
		return st_val;
	if (streq(name, "XDG_CACHE_HOME"))
		return cache_val;
	if (streq(name, "PATH"))
		return "/nonexistent";
	return NULL;
}

static void put(const char *rel, const char *text)
{
	_cleanup_free_ char *p = path_join(root, rel), *dir = strdup(p);
	*strrchr(dir, '/') = 0;
	assert_int_equal(mkdir_p(dir, 0755), 0);
	assert_int_equal(write_file_at(AT_FDCWD, p, text, strlen(text), 0644), 0);
}

static void unlink_under(const char *rel)
{
	_cleanup_free_ char *p = path_join(root, rel);
	assert_int_equal(unlink(p), 0);
}

static struct doctor_env env;
static char procdir[96], sysdir[96], etcdir[96];

static int setup(void **s)
{
	snprintf(root, sizeof(root), "/tmp/aisb-doctest-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	snprintf(procdir, sizeof(procdir), "%s/proc", root);
	snprintf(sysdir, sizeof(sysdir), "%s/sys", root);
	snprintf(etcdir, sizeof(etcdir), "%s/etc", root);
	snprintf(statebuf, sizeof(statebuf), "%s/state", root);
	snprintf(cachebuf, sizeof(cachebuf), "%s/cache", root);
	st_val = statebuf;
	cache_val = cachebuf;
	env = (struct doctor_env){ .proc = procdir, .sys = sysdir, .etc = etcdir, .cgroup_root = root, .root = root,
				   .uid = 1000, .user = "alice", .self_exe = "/usr/local/bin/aisb",
				   .get = fake_get, .live = false };
	return 0;
}

static int teardown(void **s)
{
	rm_rf(root);
	return 0;
}

static void test_userns(void **s)
{
	struct doctor_result r;

	doctor_check_userns(&env, &r);
	assert_int_equal(r.status, DOCTOR_OK);

	put("proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1\n");
	doctor_check_userns(&env, &r);
	assert_int_equal(r.status, DOCTOR_FAIL);
	assert_non_null(strstr(r.msg, "apparmor_restrict_unprivileged_userns=1"));
	assert_non_null(strstr(r.fix, "contrib/apparmor/aisb"));
	assert_non_null(strstr(r.fix, "apparmor_parser -r /etc/apparmor.d/aisb"));
	assert_non_null(strstr(r.fix, "/usr/local/bin/aisb"));
	/* root has CAP_SYS_ADMIN: the restriction does not apply (control) */
	env.uid = 0;
	doctor_check_userns(&env, &r);
	assert_int_equal(r.status, DOCTOR_OK);
	env.uid = 1000;
	put("proc/sys/kernel/apparmor_restrict_unprivileged_userns", "0\n");
	doctor_check_userns(&env, &r);
	assert_int_equal(r.status, DOCTOR_OK);

	put("proc/sys/kernel/unprivileged_userns_clone", "0\n");
	doctor_check_userns(&env, &r);
	assert_int_equal(r.status, DOCTOR_FAIL);
	assert_non_null(strstr(r.fix, "kernel.unprivileged_userns_clone=1"));
	put("proc/sys/kernel/unprivileged_userns_clone", "1\n");
	doctor_check_userns(&env, &r);
	assert_int_equal(r.status, DOCTOR_OK);
}

static void test_max_userns(void **s)
{
	struct doctor_result r;
	doctor_check_max_userns(&env, &r);
	assert_int_equal(r.status, DOCTOR_WARN);
	put("proc/sys/user/max_user_namespaces", "0\n");
	doctor_check_max_userns(&env, &r);
	assert_int_equal(r.status, DOCTOR_FAIL);
	assert_non_null(strstr(r.fix, "user.max_user_namespaces=15000"));
	put("proc/sys/user/max_user_namespaces", "96364\n");
	doctor_check_max_userns(&env, &r);
	assert_int_equal(r.status, DOCTOR_OK);
}

static void test_seccomp(void **s)
{
	struct doctor_result r;
	put("proc/self/status", "Name:\tx\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t3\n");
	doctor_check_seccomp(&env, &r);
	assert_int_equal(r.status, DOCTOR_WARN);
	assert_non_null(strstr(r.msg, "3 inherited seccomp filters"));
	assert_non_null(strstr(r.fix, "/seccomp/aisb.json"));
	put("proc/self/status", "Name:\tx\nSeccomp:\t0\nSeccomp_filters:\t0\n");
	doctor_check_seccomp(&env, &r);
	assert_int_equal(r.status, DOCTOR_OK);
}

static void test_proc_masked(void **s)
{
	struct doctor_result r;
	const char *docker =
		"600 500 0:50 / / rw - overlay overlay rw\n"
		"601 600 0:51 / /proc rw,nosuid - proc proc rw\n"
		"602 601 0:52 / /proc/kcore rw - tmpfs tmpfs rw\n"
		"603 601 0:52 / /proc/keys rw - tmpfs tmpfs rw\n"
		"604 601 0:51 /bus /proc/bus ro - proc proc rw\n"
		"605 600 0:53 / /procfoo rw - tmpfs tmpfs rw\n";
	char msg[384], fix[384];

	assert_int_equal(container_proc_overmounts(docker, "/proc"), 3);
	put("proc/self/mountinfo", docker);
	/* no engine marker: every engine's option */
	doctor_check_proc(&env, &r);
	assert_int_equal(r.status, DOCTOR_FAIL); /* no fallback exists: the run refuses too */
	assert_non_null(strstr(r.msg, "masks 3 paths of /proc"));
	assert_non_null(strstr(r.fix, "--security-opt unmask=ALL"));
	assert_non_null(strstr(r.fix, "systempaths=unconfined"));
	assert_non_null(strstr(r.fix, "procMount: Unmasked"));
	/* every engine's option and the trade fit (no truncation of the longest fix) */
	assert_non_null(strstr(r.fix, "seccomp alone, pass --container-proc"));
	/* podman's marker: podman's option only, the same text the run's refusal prints */
	put("run/.containerenv", "");
	doctor_check_proc(&env, &r);
	assert_int_equal(r.status, DOCTOR_FAIL);
	assert_string_equal(r.fix, "run the container with --security-opt unmask=ALL (podman)" PROC_TRADE); /* the unmask first, the trade second */
	container_proc_refusal(CONTAINER_PODMAN, EPERM, 3, msg, sizeof(msg), fix, sizeof(fix));
	assert_string_equal(r.msg, msg);
	assert_string_equal(r.fix, fix);
	/* --container-proc chosen (config, AISB_CONTAINER_PROC or doctor's flag): what the run does
	 * there, binding the container's /proc, is a warning with the exposure, the unmask as fix */
	env.container_proc = true;
	env.container_proc_by = "AISB_CONTAINER_PROC";
	doctor_check_proc(&env, &r);
	assert_int_equal(r.status, DOCTOR_WARN);
	assert_non_null(strstr(r.msg, "runs with --container-proc (chosen with AISB_CONTAINER_PROC) use the container's "
				      "/proc: " CONTAINER_PROC_EXPOSURE));
	assert_string_equal(r.fix, "to keep the container's processes out of the sandbox: run the container with "
				   "--security-opt unmask=ALL (podman)");
	env.container_proc = false;
	env.container_proc_by = NULL;
	unlink_under("run/.containerenv");
	put(".dockerenv", "");
	doctor_check_proc(&env, &r);
	assert_string_equal(r.fix, "run the container with --security-opt systempaths=unconfined (docker)" PROC_TRADE); /* the unmask first, the trade second */
	put("var/run/secrets/kubernetes.io/serviceaccount/token", "");
	doctor_check_proc(&env, &r);
	assert_non_null(strstr(r.fix, "procMount: Unmasked"));
	assert_null(strstr(r.fix, "unmask=ALL"));
	unlink_under("var/run/secrets/kubernetes.io/serviceaccount/token");
	{
		_cleanup_free_ char *k8s = path_join(root, "var/run/secrets");
		rm_rf(k8s);
	}
	unlink_under(".dockerenv");
	/* no marker (podman --read-only leaves no /run/.containerenv): the root overlay's layers or
	 * the own cgroup name the engine; a PID 1 that is no init says "a container" */
	put("proc/self/mountinfo", "133 46 0:42 / / ro - overlay overlay rw,lowerdir=/var/lib/containers/storage/"
				   "overlay/l/X\n601 133 0:51 / /proc rw - proc proc rw\n602 601 0:52 / /proc/kcore rw - "
				   "tmpfs tmpfs rw\n");
	doctor_check_proc(&env, &r);
	assert_string_equal(r.fix, "run the container with --security-opt unmask=ALL (podman)" PROC_TRADE); /* the unmask first, the trade second */
	put("proc/self/mountinfo", docker);
	put("proc/self/cgroup", "9:name=systemd:/docker/0123\n");
	doctor_check_proc(&env, &r);
	assert_string_equal(r.fix, "run the container with --security-opt systempaths=unconfined (docker)" PROC_TRADE); /* the unmask first, the trade second */
	put("proc/self/cgroup", "0::/\n");
	put("proc/1/comm", "sh\n");
	assert_int_equal(container_detect(root), CONTAINER_UNKNOWN);
	doctor_check_proc(&env, &r);
	assert_non_null(strstr(r.fix, "systempaths=unconfined"));
	assert_non_null(strstr(r.fix, "unmask=ALL"));
	/* control: PID 1 an init, nothing named: no container is claimed */
	put("proc/1/comm", "systemd\n");
	assert_int_equal(container_detect(root), CONTAINER_NONE);
	/* control: PID 1 no init, but devtmpfs on /dev and no masks (this CI VM): a host */
	put("proc/1/comm", "process_api\n");
	put("proc/self/mountinfo", "24 27 0:6 / /dev rw - devtmpfs devtmpfs rw\n");
	assert_int_equal(container_detect(root), CONTAINER_NONE);
	unlink_under("proc/1/comm");
	unlink_under("proc/self/cgroup");
	put("proc/self/mountinfo", "1 0 8:1 / / rw - ext4 /dev/sda rw\n2 1 0:5 / /proc rw - proc proc rw\n");
	doctor_check_proc(&env, &r);
	assert_int_equal(r.status, DOCTOR_OK);
	/* control: --container-proc changes nothing where /proc is not masked (a fresh one mounts) */
	env.container_proc = true;
	doctor_check_proc(&env, &r);
	assert_int_equal(r.status, DOCTOR_OK);
	env.container_proc = false;
}

static void test_overlay(void **s)
{
	struct doctor_result r;
	put("proc/filesystems", "nodev\tsysfs\nnodev\ttmpfs\n\text4\n");
	doctor_check_overlay(&env, &r);
	assert_int_equal(r.status, DOCTOR_WARN);
	assert_non_null(strstr(r.fix, "modprobe overlay"));
	put("proc/filesystems", "nodev\tsysfs\nnodev\toverlay\n");
	doctor_check_overlay(&env, &r);
	assert_int_equal(r.status, DOCTOR_OK);
}

static void test_subid(void **s)
{
	struct doctor_result r;
	const char *t = "bob:100000:65536\n1000:200000:65536\nshort:300000:10\n";
	assert_true(doctor_subid_has_range(t, "bob", 5, 65536));
	assert_true(doctor_subid_has_range(t, "nobody", 1000, 65536));
	assert_false(doctor_subid_has_range(t, "short", 7, 65536));
	assert_false(doctor_subid_has_range(t, "carol", 7, 1));
	doctor_check_subuid(&env, &r);
	assert_int_equal(r.status, DOCTOR_OK); /* never required */
	assert_non_null(strstr(r.msg, "usermod --add-subuids"));
}

static void test_pasta(void **s)
{
	char miss[256];
	struct doctor_result r;
	doctor_pasta_missing("--config-net --no-map-gw --netns --userns --tcp-ns --udp-ns --foreground --quiet", miss,
			     sizeof(miss));
	assert_string_equal(miss, "");
	doctor_pasta_missing("--netns --userns -t --tcp-ports", miss, sizeof(miss));
	assert_non_null(strstr(miss, "--config-net"));
	assert_non_null(strstr(miss, "--no-map-gw"));
	doctor_check_pasta(&env, &r); /* PATH has no pasta */
	assert_int_equal(r.status, DOCTOR_WARN);
	assert_non_null(strstr(r.fix, "apt-get install passt"));
}

static void test_cgroup(void **s)
{
	struct doctor_result r;
	char self[32];

	put("proc/self/mountinfo", "40 30 0:37 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
	put("proc/self/cgroup", "4:memory:/\n0::/\n");
	put("sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n");
	put("sys/fs/cgroup/unified/cgroup.subtree_control", "\n");
	put("sys/fs/cgroup/unified/cgroup.procs", "1\n");
	doctor_check_cgroup(&env, &r);
	assert_int_equal(r.status, DOCTOR_WARN);
	assert_non_null(strstr(r.msg, "hugetlb"));
	assert_non_null(strstr(r.fix, "systemd-run --user --scope -p Delegate=yes"));
	/* inside a container: what to ask of the engine, not the host's boot options */
	put("run/.containerenv", "");
	doctor_check_cgroup(&env, &r);
	assert_int_equal(r.status, DOCTOR_WARN);
	assert_non_null(strstr(r.fix, "--cgroupns=private --cgroups=split (podman)"));
	assert_null(strstr(r.fix, "systemd.unified_cgroup_hierarchy"));
	/* a marker left in a root filesystem exported from a container, on a machine with
	 * devtmpfs on /dev and an unmasked /proc (this CI VM): the host's advice */
	put("proc/self/mountinfo", "24 27 0:6 / /dev rw - devtmpfs devtmpfs rw\n"
				   "40 30 0:37 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
	doctor_check_cgroup(&env, &r);
	assert_non_null(strstr(r.fix, "systemd.unified_cgroup_hierarchy"));
	unlink_under("run/.containerenv");

	snprintf(self, sizeof(self), "%d\n", (int)getpid());
	put("proc/self/mountinfo", "40 30 0:37 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
	put("proc/self/cgroup", "0::/user/run1\n");
	put("sys/fs/cgroup/user/run1/cgroup.controllers", "cpu memory pids\n");
	put("sys/fs/cgroup/user/run1/cgroup.subtree_control", "\n");
	put("sys/fs/cgroup/user/run1/cgroup.procs", self);
	put("sys/fs/cgroup/user/run1/cgroup.events", "populated 1\n");
	doctor_check_cgroup(&env, &r);
	assert_int_equal(r.status, DOCTOR_OK);
}

static void test_dirs_and_run(void **s)
{
	struct doctor_result r;
	doctor_check_dirs(&env, &r);
	assert_int_equal(r.status, DOCTOR_OK);
	if (geteuid() != 0) {
		st_val = "/proc/aisb-cannot-exist";
		doctor_check_dirs(&env, &r);
		assert_int_equal(r.status, DOCTOR_FAIL);
		st_val = statebuf;
	}
	/* one required failure in the fake tree: max_user_namespaces=0 */
	put("proc/sys/user/max_user_namespaces", "0\n");
	{
		char *out = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&out, &len);
		assert_int_equal(doctor_run(&env, f), 1);
		fclose(f);
		assert_non_null(strstr(out, "FAIL max_userns"));
		assert_non_null(strstr(out, "fix: sudo sysctl -w user.max_user_namespaces=15000"));
		free(out);
	}
}

/* A missing optional library is a warning naming it and its package; present ones are ok. */
static void test_libs(void **s)
{
	static void *slot;
	static const struct dl_sym sym = { "strlen", &slot };
	static struct dl_lib present = { .soname = "libc.so.6", .package = "libc6",
					  .purpose = "for the test", .syms = &sym, .n_syms = 1 };
	static struct dl_lib absent = { .soname = "libaisb-absent.so.9", .package = "aisb-absent",
					 .purpose = "to test doctor", .syms = &sym, .n_syms = 1 };
	struct dl_lib *const good[] = { &present, NULL }, *const both[] = { &present, &absent, NULL };
	struct doctor_result r;

	env.libs = good;
	doctor_check_libs(&env, &r);
	assert_int_equal(r.status, DOCTOR_OK);
	assert_non_null(strstr(r.msg, "libc.so.6"));

	env.libs = both;
	doctor_check_libs(&env, &r);
	assert_int_equal(r.status, DOCTOR_WARN);
	assert_non_null(strstr(r.msg, "libaisb-absent.so.9"));
	assert_non_null(strstr(r.msg, "needed to test doctor"));
	assert_string_equal(r.fix, "apt-get install aisb-absent");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_userns, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_userns, setup, teardown),
		cmocka_unit_test_setup_teardown(test_seccomp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_proc_masked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlay, setup, teardown),
		cmocka_unit_test_setup_teardown(test_subid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pasta, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cgroup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dirs_and_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_libs, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
