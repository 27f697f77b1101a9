/* SPDX-License-Identifier: GPL-2.0-or-later */
/* harden.h — the one hardening sequence before a sandboxed program's execve.
 *
 * `aisb run`'s workload (run/init.c) and `aisb build`'s RUN steps (build/native.c) end the same
 * way: every fd above 2 closed at exec, the capabilities limited (none, or a build root step's
 * fakeroot set, ns/caps.h), no_new_privs, and the seccomp filter compiled from the one table
 * (ns/seccomp.h, .fakeroot for a build's root step) loaded last. The /proc stage (ns/procfs.h)
 * runs before, while the caller still holds CAP_SYS_ADMIN for its covers.
 */
#ifndef AISB_NS_HARDEN_H
#define AISB_NS_HARDEN_H

#include <stdint.h>

struct seccomp_prog;

enum harden_step { HARDEN_FDS, HARDEN_CAPS, HARDEN_SECCOMP, HARDEN_STEP_MAX };

/**
 * harden_before_exec() - the last stage before execve
 * @filter: the compiled filter (seccomp_policy_compile())
 * @keep_caps: 0 for the workload and USER steps, CAPS_FAKEROOT for a build's root RUN step
 * @failed: set to the step that failed
 *
 * Should: leave only fds 0-2 across execve, only @keep_caps in every set, no_new_privs on, and
 * @filter loaded, in that order (capset needs no seccomp exception; the filter is last so it
 * constrains nothing of aisb's own). Mustn't: allocate or take a lock (init's workload shares
 * its memory until execve), or continue past a step that failed.
 * Return: 0 or -errno. Does not log.
 */
int harden_before_exec(const struct seccomp_prog *filter, uint64_t keep_caps, enum harden_step *failed);

/* What failed, for a message: "close_range", "cannot drop all capabilities" ... A constant
 * string. Does not log. */
const char *harden_step_name(enum harden_step s, uint64_t keep_caps);

#endif
