// SPDX-License-Identifier: GPL-2.0-or-later
/* caps.c — drop and verify all capabilities */
#include <errno.h>
#include <sys/capability.h>
#include <sys/prctl.h>

#include "ns/caps.h"
#include "util/macro.h"

int caps_drop_all(void)
{
	cap_t empty, now;
	int last = (int)cap_max_bits();
	int r = 0;

	for (int c = 0; c < last; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	empty = cap_init();
	if (!empty)
		return -ENOMEM;
	if (cap_set_proc(empty) < 0)
		r = -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 && r == 0)
		r = -errno;
	/* Read back: anything left is a failure, not a warning. */
	now = cap_get_proc();
	if (!now)
		r = r ?: -ENOMEM;
	else if (cap_compare(now, empty) != 0)
		r = r ?: -EPERM;
	for (int c = 0; c < last && r == 0; c++)
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1)
			r = -EPERM;
	if (r == 0 && prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		r = -EPERM;
	cap_free(now);
	cap_free(empty);
	return r;
}
