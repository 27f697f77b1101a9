// SPDX-License-Identifier: GPL-2.0-or-later
/* test-refusal.c — the platform's refusal told apart (ns/refusal.h): under a real seccomp filter
 * that denies some of the sandbox's calls (as Docker's default does), exactly those are named;
 * without one, none (control). Each case runs in a child, since a filter cannot be removed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <sys/stat.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ns/refusal.h"
#include "util/macro.h"

/* Runs @fn in a child under a filter that answers EPERM to @names (none: no filter); the
 * child's exit status is fn's. */
static int in_child(const char *const *names, int (*fn)(void))
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		if (names && names[0]) {
			scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
			if (!ctx)
				_exit(90);
			for (size_t i = 0; names[i]; i++)
				if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), seccomp_syscall_resolve_name(names[i]), 0) < 0)
					_exit(91);
			if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || seccomp_load(ctx) < 0)
				_exit(92);
		}
		_exit(fn());
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* exits with the mask of the names below: 1 mount, 2 open_tree, 4 pivot_root, 8 anything else */
static int mask_of_denied(void)
{
	unsigned m = refusal_denied_syscalls(), out = 0;
	for (unsigned i = 0; refusal_syscall_name(i); i++) {
		if (!(m & (1u << i)))
			continue;
		const char *n = refusal_syscall_name(i);
		out |= streq(n, "mount") ? 1 : streq(n, "open_tree") ? 2 : streq(n, "pivot_root") ? 4 : 8;
	}
	return (int)out;
}

static int explains_with_names(void)
{
	char msg[512], fix[512];
	if (!refusal_explain(CONTAINER_DOCKER, msg, sizeof(msg), fix, sizeof(fix)))
		return 1;
	if (!strstr(msg, "denies system calls the sandbox needs: mount, pivot_root, open_tree") ||
	    strstr(msg, "umount2"))
		return 2;
	if (!strstr(fix, "--security-opt seccomp=") || !strstr(fix, "/seccomp/aisb.json"))
		return 3;
	return 0;
}

static void test_denied_names(void **s)
{
	static const char *const three[] = { "mount", "open_tree", "pivot_root", NULL };
	static const char *const host[] = { "sethostname", NULL };

	/* pivot_root is checked for CAP_SYS_ADMIN first: probed in a new user namespace */
	assert_int_equal(in_child(three, mask_of_denied), 1 | 2 | 4);
	assert_int_equal(in_child(three, explains_with_names), 0);
	/* a filter that denies only sethostname (podman's default): optional, so no cause */
	assert_int_equal(in_child(host, explains_with_names), 1);
}

static void test_control_no_filter(void **s)
{
	/* no filter: nothing is denied, nothing is blamed (unless this caller is root without
	 * CAP_SETFCAP, which the unit run is not) */
	assert_int_equal(in_child(NULL, mask_of_denied), 0);
	assert_int_equal(refusal_denied_syscalls(), 0);
}

static void put(const char *root, const char *rel, const char *v)
{
	char path[256];
	FILE *f;
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_non_null(f = fopen(path, "w"));
	fputs(v, f);
	fclose(f);
}

static const char *const sysctls[] = { "sys/user/max_user_namespaces", "sys/kernel/unprivileged_userns_clone",
				       "sys/kernel/apparmor_restrict_unprivileged_userns", NULL };
static const char *const dirs[] = { "sys/user", "sys/kernel", "sys", NULL };

/* user namespaces off: each sysctl is named, with the same fix doctor prints */
static void test_userns_off(void **s)
{
	char root[] = "/tmp/aisb-refusal-XXXXXX", msg[512], fix[512], path[256];

	assert_non_null(mkdtemp(root));
	for (int i = 2; i >= 0; i--) {
		snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
		assert_int_equal(mkdir(path, 0700), 0);
	}
	put(root, "sys/user/max_user_namespaces", "15000\n");
	put(root, "sys/kernel/unprivileged_userns_clone", "1\n");
	/* control: nothing off */
	assert_false(refusal_userns_off(root, 1000, EPERM, msg, sizeof(msg), fix, sizeof(fix)));
	put(root, "sys/kernel/apparmor_restrict_unprivileged_userns", "1\n");
	assert_true(refusal_userns_off(root, 1000, EPERM, msg, sizeof(msg), fix, sizeof(fix)));
	assert_non_null(strstr(msg, "kernel.apparmor_restrict_unprivileged_userns=1"));
	assert_non_null(strstr(fix, "/apparmor/aisb /etc/apparmor.d/aisb"));
	/* root is not restricted by either */
	assert_false(refusal_userns_off(root, 0, EPERM, msg, sizeof(msg), fix, sizeof(fix)));
	put(root, "sys/kernel/unprivileged_userns_clone", "0\n");
	assert_true(refusal_userns_off(root, 1000, EPERM, msg, sizeof(msg), fix, sizeof(fix)));
	assert_non_null(strstr(msg, "kernel.unprivileged_userns_clone=0"));
	put(root, "sys/user/max_user_namespaces", "0\n");
	assert_true(refusal_userns_off(root, 0, ENOSPC, msg, sizeof(msg), fix, sizeof(fix)));
	assert_string_equal(msg, "user namespaces are off: user.max_user_namespaces=0");
	assert_non_null(strstr(fix, "sysctl -w user.max_user_namespaces="));
	for (int i = 0; sysctls[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s", root, sysctls[i]);
		unlink(path);
	}
	for (int i = 0; dirs[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
		rmdir(path);
	}
	rmdir(root);
}

static void test_names(void **s)
{
	assert_string_equal(refusal_syscall_name(0), "clone (with namespace flags)");
	assert_null(refusal_syscall_name(64));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_denied_names),
		cmocka_unit_test(test_control_no_filter),
		cmocka_unit_test(test_userns_off),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
