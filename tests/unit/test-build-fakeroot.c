// SPDX-License-Identifier: GPL-2.0-or-later
/* test-build-fakeroot.c — the fakeroot rules of the one seccomp table, and the filter of a root RUN
 * step in a real one-id user namespace */
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

#include "ns/seccomp.h"
#include "userns-child.h"
#include "util/util.h"

static const char *const expected[] = {
	"chown", "fchown", "lchown", "fchownat", "setuid", "setgid", "setreuid", "setregid",
	"setresuid", "setresgid", "setgroups", "setfsuid", "setfsgid",
	"fsync", "fdatasync", "syncfs", "sync", "sync_file_range",
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

/* Whether @set (the rules of one option set) has a rule equal to @ru. */
static bool has_rule(const struct seccomp_rule *set, int n, const struct seccomp_rule *ru)
{
	for (int i = 0; i < n; i++)
		if (streq(set[i].name, ru->name) && set[i].err == ru->err &&
		    memcmp(set[i].cmp, ru->cmp, sizeof(ru->cmp)) == 0)
			return true;
	return false;
}

static void test_rule_list(void **state)
{
	struct seccomp_options fo = { .fakeroot = true }, plain = { 0 };
	struct seccomp_rule r[SECCOMP_RULES_MAX], base[SECCOMP_RULES_MAX];
	int n = seccomp_policy_rules(&fo, r, ELEMENTSOF(r));
	int nb = seccomp_policy_rules(&plain, base, ELEMENTSOF(base));
	int extra = 0;

	assert_true(n > 0 && nb > 0);
	for (size_t i = 0; i < ELEMENTSOF(expected); i++) {
		const struct seccomp_rule *ru = find(r, n, expected[i]);
		if (!ru)
			fail_msg("%s missing", expected[i]);
		assert_int_equal(ru->err, 0); /* success */
		assert_int_equal(ru->cmp[0].op, SC_CMP_NONE);
		/* not in `aisb run`'s table (nor a USER step's) */
		assert_null(find(base, nb, expected[i]));
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
	/* one table: the fakeroot set is the run set plus exactly these no-ops, less the refusal
	 * of set-id mode bits (dpkg sets them on the image's files; seccomp.c) */
	int setid_rules = 0;

	for (int i = 0; i < nb; i++) {
		static const char *const setid[] = { "chmod", "fchmod", "fchmodat", "fchmodat2", "creat",
						     "mknod", "mknodat", "open", "openat", "openat2" };
		bool is_setid = false;

		for (size_t k = 0; k < ELEMENTSOF(setid); k++)
			is_setid |= streq(base[i].name, setid[k]);
		assert_true(has_rule(r, n, &base[i]) != is_setid);
		setid_rules += is_setid;
	}
	for (int i = 0; i < n; i++)
		extra += !has_rule(base, nb, &r[i]);
	assert_int_equal(extra, (int)(ELEMENTSOF(expected) + ELEMENTSOF(expected32)));
	assert_int_equal(n, nb - setid_rules + extra);
	/* nothing else: chmod and mknod have no rule (set-id bits allowed); mount stays denied */
	assert_null(find(r, n, "chmod"));
	assert_null(find(r, n, "mknod"));
	assert_int_equal(find(r, n, "mount")->err, EPERM);
	assert_int_equal(seccomp_policy_rules(&fo, r, 3), -ENOSPC);
}

/* ---- in a real user namespace: uid 0 inside = the caller, one id ---- */

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
	if (filter && seccomp_policy_apply(&(struct seccomp_options){ .fakeroot = true }) < 0)
		return CHILD_FAIL + 3;
	/* fsync of a pipe is EINVAL in the kernel; under the filter it is a no-op that says 0 */
	{
		int p[2], k;
		if (pipe(p) < 0)
			return CHILD_FAIL + 12;
		k = fsync(p[1]);
		close(p[0]);
		close(p[1]);
		if (filter ? k != 0 : !(k < 0 && errno == EINVAL))
			return CHILD_FAIL + 13;
	}
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

struct chown_probe {
	const char *file;
	bool filter;
};

static int chown_child(const void *arg, uid_t uid, gid_t gid)
{
	const struct chown_probe *c = arg;
	return child(c->file, c->filter, uid, gid);
}

static int run_child(const char *file, bool filter)
{
	int r = run_in_child(chown_child, &(struct chown_probe){ .file = file, .filter = filter });

	assert_true(r >= 0);
	return r;
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
