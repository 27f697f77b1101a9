// SPDX-License-Identifier: GPL-2.0-or-later
/* seccomp-builtin.c — the filters built into aisb (seccomp-gen wrote them when aisb was built);
 * a file of its own so that the generator, which links the rule table, does not need them */
#include "ns/seccomp-internal.h"
#include "util/log.h"

int seccomp_policy_compile(const struct seccomp_options *o, struct seccomp_prog *out)
{
	/* the index seccomp-gen.c wrote them in: bit 0 allow_ptrace, bit 1 fakeroot */
	*out = seccomp_prebuilt_policy[(o->allow_ptrace ? 1u : 0u) | (o->fakeroot ? 2u : 0u)];
	return 0;
}

int seccomp_policy_apply(const struct seccomp_options *o)
{
	struct seccomp_prog prog;
	int r = seccomp_policy_compile(o, &prog);

	if (r < 0)
		return r;
	r = seccomp_policy_load(&prog);
	seccomp_prog_free(&prog);
	if (r < 0)
		return log_error_errno(r, "seccomp: cannot load the filter: %m");
	return 0;
}
