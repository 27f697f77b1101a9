// SPDX-License-Identifier: GPL-2.0-or-later
/* gate-seccomp.c — a gate parser's fuzz target under the gate's own seccomp allowlist
 *
 * `make fuzz` links fuzz-http.c, fuzz-dns.c, fuzz-sni.c and fuzz-keytunnel.c a second time with this file, as
 * tests/fuzz/fuzz-NAME-seccomp-libfuzzer: the target's LLVMFuzzerTestOneInput is renamed
 * fuzz_gate_one (-D on its compile line), and the one here loads the filter before the first
 * input and then calls it. So every input runs under the allowlist the confined gate runs under
 * (gate_seccomp_rules[], net/gate-rules.c: the table seccomp-gen compiles into aisb, as it is in
 * a sanitizer build, which adds sigaltstack for ASan), and a parser path that makes a call
 * outside it, one that would kill the gate in production, stops the fuzzer with its input.
 *
 * What differs from the gate's filter, and why (tests/fuzz/libfuzzer.sh checks that a call
 * outside is still caught, and docs/fuzzing.md says the same):
 *   - the action for a call outside the list (and for a foreign ABI) is SECCOMP_RET_TRAP, not
 *     SECCOMP_RET_KILL_PROCESS: a killed fuzzer could not say which call or which input. The
 *     SIGSYS handler below writes the call's number and the input, in hex, to stderr (write and
 *     exit_group are in the gate's list) and exits with FUZZ_SECCOMP_EXIT; libFuzzer's own
 *     crash-file writing (fopen) is outside the list, so the input is in the log instead
 *     (tests/fuzz/long.sh turns the line back into a seccomp-crash-* file).
 *   - fuzz_extra_rules[]: rt_sigreturn (libFuzzer's -timeout alarm handler runs in this thread
 *     and returns; the gate blocks every signal and has none) and getrusage (libFuzzer's status
 *     lines print the peak RSS). Nothing else: measured by taking each out in turn (fuzz-http,
 *     -timeout=2, 12 s: getrusage traps at the first status line, rt_sigreturn at the first
 *     alarm) and by 40 s runs of each target with these two (docs/measurements.md).
 *   - ASan's options (__asan_default_options below): no leak check, no release of freed memory
 *     to the kernel; both would be the sanitizer's calls, not the gate's.
 *   - the filter is loaded into the fuzzing thread only, once libFuzzer's set-up is done (at the
 *     first input): libFuzzer's RSS thread, started before, stays unfiltered. Leak checking
 *     must be off (-detect_leaks=0: LeakSanitizer stops the world with clone and ptrace), and
 *     the corpus must not be a directory libFuzzer writes new inputs into (openat is not in the
 *     list): the scripts pass the seeds with -seed_inputs=.
 *
 * AISB_FUZZ_SECCOMP_SELFTEST=1 makes the first input call getppid(), which the gate's list does
 * not have: the run must then stop with FUZZ_SECCOMP_EXIT (the refusal half of the check).
 */
#undef LLVMFuzzerTestOneInput

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/filter.h>
#include <linux/seccomp.h>

#include "net/gate-confine.h"
#include "ns/seccomp-internal.h"
#include "util/macro.h"

/* the exit status of a run stopped by the filter */
#define FUZZ_SECCOMP_EXIT 86

int fuzz_gate_one(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct seccomp_rule fuzz_extra_rules[] = {
	{ .name = "rt_sigreturn" },
	{ .name = "getrusage" },
};

static const uint8_t *cur_data;
static size_t cur_size;

static void put(const char *s, size_t n)
{
	while (n > 0) {
		ssize_t k = write(STDERR_FILENO, s, n);
		if (k <= 0)
			return;
		s += k;
		n -= (size_t)k;
	}
}

/* Only write(2) and exit_group(2), both in the gate's list. */
static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	static const char hex[] = "0123456789abcdef";
	char line[160];
	int n;

	(void)sig;
	(void)uc;
	n = snprintf(line, sizeof(line),
		     "\nfuzz: the gate's seccomp filter stops system call %d (arch 0x%x)%s\n"
		     "seccomp-crash-hex: ",
		     si->si_syscall, si->si_arch,
		     cur_data ? ": the gate would be killed here" : ", made by libFuzzer between inputs (not a finding)");
	put(line, (size_t)n);
	for (size_t i = 0; i < cur_size; i += 64) {
		char h[128];
		size_t m = 0;
		for (size_t j = i; j < cur_size && j < i + 64; j++) {
			h[m++] = hex[cur_data[j] >> 4];
			h[m++] = hex[cur_data[j] & 15];
		}
		put(h, m);
	}
	put("\n", 1);
	syscall(SYS_exit_group, FUZZ_SECCOMP_EXIT);
}

static void load_filter(void)
{
	struct seccomp_rule rules[64];
	struct seccomp_prog prog;
	struct sigaction sa;
	size_t n = 0;

	if (gate_seccomp_rules_n + ELEMENTSOF(fuzz_extra_rules) > ELEMENTSOF(rules))
		abort();
	memcpy(rules, gate_seccomp_rules, gate_seccomp_rules_n * sizeof(rules[0]));
	n = gate_seccomp_rules_n;
	memcpy(rules + n, fuzz_extra_rules, sizeof(fuzz_extra_rules));
	n += ELEMENTSOF(fuzz_extra_rules);
	if (seccomp_allowlist_compile(rules, n, &prog) < 0)
		abort();
	/* every kill (a call outside the list, a foreign ABI) becomes a trap */
	for (unsigned short i = 0; i < prog.len; i++) {
		struct sock_filter *f = (struct sock_filter *)&prog.insns[i];
		if (f->code == (BPF_RET | BPF_K) &&
		    ((f->k & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_KILL_PROCESS ||
		     (f->k & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_KILL_THREAD))
			f->k = SECCOMP_RET_TRAP;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL) < 0)
		abort();
	if (seccomp_policy_load(&prog) < 0) {
		perror("fuzz: cannot load the gate's seccomp filter");
		abort();
	}
	seccomp_prog_free(&prog);
}

/* ---- the seeds: read before the filter, replayed under it ---- */

struct seed {
	uint8_t *p;
	size_t n;
};
static struct seed *seeds;
static size_t n_seeds;

static void read_seed(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0, k;
	struct seed *g;

	if (!f) {
		perror(path);
		exit(2);
	}
	do {
		if (n == cap) {
			uint8_t *b = realloc(buf, cap = cap ? cap * 2 : 4096);
			if (!b)
				abort();
			buf = b;
		}
		k = fread(buf + n, 1, cap - n, f);
		n += k;
	} while (k > 0);
	fclose(f);
	if (n == 0) { /* libFuzzer skips empty seed files (it ran the empty input already) */
		free(buf);
		return;
	}
	g = realloc(seeds, (n_seeds + 1) * sizeof(*seeds));
	if (!g)
		abort();
	seeds = g;
	seeds[n_seeds++] = (struct seed){ buf, n };
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Reads the -seed_inputs= files; refuses a corpus directory (libFuzzer writes new inputs into
 * it, and openat is not in the gate's list). */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char *const extra[] = { "-detect_leaks=0", "-print_funcs=0" };
	char **av = calloc((size_t)*argc + ELEMENTSOF(extra) + 1, sizeof(char *));

	for (int i = 1; i < *argc; i++) {
		const char *a = (*argv)[i];
		if (strncmp(a, "-seed_inputs=", 13) == 0) {
			char *list = strdup(a + 13), *save = NULL;
			if (!list)
				abort();
			for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
				read_seed(t);
			free(list);
		} else if (a[0] != '-') {
			fprintf(stderr, "fuzz: '%s': a seccomp target takes its seeds as -seed_inputs=FILE,... and no "
					"corpus directory (libFuzzer would write new inputs into it, and openat is outside "
					"the gate's filter)\n", a);
			exit(2);
		}
	}
	/* appended: libFuzzer reads the flags after this returns, the last of a name wins */
	if (!av)
		abort();
	memcpy(av, *argv, (size_t)*argc * sizeof(char *));
	for (size_t i = 0; i < ELEMENTSOF(extra); i++)
		av[(*argc)++] = (char *)extra[i];
	*argv = av;
	return 0;
}

/* ASan's runtime, not the gate's code, would make calls outside the list: LeakSanitizer stops
 * the world with clone and ptrace (libFuzzer's -detect_leaks=0 turns off its checks between
 * inputs, detect_leaks=0 here the one at exit), and its allocator gives freed memory back with
 * madvise every few seconds (measured: fuzz-sni trapped on madvise; glibc's malloc in the
 * single-threaded gate trims with brk, which is in the list). */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0:allocator_release_to_os_interval_ms=-1";
}

/* libFuzzer runs the empty input first, then each seed (reading each file just before it runs
 * it), then mutations: the filter goes on before the first mutation, and the seeds run again
 * under it then. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static size_t calls;
	int r;

	if (calls <= n_seeds + 1 && calls++ == n_seeds + 1) {
		const char *t = secure_getenv("AISB_FUZZ_SECCOMP_SELFTEST");
		load_filter();
		if (t && streq(t, "1")) {
			cur_data = data;
			cur_size = size;
			(void)syscall(SYS_getppid);
		}
		for (size_t i = 0; i < n_seeds; i++) {
			cur_data = seeds[i].p;
			cur_size = seeds[i].n;
			(void)fuzz_gate_one(seeds[i].p, seeds[i].n);
		}
		cur_data = NULL;
		cur_size = 0;
	}
	cur_data = data;
	cur_size = size;
	r = fuzz_gate_one(data, size);
	cur_data = NULL; /* libFuzzer frees its copy of the input after this returns */
	cur_size = 0;
	return r;
}
