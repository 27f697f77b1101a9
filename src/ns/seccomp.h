/* SPDX-License-Identifier: GPL-2.0-or-later */
/* seccomp.h — the workload's default seccomp deny list (design section 7).
 *
 * seccomp_policy_rules() is the pure rule list (unit-tested by name and argument filter);
 * seccomp_policy_compile() turns it into a BPF program with libseccomp in the supervisor, and the
 * workload only loads that program (seccomp_policy_load) as the last step before execve: memory
 * is costly in a freshly forked process (every page it writes is a copy-on-write fault, 15-55 us
 * each on the VMs measured, and libseccomp's compiler touched 34 pages in the workload).
 * seccomp_policy_apply() does both at once. Default action: allow. Foreign architectures (and
 * x32) kill the process.
 */
#ifndef AISB_NS_SECCOMP_H
#define AISB_NS_SECCOMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sock_filter;

enum seccomp_cmp { SC_CMP_NONE, SC_CMP_MASKED_EQ, SC_CMP_NE, SC_CMP_MAX };

struct seccomp_rule {
	const char *name;       /* syscall name as libseccomp knows it */
	int err;                /* errno returned */
	enum seccomp_cmp cmp;   /* optional filter on one argument */
	unsigned arg;
	uint64_t mask;
	uint64_t value;
};

struct seccomp_options {
	bool allow_ptrace;      /* --allow-ptrace: ptrace and process_vm_* stay allowed */
};

/* Fills @out (capacity @cap) with the rules for @o. Pure. Return: number of rules or -ENOSPC. */
int seccomp_policy_rules(const struct seccomp_options *o, struct seccomp_rule *out, size_t cap);

/* A compiled filter. */
struct seccomp_prog {
	struct sock_filter *insns;
	unsigned short len;
};

/* Compiles the filter for @o into @out (free with seccomp_prog_free()). Return: 0 or -errno.
 * Does not log. */
int seccomp_policy_compile(const struct seccomp_options *o, struct seccomp_prog *out);

/* Sets no_new_privs and loads @prog into the calling thread, as libseccomp's seccomp_load()
 * would. Allocates nothing. Return: 0 or -errno. Does not log. */
int seccomp_policy_load(const struct seccomp_prog *prog);

void seccomp_prog_free(struct seccomp_prog *prog);

/* Compiles and loads the filter for @o into the calling thread (sets no_new_privs). Return: 0 or
 * -errno. Does not log. */
int seccomp_policy_apply(const struct seccomp_options *o);

#endif
