/* SPDX-License-Identifier: GPL-2.0-or-later */
/* seccomp.h — the one seccomp rule table of every sandbox: `aisb run`'s workload and `aisb build`'s
 * RUN steps (docs/design.md §7, issue 10).
 *
 * seccomp_policy_rules() is the pure rule list for a set of options (unit-tested by name and
 * argument filter): the deny list, the socket-family allowlist, the ptrace family unless
 * --allow-ptrace, set-id mode bits refused (except in a build's root RUN steps), and for a
 * build's root RUN steps the fakeroot no-ops. One table, one compiler:
 * a fix made here protects both paths. The list is turned into BPF by libseccomp when aisb is
 * BUILT (seccomp-gen.c writes the programs of the four option sets into the binary), not at
 * every start: compiling cost ~50 copy-on-write and heap page faults per run (15-55 us each on
 * the VMs measured), most of issue 10's start-up regression, and libseccomp is no longer loaded
 * at run time at all. seccomp_policy_compile() hands out the built-in program for a set of
 * options; the workload only loads it (seccomp_policy_load) as the last step before execve.
 * seccomp_policy_apply() does both at once (build RUN steps). Default action: allow. Foreign
 * architectures (and x32) kill the process. A rule naming a system call that the libseccomp
 * at build time does not know fails the build: a rule is never skipped silently. The filter is
 * for the architecture aisb is built for (configure refuses to cross-compile).
 */
#ifndef AISB_NS_SECCOMP_H
#define AISB_NS_SECCOMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sock_filter;

enum seccomp_cmp { SC_CMP_NONE, SC_CMP_EQ, SC_CMP_NE, SC_CMP_GE, SC_CMP_MASKED_EQ, SC_CMP_MAX };

/* One comparison of a system call argument (64 bits wide on 64-bit ABIs). */
struct seccomp_arg_cmp {
	enum seccomp_cmp op;    /* SC_CMP_NONE: unused slot */
	unsigned arg;           /* argument index, 0-5 */
	uint64_t mask;          /* SC_CMP_MASKED_EQ only: (arg & mask) == value */
	uint64_t value;
};

/* Comparisons per rule; all must hold. libseccomp allows one per argument (measured: a second
 * comparison of the same argument is -EINVAL), so they name different arguments. */
#define SECCOMP_RULE_CMPS 2

struct seccomp_rule {
	const char *name;       /* system call name as libseccomp knows it */
	int err;                /* errno returned; 0 = report success without running it */
	struct seccomp_arg_cmp cmp[SECCOMP_RULE_CMPS];
};

struct seccomp_options {
	bool allow_ptrace;      /* --allow-ptrace: ptrace, process_vm_*, pidfd_getfd, kcmp and
				 * process_madvise stay allowed */
	bool fakeroot;          /* a build's RUN as root with one mapped id: the chown and set*id
				 * families succeed as no-ops (docs/build.md) */
};

/* Enough for every rule of every option set (unit-tested). */
#define SECCOMP_RULES_MAX 256

/**
 * seccomp_policy_rules() - the rules for a set of options
 * @o: the options
 * @out: filled with the rules
 * @cap: capacity of @out
 *
 * Pure. Return: the number of rules, or -ENOSPC. Does not log.
 */
int seccomp_policy_rules(const struct seccomp_options *o, struct seccomp_rule *out, size_t cap);

/* The argument of clone(2) that holds the flags: the first one, except where the kernel's ABI
 * swaps the first two (CONFIG_CLONE_BACKWARDS2: s390/s390x and CRIS take the stack first).
 * CLONE_BACKWARDS (arm, i386, ...) and CLONE_BACKWARDS3 (microblaze) move other arguments only.
 * The filter is native-only (other ABIs are killed), so the build architecture decides. */
#if defined(__s390__) || defined(__CRIS__)
#define SECCOMP_CLONE_FLAGS_ARG 1
#else
#define SECCOMP_CLONE_FLAGS_ARG 0
#endif

/* A compiled filter: one of the built-in ones (not owned) or, in the generator and the unit
 * tests, one libseccomp made (owned: seccomp_prog_free() frees it). */
struct seccomp_prog {
	const struct sock_filter *insns;
	unsigned short len;
	bool owned;
};

/**
 * seccomp_policy_compile() - the filter for a set of options
 * @o: the options
 * @out: the program, compiled when aisb was built (seccomp_prog_free() is harmless on it)
 *
 * Allocates nothing, cannot fail (the return value is kept for the callers' error paths).
 * Return: 0.
 */
int seccomp_policy_compile(const struct seccomp_options *o, struct seccomp_prog *out);

/* Sets no_new_privs and loads @prog into the calling thread, as libseccomp's seccomp_load()
 * would. Allocates nothing; only system calls (safe in a CLONE_VM child). Return: 0 or -errno.
 * Does not log. */
int seccomp_policy_load(const struct seccomp_prog *prog);

void seccomp_prog_free(struct seccomp_prog *prog);

/**
 * seccomp_policy_apply() - load the filter for @o into the calling thread
 * @o: the options
 *
 * Sets no_new_privs. Return: 0 or -errno. Logs on failure.
 */
int seccomp_policy_apply(const struct seccomp_options *o);

#endif
