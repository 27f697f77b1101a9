/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fakeroot.h — the seccomp rules that let a build's RUN act as root with one mapped id.
 *
 * A build maps inside uid/gid 0 to the caller only (design section 4: no subordinate ids). In
 * such a namespace chown(2) to any other id fails with EINVAL (measured: machine-facts.md), and
 * so do setuid/setgid/setgroups to an unmapped id, which makes dpkg, apt-get and npm fail. These
 * rules make the chown family and the set*id family return 0 without doing anything (the
 * Apptainer "fakeroot without subuid" technique): files keep the one owner, the process keeps
 * uid 0. The list is pure (unit-tested by name); fakeroot_seccomp_apply() loads it as a filter
 * of its own, on top of the workload's deny list (seccomp_policy_apply), since the kernel runs
 * every filter and the errno action outranks allow.
 */
#ifndef AISB_BUILD_FAKEROOT_H
#define AISB_BUILD_FAKEROOT_H

#include <stddef.h>

#include "ns/seccomp.h"

/* Fills @out (capacity @cap) with the fakeroot rules (err 0 = report success). Pure.
 * Return: number of rules or -ENOSPC. */
int fakeroot_seccomp_rules(struct seccomp_rule *out, size_t cap);

/* Loads the fakeroot filter into the calling thread (sets no_new_privs). Names that are not
 * syscalls of the native architecture (the 32-bit *32 variants on x86_64) are skipped; other
 * ABIs kill the process, as in the workload filter. Return: 0 or -errno. Does not log. */
int fakeroot_seccomp_apply(void);

#endif
