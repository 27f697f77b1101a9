// SPDX-License-Identifier: GPL-2.0-or-later
/* test-capview.c — the libcap read-back against real processes: one in a fresh user namespace
 * (every capability there) and one that dropped them all as ns/caps.c does */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/capview.h"
#include "ns/caps.h"

/* Forks a child that enters a new user namespace, drops everything when @drop, reports on a
 * pipe and waits. Return: its pid, or -1 when user namespaces are not available. */
static pid_t child(bool drop)
{
	int p[2];
	char c = 0;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		if (unshare(CLONE_NEWUSER) < 0)
			_exit(1);
		if (drop && caps_drop_all() < 0)
			_exit(2);
		c = 1;
		if (write(p[1], &c, 1) != 1)
			_exit(3);
		pause();
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1 || c != 1) {
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(p[0]);
	return pid;
}

static void stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void test_full_caps_are_named(void **state)
{
	char text[2048];
	pid_t pid = child(false);

	if (pid < 0)
		skip();
	/* control: a process that holds capabilities is reported as holding them */
	assert_int_equal(capview_pid(pid, text, sizeof(text)), 0);
	assert_non_null(strstr(text, "'=ep'"));
	assert_non_null(strstr(text, "bounding cap_chown,"));
	stop(pid);
}

static void test_dropped_caps_read_back_empty(void **state)
{
	char text[2048];
	pid_t pid = child(true);

	if (pid < 0)
		skip();
	assert_int_equal(capview_pid(pid, text, sizeof(text)), 1);
	assert_string_equal(text, "'=' (effective, permitted, inheritable empty); ambient empty; bounding empty");
	stop(pid);
}

static void test_gone_process(void **state)
{
	char text[256];
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	assert_true(capview_pid(pid, text, sizeof(text)) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_caps_are_named),
		cmocka_unit_test(test_dropped_caps_read_back_empty),
		cmocka_unit_test(test_gone_process),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
