/* SPDX-License-Identifier: GPL-2.0-or-later */
/* refusal.h — the one real cause when the platform refuses the sandbox, for the run and doctor.
 *
 * When a namespace, an id map or a mount of the sandbox fails with EPERM, the errno says
 * nothing about why. The causes met in CI containers (issue 24), in the order they are told
 * apart: a seccomp profile that denies system calls the sandbox needs (Docker's default denies
 * namespaces to clone and unshare, and mount, umount2, pivot_root, setns and the new mount API
 * without CAP_SYS_ADMIN); root without CAP_SETFCAP, which Linux >= 5.12 requires to map uid 0
 * into a user namespace (--cap-drop=ALL). The run's refusal and doctor's userns check print the
 * same cause and fix from here, so they cannot disagree.
 */
#ifndef AISB_NS_REFUSAL_H
#define AISB_NS_REFUSAL_H

#include <stdbool.h>
#include <stddef.h>

#include "util/container.h"

/* The sandbox's system calls that this process's seccomp filter denies, one bit each in the
 * order of refusal_syscall_name(); 0 without a filter. Each is probed in a child with
 * arguments the kernel refuses before it acts (EFAULT, EINVAL, EBADF); those it checks a
 * capability for first are probed inside a new user and mount namespace, when one can be made.
 * Does not log. */
unsigned refusal_denied_syscalls(void);

/* The name of bit @i of refusal_denied_syscalls(), or NULL past the last. Does not log. */
const char *refusal_syscall_name(unsigned i);

/* Is the caller uid 0 without CAP_SETFCAP in its effective set? Does not log. */
bool refusal_lacks_setfcap(void);

/* The cause of an EPERM in the sandbox's set-up, when it is one of the above: its text into
 * @msg ("the container's seccomp profile denies mount, umount2 (...)") and the fix into @fix,
 * for engine @e. Return: true when a cause was found. Does not log. */
bool refusal_explain(enum container_engine e, char *msg, size_t msglen, char *fix, size_t fixlen);

/* Why a user namespace cannot be made, from the sysctls below @proc ("/proc"; tests: a tree):
 * user.max_user_namespaces=0 (or exhausted: @err ENOSPC), kernel.unprivileged_userns_clone=0
 * or kernel.apparmor_restrict_unprivileged_userns=1 for @uid != 0. Cause into @msg, fix into
 * @fix, the texts doctor's userns check prints. Return: true when one applies. Does not log. */
bool refusal_userns_off(const char *proc, unsigned uid, int err, char *msg, size_t msglen, char *fix, size_t fixlen);

#endif
