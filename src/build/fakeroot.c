// SPDX-License-Identifier: GPL-2.0-or-later
/* fakeroot.c — chown-family and set*id-family calls succeed as no-ops in a build */
#include <errno.h>
#include <seccomp.h>

#include "build/fakeroot.h"
#include "util/macro.h"

#define NOOP(n) { n, 0, SC_CMP_NONE, 0, 0, 0 }

static const struct seccomp_rule fakeroot_rules[] = {
	/* Ownership: package managers chown what they unpack to system users (dpkg: root:root
	 * mostly, but also _apt, man, messagebus...). With one mapped id the kernel answers
	 * EINVAL; the file keeps its owner (the caller) either way. */
	NOOP("chown"), NOOP("fchown"), NOOP("lchown"), NOOP("fchownat"),
	/* Identity: apt drops to _apt, npm and su-like helpers switch users. The call "works",
	 * the process stays uid 0 (apt checks getresuid afterwards: the builder sets
	 * APT::Sandbox::User "root" for that). */
	NOOP("setuid"), NOOP("setgid"), NOOP("setreuid"), NOOP("setregid"),
	NOOP("setresuid"), NOOP("setresgid"), NOOP("setgroups"), NOOP("setfsuid"), NOOP("setfsgid"),
	/* The 16/32-bit id variants exist only on 32-bit ABIs (i386, arm): on x86_64 libseccomp
	 * resolves them to negative pseudo numbers (measured: chown32 = -10004), and i386 calls
	 * are killed by the bad-arch action, so they are listed for other builds of aisb. */
	NOOP("chown32"), NOOP("fchown32"), NOOP("lchown32"),
	NOOP("setuid32"), NOOP("setgid32"), NOOP("setreuid32"), NOOP("setregid32"),
	NOOP("setresuid32"), NOOP("setresgid32"), NOOP("setgroups32"), NOOP("setfsuid32"),
	NOOP("setfsgid32"),
};

int fakeroot_seccomp_rules(struct seccomp_rule *out, size_t cap)
{
	if (cap < ELEMENTSOF(fakeroot_rules))
		return -ENOSPC;
	for (size_t i = 0; i < ELEMENTSOF(fakeroot_rules); i++)
		out[i] = fakeroot_rules[i];
	return (int)ELEMENTSOF(fakeroot_rules);
}

int fakeroot_seccomp_apply(void)
{
	struct seccomp_rule rules[ELEMENTSOF(fakeroot_rules)];
	scmp_filter_ctx ctx;
	int n, r;

	n = fakeroot_seccomp_rules(rules, ELEMENTSOF(rules));
	if (n < 0)
		return n;
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return -ENOMEM;
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	for (int i = 0; i < n && r >= 0; i++) {
		int nr = seccomp_syscall_resolve_name(rules[i].name);

		if (nr < 0)
			continue; /* not a native syscall (pseudo number) or unknown here */
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(rules[i].err), nr, 0);
	}
	if (r >= 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r;
}
