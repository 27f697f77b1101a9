// SPDX-License-Identifier: GPL-2.0-or-later
/* test-caps.c — caps_limit(): the workload's empty sets and a build step's fakeroot set, read
 * back from /proc/self/status, with a mount that the limited process can no longer make */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "ns/caps.h"
#include "userns-child.h"
#include "util/util.h"

/* A tmpfs in a fresh mount namespace: what CAP_SYS_ADMIN in the user namespace allows. */
static int try_mount(void)
{
	char dir[] = "/tmp/test-caps.XXXXXX";
	int r;

	if (!mkdtemp(dir))
		return -errno;
	r = mount("none", dir, "tmpfs", 0, NULL) < 0 ? -errno : 0;
	if (r == 0)
		(void)umount2(dir, MNT_DETACH);
	rmdir(dir);
	return r;
}

static int limit_child(const void *arg, uid_t uid, gid_t gid)
{
	uint64_t keep = *(const uint64_t *)arg;

	if (enter_userns(uid, gid) < 0)
		return CHILD_NO_USERNS;
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return CHILD_FAIL;
	/* control: the namespace's root may mount before the limit */
	if (try_mount() != 0)
		return CHILD_FAIL + 1;
	if (caps_limit(keep) != 0)
		return CHILD_FAIL + 2;
	if (status_field("CapEff:", 16) != keep || status_field("CapPrm:", 16) != keep ||
	    status_field("CapBnd:", 16) != keep || status_field("CapInh:", 16) != 0 ||
	    status_field("CapAmb:", 16) != 0 || status_field("NoNewPrivs:", 10) != 1)
		return CHILD_FAIL + 3;
	/* the attack: neither set keeps CAP_SYS_ADMIN */
	if (try_mount() != -EPERM)
		return CHILD_FAIL + 4;
	/* a second, wider limit cannot add back what was dropped */
	if (keep != CAPS_FAKEROOT && caps_limit(CAPS_FAKEROOT) == 0)
		return CHILD_FAIL + 5;
	return CHILD_OK;
}

static void check(uint64_t keep)
{
	int r = run_in_child(limit_child, &keep);

	if (r == CHILD_NO_USERNS)
		skip(); /* user namespaces are not available here */
	assert_int_equal(r, CHILD_OK);
}

static void test_drop_all(void **state)
{
	(void)state;
	check(0);
}

static void test_fakeroot(void **state)
{
	(void)state;
	assert_int_equal(CAPS_FAKEROOT, UINT64_C(0x800405fb));
	check(CAPS_FAKEROOT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drop_all),
		cmocka_unit_test(test_fakeroot),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
