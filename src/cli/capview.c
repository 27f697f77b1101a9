// SPDX-License-Identifier: GPL-2.0-or-later
/* capview.c — capability read-back with libcap (see capview.h) */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>

#include "cli/capview.h"
#include "util/dl.h"
#include "util/macro.h"
#include "util/strbuf.h"
#include "util/util.h"

/* Appends the capabilities of @v that are raised (@raised) or, for the bounding vector where
 * libcap marks the dropped ones, not blocked; "empty" when there is none. Return: the count. */
static int list_vector(struct strbuf *b, cap_iab_t iab, cap_iab_vector_t v, const char *label)
{
	int n = 0;

	(void)strbuf_printf(b, "; %s ", label);
	for (cap_value_t c = 0; c < cap_max_bits(); c++) {
		cap_flag_value_t f = cap_iab_get_vector(iab, v, c);
		bool present = v == CAP_IAB_BOUND ? f == CAP_CLEAR : f == CAP_SET;
		char *name;

		if (!present)
			continue;
		name = cap_to_name(c);
		(void)strbuf_printf(b, "%s%s", n++ ? "," : "", name ? name : "?");
		cap_free(name);
	}
	if (!n)
		(void)strbuf_puts(b, "empty");
	return n;
}

int capview_pid(pid_t pid, char *buf, size_t n)
{
	struct strbuf b = { 0 };
	cap_t caps;
	cap_iab_t iab;
	char *text;
	int left;

	if (dl_open(&dl_libcap) < 0)
		return snprintf(buf, n, "libcap is not available: %s", dl_libcap.error), -ELIBACC;
	caps = cap_get_pid(pid);
	if (!caps)
		return -errno ?: -EIO;
	text = cap_to_text(caps, NULL);
	cap_free(caps);
	if (!text)
		return -ENOMEM;
	iab = cap_iab_get_pid(pid);
	if (!iab) {
		cap_free(text);
		return -errno ?: -EIO;
	}
	/* cap_to_text() writes "=" for no effective, permitted or inheritable capability */
	left = !streq(text, "=");
	(void)strbuf_printf(&b, "'%s'%s", text, left ? "" : " (effective, permitted, inheritable empty)");
	cap_free(text);
	left += list_vector(&b, iab, CAP_IAB_AMB, "ambient");
	left += list_vector(&b, iab, CAP_IAB_BOUND, "bounding");
	cap_free(iab);
	snprintf(buf, n, "%s", b.p ? b.p : "?");
	free(b.p);
	return left ? 0 : 1;
}

int capview_workload(pid_t init, pid_t *out)
{
	_cleanup_free_ char *text = NULL;
	char path[64];
	long pid;
	int r;

	/* init has one child of its own, the workload; orphans it adopts later are appended to the
	 * list (the kernel keeps children oldest first), so the first entry is the workload */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)init, (int)init);
	r = read_file_at(AT_FDCWD, path, 4096, &text, NULL);
	if (r < 0)
		return r;
	pid = strtol(text, NULL, 10);
	if (pid <= 0)
		return -ESRCH;
	*out = (pid_t)pid;
	return 0;
}
