// SPDX-License-Identifier: GPL-2.0-or-later
/* log.c — stderr diagnostics with errno-returning helpers */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/log.h"

static enum log_level max_level = LOG_LVL_INFO;
static bool quiet;

void log_set_quiet(bool q)
{
	quiet = q;
}

void log_set_level(enum log_level l)
{
	max_level = l;
}

enum log_level log_get_level(void)
{
	return max_level;
}

int log_internal(enum log_level l, int err, const char *fmt, ...)
{
	int saved = errno;
	char buf[2048];
	va_list ap;

	if (err < 0)
		err = -err;
	if (l > max_level || quiet)
		goto out;
	/* "%m" must print the error we were given, not whatever errno is now. */
	errno = err ? err : saved;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* Messages quote user-controlled strings: no newline or escape sequence reaches the
	 * terminal or a log line through them. */
	for (char *p = buf; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f)
			*p = '?';
		else if ((unsigned char)p[0] == 0xc2 && (unsigned char)p[1] >= 0x80 && (unsigned char)p[1] <= 0x9f)
			p[0] = p[1] = '?'; /* U+0080..U+009F: C1 controls (U+009B is CSI to many terminals) */
	fprintf(stderr, "aisb: %s%s\n", l == LOG_LVL_WARN ? "warning: " : "", buf);
out:
	errno = saved;
	return err ? -err : -EINVAL;
}
