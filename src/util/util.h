/* SPDX-License-Identifier: GPL-2.0-or-later */
/* util.h — fd, file, path and string-vector helpers used across aisb.
 *
 * All functions return >= 0 on success and -errno on failure, and do not log, unless said.
 */
#ifndef AISB_UTIL_UTIL_H
#define AISB_UTIL_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct stat;

#include "util/macro.h"

/* Strings vectors: NULL-terminated arrays of malloc'd strings. */
size_t strv_length(char *const *v);
int strv_push(char ***v, const char *s);       /* copies s */
int strv_push_take(char ***v, char *s);        /* takes ownership of s */
bool strv_contains(char *const *v, const char *s);
char **strv_copy(char *const *v);
void strv_sort(char **v);                      /* strcmp order; NULL is fine */

/* I/O */
ssize_t read_full(int fd, void *buf, size_t n);         /* retries EINTR, stops at EOF */
int write_full(int fd, const void *buf, size_t n);      /* all or -errno */
int read_file_at(int dirfd, const char *path, size_t max, char **out, size_t *len);
/* read_file_at() of a regular file only, never through a symlink at @path's last component
 * (-ELOOP), never blocking on a fifo (-EINVAL for anything not regular); @st (or NULL) receives
 * its stat. Does not log. */
int read_regular_at(int dirfd, const char *path, size_t max, char **out, size_t *len, struct stat *st);
int write_file_at(int dirfd, const char *path, const char *data, size_t len, mode_t mode);
int mkdir_p(const char *path, mode_t mode);
int rm_rf(const char *path);                             /* never crosses a mount point */

/* Opens @path below @dirfd following no symlink at any component (openat2 RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS, and RESOLVE_BENEATH for a relative path below a real dirfd; before
 * 5.6, one O_NOFOLLOW component at a time). A symlink anywhere gives -ELOOP. O_CLOEXEC is added.
 * Return: the fd or -errno. */
int openat_nofollow(int dirfd, const char *path, int flags, mode_t mode);
/**
 * path_resolve_trusted() - canonicalise @path following only symlinks no sandbox could have planted
 * @path: absolute, or relative to the working directory
 * @out: receives the malloc'd canonical path (no symlink in it)
 * @bad_link: on -ELOOP, receives the malloc'd path of the refused symlink
 *
 * The one rule for paths aisb reads or mounts for the sandbox (--mount sources, --env-file): a
 * symlink is followed only when the directory holding it is not writable by the caller, so no
 * sandbox of the caller (which can write at most what the caller can) could have made or swapped
 * it; for a root caller (whose sandboxes may write anything mounted for them) no symlink is
 * followed at all. At most 40 links. Does not log.
 * Return: 0, -ELOOP (a refused or looping symlink), or another -errno of the walk.
 */
int path_resolve_trusted(const char *path, char **out, char **bad_link);
/* Paths */
bool path_is_absolute(const char *p);
bool path_has_dotdot(const char *p);
bool path_startswith(const char *path, const char *prefix); /* component-wise */
char *path_join(const char *a, const char *b);

/* The one hex encoder: @n bytes of @in as 2*@n lower-case digits and a NUL in @out. Does not log. */
void hex_encode(const void *in, size_t n, char *out);

/* Random lower-case hex, for session ids. */
int random_hex(char *buf, size_t nbytes);

/* Parse a non-negative decimal integer; -EINVAL on garbage or overflow. */
int parse_u64(const char *s, unsigned long long *out);

/* Field 22 of /proc/PID/stat: the start time in clock ticks since boot, which tells a live
 * process from a later one that reuses its pid. Return: 0, -ESRCH/-ENOENT when there is no such
 * process, -EINVAL. Does not log. */
int proc_start_time(pid_t pid, unsigned long long *out);

/* Whether process @pid is alive and started at @start (proc_start_time()). Does not log. */
bool proc_is(pid_t pid, unsigned long long start);

#endif
