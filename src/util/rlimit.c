// SPDX-License-Identifier: GPL-2.0-or-later
/* rlimit.c — set a resource limit, never above the inherited one */
#include <errno.h>

#include "util/rlimit.h"

static rlim_t min_rlim(rlim_t a, rlim_t b)
{
	return a < b ? a : b; /* RLIM_INFINITY is the largest rlim_t */
}

struct rlimit rlimit_clamp(const struct rlimit *inherited, rlim_t want, bool pin)
{
	struct rlimit rl = { .rlim_cur = min_rlim(inherited->rlim_cur, want),
			     .rlim_max = min_rlim(inherited->rlim_max, want) };

	/* soft <= hard holds for what was inherited, so it holds here; lowering the hard limit to
	 * the soft one never needs a capability */
	if (pin)
		rl.rlim_max = rl.rlim_cur;
	return rl;
}

int rlimit_lower(int resource, rlim_t want, bool pin, struct rlimit *applied)
{
	struct rlimit cur, rl;

	if (getrlimit(resource, &cur) < 0)
		return -errno;
	rl = rlimit_clamp(&cur, want, pin);
	if (setrlimit(resource, &rl) < 0)
		return -errno;
	if (applied)
		*applied = rl;
	return 0;
}

rlim_t rlimit_effective(int resource, rlim_t want)
{
	struct rlimit cur;

	if (getrlimit(resource, &cur) < 0)
		return want;
	return rlimit_clamp(&cur, want, false).rlim_cur;
}
