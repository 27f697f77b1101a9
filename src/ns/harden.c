// SPDX-License-Identifier: GPL-2.0-or-later
/* harden.c — fds, capabilities, no_new_privs and seccomp before execve (see harden.h) */
#include <errno.h>
#include <unistd.h>

#include "ns/caps.h"
#include "ns/harden.h"
#include "ns/seccomp.h"

int harden_before_exec(const struct seccomp_prog *filter, uint64_t keep_caps, enum harden_step *failed)
{
	int r;

	/* Nothing above 2 survives execve; a report pipe (CLOEXEC already) stays usable until then. */
	*failed = HARDEN_FDS;
	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		return -errno;
	*failed = HARDEN_CAPS;
	r = caps_limit(keep_caps);
	if (r < 0)
		return r;
	*failed = HARDEN_SECCOMP;
	return seccomp_policy_load(filter);
}

const char *harden_step_name(enum harden_step s, uint64_t keep_caps)
{
	switch (s) {
	case HARDEN_FDS:
		return "close_range failed";
	case HARDEN_CAPS:
		return keep_caps ? "cannot limit the capabilities to the fakeroot set" : "cannot drop all capabilities";
	case HARDEN_SECCOMP:
		return "cannot load the seccomp filter";
	case HARDEN_STEP_MAX:
		break;
	}
	return "?";
}
