// SPDX-License-Identifier: GPL-2.0-or-later
/* test-harden.c — harden_before_exec(), the one sequence before execve of `aisb run`'s workload
 * and a build's RUN step: fds above 2 close-on-exec, the capability set asked for, no_new_privs,
 * the filter loaded (Seccomp: 2) and in force */
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
#include <sys/syscall.h>
#include <unistd.h>

#include "ns/caps.h"
#include "ns/harden.h"
#include "ns/seccomp.h"
#include "userns-child.h"
#include "util/util.h"

struct harden_case {
	bool fakeroot;
};

static int harden_child(const void *arg, uid_t uid, gid_t gid)
{
	const struct harden_case *c = arg;
	const struct seccomp_options so = { .fakeroot = c->fakeroot };
	const uint64_t keep = c->fakeroot ? CAPS_FAKEROOT : 0;
	struct seccomp_prog prog = { 0 };
	enum harden_step failed = HARDEN_STEP_MAX;
	int fd;

	if (enter_userns(uid, gid) < 0)
		return CHILD_NO_USERNS;
	if (seccomp_policy_compile(&so, &prog) < 0)
		return CHILD_FAIL;
	fd = open("/dev/null", O_RDONLY); /* not CLOEXEC: the sequence must make it so */
	if (fd < 3)
		return CHILD_FAIL + 1;
	if (harden_before_exec(&prog, keep, &failed) != 0)
		return CHILD_FAIL + 2;
	seccomp_prog_free(&prog);
	if (!(fcntl(fd, F_GETFD) & FD_CLOEXEC) || (fcntl(2, F_GETFD) & FD_CLOEXEC))
		return CHILD_FAIL + 3;
	if (status_field("CapEff:", 16) != keep || status_field("CapBnd:", 16) != keep ||
	    status_field("NoNewPrivs:", 10) != 1 || status_field("Seccomp:", 10) != 2)
		return CHILD_FAIL + 4;
	/* in force: a denied call (keyctl is on the deny list) and, with fakeroot, a faked chown */
	if (syscall(SYS_keyctl, 0, 0, 0, 0, 0) != -1 || errno != EPERM)
		return CHILD_FAIL + 5;
	if (c->fakeroot && syscall(SYS_fchown, fd, 4242, 4242) != 0)
		return CHILD_FAIL + 6;
	if (!c->fakeroot && syscall(SYS_fchown, fd, 4242, 4242) == 0)
		return CHILD_FAIL + 7;
	return CHILD_OK;
}

static void check(bool fakeroot)
{
	const struct harden_case c = { .fakeroot = fakeroot };
	int r = run_in_child(harden_child, &c);

	if (r == CHILD_NO_USERNS)
		skip(); /* user namespaces are not available here */
	assert_int_equal(r, CHILD_OK);
}

static void test_workload(void **state)
{
	(void)state;
	check(false);
}

static void test_build_root_step(void **state)
{
	(void)state;
	check(true);
}

static void test_step_names(void **state)
{
	(void)state;
	assert_string_equal(harden_step_name(HARDEN_CAPS, 0), "cannot drop all capabilities");
	assert_string_equal(harden_step_name(HARDEN_CAPS, CAPS_FAKEROOT),
			    "cannot limit the capabilities to the fakeroot set");
	assert_string_equal(harden_step_name(HARDEN_SECCOMP, 0), "cannot load the seccomp filter");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_workload),
		cmocka_unit_test(test_build_root_step),
		cmocka_unit_test(test_step_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
