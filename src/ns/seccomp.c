// SPDX-License-Identifier: GPL-2.0-or-later
/* seccomp.c — the default deny list and its loading with libseccomp */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ns/seccomp.h"
#include "util/macro.h"

#define DENY(n) { n, EPERM, SC_CMP_NONE, 0, 0, 0 }

/* Every entry says why; "second wall" means another mechanism already stops it. */
static const struct seccomp_rule base_rules[] = {
	/* clone3 passes flags in a struct seccomp cannot read: make callers fall back to clone. */
	{ "clone3", ENOSYS, SC_CMP_NONE, 0, 0, 0 },
	/* New user namespaces re-grant every capability (CVE-2022-0185 and many like it); the
	 * sysctl user.max_user_namespaces=0 inside is the second wall. */
	{ "unshare", EPERM, SC_CMP_MASKED_EQ, 0, CLONE_NEWUSER, CLONE_NEWUSER },
	{ "clone", EPERM, SC_CMP_MASKED_EQ, 0, CLONE_NEWUSER, CLONE_NEWUSER },
	DENY("setns"),
	/* The mount API family: the tree is fixed once the workload runs. */
	DENY("mount"), DENY("umount2"), DENY("pivot_root"), DENY("open_tree"), DENY("move_mount"),
	DENY("fsopen"), DENY("fsconfig"), DENY("fsmount"), DENY("fspick"), DENY("mount_setattr"),
	DENY("chroot"),
	/* Kernel keyrings are not namespaced. */
	DENY("keyctl"), DENY("add_key"), DENY("request_key"),
	/* Large kernel attack surface with no use for an agent. */
	DENY("bpf"), DENY("perf_event_open"), DENY("userfaultfd"),
	DENY("io_uring_setup"), DENY("io_uring_enter"), DENY("io_uring_register"),
	/* Host-global operations (fail without host caps anyway: second wall is the userns). */
	DENY("init_module"), DENY("finit_module"), DENY("delete_module"),
	DENY("reboot"), DENY("swapon"), DENY("swapoff"),
	DENY("settimeofday"), DENY("clock_settime"), DENY("clock_adjtime"), DENY("adjtimex"),
	DENY("acct"), DENY("kexec_load"), DENY("kexec_file_load"),
	DENY("open_by_handle_at"), DENY("name_to_handle_at"),
	DENY("quotactl"), DENY("lookup_dcookie"), DENY("nfsservctl"), DENY("vhangup"),
	/* Only the default personality: READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE and friends weaken
	 * exploit mitigations. (libseccomp allows one comparison per argument, so the query value
	 * 0xffffffff is refused too.) */
	{ "personality", EPERM, SC_CMP_NE, 0, 0, 0 },
	/* Terminal input injection (CVE-2017-5226 class); the argument is masked to 32 bits since
	 * the kernel compares an unsigned int. */
	{ "ioctl", EPERM, SC_CMP_MASKED_EQ, 1, 0xffffffffu, TIOCSTI },
	{ "ioctl", EPERM, SC_CMP_MASKED_EQ, 1, 0xffffffffu, TIOCLINUX },
};

static const struct seccomp_rule ptrace_rules[] = {
	DENY("ptrace"), DENY("process_vm_readv"), DENY("process_vm_writev"),
};

int seccomp_policy_rules(const struct seccomp_options *o, struct seccomp_rule *out, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < ELEMENTSOF(base_rules); i++) {
		if (n >= cap)
			return -ENOSPC;
		out[n++] = base_rules[i];
	}
	if (!o->allow_ptrace)
		for (size_t i = 0; i < ELEMENTSOF(ptrace_rules); i++) {
			if (n >= cap)
				return -ENOSPC;
			out[n++] = ptrace_rules[i];
		}
	return (int)n;
}

/* Compiles the rules with libseccomp into a context. Return: 0 or -errno. Does not log. */
static int build_ctx(const struct seccomp_options *o, scmp_filter_ctx *out)
{
	struct seccomp_rule rules[96];
	scmp_filter_ctx ctx;
	int n, r = 0;

	n = seccomp_policy_rules(o, rules, ELEMENTSOF(rules));
	if (n < 0)
		return n;
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return -ENOMEM;
	/* Only the native architecture: a syscall made through another ABI (i386 int 0x80, x32)
	 * would bypass rules written for native numbers, so it kills the process. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	for (int i = 0; i < n && r >= 0; i++) {
		const struct seccomp_rule *ru = &rules[i];
		int nr = seccomp_syscall_resolve_name(ru->name);

		if (nr == __NR_SCMP_ERROR)
			continue; /* not on this architecture */
		if (ru->cmp == SC_CMP_MASKED_EQ)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ru->err), nr, 1,
					     SCMP_CMP(ru->arg, SCMP_CMP_MASKED_EQ, ru->mask, ru->value));
		else if (ru->cmp == SC_CMP_NE)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ru->err), nr, 1,
					     SCMP_CMP(ru->arg, SCMP_CMP_NE, ru->value));
		else
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ru->err), nr, 0);
	}
	if (r < 0) {
		seccomp_release(ctx);
		return r;
	}
	*out = ctx;
	return 0;
}

int seccomp_policy_compile(const struct seccomp_options *o, struct seccomp_prog *out)
{
	_cleanup_close_ int fd = -1;
	scmp_filter_ctx ctx;
	off_t size;
	int r;

	*out = (struct seccomp_prog){ 0 };
	r = build_ctx(o, &ctx);
	if (r < 0)
		return r;
	/* libseccomp 2.5 exports only to an fd */
	fd = memfd_create("aisb-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		r = -errno;
	else
		r = seccomp_export_bpf(ctx, fd);
	seccomp_release(ctx);
	if (r < 0)
		return r;
	size = lseek(fd, 0, SEEK_END);
	if (size <= 0 || size % (off_t)sizeof(struct sock_filter) != 0 ||
	    size / (off_t)sizeof(struct sock_filter) > BPF_MAXINSNS)
		return -EINVAL;
	out->insns = malloc((size_t)size);
	if (!out->insns)
		return -ENOMEM;
	if (pread(fd, out->insns, (size_t)size, 0) != size) {
		seccomp_prog_free(out);
		return -EIO;
	}
	out->len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
	return 0;
}

int seccomp_policy_load(const struct seccomp_prog *prog)
{
	struct sock_fprog fp = { .len = prog->len, .filter = prog->insns };

	if (!prog->insns || !prog->len)
		return -EINVAL;
	/* what seccomp_load() does by default: no_new_privs first, then the filter, no flags */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp) < 0)
		return -errno;
	return 0;
}

void seccomp_prog_free(struct seccomp_prog *prog)
{
	free(prog->insns);
	*prog = (struct seccomp_prog){ 0 };
}

int seccomp_policy_apply(const struct seccomp_options *o)
{
	scmp_filter_ctx ctx;
	int r = build_ctx(o, &ctx);

	if (r < 0)
		return r;
	r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r;
}
