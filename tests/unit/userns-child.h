/* SPDX-License-Identifier: GPL-2.0-or-later */
/* userns-child.h — for unit tests that run a probe in a child inside a one-id user namespace
 * (uid and gid 0 inside = the test's own): the exit code of the child carries the result. */
#ifndef AISB_TESTS_USERNS_CHILD_H
#define AISB_TESTS_USERNS_CHILD_H

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ns/userns.h"
#include "util/util.h"

enum { CHILD_OK = 0, CHILD_NO_USERNS = 10, CHILD_FAIL = 20 };

static inline int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int r;
	if (fd < 0)
		return -errno;
	r = write_full(fd, s, strlen(s));
	close(fd);
	return r;
}

/* What `unshare -Ur` does: a new user namespace where 0 maps to @uid and @gid, made by the
 * module the sandbox uses (ns/userns.h). */
static inline int enter_userns(uid_t uid, gid_t gid)
{
	const struct userns_map m = { .inside_uid = 0, .host_uid = uid, .inside_gid = 0, .host_gid = gid };

	return userns_enter(&m, 0, NULL);
}

/* The value of "@field:" in /proc/self/status (CapEff in hex: @base 16; NoNewPrivs: 10), or
 * UINT64_MAX. */
static inline uint64_t status_field(const char *field, int base)
{
	char buf[4096], *p;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return UINT64_MAX;
	buf[n] = 0;
	p = strstr(buf, field);
	return p ? strtoull(p + strlen(field) + 1, NULL, base) : UINT64_MAX;
}

/* Runs @fn(@arg, uid, gid) in a forked child (uid/gid: the test's, read before the fork) and
 * returns its exit code; -1 if it did not exit normally. */
static inline int run_in_child(int (*fn)(const void *arg, uid_t uid, gid_t gid), const void *arg)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(fn(arg, uid, gid));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

#endif
