/* SPDX-License-Identifier: GPL-2.0-or-later */
/* capview.h — a process's capability sets read back from outside, with libcap, as text.
 *
 * ns/caps.c drops every capability of the workload with raw capset()/prctl() before exec. This
 * is the independent second look that `aisb inspect` (live sessions) and `aisb doctor --deep`
 * take: libcap's cap_get_pid() (capget on the pid) for effective, permitted and inheritable,
 * rendered by cap_to_text() ("=" is the empty set), and its IAB view (/proc/PID/status) for the
 * ambient and bounding sets. libcap is dlopen()ed on first use (util/dl-cap.c): no start-up cost.
 */
#ifndef AISB_CLI_CAPVIEW_H
#define AISB_CLI_CAPVIEW_H

#include <stddef.h>
#include <sys/types.h>

/**
 * capview_pid() - describe the capability sets of @pid
 * @pid: the process (a host pid)
 * @buf: receives one line, e.g. "'=' (effective, permitted, inheritable empty); ambient empty;
 *       bounding empty"
 * @n: size of @buf
 *
 * Return: 1 when every set is empty, 0 when some capability is left (named in @buf), -ELIBACC
 * when libcap cannot be loaded, or -errno from the read. Does not log.
 */
int capview_pid(pid_t pid, char *buf, size_t n);

/**
 * capview_workload() - the workload of a sandbox: the first child of its init
 * @init: the host pid of the sandbox's init
 * @out: set to the workload's host pid
 *
 * Return: 0, -ESRCH when init has no child (yet, or any more), or -errno. Does not log.
 */
int capview_workload(pid_t init, pid_t *out);

#endif
