// SPDX-License-Identifier: GPL-2.0-or-later
/* test-seccomp.c — the deny list, rule by rule, and that it compiles with libseccomp */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <string.h>
#include <sys/ioctl.h>

#include "ns/seccomp.h"
#include "util/util.h"

static const struct seccomp_rule *find(const struct seccomp_rule *r, int n, const char *name, uint64_t value)
{
	for (int i = 0; i < n; i++)
		if (streq(r[i].name, name) && (r[i].cmp == SC_CMP_NONE || r[i].value == value))
			return &r[i];
	return NULL;
}

static void test_deny_list(void **state)
{
	static const char *const denied[] = {
		"setns", "mount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen",
		"fsconfig", "fsmount", "fspick", "mount_setattr", "keyctl", "add_key", "request_key",
		"bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
		"io_uring_register", "init_module", "finit_module", "delete_module", "reboot", "swapon",
		"swapoff", "settimeofday", "clock_settime", "clock_adjtime", "acct", "kexec_load",
		"kexec_file_load", "open_by_handle_at", "ptrace", "process_vm_readv", "process_vm_writev",
	};
	struct seccomp_options o = { .allow_ptrace = false };
	struct seccomp_rule r[96];
	int n = seccomp_policy_rules(&o, r, ELEMENTSOF(r));

	assert_true(n > 0);
	for (size_t i = 0; i < ELEMENTSOF(denied); i++) {
		const struct seccomp_rule *ru = find(r, n, denied[i], 0);
		if (!ru)
			fail_msg("%s is not denied", denied[i]);
		assert_int_equal(ru->cmp, SC_CMP_NONE);
		assert_int_equal(ru->err, EPERM);
		/* every name must be one libseccomp knows, or the rule would be silently dropped */
		if (seccomp_syscall_resolve_name(denied[i]) == __NR_SCMP_ERROR)
			fail_msg("libseccomp does not know %s", denied[i]);
	}
	assert_int_equal(find(r, n, "clone3", 0)->err, ENOSYS);
	assert_int_equal(find(r, n, "unshare", CLONE_NEWUSER)->mask, CLONE_NEWUSER);
	assert_int_equal(find(r, n, "clone", CLONE_NEWUSER)->cmp, SC_CMP_MASKED_EQ);
	assert_int_equal(find(r, n, "ioctl", TIOCSTI)->mask, 0xffffffffu);
	assert_int_equal(find(r, n, "ioctl", TIOCSTI)->arg, 1);
	assert_non_null(find(r, n, "ioctl", TIOCLINUX));
	assert_int_equal(find(r, n, "personality", 0)->cmp, SC_CMP_NE);
	/* the ordinary syscalls are not touched */
	assert_null(find(r, n, "read", 0));
	assert_null(find(r, n, "execve", 0));
	assert_null(find(r, n, "unshare", 0)); /* unshare without CLONE_NEWUSER stays allowed */
}

static void test_allow_ptrace(void **state)
{
	struct seccomp_options o = { .allow_ptrace = true };
	struct seccomp_rule r[96];
	int n = seccomp_policy_rules(&o, r, ELEMENTSOF(r));
	assert_null(find(r, n, "ptrace", 0));
	assert_null(find(r, n, "process_vm_readv", 0));
	assert_non_null(find(r, n, "bpf", 0));
}

static void test_capacity(void **state)
{
	struct seccomp_options o = { 0 };
	struct seccomp_rule r[3];
	assert_int_equal(seccomp_policy_rules(&o, r, ELEMENTSOF(r)), -ENOSPC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deny_list),
		cmocka_unit_test(test_allow_ptrace),
		cmocka_unit_test(test_capacity),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
