// SPDX-License-Identifier: GPL-2.0-or-later
/* cmd-home.c — `aisb home [--list | --path [NAME] | --reset NAME]`: the persistent sandbox homes */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/home.h"
#include "cli/hostenv.h"
#include "cli/sessions.h"
#include "util/log.h"
#include "util/util.h"

/* The id of a live session whose plan mounts @path as home, or NULL. */
static const char *home_user(const char *path, struct session_info *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		json_object *h;
		if (v[i].live && v[i].plan && json_object_object_get_ex(v[i].plan, "home", &h) &&
		    json_object_is_type(h, json_type_string) && streq(json_object_get_string(h), path))
			return v[i].id;
	}
	return NULL;
}

/* The name a run in the current directory would use: --home / AISB_HOME / config `home`. */
static int current_name(const char *flag, char **name)
{
	_cleanup_free_ char *config = hostenv_config_path(), *cwd = getcwd(NULL, 0);
	char *args[] = { (char *)"home", NULL };
	struct aisb_settings s;
	int r = args_load(&s, 1, args, config, hostenv_get);

	if (r == 0)
		r = home_resolve_name(flag ? flag : s.home, cwd, name) < 0 ? AISB_EXIT_POLICY : 0;
	settings_free(&s);
	return r;
}

static int list_homes(const char *state, struct session_info *v, size_t n)
{
	_cleanup_free_ char *homes = path_join(state, "homes");
	struct dirent *de;
	DIR *d = homes ? opendir(homes) : NULL;

	if (!d) {
		if (errno == ENOENT) {
			printf("no homes yet under %s\n", homes);
			return 0;
		}
		return log_error_errno(-errno, "cannot list '%s': %m", homes), AISB_EXIT_FAILED;
	}
	printf("%-48s %s\n", "NAME", "USED BY");
	while ((de = readdir(d))) {
		_cleanup_free_ char *path = NULL;
		const char *user;

		if (de->d_name[0] == '.' || !(path = path_join(homes, de->d_name)))
			continue;
		user = home_user(path, v, n);
		printf("%-48s %s\n", de->d_name, user ? user : "-");
	}
	closedir(d);
	printf("(under %s)\n", homes);
	return 0;
}

/* Removes homes/@name: never through a symlink (the entry and homes/ itself are checked with
 * lstat, and rm_rf() unlinks links without following them and never crosses a mount), never
 * while a live session uses it. */
static int reset_home(const char *state, const char *name, struct session_info *v, size_t n)
{
	_cleanup_free_ char *homes = path_join(state, "homes"), *path = homes ? path_join(homes, name) : NULL;
	const char *user;
	struct stat st;
	int r;

	if (!path)
		return AISB_EXIT_FAILED;
	if (lstat(homes, &st) == 0 && !S_ISDIR(st.st_mode))
		return log_error("home: '%s' is not a directory (a symlink?); refusing to reset through it", homes),
		       AISB_EXIT_POLICY;
	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return log_error("home: no home '%s' (see 'aisb home --list')", name), 1;
		return log_error_errno(-errno, "home: cannot stat '%s': %m", path), AISB_EXIT_FAILED;
	}
	if (!S_ISDIR(st.st_mode))
		return log_error("home: '%s' is not a directory (a symlink?); refusing to follow it", path),
		       AISB_EXIT_POLICY;
	user = home_user(path, v, n);
	if (user)
		return log_error("home: '%s' is in use by live session %s; stop it first ('aisb clean --all' "
				 "stops every live session)", name, user), 1;
	r = rm_rf(path);
	if (r < 0)
		return log_error_errno(r, "home: cannot remove '%s': %m", path), AISB_EXIT_FAILED;
	printf("reset home %s (the next run starts with an empty %s)\n", name, "/home/sandbox");
	return 0;
}

int cmd_home(int argc, char **argv)
{
	_cleanup_free_ char *state = sessions_state_dir(hostenv_get), *name = NULL, *path = NULL, *rel = NULL;
	struct session_info *v = NULL;
	const char *op = "--path", *arg = NULL;
	size_t n = 0;
	int r;
	struct cli_args args;
	const struct cli_flag *f;
	const char *val;
	enum cli_arg k;

	cli_args_init(&args, "home", argc, argv);
	while ((k = cli_args_next(&args, &f, &val)) != CLI_ARG_END) {
		if (k == CLI_ARG_BAD)
			return AISB_EXIT_USAGE;
		if (k == CLI_ARG_WORD && arg)
			return log_error("home: unexpected argument '%s' (see 'aisb home --help')", val), AISB_EXIT_USAGE;
		if (k == CLI_ARG_WORD) {
			arg = val;
			continue;
		}
		if (cli_flag_is(f, "list"))
			op = "--list";
		else if (cli_flag_is(f, "path"))
			op = "--path";
		else if (cli_flag_is(f, "reset"))
			op = "--reset";
		else if (cli_flag_is(f, "help")) {
			printf("usage: aisb home [--path [NAME]] | --list | --reset NAME\n"
			       "The persistent /home/sandbox of runs is homes/NAME under the state dir. NAME is chosen\n"
			       "by run's home option (config 'home', AISB_HOME): 'default' (one home for every project),\n"
			       "'project' (one per project directory) or any name. --path prints the host path of\n"
			       "NAME (default: the home a run here would use); --list shows every home and the live\n"
			       "session using it; --reset removes one (never while in use; never through a symlink).\n");
			return 0;
		} else
			return cli_flag_unhandled("home", f);
	}
	if (sessions_state_dir_checked(hostenv_get, &state) < 0)
		return AISB_EXIT_POLICY; /* the environment names no usable dir (sessions.h) */
	if (arg && !streq(arg, "project") && !args_home_name_valid(arg))
		return log_error("home: invalid home name '%s'", arg), AISB_EXIT_USAGE;
	if (streq(op, "--reset") && !arg)
		return log_error("home: --reset needs a NAME (see 'aisb home --list'; 'project' names this "
				 "directory's)"), AISB_EXIT_USAGE;
	r = sessions_list(state, &v, &n);
	if (r < 0 && r != -ENOENT)
		return log_error_errno(r, "cannot list sessions: %m"), AISB_EXIT_FAILED;
	if (streq(op, "--list")) {
		r = list_homes(state, v, n);
		goto out;
	}
	r = current_name(arg, &name);
	if (r != 0)
		goto out;
	if (streq(op, "--reset")) {
		r = reset_home(state, name, v, n);
		goto out;
	}
	if (asprintf(&rel, "homes/%s", name) < 0 || !(path = path_join(state, rel))) {
		r = AISB_EXIT_FAILED;
		goto out;
	}
	printf("%s\n", path);
	if (!arg && isatty(STDOUT_FILENO))
		fprintf(stderr, "aisb: home '%s' (choose with --home NAME or 'home = project' in config)\n", name);
out:
	sessions_list_free(v, n);
	return r;
}
