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
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* The precompiled program is what the workload loads: in a child, keyctl is refused with EPERM
 * and getpid still works; the control (the parent, no filter) gets the kernel's own answer. */
static void test_compile_and_load(void **state)
{
	struct seccomp_options o = { 0 };
	struct seccomp_prog prog;
	int st;
	pid_t pid;

	assert_int_equal(seccomp_policy_compile(&o, &prog), 0);
	assert_true(prog.len > 10);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (seccomp_policy_load(&prog) < 0)
			_exit(2);
		if (syscall(SYS_keyctl, 0, 0, 0, 0, 0) != -1 || errno != EPERM)
			_exit(3);
		_exit(getpid() > 0 ? 0 : 4);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	errno = 0;
	assert_false(syscall(SYS_keyctl, 0, 0, 0, 0, 0) == -1 && errno == EPERM);
	seccomp_prog_free(&prog);
	assert_null(prog.insns);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deny_list),
		cmocka_unit_test(test_allow_ptrace),
		cmocka_unit_test(test_capacity),
		cmocka_unit_test(test_compile_and_load),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
