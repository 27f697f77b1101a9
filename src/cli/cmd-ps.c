// SPDX-License-Identifier: GPL-2.0-or-later
/* cmd-ps.c — `aisb ps [-a] [--json]`: live sessions (with -a also ended ones that were kept) */
#include <stdio.h>
#include <sys/stat.h>
#include <string.h>
#include <time.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/hostenv.h"
#include "cli/import.h"
#include "cli/sessions.h"
#include "util/log.h"
#include "workspace/workspace.h"

/* Whether session @id has its git check still ahead (git/gitguard.h: <state>/pending/<id>.json). */
static bool git_unchecked(const char *state, const char *id)
{
	_cleanup_free_ char *path = NULL;
	struct stat st;
	return asprintf(&path, "%s/pending/%s.json", state, id) >= 0 && lstat(path, &st) == 0;
}

static const char *jstr(json_object *o, const char *key, const char *dflt)
{
	json_object *v;
	if (o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return dflt;
}

int cmd_ps(int argc, char **argv)
{
	_cleanup_free_ char *state = sessions_state_dir(hostenv_get);
	struct session_info *v = NULL;
	bool all = false, json = false;
	time_t now = time(NULL);
	json_object *arr = NULL;
	size_t n = 0, n_unchecked = 0;
	bool unchecked;
	int r;
	struct cli_args args;
	const struct cli_flag *f;
	const char *val;
	enum cli_arg k;

	cli_args_init(&args, "ps", argc, argv);
	while ((k = cli_args_next(&args, &f, &val)) != CLI_ARG_END) {
		if (k == CLI_ARG_BAD)
			return AISB_EXIT_USAGE;
		if (k == CLI_ARG_WORD)
			return log_error("ps: unexpected argument '%s' (see 'aisb ps --help')", val), AISB_EXIT_USAGE;
		if (cli_flag_is(f, "all"))
			all = true;
		else if (cli_flag_is(f, "json"))
			json = true;
		else if (cli_flag_is(f, "help")) {
			printf("usage: aisb ps [-a|--all] [--json]\n"
			       "Lists live sessions; --all also ended ones whose dir is still there. Then the\n"
			       "clone workspaces (workspace = clone): state, base, commits not imported yet.\n");
			return 0;
		} else
			return cli_flag_unhandled("ps", f);
	}
	if (sessions_state_dir_checked(hostenv_get, &state) < 0)
		return AISB_EXIT_POLICY; /* the environment names no usable dir (sessions.h) */
	r = sessions_list(state, &v, &n);
	if (r < 0)
		return log_error_errno(r, "cannot list sessions in '%s/sessions': %m", state), AISB_EXIT_FAILED;
	if (json)
		arr = json_object_new_array();
	else
		printf("%-12s %-8s %-6s %-6s %-6s %-6s %s\n", "ID", "PID", "STATE", "ROOTFS", "NET", "AGE", "PROJECT");
	for (size_t i = 0; i < n; i++) {
		struct session_info *s = &v[i];
		const char *rootfs = jstr(s->plan, "image", NULL) ? jstr(s->plan, "image", NULL) : jstr(s->plan, "rootfs", "?");
		char age[32];

		if (!s->live && !all)
			continue;
		sessions_format_age((long long)now - s->started, age, sizeof(age));
		unchecked = s->live && git_unchecked(state, s->id);
		if (unchecked)
			n_unchecked++;
		if (json) {
			json_object *o = json_object_new_object();
			json_object_object_add(o, "id", json_object_new_string(s->id));
			json_object_object_add(o, "pid", s->live ? json_object_new_int(s->supervisor) : NULL);
			json_object_object_add(o, "state", json_object_new_string(s->live ? "live" : "ended"));
			json_object_object_add(o, "rootfs", json_object_new_string(rootfs));
			json_object_object_add(o, "net", json_object_new_string(jstr(s->plan, "net", "?")));
			json_object_object_add(o, "started", json_object_new_int64(s->started));
			/* "pending": what the sandbox writes is checked for git only when it ends */
			json_object_object_add(o, "git_check", unchecked ? json_object_new_string("pending") : NULL);
			json_object_object_add(o, "project", jstr(s->plan, "project", NULL) ?
					       json_object_new_string(jstr(s->plan, "project", NULL)) : NULL);
			{
				json_object *ws = NULL;
				json_object_object_add(o, "workspace", workspace_describe(state, s->id, NULL, &ws) == 0 ? ws
						       : NULL);
			}
			json_object_array_add(arr, o);
		} else {
			char pid[16];
			snprintf(pid, sizeof(pid), "%d", s->live ? (int)s->supervisor : 0);
			printf("%-12s %-8s %-6s %-6s %-6s %-6s %s\n", s->id, s->live ? pid : "-",
			       s->live ? "live" : "ended", rootfs, jstr(s->plan, "net", "?"), age,
			       jstr(s->plan, "project", "-"));
		}
	}
	if (!json)
		workspace_print_table(state, cli_session_live, stdout);
	/* the window that remains (docs/threat-model.md, "While a session is live") */
	if (n_unchecked && !json)
		fprintf(stderr, "aisb: git check pending for %zu live session%s: what a live sandbox writes in its "
				"project is checked for planted git files only when it ends, and until then a host git there "
				"can run it; wait for the session to end (or end it: aisb clean --all) before you run git "
				"there\n", n_unchecked, n_unchecked == 1 ? "" : "s");
	if (json) {
		printf("%s\n", json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(arr);
	}
	sessions_list_free(v, n);
	return 0;
}
