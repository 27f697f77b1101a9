// SPDX-License-Identifier: GPL-2.0-or-later
/* test-gate-confine.c — the gate's seccomp allowlist is the one table the code loads, and the
 * confined process has what it must have: Seccomp 2, NoNewPrivs 1, no capabilities, an empty
 * root, its limits; a call outside the table kills it (attack), a call in it works (control). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <linux/filter.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "net/gate-confine.h"
#include "ns/seccomp-internal.h"
#include "util/fdpass.h"
#include "util/util.h"

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The exact set of calls (by name, each once): widening the gate's allowlist must show up here,
 * in review, with its reason in gate-confine.c. */
static void test_table_is_exactly_this(void **state)
{
	static const char *const expected[] = {
		"accept4", "brk", "clock_gettime", "close", "connect", "epoll_ctl", "epoll_pwait",
		"epoll_wait", "exit_group", "fcntl", "getsockopt", "mmap", "mremap", "munmap", "pipe2",
		"recvfrom", "sendmsg", "sendto", "setsockopt", "shutdown",
#if defined(__SANITIZE_ADDRESS__)
		"sigaltstack", /* ASan's runtime only: see gate-confine.c */
#endif
		"socket", "socketpair", "splice", "write",
	};
	const char *names[64];
	size_t n = 0;

	(void)state;
	for (size_t i = 0; i < gate_seccomp_rules_n; i++) {
		bool seen = false;

		for (size_t k = 0; k < n; k++)
			seen |= streq(names[k], gate_seccomp_rules[i].name);
		if (!seen) {
			assert_true(n < ELEMENTSOF(names));
			names[n++] = gate_seccomp_rules[i].name;
		}
	}
	qsort(names, n, sizeof(names[0]), cmp_str);
	assert_int_equal(n, ELEMENTSOF(expected));
	for (size_t i = 0; i < n; i++)
		assert_string_equal(names[i], expected[i]);
	/* socket is allowed only for AF_INET/AF_INET6 streams, socketpair only for AF_UNIX streams
	 * (the tlsgate's plaintext pairs), mmap only without PROT_EXEC */
	for (size_t i = 0; i < gate_seccomp_rules_n; i++) {
		const struct seccomp_rule *r = &gate_seccomp_rules[i];

		if (streq(r->name, "socket")) {
			assert_int_equal(r->cmp[0].op, SC_CMP_EQ);
			assert_true(r->cmp[0].value == AF_INET || r->cmp[0].value == AF_INET6);
			assert_int_equal(r->cmp[1].op, SC_CMP_MASKED_EQ);
			assert_int_equal(r->cmp[1].value, SOCK_STREAM);
		} else if (streq(r->name, "socketpair")) {
			assert_int_equal(r->cmp[0].op, SC_CMP_EQ);
			assert_int_equal(r->cmp[0].value, AF_UNIX);
			assert_int_equal(r->cmp[1].op, SC_CMP_MASKED_EQ);
			assert_int_equal(r->cmp[1].value, SOCK_STREAM);
		} else if (streq(r->name, "mmap")) {
			assert_int_equal(r->cmp[0].op, SC_CMP_MASKED_EQ);
			assert_int_equal(r->cmp[0].mask, PROT_EXEC);
			assert_int_equal(r->cmp[0].value, 0);
		} else {
			assert_int_equal(r->cmp[0].op, SC_CMP_NONE);
		}
	}
}

/* Every name in the table is known to this libseccomp: the allowlist compiles (a rule is never
 * skipped silently), and the filter built into aisb (seccomp-gen) is exactly that program. */
static void test_table_compiles(void **state)
{
	struct seccomp_prog now, built;

	(void)state;
	assert_int_equal(seccomp_allowlist_compile(gate_seccomp_rules, gate_seccomp_rules_n, &now), 0);
	assert_true(now.len > gate_seccomp_rules_n);
	assert_int_equal(gate_seccomp_compile(&built), 0);
	assert_int_equal(built.len, now.len);
	assert_memory_equal(built.insns, now.insns, now.len * sizeof(now.insns[0]));
	seccomp_prog_free(&built);
	seccomp_prog_free(&now);
}

enum probe { P_ALLOWED, P_OPEN, P_READ, P_UNIX_SOCKET, P_UDP_SOCKET, P_EXEC_MMAP, P_FORK, P_DGRAM_PAIR, P_MAX };

/* In the child, after the real gate_confine(): one probe. Return: the byte to report. */
static char run_probe(enum probe p)
{
	int fds[2], fd;
	void *m;

	switch (p) {
	case P_ALLOWED: /* the calls of the relay and the dial */
		fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0 || close(fd) < 0)
			return 'a';
		fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0)
			close(fd); /* a kernel without IPv6 says EAFNOSUPPORT: not a kill either */
		if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
			return 'b';
		close(fds[0]);
		close(fds[1]);
		/* the hand-over to the tlsgate: a plaintext pair, and SCM_RIGHTS over a socket */
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) < 0)
			return 'd';
		if (fdpass_send(fds[0], "x", 1, &fds[1], 1) < 0)
			return 'e';
		close(fds[0]);
		close(fds[1]);
		m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED || munmap(m, 4096) < 0)
			return 'c';
		free(malloc(1 << 20)); /* malloc's own paths */
		return 'y';
	case P_OPEN:
		return syscall(SYS_openat, AT_FDCWD, "/", O_RDONLY | O_DIRECTORY) >= 0 ? 'o' : 'e';
	case P_READ: /* read(2) is not needed: sockets are read with recv */
		return read(0, &m, 0) >= 0 ? 'o' : 'e';
	case P_UNIX_SOCKET:
		return socket(AF_UNIX, SOCK_STREAM, 0) >= 0 ? 'o' : 'e';
	case P_UDP_SOCKET:
		return socket(AF_INET, SOCK_DGRAM, 0) >= 0 ? 'o' : 'e';
	case P_EXEC_MMAP:
		m = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		return m != MAP_FAILED ? 'o' : 'e';
	case P_FORK:
		return syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL) >= 0 ? 'o' : 'e';
	case P_DGRAM_PAIR: /* only the stream pairs of the hand-over */
		return socketpair(AF_UNIX, SOCK_DGRAM, 0, fds) >= 0 ? 'o' : 'e';
	case P_MAX:
		break;
	}
	return '?';
}

static int read_status_field(pid_t pid, const char *field, char *out, size_t size)
{
	char path[64], line[256];
	size_t l = strlen(field);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, l) == 0 && line[l] == ':') {
			char *v = line + l + 1;

			v += strspn(v, " \t");
			v[strcspn(v, "\n")] = '\0';
			snprintf(out, size, "%s", v);
			fclose(f);
			return 0;
		}
	fclose(f);
	return -ENOENT;
}

static bool limit_is_zero(pid_t pid, const char *name)
{
	char path[64], line[256];
	bool zero = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, name, strlen(name)) == 0) {
			unsigned long long soft, hard;

			zero = sscanf(line + 26, "%llu %llu", &soft, &hard) == 2 && soft == 0 && hard == 0;
		}
	fclose(f);
	return zero;
}

/* What every confined helper shows in /proc/PID/status: a seccomp filter, no_new_privs, no
 * capability (not even in the bounding set) and its process name. */
static void assert_confined_status(pid_t pid, const char *name)
{
	static const char *const fields[][2] = {
		{ "Seccomp", "2" }, { "NoNewPrivs", "1" }, { "CapEff", "0000000000000000" },
		{ "CapPrm", "0000000000000000" }, { "CapBnd", "0000000000000000" },
	};
	char v[128];

	for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
		assert_int_equal(read_status_field(pid, fields[i][0], v, sizeof(v)), 0);
		assert_string_equal(v, fields[i][1]);
	}
	assert_int_equal(read_status_field(pid, "Name", v, sizeof(v)), 0);
	assert_string_equal(v, name);
}

/* Forks a child that confines itself with gate_confine() and runs @p when told; the parent
 * checks /proc/CHILD while it waits. Return: the child's wait status; *@got the byte it
 * reported (0: none, it was killed first). */
static int confined_child(enum probe p, char *got, bool check_proc)
{
	struct seccomp_prog prog;
	int c2p[2], p2c[2], st;
	pid_t parent = getpid(), pid;
	char b = 0;

	/* the one table, compiled as gate_start() does it */
	assert_int_equal(gate_seccomp_compile(&prog), 0);
	/* sockets, not pipes: the confined gate reads sockets only (recvfrom; read is not allowed) */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c2p), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p2c), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int keep[] = { c2p[1], p2c[0] };
		char cmd;

		if (gate_confine(parent, &prog, keep, ELEMENTSOF(keep), 0) < 0)
			_exit(GATE_EXIT_CONFINE);
		if (write(keep[0], "R", 1) != 1 || recv(keep[1], &cmd, 1, 0) != 1)
			_exit(1);
		cmd = run_probe((enum probe)cmd);
		(void)!write(keep[0], &cmd, 1);
		_exit(0);
	}
	seccomp_prog_free(&prog);
	close(c2p[1]);
	close(p2c[0]);
	assert_int_equal(read(c2p[0], &b, 1), 1);
	assert_int_equal(b, 'R');
	if (check_proc) {
		char path[64];
		DIR *d;
		struct dirent *e;
		int n = 0;

		assert_confined_status(pid, GATE_PROC_NAME);
		assert_true(limit_is_zero(pid, "Max processes"));
		assert_true(limit_is_zero(pid, "Max core file size"));
		/* its root is empty: no host file is reachable by name */
		snprintf(path, sizeof(path), "/proc/%d/root/", (int)pid);
		d = opendir(path);
		assert_non_null(d);
		while ((e = readdir(d)))
			n += !streq(e->d_name, ".") && !streq(e->d_name, "..");
		closedir(d);
		assert_int_equal(n, 0);
		/* and it holds no fd but the two it kept and 0-2 */
		snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
		d = opendir(path);
		assert_non_null(d);
		n = 0;
		while ((e = readdir(d)))
			n += e->d_name[0] != '.';
		closedir(d);
		assert_int_equal(n, 5);
	}
	b = (char)p;
	assert_int_equal(write(p2c[1], &b, 1), 1);
	b = 0;
	if (read(c2p[0], &b, 1) != 1)
		b = 0;
	*got = b;
	close(c2p[0]);
	close(p2c[1]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

/* Control: the confined gate does what the gate does. */
static void test_confined_allowed_calls_work(void **state)
{
	char got;
	int st;

	(void)state;
	st = confined_child(P_ALLOWED, &got, true);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(got, 'y');
}

/* Attacks: a file, read(2), a unix socket, a UDP socket, an executable mapping, a new process, a
 * datagram socketpair: each kills the gate with SIGSYS before the call returns. */
static void test_confined_other_calls_kill(void **state)
{
	static const enum probe probes[] = { P_OPEN, P_READ, P_UNIX_SOCKET, P_UDP_SOCKET,
					     P_EXEC_MMAP, P_FORK, P_DGRAM_PAIR };

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(probes); i++) {
		char got;
		int st = confined_child(probes[i], &got, false);

		if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSYS)
			fail_msg("probe %d: status 0x%x, reported '%c'", (int)probes[i], (unsigned)st, got ? got : '-');
		assert_int_equal(got, 0);
	}
}

/* The resolver's table, by name: widening it must show up here, in review, with its reason in
 * gate-rules.c. No execve, ptrace, kill, unshare, mount or file-writing call is in it. */
static void test_resolver_table_is_exactly_this(void **state)
{
	static const char *const expected[] = {
		"bind", "brk", "clock_gettime", "clone", "clone3", "close", "connect", "exit", "exit_group",
		"fcntl", "fstat", "futex", "getrandom", "getsockname", "getsockopt",
#if defined(__SANITIZE_ADDRESS__)
		"gettid", /* ASan's runtime only: see gate-rules.c */
#endif
		"gettimeofday", "ioctl", "lseek", "madvise", "mmap", "mprotect", "mremap", "munmap",
		"newfstatat", "openat", "poll", "ppoll", "pread64", "read", "recvfrom", "recvmsg", "rseq",
		"rt_sigaction", "rt_sigprocmask",
#if defined(__SANITIZE_ADDRESS__)
		"sched_getaffinity",
#endif
		"sendmmsg", "sendmsg", "sendto", "set_robust_list", "setsockopt",
#if defined(__SANITIZE_ADDRESS__)
		"sigaltstack",
#endif
		"socket", "statx", "uname", "writev",
	};
	const char *names[96];
	size_t n = 0;
	struct seccomp_prog now;

	(void)state;
	for (size_t i = 0; i < resolver_seccomp_rules_n; i++) {
		const struct seccomp_rule *r = &resolver_seccomp_rules[i];
		bool seen = false;

		for (size_t k = 0; k < n; k++)
			seen |= streq(names[k], r->name);
		if (!seen) {
			assert_true(n < ELEMENTSOF(names));
			names[n++] = r->name;
		}
		/* only clone3 answers an errno (ENOSYS: glibc falls back to clone, whose flags are checked) */
		assert_int_equal(r->err, streq(r->name, "clone3") ? ENOSYS : 0);
		if (streq(r->name, "clone")) {
			assert_int_equal(r->cmp[0].op, SC_CMP_MASKED_EQ);
			assert_int_equal(r->cmp[0].mask, CLONE_THREAD);
			assert_int_equal(r->cmp[0].value, CLONE_THREAD);
		} else if (streq(r->name, "openat")) {
			assert_int_equal(r->cmp[0].op, SC_CMP_MASKED_EQ);
			assert_true((r->cmp[0].mask & (O_ACCMODE | O_CREAT | O_TRUNC)) == (O_ACCMODE | O_CREAT | O_TRUNC));
			assert_int_equal(r->cmp[0].value, 0);
		} else if (streq(r->name, "socket")) {
			assert_int_equal(r->cmp[0].op, SC_CMP_EQ);
			assert_true(r->cmp[0].value == AF_UNIX || r->cmp[0].value == AF_INET ||
				    r->cmp[0].value == AF_INET6 || r->cmp[0].value == AF_NETLINK);
			assert_true(r->cmp[0].value == AF_UNIX || r->cmp[1].op != SC_CMP_NONE);
		} else if (streq(r->name, "ioctl")) {
			assert_int_equal(r->cmp[0].op, SC_CMP_EQ);
		} else {
			assert_int_equal(r->cmp[0].op, SC_CMP_NONE);
		}
	}
	qsort(names, n, sizeof(names[0]), cmp_str);
	assert_int_equal(n, ELEMENTSOF(expected));
	for (size_t i = 0; i < n; i++)
		assert_string_equal(names[i], expected[i]);
	/* and the filter built into aisb is exactly this table compiled */
	assert_int_equal(seccomp_allowlist_compile(resolver_seccomp_rules, resolver_seccomp_rules_n, &now), 0);
	assert_int_equal(seccomp_prebuilt_resolver.len, now.len);
	assert_memory_equal(seccomp_prebuilt_resolver.insns, now.insns, now.len * sizeof(now.insns[0]));
	seccomp_prog_free(&now);
}

enum rprobe { R_LOOKUP, R_EXEC, R_OPEN_WRITE, R_VSOCK, R_PACKET, R_FORK, R_PTRACE, R_KILL, R_MAX };

static void *lookup_thread(void *arg)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL;
	char *ok = arg;

	/* /etc/hosts names localhost everywhere aisb runs; the lookup reads nsswitch.conf, host.conf,
	 * hosts, gai.conf and asks the kernel for the interface addresses (netlink) */
	*ok = getaddrinfo("localhost", NULL, &hints, &res) == 0 ? 'y' : 'n';
	if (res)
		freeaddrinfo(res);
	return NULL;
}

/* In the confined resolver: one probe. Return: the byte to report. */
static char run_rprobe(enum rprobe p)
{
	char *const argv[] = { (char *)"/bin/true", NULL };
	char ok = 'n';
	pthread_t t;

	switch (p) {
	case R_LOOKUP: /* control: what the resolver does, from a worker thread as resolver_main() */
		if (pthread_create(&t, NULL, lookup_thread, &ok) != 0 || pthread_join(t, NULL) != 0)
			return 't';
		return ok;
	case R_EXEC:
		execve(argv[0], argv, argv + 1);
		return 'o';
	case R_OPEN_WRITE:
		return syscall(SYS_openat, AT_FDCWD, "/tmp", O_WRONLY | O_TMPFILE, 0600) >= 0 ? 'o' : 'e';
	case R_VSOCK: /* created only, never connected; the filter kills before the call */
		return socket(AF_VSOCK, SOCK_STREAM, 0) >= 0 ? 'o' : 'e';
	case R_PACKET:
		return socket(AF_PACKET, SOCK_RAW, 0) >= 0 ? 'o' : 'e';
	case R_FORK:
		return syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL) >= 0 ? 'o' : 'e';
	case R_PTRACE:
		return ptrace(PTRACE_TRACEME, 0, NULL, NULL) >= 0 ? 'o' : 'e';
	case R_KILL:
		return kill(1, 0) >= 0 ? 'o' : 'e'; /* signal 0: a probe, nothing is sent */
	case R_MAX:
		break;
	}
	return '?';
}

/* Forks a child that confines itself with the real resolver_confine() and runs @p; with
 * @check_proc the parent reads its /proc status first (the resolver keeps the filesystem,
 * control: /etc is there, but no capability, not even in its bounding set, no new privileges,
 * its seccomp filter). Return: the child's wait status; *@got the byte it reported. */
static int resolver_child(enum rprobe p, char *got, bool check_proc)
{
	int c2p[2], st;
	pid_t parent = getpid(), pid;
	char b = 0;

	/* one socket both ways: resolver_confine() keeps exactly one fd, as the resolver serves one */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c2p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int keep = c2p[1], fd;
		char cmd;

		if (resolver_confine(parent, &keep) < 0)
			_exit(1);
		/* the filesystem is there, read-only (openat without write bits; no access(2)) */
		fd = open("/etc/hosts", O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			close(fd);
		if (send(keep, fd >= 0 ? "y" : "n", 1, 0) != 1 || recv(keep, &cmd, 1, 0) != 1)
			_exit(1);
		cmd = run_rprobe((enum rprobe)cmd);
		(void)!send(keep, &cmd, 1, 0);
		_exit(0);
	}
	close(c2p[1]);
	assert_int_equal(read(c2p[0], &b, 1), 1);
	assert_int_equal(b, 'y');
	if (check_proc)
		assert_confined_status(pid, RESOLVER_PROC_NAME);
	b = (char)p;
	assert_int_equal(write(c2p[0], &b, 1), 1);
	b = 0;
	if (read(c2p[0], &b, 1) != 1)
		b = 0;
	*got = b;
	close(c2p[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

/* Control: the confined resolver resolves a name from a thread of its own. */
static void test_resolver_confined(void **state)
{
	char got;
	int st;

	(void)state;
	st = resolver_child(R_LOOKUP, &got, true);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(got, 'y');
}

/* Attacks: execve, a file opened for writing, a vsock or packet socket, a new process, ptrace,
 * kill: each kills the resolver with SIGSYS before the call returns. */
static void test_resolver_other_calls_kill(void **state)
{
	static const enum rprobe probes[] = { R_EXEC, R_OPEN_WRITE, R_VSOCK, R_PACKET, R_FORK, R_PTRACE, R_KILL };

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(probes); i++) {
		char got;
		int st = resolver_child(probes[i], &got, false);

		if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSYS)
			fail_msg("probe %d: status 0x%x, reported '%c'", (int)probes[i], (unsigned)st, got ? got : '-');
		assert_int_equal(got, 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_is_exactly_this),
		cmocka_unit_test(test_table_compiles),
		cmocka_unit_test(test_confined_allowed_calls_work),
		cmocka_unit_test(test_confined_other_calls_kill),
		cmocka_unit_test(test_resolver_table_is_exactly_this),
		cmocka_unit_test(test_resolver_confined),
		cmocka_unit_test(test_resolver_other_calls_kill),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
