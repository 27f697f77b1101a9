// SPDX-License-Identifier: GPL-2.0-or-later
/* test-build-fakeroot.c — the fakeroot rule list, and the filter in a real one-id user namespace */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "build/fakeroot.h"
#include "util/util.h"

static const char *const expected[] = {
	"chown", "fchown", "lchown", "fchownat", "setuid", "setgid", "setreuid", "setregid",
	"setresuid", "setresgid", "setgroups", "setfsuid", "setfsgid",
};
static const char *const expected32[] = {
	"chown32", "fchown32", "lchown32", "setuid32", "setgid32", "setreuid32", "setregid32",
	"setresuid32", "setresgid32", "setgroups32", "setfsuid32", "setfsgid32",
};

static const struct seccomp_rule *find(const struct seccomp_rule *r, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (streq(r[i].name, name))
			return &r[i];
	return NULL;
}

static void test_rule_list(void **state)
{
	struct seccomp_rule r[64];
	int n = fakeroot_seccomp_rules(r, ELEMENTSOF(r));

	assert_int_equal(n, (int)(ELEMENTSOF(expected) + ELEMENTSOF(expected32)));
	for (size_t i = 0; i < ELEMENTSOF(expected); i++) {
		const struct seccomp_rule *ru = find(r, n, expected[i]);
		if (!ru)
			fail_msg("%s missing", expected[i]);
		assert_int_equal(ru->err, 0); /* success */
		assert_int_equal(ru->cmp, SC_CMP_NONE);
		/* each is a real x86_64 syscall, so the rule is never silently dropped here */
		if (seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, expected[i]) < 0)
			fail_msg("%s is not an x86_64 syscall", expected[i]);
	}
	for (size_t i = 0; i < ELEMENTSOF(expected32); i++) {
		const struct seccomp_rule *ru = find(r, n, expected32[i]);
		if (!ru)
			fail_msg("%s missing", expected32[i]);
		assert_int_equal(ru->err, 0);
		/* measured: only the 32-bit ABI has them; on x86_64 they are pseudo numbers */
		assert_true(seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86, expected32[i]) > 0);
		assert_true(seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, expected32[i]) < 0);
	}
	/* nothing else: chmod, mknod, mount stay as they are */
	assert_null(find(r, n, "chmod"));
	assert_null(find(r, n, "mknod"));
	assert_null(find(r, n, "mount"));
	assert_int_equal(fakeroot_seccomp_rules(r, 3), -ENOSPC);
}

/* ---- in a real user namespace: uid 0 inside = the caller, one id ---- */

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int r;
	if (fd < 0)
		return -errno;
	r = write_full(fd, s, strlen(s));
	close(fd);
	return r;
}

/* What `unshare -Ur` does: a new user namespace where 0 maps to our uid and gid. */
static int enter_userns(uid_t uid, gid_t gid)
{
	char map[64];

	if (unshare(CLONE_NEWUSER) < 0)
		return -errno;
	if (write_str("/proc/self/setgroups", "deny") < 0)
		return -errno;
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)uid);
	if (write_str("/proc/self/uid_map", map) < 0)
		return -errno;
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)gid);
	if (write_str("/proc/self/gid_map", map) < 0)
		return -errno;
	return 0;
}

enum { CHILD_OK = 0, CHILD_NO_USERNS = 10, CHILD_FAIL = 20 };

/* The child: chown a file to 123:456 (and try the set*id calls) with or without the filter.
 * Exit codes carry what happened. */
static int child(const char *file, bool filter, uid_t uid, gid_t gid)
{
	struct stat before, after;
	gid_t g = 456;
	int r;

	if (enter_userns(uid, gid) < 0)
		return CHILD_NO_USERNS;
	if (getuid() != 0)
		return CHILD_FAIL + 1;
	if (stat(file, &before) < 0)
		return CHILD_FAIL + 2;
	if (filter && fakeroot_seccomp_apply() < 0)
		return CHILD_FAIL + 3;
	r = chown(file, 123, 456);
	if (!filter)
		return r < 0 && errno == EINVAL ? CHILD_OK : CHILD_FAIL + 4;
	if (r != 0)
		return CHILD_FAIL + 5;
	if (lchown(file, 123, 456) != 0 || fchownat(AT_FDCWD, file, 7, 7, 0) != 0)
		return CHILD_FAIL + 6;
	if (stat(file, &after) < 0)
		return CHILD_FAIL + 7;
	/* a no-op: the owner is unchanged (still inside 0 = the caller) */
	if (after.st_uid != before.st_uid || after.st_gid != before.st_gid || after.st_uid != 0)
		return CHILD_FAIL + 8;
	/* the identity calls "succeed" and change nothing */
	if (setgroups(1, &g) != 0 || setresgid(456, 456, 456) != 0 || setresuid(123, 123, 123) != 0 ||
	    setuid(123) != 0 || setgid(456) != 0 || setreuid(123, 123) != 0 || setregid(456, 456) != 0)
		return CHILD_FAIL + 9;
	if (getuid() != 0 || geteuid() != 0 || getgid() != 0)
		return CHILD_FAIL + 10;
	/* chmod is untouched: it really works on our own file */
	if (chmod(file, 0600) != 0 || stat(file, &after) < 0 || (after.st_mode & 07777) != 0600)
		return CHILD_FAIL + 11;
	return CHILD_OK;
}

static int run_child(const char *file, bool filter)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child(file, filter, uid, gid));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void test_real_chown(void **state)
{
	char dir[] = "/tmp/aisb-test-fakeroot-XXXXXX";
	_cleanup_free_ char *file = NULL;
	struct stat st;
	int r;

	assert_non_null(mkdtemp(dir));
	file = path_join(dir, "f");
	assert_int_equal(write_file_at(AT_FDCWD, file, "x", 1, 0644), 0);

	/* control: without the filter, chown to an unmapped id fails with EINVAL */
	r = run_child(file, false);
	if (r == CHILD_NO_USERNS) {
		rm_rf(dir);
		skip(); /* user namespaces are not available here */
	}
	assert_int_equal(r, CHILD_OK);
	/* with the filter: success, and nothing changed */
	assert_int_equal(run_child(file, true), CHILD_OK);
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(st.st_uid, getuid());
	assert_int_equal(st.st_gid, getgid());
	rm_rf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule_list),
		cmocka_unit_test(test_real_chown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
