// SPDX-License-Identifier: GPL-2.0-or-later
/* cmd-inspect.c — `aisb inspect ID|REF [--json]`: a session first, else an image.
 *
 * Images are issue 4's: cli_inspect_image() in cmd-images.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/hostenv.h"
#include "cli/sessions.h"
#include "util/log.h"
#include "util/macro.h"
#include "workspace/workspace.h"


int cmd_inspect(int argc, char **argv)
{
	_cleanup_free_ char *state_dir = NULL;
	const char *ref = NULL;
	bool json = false;
	int r;
	struct cli_args args;
	const struct cli_flag *f;
	const char *val;
	enum cli_arg k;

	cli_args_init(&args, "inspect", argc, argv);
	while ((k = cli_args_next(&args, &f, &val)) != CLI_ARG_END) {
		if (k == CLI_ARG_BAD)
			return AISB_EXIT_USAGE;
		if (k == CLI_ARG_WORD && ref)
			return log_error("inspect: unexpected argument '%s'", val), AISB_EXIT_USAGE;
		if (k == CLI_ARG_WORD) {
			ref = val;
			continue;
		}
		if (cli_flag_is(f, "json"))
			json = true;
		else if (cli_flag_is(f, "help")) {
			printf("usage: aisb inspect ID|REF [--json]\n"
			       "Shows a session (plan without secret values, limits, state) or an image.\n");
			return 0;
		} else
			return cli_flag_unhandled("inspect", f);
	}
	if (!ref)
		return log_error("inspect: which session or image? usage: aisb inspect ID|REF [--json]"), AISB_EXIT_USAGE;
	/* no usable state dir: 78 naming the variable, as every command (cli/sessions.h) */
	if (sessions_state_dir_checked(hostenv_get, &state_dir) < 0)
		return AISB_EXIT_POLICY;
	r = session_inspect(ref, json);
	if (r == 0 || r == -ENOENT) {
		/* a clone workspace outlives its session dir (workspace/workspace.h) */
		_cleanup_free_ char *state = sessions_id_valid(ref) ? sessions_state_dir(hostenv_get) : NULL;
		json_object *ws = NULL;
		if (state && r == 0 && !json && workspace_describe(state, ref, stdout, NULL) == -ENOENT)
			printf("workspace:  bind (the project itself, read-write unless --read-only)\n");
		if (state && r == -ENOENT && workspace_describe(state, ref, NULL, &ws) == 0) {
			if (json)
				printf("%s\n", json_object_to_json_string_ext(ws, JSON_C_TO_STRING_PRETTY |
										JSON_C_TO_STRING_NOSLASHESCAPE));
			else {
				printf("session:    %s (ended; its session dir was removed)\n", ref);
				(void)workspace_describe(state, ref, stdout, NULL);
			}
			json_object_put(ws);
			return 0;
		}
		if (r == 0)
			return 0;
	}
	if (r != -ENOENT)
		return AISB_EXIT_FAILED;
	r = cli_inspect_image(ref, json);
	if (r != -ENOENT)
		return r;
	return log_error("no session or image '%s' (see 'aisb ps -a' and 'aisb images')", ref), 1;
}
