// SPDX-License-Identifier: GPL-2.0-or-later
/* test-userns.c — the one userns module: exactly one id of each kind mapped, setgroups denied,
 * a foreign id refused to an unprivileged caller, and userns_open() leaves no process behind */
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
#include <sys/wait.h>
#include <unistd.h>

#include "ns/userns.h"
#include "userns-child.h"
#include "util/util.h"

/* The whole of @path, or "" when it cannot be read. */
static void slurp(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t k = fd < 0 ? -1 : read(fd, buf, n - 1);

	buf[k > 0 ? k : 0] = 0;
	if (fd >= 0)
		close(fd);
}

/* Normalises "         0       1000          1\n" to "0 1000 1". */
static void squeeze(char *s)
{
	char *o = s;
	bool sp = true;

	for (char *p = s; *p; p++) {
		bool ws = *p == ' ' || *p == '\t' || *p == '\n';
		if (ws && !sp)
			*o++ = ' ';
		else if (!ws)
			*o++ = *p;
		sp = ws;
	}
	if (o > s && o[-1] == ' ')
		o--;
	*o = 0;
}

static int maps_child(const void *arg, uid_t uid, gid_t gid)
{
	const struct userns_map m = { .inside_uid = 1000, .host_uid = uid, .inside_gid = 1000, .host_gid = gid };
	char buf[256], want[64];
	const char *failed = "unset";

	(void)arg;
	if (userns_enter(&m, 0, &failed) < 0)
		return streq(failed, "user namespace") ? CHILD_NO_USERNS : CHILD_FAIL;
	if (failed != NULL || getuid() != 1000 || getgid() != 1000)
		return CHILD_FAIL + 1;
	slurp("/proc/self/uid_map", buf, sizeof(buf));
	squeeze(buf);
	snprintf(want, sizeof(want), "1000 %u 1", (unsigned)uid);
	if (!streq(buf, want))
		return CHILD_FAIL + 2;
	slurp("/proc/self/gid_map", buf, sizeof(buf));
	squeeze(buf);
	snprintf(want, sizeof(want), "1000 %u 1", (unsigned)gid);
	if (!streq(buf, want))
		return CHILD_FAIL + 3;
	slurp("/proc/self/setgroups", buf, sizeof(buf));
	if (!streq(buf, "deny\n"))
		return CHILD_FAIL + 4;
	/* maps are written once: a second write names the file that refused it */
	if (userns_write_maps(0, &m, &failed) == 0 || !failed)
		return CHILD_FAIL + 5;
	return CHILD_OK;
}

static void test_enter_maps_one_id(void **state)
{
	int r = run_in_child(maps_child, NULL);

	(void)state;
	if (r == CHILD_NO_USERNS)
		skip(); /* user namespaces are not available here */
	assert_int_equal(r, CHILD_OK);
}

/* An unprivileged caller cannot map an id that is not its own (the kernel's rule that keeps a
 * sandbox from naming another host user); the control maps its own. Root may map nobody, which
 * is what the idmapped /etc needs. */
static void test_open_foreign_id(void **state)
{
	const struct userns_map own = userns_map_root();
	const struct userns_map nobody = { .inside_uid = 0, .host_uid = 65534, .inside_gid = 0, .host_gid = 65534 };
	char a[64], b[64], p[64];
	int fd, k;

	(void)state;
	fd = userns_open(&own);
	if (fd == -EPERM || fd == -ENOSPC || fd == -EINVAL)
		skip(); /* user namespaces are not available here */
	assert_true(fd >= 0);
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	k = (int)readlink(p, a, sizeof(a) - 1);
	assert_true(k > 0);
	a[k] = 0;
	k = (int)readlink("/proc/self/ns/user", b, sizeof(b) - 1);
	assert_true(k > 0);
	b[k] = 0;
	assert_int_equal(strncmp(a, "user:[", 6), 0);
	assert_string_not_equal(a, b);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	/* the holder child is reaped */
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);

	fd = userns_open(&nobody);
	if (getuid() == 0) {
		assert_true(fd >= 0);
		close(fd);
	} else {
		assert_int_equal(fd, -EPERM);
	}
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_enter_maps_one_id),
		cmocka_unit_test(test_open_foreign_id),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
