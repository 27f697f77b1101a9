// SPDX-License-Identifier: GPL-2.0-or-later
/* cmd-doctor.c — `aisb doctor [--deep]`: check every prerequisite, print the fix for each */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/capview.h"
#include "cli/commands.h"
#include "cli/doctor.h"
#include "cli/flags.h"
#include "cli/hostenv.h"
#include "cli/sessions.h"
#include "ns/cgroup.h"
#include "util/container.h"
#include "util/dl.h"
#include "util/log.h"
#include "util/spawn.h"
#include "util/util.h"

/* Runs `aisb run --no-cwd --ephemeral-home EXTRA... -- CMD...` and reports one line. Return: 1 when
 * it failed. */
static int deep_run(const char *self, const char *name, const char *what, char *const *extra, char *const *cmd)
{
	char *argv[32];
	size_t n = 0;
	int fds[2], st, r;
	char out[4096];
	size_t len = 0;
	pid_t pid;

	argv[n++] = (char *)self;
	argv[n++] = (char *)"run";
	argv[n++] = (char *)"--no-cwd";
	argv[n++] = (char *)"--ephemeral-home";
	argv[n++] = (char *)"--net";
	argv[n++] = (char *)"none";
	for (size_t i = 0; extra && extra[i] && n < 20; i++)
		argv[n++] = extra[i];
	argv[n++] = (char *)"--";
	for (size_t i = 0; cmd[i] && n < 31; i++)
		argv[n++] = cmd[i];
	argv[n] = NULL;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return 1;
	fflush(NULL);
	{
		const struct spawn_fd io[] = { { SPAWN_DEVNULL, 0 }, { fds[1], 1 }, { fds[1], 2 } };

		r = spawn(&(struct spawn_opts){ .argv = argv, .fds = io, .n_fds = ELEMENTSOF(io), .alarm_s = 60 }, &pid);
	}
	close(fds[1]);
	if (r < 0) {
		close(fds[0]);
		printf("FAIL %-10s %s: cannot start '%s': %s\n", name, what, self, strerror(-r));
		return 1;
	}
	for (;;) {
		ssize_t k = read(fds[0], out + len, sizeof(out) - 1 - len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		len += (size_t)k;
		if (len >= sizeof(out) - 1)
			len = 0; /* keep the tail only */
	}
	out[len] = 0;
	close(fds[0]);
	st = spawn_wait(pid);
	if (st == 0) {
		printf("ok   %-10s %s\n", name, what);
		return 0;
	}
	{
		char *last = out, *nl;
		while ((nl = strchr(last, '\n')) && nl[1])
			last = nl + 1;
		last[strcspn(last, "\n")] = 0;
		printf("FAIL %-10s %s: exit %d%s%s\n", name, what, st, *last ? ": " : "", last);
	}
	return 1;
}

/* Finds the workload of the live session whose supervisor is @sup once it has exec'd @comm.
 * Return: its host pid, or 0 when it did not appear within about 5 s. */
static pid_t wait_workload(pid_t sup, const char *comm)
{
	_cleanup_free_ char *state = sessions_state_dir(hostenv_get);

	for (int tries = 0; state && tries < 100; tries++) {
		struct session_info *v = NULL;
		pid_t init = 0, w = 0;
		size_t n = 0;

		if (sessions_list(state, &v, &n) == 0)
			for (size_t i = 0; i < n; i++)
				if (v[i].live && v[i].supervisor == sup)
					init = v[i].init;
		sessions_list_free(v, n);
		if (init && capview_workload(init, &w) == 0) {
			_cleanup_free_ char *text = NULL;
			char path[64];
			snprintf(path, sizeof(path), "/proc/%d/comm", (int)w);
			/* before its execve the workload is still aisb's code, dropping capabilities */
			if (read_file_at(AT_FDCWD, path, 64, &text, NULL) >= 0 && strncmp(text, comm, strlen(comm)) == 0 &&
			    text[strlen(comm)] == '\n')
				return w;
		}
		(void)usleep(50 * 1000);
	}
	return 0;
}

/* Starts a sandbox running `sleep`, reads its workload's capability sets back from outside with
 * libcap (cli/capview.h) and stops it: an independent look at what the "hardening" check asks
 * the workload itself. A missing libcap is a warning. @cproc: doctor was given --container-proc,
 * passed on (else --no-cwd holds its place). Return: 1 when it failed. */
static int deep_caps(const char *self, bool cproc)
{
	char *const argv[] = { (char *)self, (char *)"run", (char *)"--no-cwd", (char *)"--ephemeral-home",
			       (char *)"--net", (char *)"none", cproc ? (char *)"--container-proc" : (char *)"--no-cwd",
			       (char *)"--", (char *)"sleep", (char *)"30", NULL };
	char text[2048] = "";
	pid_t pid, w;
	int r;

	if (dl_open(&dl_libcap) < 0) {
		printf("warn %-10s the capability read-back needs libcap: %s (apt-get install %s)\n", "caps",
		       dl_libcap.error, dl_libcap.package);
		return 0;
	}
	{
		const struct spawn_fd null[] = { { SPAWN_DEVNULL, 0 }, { SPAWN_DEVNULL, 1 }, { SPAWN_DEVNULL, 2 } };

		r = spawn(&(struct spawn_opts){ .argv = argv, .fds = null, .n_fds = ELEMENTSOF(null), .alarm_s = 60 },
			  &pid);
	}
	if (r < 0) {
		printf("FAIL %-10s cannot start '%s': %s\n", "caps", self, strerror(-r));
		return 1;
	}
	r = -ESRCH;
	w = wait_workload(pid, "sleep");
	if (w)
		r = capview_pid(w, text, sizeof(text));
	(void)kill(pid, SIGTERM);
	(void)spawn_wait(pid);
	if (r == 1) {
		printf("ok   %-10s read back from outside (libcap): %s\n", "caps", text);
		return 0;
	}
	if (!w)
		printf("FAIL %-10s no sandbox workload appeared to read back\n", "caps");
	else if (r < 0)
		printf("FAIL %-10s cannot read the capabilities of workload pid %d: %s\n", "caps", (int)w, strerror(-r));
	else
		printf("FAIL %-10s the workload holds capabilities: %s\n", "caps", text);
	return 1;
}

/* The run's settings that change what doctor must check, from the sources a run reads (user
 * config < AISB_* < flags; a project policy cannot set them): --container-proc. @flag: doctor
 * was given --container-proc. Return: 0, or the exit code a run would refuse the settings with
 * (78). Logs on failure. */
static int run_settings(struct doctor_env *e, bool flag, char *by, size_t bylen)
{
	_cleanup_free_ char *config = hostenv_config_path();
	char *args[] = { (char *)"doctor", NULL };
	struct aisb_settings s;
	int r = args_load(&s, 1, args, config, hostenv_get);

	if (r != 0)
		return r;
	e->container_proc = flag || s.container_proc;
	if (flag)
		snprintf(by, bylen, "the flag");
	else if (hostenv_get("AISB_CONTAINER_PROC"))
		snprintf(by, bylen, "AISB_CONTAINER_PROC");
	else
		snprintf(by, bylen, "container_proc in '%s'", config ? config : "?");
	e->container_proc_by = by;
	settings_free(&s);
	return 0;
}

int cmd_doctor(int argc, char **argv)
{
	struct passwd *pw = getpwuid(getuid());
	char self[PATH_MAX] = "aisb", by[PATH_MAX + 64];
	struct doctor_env e = {
		.proc = "/proc", .sys = "/sys", .etc = "/etc", .cgroup_root = "", .uid = getuid(),
		.user = pw ? pw->pw_name : NULL, .self_exe = self, .get = hostenv_get, .live = true,
	};
	bool deep = false, cproc = false;
	ssize_t k;
	int fails, r;
	struct cli_args args;
	const struct cli_flag *f;
	const char *val;
	enum cli_arg kind;

	cli_args_init(&args, "doctor", argc, argv);
	while ((kind = cli_args_next(&args, &f, &val)) != CLI_ARG_END) {
		if (kind == CLI_ARG_BAD)
			return AISB_EXIT_USAGE;
		if (kind == CLI_ARG_WORD)
			return log_error("doctor: unknown argument '%s'", val), AISB_EXIT_USAGE;
		if (cli_flag_is(f, "deep"))
			deep = true;
		else if (cli_flag_is(f, "container-proc"))
			cproc = true;
		else if (cli_flag_is(f, "help")) {
			printf("usage: aisb doctor [--deep] [--container-proc]\n"
			       "Checks every prerequisite and prints the fix for each problem; --deep also runs\n"
			       "real sandboxes. --container-proc checks as for runs with it (it is read from the\n"
			       "config and AISB_CONTAINER_PROC too). Exits 1 when a required check fails.\n");
			return 0;
		} else
			return cli_flag_unhandled("doctor", f);
	}
	r = run_settings(&e, cproc, by, sizeof(by));
	k = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (k > 0)
		self[k] = 0;
	printf("aisb %s doctor (uid %u)\n", PACKAGE_VERSION, (unsigned)getuid());
	fails = doctor_run(&e, stdout);
	/* a config or AISB_* value every run refuses (args_load() said which, above) */
	if (r != 0) {
		printf("FAIL %-10s runs refuse the config or an AISB_* variable (exit %d): see the error above\n",
		       "config", r);
		fails++;
	}
	if (deep) {
		char why[320];
		char *true_cmd[] = { (char *)"true", NULL };
		char *proc_cmd[] = { (char *)"sh", (char *)"-c", (char *)"test -r /proc/self/status && test ! -e /proc/1/environ -o -r /proc/1/environ", NULL };
		/* --container-proc in a masked /proc: the trade as stated, the container's PID 1's
		 * environ refused, the sandbox's own readable (docs/threat-model.md) */
		char *cproc_cmd[] = { (char *)"sh", (char *)"-c", (char *)"test -r /proc/self/environ && ! cat /proc/1/environ >/dev/null 2>&1", NULL };
		char *cproc_flag[] = { (char *)"--container-proc", NULL };
		_cleanup_free_ char *mi = NULL;
		bool traded = e.container_proc && read_file_at(AT_FDCWD, "/proc/self/mountinfo", 1 << 20, &mi, NULL) >= 0 &&
			      container_proc_overmounts(mi, "/proc") > 0;
		char *const *extra = cproc ? cproc_flag : NULL;
		char *caps_cmd[] = { (char *)"sh", (char *)"-c",
				     (char *)"grep -q '^CapEff:[[:space:]]*0*$' /proc/self/status && grep -q '^NoNewPrivs:[[:space:]]*1' /proc/self/status && grep -q '^Seccomp:[[:space:]]*2' /proc/self/status", NULL };
		char *ns_cmd[] = { (char *)"sh", (char *)"-c", (char *)"! unshare -U true 2>/dev/null", NULL };
		char *mem[] = { (char *)"--memory", (char *)"64M", (char *)"--pids", (char *)"64",
				cproc ? (char *)"--container-proc" : NULL, NULL };

		printf("-- deep: real sandboxes --\n");
		fails += deep_run(self, "run", "a sandbox starts and runs 'true'", extra, true_cmd);
		if (traded)
			fails += deep_run(self, "proc", "the container's /proc (--container-proc): the container's PID 1's "
					  "environ is refused, the sandbox's own readable", extra, cproc_cmd);
		else
			fails += deep_run(self, "proc", "the sandbox has its own /proc", extra, proc_cmd);
		fails += deep_run(self, "hardening", "no capabilities, no_new_privs, seccomp filter inside", extra, caps_cmd);
		fails += deep_caps(self, cproc);
		if (access("/usr/bin/unshare", X_OK) == 0)
			fails += deep_run(self, "nested-ns", "a nested user namespace is refused inside", extra, ns_cmd);
		if (cgroup_probe("", CGROUP_MEMORY | CGROUP_PIDS, why, sizeof(why)))
			fails += deep_run(self, "limits", "--memory 64M --pids 64 are enforced", mem, true_cmd);
		else
			printf("warn %-10s skipped: %s\n", "limits", why);
	}
	if (fails)
		printf("%d required check%s failed\n", fails, fails == 1 ? "" : "s");
	return fails ? 1 : 0;
}
