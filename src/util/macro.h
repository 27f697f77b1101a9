/* SPDX-License-Identifier: GPL-2.0-or-later */
/* macro.h — cleanup attributes and small helpers shared by every module.
 *
 * `_cleanup_(f)` runs f(&var) when var leaves scope; ownership is handed on with TAKE_PTR/TAKE_FD.
 * One `_cleanup_*_` per resource type keeps error paths short and leak-free.
 */
#ifndef AISB_UTIL_MACRO_H
#define AISB_UTIL_MACRO_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _noreturn_ __attribute__((noreturn))

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

void strv_free(char **v);
static inline void strv_freep(char ***v)
{
	strv_free(*v);
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_strv_free_ _cleanup_(strv_freep)

#define TAKE_PTR(p)                                                                                \
	({                                                                                         \
		__typeof__(p) _p = (p);                                                            \
		(p) = NULL;                                                                        \
		_p;                                                                                \
	})
#define TAKE_FD(fd)                                                                                \
	({                                                                                         \
		int _fd = (fd);                                                                    \
		(fd) = -1;                                                                         \
		_fd;                                                                               \
	})

#define streq(a, b) (strcmp((a), (b)) == 0)

/* Exit codes of docs/design.md §2. */
enum {
	AISB_EXIT_USAGE = 2,
	AISB_EXIT_ENFORCE = 77, /* enforcement could not be installed or verified */
	AISB_EXIT_POLICY = 78,  /* policy or configuration invalid */
	AISB_EXIT_FAILED = 125, /* aisb itself failed before the command ran */
	AISB_EXIT_NOEXEC = 126,
	AISB_EXIT_NOTFOUND = 127,
};

#endif
