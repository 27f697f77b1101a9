// SPDX-License-Identifier: GPL-2.0-or-later
/* cmd-import.c — `aisb import ID`: a clone workspace's commits into the project; the export sandbox
 *
 * The validation and publication are workspace/workspace.h's; this file runs the export step,
 * which reads the sandbox's clone, in a sandbox of its own: host rootfs (for git and sh), no
 * network, no home, the clone read-only and an empty output directory read-write.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/hostenv.h"
#include "cli/import.h"
#include "cli/resolve.h"
#include "cli/sessions.h"
#include "run/sandbox.h"
#include "run/session.h"
#include "util/log.h"
#include "util/util.h"
#include "workspace/workspace.h"

/* The export never re-runs itself in a systemd scope (it is one step of a command already
 * running): its default limits degrade quietly instead. */
static const char *export_get(const char *name)
{
	if (streq(name, "AISB_IN_SCOPE"))
		return "1";
	return hostenv_get(name);
}

int cli_workspace_export(const struct workspace_export *e)
{
	struct aisb_settings s;
	struct aisb_plan p;
	_cleanup_free_ char *m1 = NULL, *m2 = NULL, *m3 = NULL;
	int saved_in = -1, saved_out = -1, null_fd, r;

	if (args_defaults(&s) < 0)
		return AISB_EXIT_FAILED;
	s.no_cwd = true;
	s.ephemeral_home = true;
	s.no_agents = true;
	s.net = NET_NONE;
	s.net_source = SRC_FLAG;
	s.accept_unenforced_limits = true;
	s.quiet = true;
	if (asprintf(&m1, "%s:%s:ro", e->repo, WORKSPACE_EXPORT_REPO) < 0 ||
	    asprintf(&m2, "%s:%s:rw", e->out, WORKSPACE_EXPORT_OUT) < 0 || strv_push(&s.mounts, m1) < 0 ||
	    strv_push(&s.mounts, m2) < 0 || strv_push(&s.command, "/bin/sh") < 0 || strv_push(&s.command, "-c") < 0 ||
	    strv_push(&s.command, e->script) < 0 || strv_push(&s.command, "aisb-export") < 0 ||
	    strv_push(&s.command, e->base) < 0 || strv_push(&s.command, e->checkpoint ? "1" : "0") < 0 ||
	    (e->onto && e->onto_dir &&
	     (asprintf(&m3, "%s:%s:ro", e->onto_dir, WORKSPACE_EXPORT_ONTO) < 0 || strv_push(&s.mounts, m3) < 0 ||
	      strv_push(&s.command, e->onto) < 0))) {
		settings_free(&s);
		return AISB_EXIT_FAILED;
	}
	r = plan_resolve(&p, &s, export_get, NULL);
	settings_free(&s);
	if (r != 0) {
		plan_free(&p);
		return r;
	}
	/* not the user's terminal: the export reads nothing and says nothing on stdout */
	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null_fd >= 0) {
		fflush(stdout);
		saved_in = fcntl(0, F_DUPFD_CLOEXEC, 3);
		saved_out = fcntl(1, F_DUPFD_CLOEXEC, 3);
		(void)dup2(null_fd, 0);
		(void)dup2(null_fd, 1);
		close(null_fd);
	}
	{
		struct aisb_session ss = { 0 };

		r = sandbox_run(&p, &ss);
		session_done(&ss);
	}
	if (saved_in >= 0) {
		(void)dup2(saved_in, 0);
		close(saved_in);
	}
	if (saved_out >= 0) {
		(void)dup2(saved_out, 1);
		close(saved_out);
	}
	plan_free(&p);
	return r;
}

int cli_import_confirm(void)
{
	char buf[64];

	if (!isatty(STDIN_FILENO))
		return -ENOTTY;
	fprintf(stderr, "publish these commits? [y/N] ");
	fflush(stderr);
	if (!fgets(buf, sizeof(buf), stdin))
		return 0;
	return buf[0] == 'y' || buf[0] == 'Y';
}

/* Is session @id live (its supervisor still running)? */
bool cli_session_live(const char *state, const char *id)
{
	struct session_info si;
	int r = sessions_load(state, id, &si);
	bool live = si.live;

	sessions_info_done(&si);
	if (r == -ENOENT)
		return false;
	return r < 0 || live; /* unknown: treat as live, so nothing of it is removed */
}

int cmd_import(int argc, char **argv)
{
	_cleanup_free_ char *state = sessions_state_dir(hostenv_get);
	struct workspace_import_opts o = { 0 };
	const char *id = NULL;
	int r;
	struct cli_args args;
	const struct cli_flag *f;
	const char *val;
	enum cli_arg k;

	cli_args_init(&args, "import", argc, argv);
	while ((k = cli_args_next(&args, &f, &val)) != CLI_ARG_END) {
		if (k == CLI_ARG_BAD)
			return AISB_EXIT_USAGE;
		if (k == CLI_ARG_WORD && id)
			return log_error("import: unexpected argument '%s'", val), AISB_EXIT_USAGE;
		if (k == CLI_ARG_WORD) {
			id = val;
			continue;
		}
		if (cli_flag_is(f, "help")) {
			printf("usage: aisb import ID [--target BRANCH|current] [--rebase] [--import-uncommitted]\n"
			       "                   [--review [--yes]]\n"
			       "Imports the new commits of a clone-workspace session: validated, rebuilt with\n"
			       "your identity, published as branch aisb/ID (or --target BRANCH; current\n"
			       "fast-forwards the checked-out branch, guarded). --import-uncommitted also takes\n"
			       "the uncommitted work, as one checkpoint commit. When the branch the sandbox\n"
			       "started from moved, current (and --rebase for a BRANCH) rebases the commits onto\n"
			       "its tip, in a sandbox; a commit that does not apply is refused, naming the files.\n"
			       "--review shows what would be published (commits, diffstat, paths outside the\n"
			       "tree's usual ones) and publishes only when you confirm on the terminal (--yes:\n"
			       "without asking; no terminal and no --yes: not published).\n");
			return 0;
		} else if (cli_flag_is(f, "import-uncommitted"))
			o.uncommitted = true;
		else if (cli_flag_is(f, "rebase"))
			o.rebase = true;
		else if (cli_flag_is(f, "review"))
			o.review = true;
		else if (cli_flag_is(f, "yes"))
			o.yes = true;
		else if (cli_flag_is(f, "target"))
			o.target = val;
		else
			return cli_flag_unhandled("import", f);
	}
	if (!id)
		return log_error("import: which session? usage: aisb import ID (see 'aisb ps')"), AISB_EXIT_USAGE;
	if (o.yes && !o.review)
		return log_error("import: --yes answers --review's question; without --review nothing is asked"), AISB_EXIT_USAGE;
	o.confirm = cli_import_confirm;
	if (sessions_state_dir_checked(hostenv_get, &state) < 0)
		return AISB_EXIT_POLICY; /* the environment names no usable dir (sessions.h) */
	if (!sessions_id_valid(id))
		return log_error("import: '%s' is not a session id", id), AISB_EXIT_USAGE;
	if (cli_session_live(state, id))
		return log_error("import: session %s is still running; its commits are imported when it ends", id), 1;
	r = workspace_import(state, id, &o, cli_workspace_export, hostenv_get);
	if (r == -ENOENT)
		return log_error("import: session %s has no workspace (it ran without --workspace clone, or was "
				 "cleaned; see 'aisb ps')", id), 1;
	if (r == -EPERM)
		return AISB_EXIT_POLICY;
	if (r == -ECANCELED)
		return 1;
	return r < 0 ? AISB_EXIT_FAILED : 0;
}
