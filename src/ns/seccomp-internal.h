/* SPDX-License-Identifier: GPL-2.0-or-later */
/* seccomp-internal.h — the compiler behind seccomp_policy_compile(), for its unit tests */
#ifndef AISB_NS_SECCOMP_INTERNAL_H
#define AISB_NS_SECCOMP_INTERNAL_H

#include "ns/seccomp.h"

/* Compiles @n @rules into @out. Return: 0, -ENOSYS when a rule's name is unknown to the
 * run-time libseccomp, or -errno. Logs on failure. */
int seccomp_rules_compile(const struct seccomp_rule *rules, size_t n, struct seccomp_prog *out);

#endif
