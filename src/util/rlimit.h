/* SPDX-License-Identifier: GPL-2.0-or-later */
/* rlimit.h — the one way aisb sets a resource limit: never above the one it inherited.
 *
 * A caller may run aisb under a tighter limit than aisb wants (`prlimit --nproc=200:200 aisb`,
 * a CI runner's `ulimit -u`, a container's `--ulimit`). Raising a hard limit needs
 * CAP_SYS_RESOURCE in the initial user namespace, which no sandbox and no helper has (root on
 * this machine kind lacks it too: docs/limits.md), so setting aisb's own value failed with EPERM
 * and the run ended with 77 — and where it would have worked it would have loosened the caller's
 * bound. Every rlimit aisb sets (the sandbox's RLIMIT_NPROC, the gate's and the resolver's) goes
 * through here and gets the tighter of what aisb wants and what it inherited.
 */
#ifndef AISB_UTIL_RLIMIT_H
#define AISB_UTIL_RLIMIT_H

#include <stdbool.h>
#include <sys/resource.h>

/* The limit to set: soft = min(@inherited soft, @want), hard = min(@inherited hard, @want); with
 * @pin both are the new soft value, so the process cannot raise it again. Pure. Does not log. */
struct rlimit rlimit_clamp(const struct rlimit *inherited, rlim_t want, bool pin);

/* Sets @resource of the calling process to rlimit_clamp() of its current limit and @want;
 * *@applied (may be NULL) gets what was set. Return: 0 or -errno. Does not log. */
int rlimit_lower(int resource, rlim_t want, bool pin, struct rlimit *applied);

/* The value rlimit_lower(@resource, @want, false) would make the soft limit, read now (for a
 * preview). Does not log. */
rlim_t rlimit_effective(int resource, rlim_t want);

#endif
