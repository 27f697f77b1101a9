// SPDX-License-Identifier: GPL-2.0-or-later
/* cg-run.c — test driver of the cgroup module alone: run CMD in a session leaf.
 *
 * cg-run [--memory SIZE] [--pids N] [--cpus X] [--id ID] -- CMD [ARGS...]
 *
 * Exactly the calls the supervisor makes (cgroup_create, attach before exec, stats, OOM report,
 * cgroup_destroy), without namespaces, so the VM harness can prove the cgroup code on a real
 * cgroup v2 independently of the rest of the sandbox. Prints one "cg-run: ..." line per fact.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ns/cgroup.h"
#include "util/log.h"
#include "util/util.h"

int main(int argc, char **argv)
{
	const char *memory = NULL, *pids = NULL, *cpus = NULL, *id = "cgrun";
	struct cgroup_limits l;
	struct cgroup cg;
	struct cgroup_stats st;
	char why[512], msg[256];
	int i, r, pfd[2], status, code;
	pid_t pid;

	for (i = 1; i < argc; i++) {
		if (streq(argv[i], "--") ) {
			i++;
			break;
		}
		if (i + 1 >= argc)
			return 2;
		if (streq(argv[i], "--memory"))
			memory = argv[++i];
		else if (streq(argv[i], "--pids"))
			pids = argv[++i];
		else if (streq(argv[i], "--cpus"))
			cpus = argv[++i];
		else if (streq(argv[i], "--id"))
			id = argv[++i];
		else
			return 2;
	}
	if (i >= argc)
		return 2;
	if (cgroup_limits_parse(memory, pids, cpus, &l) < 0)
		return AISB_EXIT_POLICY;
	r = cgroup_create("", id, &l, &cg, why, sizeof(why));
	if (r == -EOPNOTSUPP) {
		printf("cg-run: not delegated: %s\n", why);
		return AISB_EXIT_POLICY;
	}
	if (r < 0)
		return AISB_EXIT_FAILED;
	printf("cg-run: leaf %s\n", cg.leaf);
	fflush(stdout);
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return AISB_EXIT_FAILED;
	pid = fork();
	if (pid < 0)
		return AISB_EXIT_FAILED;
	if (pid == 0) {
		char c;
		close(pfd[1]);
		/* Wait until the parent has moved us into the leaf: nothing runs unlimited. */
		if (read(pfd[0], &c, 1) != 1)
			_exit(AISB_EXIT_FAILED);
		execvp(argv[i], argv + i);
		_exit(errno == ENOENT ? AISB_EXIT_NOTFOUND : AISB_EXIT_NOEXEC);
	}
	close(pfd[0]);
	r = cgroup_attach(&cg, pid);
	if (r < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		cgroup_destroy(&cg);
		return AISB_EXIT_FAILED;
	}
	if (write(pfd[1], "g", 1) != 1)
		return AISB_EXIT_FAILED;
	close(pfd[1]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return AISB_EXIT_FAILED;
	code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	cgroup_read_stats(&cg, &st);
	printf("cg-run: stats oom_kill=%" PRIu64 " pids_max_events=%" PRIu64 " nr_throttled=%" PRIu64
	       " throttled_usec=%" PRIu64 " memory_peak=%" PRIu64 "\n",
	       st.oom_kill, st.pids_max_events, st.nr_throttled, st.throttled_usec, st.memory_peak);
	code = cgroup_oom_report(code, st.oom_kill, l.memory_max, msg, sizeof(msg));
	if (*msg)
		fprintf(stderr, "aisb: %s\n", msg);
	r = cgroup_destroy(&cg);
	printf("cg-run: destroyed r=%d exit=%d\n", r, code);
	cgroup_done(&cg);
	return code;
}
