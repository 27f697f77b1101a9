// SPDX-License-Identifier: GPL-2.0-or-later
/* cmd-logs.c — `aisb logs ID`: the session's line of sessions.log and its egress log */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/hostenv.h"
#include "cli/sessions.h"
#include "run/session.h"
#include "util/log.h"
#include "util/util.h"

int cmd_logs(int argc, char **argv)
{
	_cleanup_free_ char *state = sessions_state_dir(hostenv_get), *egress = NULL;
	_cleanup_fclose_ FILE *in = NULL;
	struct session_info si;
	const char *id = NULL;
	char line[65536];
	int n, r;
	struct cli_args args;
	const struct cli_flag *f;
	const char *val;
	enum cli_arg k;

	cli_args_init(&args, "logs", argc, argv);
	while ((k = cli_args_next(&args, &f, &val)) != CLI_ARG_END) {
		if (k == CLI_ARG_BAD)
			return AISB_EXIT_USAGE;
		if (k == CLI_ARG_WORD && id)
			return log_error("logs: unexpected argument '%s' (see 'aisb logs --help')", val), AISB_EXIT_USAGE;
		if (k == CLI_ARG_WORD) {
			id = val;
			continue;
		}
		if (cli_flag_is(f, "help")) {
			printf("usage: aisb logs ID\n"
			       "Prints the session's record from sessions.log and its egress log (JSON lines).\n");
			return 0;
		}
		return cli_flag_unhandled("logs", f);
	}
	if (!id)
		return log_error("logs: which session? usage: aisb logs ID (see 'aisb ps -a')"), AISB_EXIT_USAGE;
	if (!sessions_id_valid(id))
		return log_error("logs: '%s' is not a session id", id), AISB_EXIT_USAGE;
	if (sessions_state_dir_checked(hostenv_get, &state) < 0)
		return AISB_EXIT_POLICY; /* the environment names no usable dir (sessions.h) */

	r = sessions_load(state, id, &si);
	printf("# session %s\n", id);
	n = sessions_print_log_lines(state, id, stdout);
	if (r == -ENOENT && n <= 0)
		return log_error("no session '%s' (see 'aisb ps -a')", id), 1;
	if (r == -ENOENT) {
		/* session_finish() moved it to egress/<id>.jsonl; only the newest few stay */
		_cleanup_free_ char *rel = NULL, *kept = NULL;
		if (asprintf(&rel, "egress/%s.jsonl", id) < 0 || !(kept = path_join(state, rel)))
			return AISB_EXIT_FAILED;
		in = fopen(kept, "re");
		if (!in) {
			printf("# egress log: none kept (no gate in this network mode, no connection, or older than the "
			       "last %d sessions under %s/egress; --keep keeps the whole session dir)\n",
			       SESSION_EGRESS_KEEP, state);
			return 0;
		}
		printf("# egress log (kept: %s)\n", kept);
		while (fgets(line, sizeof(line), in))
			fputs(line, stdout);
		return 0;
	}
	if (r < 0)
		return log_error_errno(r, "cannot read session '%s': %m", id), AISB_EXIT_FAILED;
	if (n <= 0)
		printf("# %s: no record in sessions.log yet\n", si.live ? "live" : "ended");
	egress = path_join(si.dir, "egress.jsonl");
	sessions_info_done(&si);
	if (!egress)
		return AISB_EXIT_FAILED;
	in = fopen(egress, "re");
	if (!in) {
		printf("# egress log: none (no gate in this network mode, or no connection or DNS denial yet)\n");
		return 0;
	}
	printf("# egress log\n");
	while (fgets(line, sizeof(line), in))
		fputs(line, stdout);
	return 0;
}
