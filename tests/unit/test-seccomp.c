// SPDX-License-Identifier: GPL-2.0-or-later
/* test-seccomp.c — the one rule table, rule by rule and by meaning, and the compiled filter */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <sched.h>
#include <seccomp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ns/seccomp-internal.h"
#include "util/util.h"

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

static const struct seccomp_rule *find(const struct seccomp_rule *r, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (streq(r[i].name, name))
			return &r[i];
	return NULL;
}

static bool cmp_holds(const struct seccomp_arg_cmp *c, const uint64_t *args)
{
	uint64_t v = args[c->arg];

	switch (c->op) {
	case SC_CMP_NONE:
		return true;
	case SC_CMP_EQ:
		return v == c->value;
	case SC_CMP_NE:
		return v != c->value;
	case SC_CMP_GE:
		return v >= c->value;
	case SC_CMP_MASKED_EQ:
		return (v & c->mask) == c->value;
	default:
		fail_msg("unknown comparison %d", c->op);
	}
	return false;
}

/* What the table decides for @name(@args): the errno of the matching rules (-1: allowed). Every
 * rule that matches must agree, or which one the filter applies would be up to libseccomp. */
static int decide(const struct seccomp_rule *r, int n, const char *name, const uint64_t *args)
{
	int err = -1;

	for (int i = 0; i < n; i++) {
		bool all = streq(r[i].name, name);
		for (unsigned k = 0; all && k < SECCOMP_RULE_CMPS; k++)
			all = cmp_holds(&r[i].cmp[k], args);
		if (!all)
			continue;
		if (err >= 0 && err != r[i].err)
			fail_msg("%s: rules with errno %d and %d both match", name, err, r[i].err);
		err = r[i].err;
	}
	return err;
}

static int decide1(const struct seccomp_rule *r, int n, const char *name, uint64_t a0, uint64_t a2)
{
	uint64_t args[6] = { a0, 0, a2, 0, 0, 0 };
	return decide(r, n, name, args);
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
		"pidfd_getfd", "kcmp", "process_madvise",
	};
	struct seccomp_options o = { .allow_ptrace = false };
	struct seccomp_rule r[SECCOMP_RULES_MAX];
	int n = seccomp_policy_rules(&o, r, ELEMENTSOF(r));

	assert_true(n > 0);
	for (size_t i = 0; i < ELEMENTSOF(denied); i++) {
		const struct seccomp_rule *ru = find(r, n, denied[i]);
		if (!ru)
			fail_msg("%s is not denied", denied[i]);
		assert_int_equal(ru->cmp[0].op, SC_CMP_NONE);
		assert_int_equal(ru->err, EPERM);
	}
	assert_int_equal(find(r, n, "clone3")->err, ENOSYS);
	assert_int_equal(decide1(r, n, "unshare", CLONE_NEWUSER | CLONE_NEWNS, 0), EPERM);
	assert_int_equal(decide1(r, n, "unshare", CLONE_NEWNS, 0), -1);
	/* x86_64 (and everything but s390/CRIS): clone's flags are its first argument */
	assert_int_equal(find(r, n, "clone")->cmp[0].arg, SECCOMP_CLONE_FLAGS_ARG);
#if defined(__x86_64__) || defined(__aarch64__)
	assert_int_equal(SECCOMP_CLONE_FLAGS_ARG, 0);
#endif
	assert_int_equal(decide1(r, n, "clone", CLONE_NEWUSER | SIGCHLD, 0), EPERM);
	assert_int_equal(decide1(r, n, "clone", CLONE_VM | CLONE_VFORK | SIGCHLD, 0), -1);
	{
		uint64_t a[6] = { 0, TIOCSTI }, b[6] = { 0, 0xffffffff00000000ull | TIOCLINUX }, c[6] = { 0, TIOCGWINSZ };
		assert_int_equal(decide(r, n, "ioctl", a), EPERM);
		assert_int_equal(decide(r, n, "ioctl", b), EPERM); /* upper half ignored, as by the kernel */
		assert_int_equal(decide(r, n, "ioctl", c), -1);
	}
	/* the ordinary syscalls are not touched */
	assert_null(find(r, n, "read"));
	assert_null(find(r, n, "execve"));
	assert_null(find(r, n, "chown")); /* fakeroot only */
}

static void test_allow_ptrace(void **state)
{
	static const char *const family[] = { "ptrace", "process_vm_readv", "process_vm_writev",
					      "pidfd_getfd", "kcmp", "process_madvise" };
	struct seccomp_options o = { .allow_ptrace = true };
	struct seccomp_rule r[SECCOMP_RULES_MAX];
	int n = seccomp_policy_rules(&o, r, ELEMENTSOF(r));

	for (size_t i = 0; i < ELEMENTSOF(family); i++)
		assert_null(find(r, n, family[i]));
	assert_non_null(find(r, n, "bpf"));
}

/* personality: PER_LINUX and the query 0xffffffff pass, every other 32-bit value is EPERM; the
 * kernel reads an unsigned int, so the upper half does not count either way. */
static void test_personality(void **state)
{
	static const uint64_t allowed[] = { PER_LINUX, 0xffffffffu, 0xdeadbeef00000000ull, 0x1ffffffffull,
					    0xffffffffffffffffull };
	static const uint64_t denied[] = { READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE, PER_LINUX32, 1, 0x80000000u,
					   0x7fffffffu, 0xfffffffeu, 0xfffffffdu, 0xaaaaaaaau, 0x55555555u,
					   0xffffffff00000001ull };
	struct seccomp_options o = { 0 };
	struct seccomp_rule r[SECCOMP_RULES_MAX];
	int n = seccomp_policy_rules(&o, r, ELEMENTSOF(r));

	for (size_t i = 0; i < ELEMENTSOF(allowed); i++)
		if (decide1(r, n, "personality", allowed[i], 0) != -1)
			fail_msg("personality(%#llx) is denied", (unsigned long long)allowed[i]);
	for (size_t i = 0; i < ELEMENTSOF(denied); i++)
		if (decide1(r, n, "personality", denied[i], 0) != EPERM)
			fail_msg("personality(%#llx) is allowed", (unsigned long long)denied[i]);
	/* every value with exactly one bit set or one bit clear */
	for (unsigned b = 0; b < 32; b++) {
		assert_int_equal(decide1(r, n, "personality", 1ull << b, 0), EPERM);
		assert_int_equal(decide1(r, n, "personality", 0xffffffffu & ~(1u << b), 0), EPERM);
	}
}

/* socket(2)/socketpair(2): an allowlist of families; netlink only for its listed protocols */
static void test_socket_families(void **state)
{
	static const uint64_t refused[] = { AF_UNSPEC, 3 /* AF_AX25 */, AF_KEY, AF_PACKET, AF_VSOCK,
					    38 /* AF_ALG */, 30 /* AF_TIPC */, 44 /* AF_XDP */, 45, 46, 63, 255,
					    1000, 0x100000000ull | AF_INET, 0xffffffff00000001ull,
					    0xffffffffffffffffull };
	static const uint64_t families[] = { AF_UNIX, AF_INET, AF_INET6 };
	static const char *const calls[] = { "socket", "socketpair" };
	struct seccomp_options o = { 0 };
	struct seccomp_rule r[SECCOMP_RULES_MAX];
	int n = seccomp_policy_rules(&o, r, ELEMENTSOF(r));

	for (size_t c = 0; c < ELEMENTSOF(calls); c++) {
		for (size_t i = 0; i < ELEMENTSOF(families); i++)
			assert_int_equal(decide1(r, n, calls[c], families[i], 0), -1);
		for (size_t i = 0; i < ELEMENTSOF(refused); i++)
			if (decide1(r, n, calls[c], refused[i], 0) != EAFNOSUPPORT)
				fail_msg("%s(%#llx) is not refused", calls[c], (unsigned long long)refused[i]);
		/* every family but the four, up to far beyond AF_MAX */
		for (uint64_t f = 0; f < 4096; f++) {
			bool ok = f == AF_UNIX || f == AF_INET || f == AF_INET6 || f == AF_NETLINK;
			int e = decide1(r, n, calls[c], f, 0);
			if (ok ? e != -1 : e != EAFNOSUPPORT)
				fail_msg("%s family %llu: %d", calls[c], (unsigned long long)f, e);
		}
	}
	/* netlink: route, sock_diag, netfilter; audit, uevents, generic, xfrm... are refused */
	for (uint64_t p = 0; p < 1024; p++) {
		bool ok = p == NETLINK_ROUTE || p == NETLINK_SOCK_DIAG || p == NETLINK_NETFILTER;
		int e = decide1(r, n, "socket", AF_NETLINK, p);
		if (ok ? e != -1 : e != EPROTONOSUPPORT)
			fail_msg("netlink protocol %llu: %d", (unsigned long long)p, e);
	}
	assert_int_equal(decide1(r, n, "socket", AF_NETLINK, 0x100000000ull), EPROTONOSUPPORT);
	assert_int_equal(decide1(r, n, "socket", AF_NETLINK, NETLINK_AUDIT), EPROTONOSUPPORT);
	assert_int_equal(decide1(r, n, "socket", AF_NETLINK, NETLINK_KOBJECT_UEVENT), EPROTONOSUPPORT);
	/* netlink socketpair is the kernel's EOPNOTSUPP: the filter lets it through */
	assert_int_equal(decide1(r, n, "socketpair", AF_NETLINK, NETLINK_AUDIT), -1);
}

/* Set-id mode bits: refused in every call that gives a file its mode, where it does (open and
 * openat only when they create); the same modes without the bits, and the bits where no file is
 * created, go through; a build's root RUN steps keep them (dpkg). */
static void test_setid_modes(void **state)
{
	struct seccomp_options o = { 0 };
	struct seccomp_rule r[SECCOMP_RULES_MAX];
	int n = seccomp_policy_rules(&o, r, ELEMENTSOF(r));
	uint64_t chmod_a[6] = { 0, 04755 }, chmod_g[6] = { 0, 02755 }, chmod_ok[6] = { 0, 0755 };
	uint64_t at[6] = { (uint64_t)AT_FDCWD, 0, 06777 }, at_ok[6] = { (uint64_t)AT_FDCWD, 0, 01777 };
	uint64_t open_c[6] = { 0, O_WRONLY | O_CREAT, 04755 }, open_t[6] = { 0, O_TMPFILE | O_RDWR, 02700 };
	uint64_t open_nc[6] = { 0, O_RDONLY, 04755 }, open_ok[6] = { 0, O_CREAT | O_EXCL, 0700 };
	uint64_t openat_c[6] = { (uint64_t)AT_FDCWD, 0, O_CREAT | O_TRUNC, 0xffffffff00000000ull | 04000 };
	uint64_t openat_nc[6] = { (uint64_t)AT_FDCWD, 0, O_RDWR, 04755 };
	uint64_t mknod_a[6] = { 0, S_IFREG | 04755 }, mknodat_a[6] = { 0, 0, S_IFREG | 02755 };
	uint64_t mknod_ok[6] = { 0, S_IFIFO | 0600 };

	assert_true(n > 0);
	assert_int_equal(decide(r, n, "chmod", chmod_a), EPERM);
	assert_int_equal(decide(r, n, "chmod", chmod_g), EPERM);
	assert_int_equal(decide(r, n, "fchmod", chmod_a), EPERM);
	assert_int_equal(decide(r, n, "creat", chmod_g), EPERM);
	assert_int_equal(decide(r, n, "fchmodat", at), EPERM);
	assert_int_equal(decide(r, n, "fchmodat2", at), EPERM);
	assert_int_equal(decide(r, n, "open", open_c), EPERM);
	assert_int_equal(decide(r, n, "open", open_t), EPERM);
	assert_int_equal(decide(r, n, "openat", openat_c), EPERM);
	assert_int_equal(decide(r, n, "mknod", mknod_a), EPERM);
	assert_int_equal(decide(r, n, "mknodat", mknodat_a), EPERM);
	assert_int_equal(find(r, n, "openat2")->err, ENOSYS);
	/* controls: no set-id bit (the sticky bit is fine), or no file created */
	assert_int_equal(decide(r, n, "chmod", chmod_ok), -1);
	assert_int_equal(decide(r, n, "fchmodat", at_ok), -1);
	assert_int_equal(decide(r, n, "fchmodat2", at_ok), -1);
	assert_int_equal(decide(r, n, "open", open_nc), -1);
	assert_int_equal(decide(r, n, "open", open_ok), -1);
	assert_int_equal(decide(r, n, "openat", openat_nc), -1);
	assert_int_equal(decide(r, n, "mknod", mknod_ok), -1);
	/* a build's root RUN steps: dpkg sets them on the image's files */
	o.fakeroot = true;
	n = seccomp_policy_rules(&o, r, ELEMENTSOF(r));
	assert_int_equal(decide(r, n, "chmod", chmod_a), -1);
	assert_int_equal(decide(r, n, "openat", openat_c), -1);
	assert_null(find(r, n, "openat2"));
}

static void test_capacity(void **state)
{
	struct seccomp_rule r[SECCOMP_RULES_MAX];

	for (int m = 0; m < 4; m++) {
		struct seccomp_options o = { .allow_ptrace = m & 1, .fakeroot = m & 2 };
		assert_true(seccomp_policy_rules(&o, r, ELEMENTSOF(r)) > 0);
	}
	assert_int_equal(seccomp_policy_rules(&(struct seccomp_options){ 0 }, r, 3), -ENOSPC);
}

/* Every name of every option set is one the run-time libseccomp knows, and a name it does not
 * know fails the compilation instead of being skipped (issue 10); a known name that is not a
 * syscall of this architecture (chown32 on x86_64) compiles to nothing. */
static void test_fail_closed(void **state)
{
	static const struct seccomp_rule unknown[] = { { .name = "getpid", .err = EPERM },
						       { .name = "aisb_no_such_syscall", .err = EPERM } };
	static const struct seccomp_rule pseudo[] = { { .name = "chown32", .err = 0 } };
	struct seccomp_options o = { .fakeroot = true };
	struct seccomp_rule r[SECCOMP_RULES_MAX];
	struct seccomp_prog prog;
	int n = seccomp_policy_rules(&o, r, ELEMENTSOF(r));

	for (int i = 0; i < n; i++)
		if (seccomp_syscall_resolve_name(r[i].name) == __NR_SCMP_ERROR)
			fail_msg("libseccomp does not know %s", r[i].name);
	assert_int_equal(seccomp_rules_compile(unknown, ELEMENTSOF(unknown), &prog), -ENOSYS);
	assert_null(prog.insns);
	assert_int_equal(seccomp_rules_compile(pseudo, ELEMENTSOF(pseudo), &prog), 0);
	seccomp_prog_free(&prog);
}

/* The filters built into aisb (seccomp-gen, at build time) are exactly what libseccomp makes of
 * the rule table now, for each of the four option sets, and each is a different program:
 * seccomp_policy_compile() hands out the one of its options, not one for all. */
static void test_builtin_is_the_table(void **state)
{
	for (int m = 0; m < 4; m++) {
		struct seccomp_options o = { .allow_ptrace = m & 1, .fakeroot = m & 2 };
		struct seccomp_rule r[SECCOMP_RULES_MAX];
		struct seccomp_prog now, built;
		int n = seccomp_policy_rules(&o, r, ELEMENTSOF(r));

		assert_true(n > 0);
		assert_int_equal(seccomp_rules_compile(r, (size_t)n, &now), 0);
		assert_true(now.owned);
		assert_int_equal(seccomp_policy_compile(&o, &built), 0);
		assert_false(built.owned);
		assert_int_equal(built.len, now.len);
		assert_memory_equal(built.insns, now.insns, now.len * sizeof(now.insns[0]));
		for (int k = 0; k < m; k++) {
			struct seccomp_prog other;
			assert_int_equal(seccomp_policy_compile(&(struct seccomp_options){ .allow_ptrace = k & 1,
											  .fakeroot = k & 2 },
							   &other), 0);
			assert_false(other.len == built.len &&
				     memcmp(other.insns, built.insns, built.len * sizeof(built.insns[0])) == 0);
		}
		seccomp_prog_free(&built); /* harmless on a built-in one */
		assert_null(built.insns);
		seccomp_prog_free(&now);
	}
}

static long sys(long nr, long a, long b, long c)
{
	errno = 0;
	return syscall(nr, a, b, c, 0, 0, 0);
}

/* The precompiled program is what the workload loads: in a child, the refusals come with their
 * errno and the controls work; the parent (no filter) gets the kernel's own answers. Exit codes
 * name the failed probe. */
static void test_compile_and_load(void **state)
{
	struct seccomp_options o = { 0 };
	struct seccomp_prog prog;
	int st, fd;
	pid_t pid;

	assert_int_equal(seccomp_policy_compile(&o, &prog), 0);
	assert_true(prog.len > 10);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (seccomp_policy_load(&prog) < 0)
			_exit(2);
		if (sys(SYS_keyctl, 0, 0, 0) != -1 || errno != EPERM)
			_exit(3);
		if (sys(SYS_socket, AF_VSOCK, SOCK_STREAM, 0) != -1 || errno != EAFNOSUPPORT)
			_exit(4);
		if (sys(SYS_socket, AF_PACKET, SOCK_DGRAM, 0) != -1 || errno != EAFNOSUPPORT)
			_exit(5);
		if (sys(SYS_socket, AF_NETLINK, SOCK_RAW, NETLINK_AUDIT) != -1 || errno != EPROTONOSUPPORT)
			_exit(6);
		if (sys(SYS_personality, READ_IMPLIES_EXEC, 0, 0) != -1 || errno != EPERM)
			_exit(7);
		if (sys(SYS_kcmp, getpid(), getpid(), 0) != -1 || errno != EPERM)
			_exit(8);
		if (sys(SYS_chmod, (long)"/", 04755, 0) != -1 || errno != EPERM)
			_exit(13);
		if (sys(SYS_openat2, AT_FDCWD, (long)"/", 0) != -1 || errno != ENOSYS)
			_exit(14);
		/* controls */
		if (sys(SYS_personality, 0xffffffff, 0, 0) < 0 || sys(SYS_personality, PER_LINUX, 0, 0) < 0)
			_exit(9);
		if ((fd = (int)sys(SYS_socket, AF_INET6, SOCK_DGRAM, 0)) < 0 || close(fd) < 0)
			_exit(10);
		if ((fd = (int)sys(SYS_socket, AF_NETLINK, SOCK_RAW, NETLINK_ROUTE)) < 0 || close(fd) < 0)
			_exit(11);
		_exit(getpid() > 0 ? 0 : 12);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	/* control: without the filter the kernel answers for itself */
	assert_false(sys(SYS_keyctl, 0, 0, 0) == -1 && errno == EPERM);
	fd = (int)sys(SYS_socket, AF_PACKET, SOCK_DGRAM, 0);
	assert_true(fd >= 0 || errno != EAFNOSUPPORT);
	if (fd >= 0)
		close(fd);
	seccomp_prog_free(&prog);
	assert_null(prog.insns);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deny_list),
		cmocka_unit_test(test_allow_ptrace),
		cmocka_unit_test(test_personality),
		cmocka_unit_test(test_socket_families),
		cmocka_unit_test(test_setid_modes),
		cmocka_unit_test(test_capacity),
		cmocka_unit_test(test_fail_closed),
		cmocka_unit_test(test_builtin_is_the_table),
		cmocka_unit_test(test_compile_and_load),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
