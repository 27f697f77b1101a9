// SPDX-License-Identifier: GPL-2.0-or-later
/* deny-userns.c — test helper: run a program where user namespaces cannot be created.
 *
 * deny-userns PROGRAM [ARG]...
 *
 * Installs a seccomp filter (no_new_privs, inherited by every child) that fails unshare(2) and
 * clone(2) with EPERM when CLONE_NEWUSER is asked for, and clone3(2) with ENOSYS (its flags are
 * in memory a filter cannot read; glibc then falls back to clone), as the default seccomp
 * profiles of container engines do; then executes PROGRAM. tests/e2e/build.bats uses it to
 * show what `aisb build` does on such a host.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <seccomp.h>

int main(int argc, char **argv)
{
	scmp_filter_ctx ctx;
	int r;

	if (argc < 2) {
		fprintf(stderr, "usage: deny-userns PROGRAM [ARG]...\n");
		return 2;
	}
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return 125;
	r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
			     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (r == 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		r = -errno;
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	if (r < 0) {
		fprintf(stderr, "deny-userns: cannot install the filter: %s\n", strerror(-r));
		return 125;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "deny-userns: %s: %s\n", argv[1], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
