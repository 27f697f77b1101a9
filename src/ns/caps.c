// SPDX-License-Identifier: GPL-2.0-or-later
/* caps.c — limit and verify capabilities
 *
 * Raw capset/capget rather than libcap: all we need is "these sets and no more", and the
 * library cost every start a shared-object load plus, in the freshly forked workload, two
 * allocations (page faults are 15-55 us each on the VMs measured; see docs/measurements.md).
 */
#include <errno.h>
#include <stdbool.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ns/caps.h"
#include "util/macro.h"

/* Above every capability the kernel can know (CAP_LAST_CAP is 40 in 6.x): PR_CAPBSET_* answers
 * EINVAL past the last one. */
#define CAP_SCAN_MAX 64

static bool kept(uint64_t keep, int c)
{
	return c < 64 && (keep & CAPS_BIT(c));
}

int caps_limit(uint64_t keep)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { 0 };
	int r = 0;

	for (int c = 0; c < CAP_SCAN_MAX; c++)
		if (!kept(keep, c) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break; /* past the last capability */
			return -errno;
		}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	/* effective and permitted: @keep; inheritable: empty */
	for (size_t i = 0; i < ELEMENTSOF(data); i++)
		data[i].effective = data[i].permitted = (uint32_t)(keep >> (32 * i));
	if (syscall(SYS_capset, &hdr, data) < 0)
		r = -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 && r == 0)
		r = -errno;
	/* Read back: anything else is a failure, not a warning. */
	if (syscall(SYS_capget, &hdr, data) < 0)
		r = r ?: -errno;
	for (size_t i = 0; i < ELEMENTSOF(data) && r == 0; i++)
		if (data[i].effective != (uint32_t)(keep >> (32 * i)) || data[i].permitted != data[i].effective ||
		    data[i].inheritable)
			r = -EPERM;
	for (int c = 0; c < CAP_SCAN_MAX && r == 0; c++) {
		int k = prctl(PR_CAPBSET_READ, c, 0, 0, 0);
		if (k < 0)
			break; /* EINVAL: past the last capability */
		if ((k == 1) != kept(keep, c))
			r = -EPERM;
	}
	if (r == 0 && prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		r = -EPERM;
	return r;
}

int caps_drop_all(void)
{
	return caps_limit(0);
}
