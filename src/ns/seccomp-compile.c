// SPDX-License-Identifier: GPL-2.0-or-later
/* seccomp-compile.c — rule tables to BPF with libseccomp: run when aisb is built (seccomp-gen.c)
 * and by the unit tests, never by aisb itself (issue 10: compiling on every start cost ~50 page
 * faults, most of the start-up regression) */
#include <errno.h>
#include <linux/filter.h>
#include <seccomp.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ns/seccomp-internal.h"
#include "util/log.h"
#include "util/macro.h"

/* Adds one rule with @action, or with its own errno when @action is 0. Return: 0, -ENOSYS for a
 * name this libseccomp does not know, or -errno. Does not log. */
static int rule_add(scmp_filter_ctx ctx, const struct seccomp_rule *ru, uint32_t action)
{
	static const enum scmp_compare ops[] = { [SC_CMP_EQ] = SCMP_CMP_EQ, [SC_CMP_NE] = SCMP_CMP_NE,
						 [SC_CMP_GE] = SCMP_CMP_GE, [SC_CMP_MASKED_EQ] = SCMP_CMP_MASKED_EQ };
	struct scmp_arg_cmp c[SECCOMP_RULE_CMPS];
	unsigned n = 0;
	int nr = seccomp_syscall_resolve_name(ru->name);

	/* A name libseccomp does not know at all (one older than the table): refuse, never skip
	 * (issue 10). A known name that is no system call of this architecture (chown32 or
	 * socketcall on x86_64) resolves to a negative pseudo number: there is nothing to filter. */
	if (nr == __NR_SCMP_ERROR)
		return -ENOSYS;
	if (nr < 0)
		return 0;
	for (unsigned i = 0; i < SECCOMP_RULE_CMPS; i++) {
		const struct seccomp_arg_cmp *a = &ru->cmp[i];

		if (a->op == SC_CMP_NONE)
			continue;
		if (a->op >= SC_CMP_MAX || a->arg > 5)
			return -EINVAL;
		c[n++] = (struct scmp_arg_cmp){ .arg = a->arg, .op = ops[a->op],
						.datum_a = a->op == SC_CMP_MASKED_EQ ? a->mask : a->value,
						.datum_b = a->op == SC_CMP_MASKED_EQ ? a->value : 0 };
	}
	return seccomp_rule_add_array(ctx, action ? action : SCMP_ACT_ERRNO((unsigned)ru->err), nr, n, c);
}

/* Compiles @rules into a context: a denylist (every call allowed but the rules' errnos) when
 * @allowlist is false, an allowlist (only the rules' calls, everything else kills the process)
 * when it is true. Return: 0 or -errno. Logs on failure. */
static int build_ctx(const struct seccomp_rule *rules, size_t n, bool allowlist, scmp_filter_ctx *out)
{
	scmp_filter_ctx ctx = seccomp_init(allowlist ? SCMP_ACT_KILL_PROCESS : SCMP_ACT_ALLOW);
	int r;

	if (!ctx)
		return log_error_errno(-ENOMEM, "seccomp: out of memory");
	/* Only the native architecture: a syscall made through another ABI (i386 int 0x80, x32)
	 * would bypass rules written for native numbers, so it kills the process. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (r < 0) {
		seccomp_release(ctx);
		return log_error_errno(r, "seccomp: cannot set the bad-architecture action: %m");
	}
	for (size_t i = 0; i < n; i++) {
		/* in an allowlist a rule with an errno returns it instead of running the call (the
		 * resolver's clone3: ENOSYS, so that glibc uses clone, whose flags are checked) */
		r = rule_add(ctx, &rules[i], allowlist && !rules[i].err ? SCMP_ACT_ALLOW : 0);
		if (r == -ENOSYS) {
			const struct scmp_version *v = seccomp_version();
			seccomp_release(ctx);
			return log_error_errno(r, "seccomp: libseccomp %u.%u.%u does not know the system call '%s', "
					       "so its rule cannot be enforced (install a newer libseccomp)",
					       v ? v->major : 0, v ? v->minor : 0, v ? v->micro : 0, rules[i].name);
		}
		if (r < 0) {
			seccomp_release(ctx);
			return log_error_errno(r, "seccomp: cannot add the rule for '%s': %m", rules[i].name);
		}
	}
	*out = ctx;
	return 0;
}

static int compile(const struct seccomp_rule *rules, size_t n, bool allowlist, struct seccomp_prog *out)
{
	_cleanup_close_ int fd = -1;
	scmp_filter_ctx ctx = NULL;
	struct sock_filter *insns;
	off_t size;
	int r;

	*out = (struct seccomp_prog){ 0 };
	r = build_ctx(rules, n, allowlist, &ctx);
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
		return log_error_errno(r, "seccomp: cannot export the filter: %m");
	size = lseek(fd, 0, SEEK_END);
	if (size <= 0 || size % (off_t)sizeof(struct sock_filter) != 0 ||
	    size / (off_t)sizeof(struct sock_filter) > BPF_MAXINSNS)
		return log_error_errno(-EINVAL, "seccomp: the exported filter has %lld bytes", (long long)size);
	insns = malloc((size_t)size);
	if (!insns)
		return log_error_errno(-ENOMEM, "seccomp: out of memory");
	if (pread(fd, insns, (size_t)size, 0) != size) {
		free(insns);
		return log_error_errno(-EIO, "seccomp: cannot read the exported filter back");
	}
	out->insns = insns;
	out->len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
	out->owned = true;
	return 0;
}

int seccomp_rules_compile(const struct seccomp_rule *rules, size_t n, struct seccomp_prog *out)
{
	return compile(rules, n, false, out);
}

int seccomp_allowlist_compile(const struct seccomp_rule *rules, size_t n, struct seccomp_prog *out)
{
	return compile(rules, n, true, out);
}

