// SPDX-License-Identifier: GPL-2.0-or-later
/* test-procfs.c — the /proc covers, in a real user, mount and pid namespace with a fresh proc */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ns/procfs.h"
#include "userns-child.h"
#include "util/util.h"

static const struct procfs_cover *find(const char *name)
{
	size_t n;
	const struct procfs_cover *c = procfs_covers(&n);

	for (size_t i = 0; i < n; i++)
		if (streq(c[i].name, name))
			return &c[i];
	return NULL;
}

/* The list: bubblewrap's and the OCI runtimes' read-only trees, and the hidden global state. */
static void test_table(void **state)
{
	static const char *const ro[] = { "sys", "sysrq-trigger", "irq", "bus", "fs", "acpi", "scsi" };
	static const char *const hidden[] = { "kcore", "keys", "timer_list", "latency_stats", "sched_debug" };

	for (size_t i = 0; i < ELEMENTSOF(ro); i++) {
		if (!find(ro[i]))
			fail_msg("%s is not covered", ro[i]);
		assert_int_equal(find(ro[i])->kind, PROCFS_RO);
	}
	for (size_t i = 0; i < ELEMENTSOF(hidden); i++) {
		if (!find(hidden[i]))
			fail_msg("%s is not hidden", hidden[i]);
		assert_int_equal(find(hidden[i])->kind, PROCFS_HIDE);
	}
	/* what a sandbox needs stays: its own processes and the ordinary global views */
	assert_null(find("self"));
	assert_null(find("meminfo"));
	assert_null(find("cpuinfo"));
	assert_null(find("mounts"));
	assert_int_equal(find("slabinfo")->kind, PROCFS_HIDE_KUID0);
	assert_int_equal(find("kpageflags")->kind, PROCFS_HIDE_KUID0);
}

static uid_t host_uid; /* the test's uid outside its user namespace */

/* PID 1 of the new pid namespace: a fresh proc on @dir, then the covers (or not; with a
 * writable /proc as --allow-ptrace has it, or the default read-only one), then probes. Exit codes
 * name the failed probe. */
static int pid1(const char *dir, bool harden, bool writable)
{
	char p[512];
	const char *failed = NULL;
	struct timespec t0, t1;
	int proc, null, fd;

	if (mount("proc", dir, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return CHILD_FAIL + 1;
	proc = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	null = open("/dev/null", O_PATH | O_CLOEXEC);
	if (proc < 0 || null < 0)
		return CHILD_FAIL + 2;
	if (harden) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (procfs_harden(proc, null, true, writable, false, &failed) < 0) {
			fprintf(stderr, "procfs_harden: %s: %m\n", failed);
			return CHILD_FAIL + 3;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		fprintf(stderr, "procfs_harden took %ld us\n",
			(long)((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000));
		if (failed)
			return CHILD_FAIL + 4;
	}
	/* the sysctl of this user namespace: 0 with the covers */
	snprintf(p, sizeof(p), "%s/sys/user/max_user_namespaces", dir);
	{
		char buf[32] = "";
		fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || read(fd, buf, sizeof(buf) - 1) <= 0)
			return CHILD_FAIL + 5;
		close(fd);
		if (harden != (strcmp(buf, "0\n") == 0))
			return CHILD_FAIL + 6;
	}
	/* the attack: a global sysctl opened for writing (never written: this is the host's). Its
	 * mode refuses a caller that is not root first (EACCES); root gets EROFS from the cover. */
	snprintf(p, sizeof(p), "%s/sys/kernel/printk_ratelimit", dir);
	fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
	if (harden ? !(fd < 0 && (errno == EROFS || (host_uid != 0 && errno == EACCES))) : fd < 0 && errno == EROFS)
		return CHILD_FAIL + 7;
	/* ... and this namespace's own sysctl too (writable for us without the cover, whoever runs
	 * the test: the check is CAP_SYS_RESOURCE in this user namespace) */
	snprintf(p, sizeof(p), "%s/sys/user/max_user_namespaces", dir);
	fd = open(p, O_WRONLY | O_CLOEXEC);
	if (harden ? !(fd < 0 && errno == EROFS) : fd < 0)
		return CHILD_FAIL + 8;
	if (fd >= 0)
		close(fd);
	/* hidden: /proc/keys is no longer the kernel's file */
	snprintf(p, sizeof(p), "%s/keys", dir);
	{
		struct stat st;
		if (stat(p, &st) == 0 && harden == S_ISREG(st.st_mode))
			return CHILD_FAIL + 9;
	}
	/* our own process entries: readable always; writable without the stage or with a writable
	 * /proc (control), EROFS on the read-only one (which is what also stops /proc/PID/mem) */
	snprintf(p, sizeof(p), "%s/self/oom_score_adj", dir);
	if (!harden || writable ? write_str(p, "100") < 0 : write_str(p, "100") != -EROFS)
		return CHILD_FAIL + 10;
	snprintf(p, sizeof(p), "%s/self/status", dir);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return CHILD_FAIL + 11;
	close(fd);
	return CHILD_OK;
}

struct proc_probe {
	const char *dir;
	bool harden, writable;
};

/* The test's child: user, mount and pid namespaces, then PID 1 of the latter. */
static int child(const void *arg, uid_t uid, gid_t gid)
{
	const struct proc_probe *c = arg;
	int st;
	pid_t pid;

	if (enter_userns(uid, gid) < 0 || unshare(CLONE_NEWNS | CLONE_NEWPID) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return CHILD_NO_USERNS;
	pid = fork();
	if (pid < 0)
		return CHILD_FAIL;
	if (pid == 0)
		_exit(pid1(c->dir, c->harden, c->writable));
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return CHILD_FAIL;
	return WEXITSTATUS(st);
}

static int run_child(const char *dir, bool harden, bool writable)
{
	int r;

	host_uid = getuid();
	r = run_in_child(child, &(struct proc_probe){ .dir = dir, .harden = harden, .writable = writable });
	assert_true(r >= 0);
	return r;
}

static void test_real_proc(void **state)
{
	char dir[] = "/tmp/aisb-test-procfs-XXXXXX";
	int r;

	assert_non_null(mkdtemp(dir));
	/* control: without the covers, the same probes see a writable /proc/sys (the namespace's
	 * own sysctl; the host's stays closed to a non-root test) */
	r = run_child(dir, false, false);
	if (r == CHILD_NO_USERNS) {
		rmdir(dir);
		skip(); /* user namespaces are not available here */
	}
	assert_int_equal(r, CHILD_OK);
	assert_int_equal(run_child(dir, true, false), CHILD_OK);
	assert_int_equal(run_child(dir, true, true), CHILD_OK);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_real_proc),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
