// SPDX-License-Identifier: GPL-2.0-or-later
/* test-spawn.c — spawn(): fds (a pipe, /dev/null, a swap, closed others), environment (whole or
 * entries set over it), cwd, a new session, signal dispositions and mask, the parent-death
 * signal, and the failures before exec coming back as -errno; spawn_wait()'s statuses. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "util/macro.h"
#include "util/spawn.h"

/* Runs `sh -c @script` (or @o.argv, when set) with @o's other options, stdout (and stderr) on a pipe; returns the exit
 * status and the output in @out. */
static int sh_out(const char *script, struct spawn_opts o, char *out, size_t size)
{
	char *argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)script, NULL };
	struct spawn_fd fds[8] = { 0 };
	int p[2], st;
	size_t n = 0, k = o.n_fds;
	ssize_t got;
	pid_t pid;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	for (size_t i = 0; i < o.n_fds; i++)
		fds[i] = o.fds[i];
	fds[k++] = (struct spawn_fd){ p[1], 1 };
	fds[k++] = (struct spawn_fd){ p[1], 2 };
	if (!o.argv)
		o.argv = argv;
	o.fds = fds;
	o.n_fds = k;
	assert_int_equal(spawn(&o, &pid), 0);
	close(p[1]);
	while (n < size - 1 && (got = read(p[0], out + n, size - 1 - n)) > 0)
		n += (size_t)got;
	out[n] = 0;
	close(p[0]);
	st = spawn_wait(pid);
	return st;
}

static void test_output_and_status(void **state)
{
	char out[256];

	(void)state;
	assert_int_equal(sh_out("echo out; echo err >&2; exit 3", (struct spawn_opts){ 0 }, out, sizeof(out)), 3);
	assert_string_equal(out, "out\nerr\n");
	assert_int_equal(sh_out("kill -9 $$", (struct spawn_opts){ 0 }, out, sizeof(out)), 128 + 9);
}

static void test_devnull_and_swap(void **state)
{
	struct spawn_fd null_in[] = { { SPAWN_DEVNULL, 0 } };
	char out[256];
	int a[2], b[2];

	(void)state;
	assert_int_equal(sh_out("cat; echo end", (struct spawn_opts){ .fds = null_in, .n_fds = 1 }, out, sizeof(out)), 0);
	assert_string_equal(out, "end\n");
	/* two pipes at fds 8 and 9 here (dash: one digit), swapped in the child: both land right */
	assert_int_equal(pipe2(a, O_CLOEXEC), 0);
	assert_int_equal(pipe2(b, O_CLOEXEC), 0);
	assert_true(dup2(a[1], 9) == 9 && dup2(b[1], 8) == 8);
	{
		struct spawn_fd swap[] = { { 9, 8 }, { 8, 9 } }; /* a's pipe at 8, b's at 9 */
		char x[8] = { 0 }, y[8] = { 0 };

		assert_int_equal(sh_out("echo A >&8; echo B >&9", (struct spawn_opts){ .fds = swap, .n_fds = 2 }, out,
					sizeof(out)), 0);
		close(8), close(9), close(a[1]), close(b[1]);
		assert_int_equal(read(a[0], x, sizeof(x) - 1), 2);
		assert_int_equal(read(b[0], y, sizeof(y) - 1), 2);
		assert_string_equal(x, "A\n");
		assert_string_equal(y, "B\n");
		close(a[0]), close(b[0]);
	}
}

static void test_close_others(void **state)
{
	char out[256];
	int fd = open("/dev/null", O_RDONLY); /* no O_CLOEXEC: inherited unless closed */

	(void)state;
	assert_true(fd >= 3);
	assert_int_equal(dup2(fd, 20), 20);
	/* control: without close_others the child has it */
	assert_int_equal(sh_out("test -e /proc/self/fd/20 && echo open", (struct spawn_opts){ 0 }, out, sizeof(out)), 0);
	assert_string_equal(out, "open\n");
	assert_int_equal(sh_out("test -e /proc/self/fd/20 || echo closed", (struct spawn_opts){ .close_others = true },
				out, sizeof(out)), 0);
	assert_string_equal(out, "closed\n");
	close(20);
	close(fd);
}

static void test_env_cwd_session(void **state)
{
	char *envp[] = { (char *)"AISB_SPAWN_TEST=x1", (char *)"PATH=/usr/bin:/bin", NULL };
	char out[256], want[64];

	(void)state;
	assert_int_equal(sh_out("echo \"$AISB_SPAWN_TEST\"", (struct spawn_opts){ .envp = envp }, out, sizeof(out)), 0);
	assert_string_equal(out, "x1\n");
	assert_int_equal(sh_out("pwd", (struct spawn_opts){ .cwd = "/proc" }, out, sizeof(out)), 0);
	assert_string_equal(out, "/proc\n");
	/* its own session: the session id (field 6 of stat) is its pid; control: without, ours */
	assert_int_equal(sh_out("set -- $(cat /proc/$$/stat); test \"$6\" = $$ && echo leader",
				(struct spawn_opts){ .new_session = true }, out, sizeof(out)), 0);
	assert_string_equal(out, "leader\n");
	snprintf(want, sizeof(want), "%d\n", (int)getsid(0));
	assert_int_equal(sh_out("set -- $(cat /proc/$$/stat); echo $6", (struct spawn_opts){ 0 }, out, sizeof(out)), 0);
	assert_string_equal(out, want);
}

static void test_env_set(void **state)
{
	char *envp[] = { (char *)"AISB_SPAWN_A=old", (char *)"AISB_SPAWN_AB=keep", (char *)"PATH=/usr/bin:/bin", NULL };
	char *set[] = { (char *)"AISB_SPAWN_A=new", (char *)"AISB_SPAWN_C=added", NULL };
	char out[256];

	(void)state;
	/* over envp: A replaced (once), AB (a longer name with A's prefix) kept, C appended */
	assert_int_equal(sh_out("env | grep ^AISB_SPAWN_ | sort", (struct spawn_opts){ .envp = envp, .env_set = set },
				out, sizeof(out)), 0);
	assert_string_equal(out, "AISB_SPAWN_A=new\nAISB_SPAWN_AB=keep\nAISB_SPAWN_C=added\n");
	/* over the caller's environment; control: without env_set the caller's value */
	assert_int_equal(setenv("AISB_SPAWN_A", "caller", 1), 0);
	assert_int_equal(sh_out("echo \"$AISB_SPAWN_A\"", (struct spawn_opts){ 0 }, out, sizeof(out)), 0);
	assert_string_equal(out, "caller\n");
	assert_int_equal(sh_out("echo \"$AISB_SPAWN_A $AISB_SPAWN_C\" ; echo \"$PATH\" | grep -c .",
				(struct spawn_opts){ .env_set = set }, out, sizeof(out)), 0);
	assert_string_equal(out, "new added\n1\n");
	unsetenv("AISB_SPAWN_A");
}

/* The mask in @out's line "@field:\tHEX" (of /proc/PID/status). */
static unsigned long long status_mask(const char *out, const char *field)
{
	const char *l = strstr(out, field);

	assert_non_null(l);
	return strtoull(l + strlen(field) + 2, NULL, 16);
}

/* The disposition of SIGINT and SIGPIPE and the blocked set, as the child's /proc status says
 * (bits only: a test driver may ignore or block other signals already). */
static void test_signals(void **state)
{
	/* grep itself, not under sh: dash empties the mask it starts with */
	char *grep[] = { (char *)"/bin/grep", (char *)"-E", (char *)"^Sig(Blk|Ign)", (char *)"/proc/self/status", NULL };
	struct sigaction ign = { .sa_handler = SIG_IGN }, old_int, old_pipe;
	const unsigned long long usr1 = 1ULL << (SIGUSR1 - 1), intr = 1ULL << (SIGINT - 1),
				 pipe = 1ULL << (SIGPIPE - 1);
	sigset_t block, old_mask;
	char out[256];

	(void)state;
	assert_int_equal(sigaction(SIGINT, &ign, &old_int), 0);
	assert_int_equal(sigaction(SIGPIPE, &ign, &old_pipe), 0);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	assert_int_equal(sigprocmask(SIG_BLOCK, &block, &old_mask), 0);
	/* control: ignored and blocked signals survive exec (grep's own status is read) */
	assert_int_equal(sh_out(NULL, (struct spawn_opts){ .argv = grep }, out, sizeof(out)), 0);
	assert_true(status_mask(out, "SigBlk") & usr1);
	assert_true((status_mask(out, "SigIgn") & (intr | pipe)) == (intr | pipe));
	/* SIGINT back to the default, SIGPIPE still ignored; the mask emptied */
	assert_int_equal(sh_out(NULL, (struct spawn_opts){ .argv = grep, .sig_default = SPAWN_SIG(SIGINT),
						      .reset_sigmask = true }, out, sizeof(out)), 0);
	assert_int_equal(status_mask(out, "SigBlk"), 0);
	assert_true((status_mask(out, "SigIgn") & (intr | pipe)) == pipe);
	assert_int_equal(sigprocmask(SIG_SETMASK, &old_mask, NULL), 0);
	assert_int_equal(sigaction(SIGINT, &old_int, NULL), 0);
	assert_int_equal(sigaction(SIGPIPE, &old_pipe, NULL), 0);
}

/* Whether @pid is gone or a zombie (killed, not yet reaped by whoever adopted it). */
static bool is_dead(pid_t pid)
{
	char path[64], text[512] = "", *paren;
	int fd;
	ssize_t k;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return true;
	k = read(fd, text, sizeof(text) - 1);
	close(fd);
	paren = k > 0 ? strrchr(text, ')') : NULL;
	return !paren || paren[1] == 0 || paren[2] == 'Z' || paren[2] == 'X';
}

/* pdeathsig: the child of a short-lived intermediate process gets the signal when that ends;
 * control: without it, the child stays. */
static void test_pdeathsig(void **state)
{
	char *argv[] = { (char *)"/bin/sleep", (char *)"30", NULL };
	int p[2], st;
	pid_t mid, child;

	(void)state;
	for (int with = 0; with < 2; with++) {
		assert_int_equal(pipe2(p, O_CLOEXEC), 0);
		mid = fork();
		assert_true(mid >= 0);
		if (mid == 0) {
			pid_t c = -1;
			int r = spawn(&(struct spawn_opts){ .argv = argv, .pdeathsig = with ? SIGKILL : 0 }, &c);
			(void)!write(p[1], &c, sizeof(c));
			_exit(r == 0 ? 0 : 1);
		}
		close(p[1]);
		assert_int_equal(read(p[0], &child, sizeof(child)), sizeof(child));
		close(p[0]);
		assert_true(child > 0);
		assert_int_equal(waitpid(mid, &st, 0), mid);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		/* with: dead within 5 s; control: still sleeping */
		for (int i = 0; i < 100 && with && !is_dead(child); i++)
			usleep(50 * 1000);
		assert_int_equal(is_dead(child), with);
		if (!with)
			kill(child, SIGKILL);
	}
}

static void test_failures_before_exec(void **state)
{
	char *missing[] = { (char *)"/nonexistent/aisb-no-such-program", NULL };
	char *sh[] = { (char *)"/bin/sh", (char *)"-c", (char *)"exit 0", NULL };
	struct spawn_fd bad[] = { { 1000, 3 } }; /* not open */
	pid_t pid = -1;

	(void)state;
	assert_int_equal(spawn(&(struct spawn_opts){ .argv = missing }, &pid), -ENOENT);
	assert_int_equal(pid, -1);
	assert_int_equal(spawn(&(struct spawn_opts){ .argv = sh, .cwd = "/nonexistent/dir" }, &pid), -ENOENT);
	assert_int_equal(spawn(&(struct spawn_opts){ .argv = sh, .fds = bad, .n_fds = 1 }, &pid), -EBADF);
	assert_int_equal(pid, -1);
	/* control: the same program starts */
	assert_int_equal(spawn(&(struct spawn_opts){ .argv = sh }, &pid), 0);
	assert_true(pid > 0);
	assert_int_equal(spawn_wait(pid), 0);
	assert_int_equal(spawn_wait(pid), -ECHILD); /* reaped */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_output_and_status),
		cmocka_unit_test(test_devnull_and_swap),
		cmocka_unit_test(test_close_others),
		cmocka_unit_test(test_env_cwd_session),
		cmocka_unit_test(test_env_set),
		cmocka_unit_test(test_signals),
		cmocka_unit_test(test_pdeathsig),
		cmocka_unit_test(test_failures_before_exec),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
