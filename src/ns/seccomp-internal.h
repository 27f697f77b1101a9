/* SPDX-License-Identifier: GPL-2.0-or-later */
/* seccomp-internal.h — the compiler behind the built-in filters (seccomp-compile.c, linked into
 * seccomp-gen and the unit tests, not into aisb) and the filters it made when aisb was built */
#ifndef AISB_NS_SECCOMP_INTERNAL_H
#define AISB_NS_SECCOMP_INTERNAL_H

#include "ns/seccomp.h"

/* Compiles @n @rules into a denylist (default action: allow; each rule its own errno) in @out.
 * Return: 0, -ENOSYS when a rule's name is unknown to libseccomp, or -errno. Logs on failure. */
int seccomp_rules_compile(const struct seccomp_rule *rules, size_t n, struct seccomp_prog *out);

/* The same for an allowlist: only @rules' calls (with their argument comparisons) run, every
 * other call and every foreign ABI kills the process; a rule with an .err returns that errno
 * without running the call. For a confined helper that parses hostile bytes (the gate and its
 * resolver, net/gate-confine.h). */
int seccomp_allowlist_compile(const struct seccomp_rule *rules, size_t n, struct seccomp_prog *out);

/* Written by seccomp-gen when aisb was built (src/ns/seccomp-filters.c in the build tree): the
 * run table for the four option sets, indexed by allow_ptrace | fakeroot << 1 (the gate's
 * allowlist is declared in net/gate-confine.h). test-seccomp compiles the table again and
 * compares. */
extern const struct seccomp_prog seccomp_prebuilt_policy[4];

#endif
