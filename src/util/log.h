/* SPDX-License-Identifier: GPL-2.0-or-later */
/* log.h — the one place aisb prints diagnostics.
 *
 * Every message goes to stderr prefixed "aisb: ". The log_*_errno() variants set errno from a
 * negative error code so "%m" works, and return that code so callers can write
 * `return log_error_errno(r, "...")`. Nothing here ever sees a secret value: callers pass names.
 */
#ifndef AISB_UTIL_LOG_H
#define AISB_UTIL_LOG_H

#include <errno.h>
#include <stdbool.h>

#include "util/macro.h"

enum log_level { LOG_LVL_ERROR, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG, LOG_LVL_MAX };

void log_set_level(enum log_level l);
void log_set_quiet(bool quiet); /* nothing at all (fuzz targets) */
enum log_level log_get_level(void);
int log_internal(enum log_level l, int err, const char *fmt, ...) _printf_(3, 4);

/* log_internal() always returns < 0, but static analysers do not look into log.c: without this
 * identity (at run time: the -EINVAL branch is never taken) clang-analyzer took every
 * `return log_error_errno(r, ...)` for a possible success and reported the caller reading what
 * the failed callee never wrote. */
static inline int log_negative_(int r)
{
	return r < 0 ? r : -EINVAL;
}

#define log_error(...) log_negative_(log_internal(LOG_LVL_ERROR, 0, __VA_ARGS__))
#define log_warn(...) log_negative_(log_internal(LOG_LVL_WARN, 0, __VA_ARGS__))
#define log_info(...) log_negative_(log_internal(LOG_LVL_INFO, 0, __VA_ARGS__))
#define log_debug(...) log_negative_(log_internal(LOG_LVL_DEBUG, 0, __VA_ARGS__))
#define log_error_errno(e, ...) log_negative_(log_internal(LOG_LVL_ERROR, (e), __VA_ARGS__))
#define log_warn_errno(e, ...) log_negative_(log_internal(LOG_LVL_WARN, (e), __VA_ARGS__))
#define log_debug_errno(e, ...) log_negative_(log_internal(LOG_LVL_DEBUG, (e), __VA_ARGS__))

#endif
