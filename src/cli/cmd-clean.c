// SPDX-License-Identifier: GPL-2.0-or-later
/* cmd-clean.c — `aisb clean [--all] [--volumes[=GLOB]] [--discard]`: remove ended sessions (and homes,
 * and clone workspaces whose commits were imported) */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/hostenv.h"
#include "cli/import.h"
#include "cli/sessions.h"
#include "util/log.h"
#include "util/util.h"
#include "workspace/workspace.h"

static const char *plan_home(const struct session_info *s)
{
	json_object *v;
	if (s->plan && json_object_object_get_ex(s->plan, "home", &v) && json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return NULL;
}

/* Removes homes/NAME matching @glob that no live session in @v uses. */
static int clean_homes(const char *state, const char *glob, struct session_info *v, size_t n)
{
	_cleanup_free_ char *homes = path_join(state, "homes");
	struct dirent *de;
	int failed = 0;
	DIR *d;

	if (!homes)
		return -ENOMEM;
	d = opendir(homes);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		_cleanup_free_ char *path = NULL;
		const char *user = NULL;
		int r;

		if (de->d_name[0] == '.' || fnmatch(glob, de->d_name, FNM_PERIOD) != 0)
			continue;
		path = path_join(homes, de->d_name);
		if (!path)
			return -ENOMEM;
		for (size_t i = 0; i < n && !user; i++) {
			const char *h = plan_home(&v[i]);
			if (v[i].live && h && (streq(h, path) || path_startswith(h, path)))
				user = v[i].id;
		}
		if (user) {
			printf("kept home %s: used by live session %s\n", de->d_name, user);
			continue;
		}
		r = rm_rf(path);
		if (r < 0) {
			log_error_errno(r, "cannot remove home '%s': %m", path);
			failed++;
		} else
			printf("removed home %s\n", de->d_name);
	}
	closedir(d);
	return failed ? -EIO : 0;
}

/* Removes the egress logs kept for ended sessions (egress/ID.jsonl, session.h). Return: the
 * number removed, or -errno. Does not log. */
static int clean_kept_logs(const char *state)
{
	_cleanup_free_ char *dir = path_join(state, "egress");
	struct dirent *de;
	int n = 0, dfd;
	DIR *d;

	if (!dir)
		return -ENOMEM;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return errno == ENOENT ? 0 : -errno;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -errno;
	}
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		char id[80];

		if (l <= 6 || l - 6 >= sizeof(id) || !streq(de->d_name + l - 6, ".jsonl"))
			continue;
		snprintf(id, sizeof(id), "%.*s", (int)(l - 6), de->d_name);
		if (sessions_id_valid(id) && unlinkat(dirfd(d), de->d_name, 0) == 0)
			n++;
	}
	closedir(d);
	return n;
}

int cmd_clean(int argc, char **argv)
{
	_cleanup_free_ char *state = sessions_state_dir(hostenv_get);
	struct session_info *v = NULL;
	const char *volumes = NULL;
	bool all = false, discard = false;
	size_t n = 0;
	int r, failed = 0, live = 0;
	struct cli_args args;
	const struct cli_flag *f;
	const char *val;
	enum cli_arg k;

	cli_args_init(&args, "clean", argc, argv);
	while ((k = cli_args_next(&args, &f, &val)) != CLI_ARG_END) {
		if (k == CLI_ARG_BAD)
			return AISB_EXIT_USAGE;
		if (k == CLI_ARG_WORD)
			return log_error("clean: unknown argument '%s' (see 'aisb clean --help')", val), AISB_EXIT_USAGE;
		if (cli_flag_is(f, "all"))
			all = true;
		else if (cli_flag_is(f, "discard"))
			discard = true;
		else if (cli_flag_is(f, "volumes") && val && !*val)
			return log_error("clean: --volumes= needs a GLOB after '=' (or no '=': every home)"), AISB_EXIT_USAGE;
		else if (cli_flag_is(f, "volumes"))
			volumes = val ? val : "*";
		else if (cli_flag_is(f, "help")) {
			printf("usage: aisb clean [--all] [--volumes[=GLOB]] [--discard]\n"
			       "Removes ended sessions and their kept egress logs; --all first stops live ones;\n"
			       "--volumes also removes the persistent homes under the state dir (matching GLOB)\n"
			       "that no live session uses ('aisb home' resets one). Clone workspaces of ended\n"
			       "sessions are removed once their commits were imported; --discard removes them\n"
			       "regardless (their commits and uncommitted work are lost).\n");
			return 0;
		} else
			return cli_flag_unhandled("clean", f);
	}
	if (sessions_state_dir_checked(hostenv_get, &state) < 0)
		return AISB_EXIT_POLICY; /* the environment names no usable dir (sessions.h) */
	r = sessions_list(state, &v, &n);
	if (r < 0)
		return log_error_errno(r, "cannot list sessions in '%s/sessions': %m", state), AISB_EXIT_FAILED;

	for (size_t i = 0; i < n; i++) {
		struct session_info *s = &v[i];
		if (s->live && all) {
			r = sessions_stop(s, 5000);
			if (r < 0 && r != -ESRCH) {
				log_error_errno(r, "cannot stop session %s (pid %d): %m", s->id, (int)s->supervisor);
				failed++;
				continue;
			}
			printf("stopped session %s\n", s->id);
			s->live = false;
			/* a supervisor that had to be SIGKILLed left its git check pending */
			(void)sessions_pending_checks(false);
		}
		if (s->live) {
			live++;
			continue;
		}
		r = sessions_remove(s);
		if (r < 0) {
			log_error_errno(r, "cannot remove session dir '%s': %m", s->dir);
			failed++;
		} else
			printf("removed session %s\n", s->id);
	}
	if (live)
		printf("%d live session%s left running (use --all to stop %s)\n", live, live == 1 ? "" : "s",
		       live == 1 ? "it" : "them");
	r = clean_kept_logs(state);
	if (r < 0) {
		log_error_errno(r, "cannot remove the kept egress logs in '%s/egress': %m", state);
		failed++;
	} else if (r > 0)
		printf("removed %d kept egress log%s\n", r, r == 1 ? "" : "s");
	if (volumes && clean_homes(state, volumes, v, n) < 0)
		failed++;
	(void)workspace_clean(state, discard, cli_session_live);
	sessions_list_free(v, n);
	return failed ? 1 : 0;
}
