// SPDX-License-Identifier: GPL-2.0-or-later
/* main.c — aisb entry point: pick the subcommand, default to `run` */
#include <string.h>

#include "cli/commands.h"
#include "cli/complete.h"
#include "cli/sessions.h"
#include "util/log.h"

int main(int argc, char **argv)
{
	const struct cli_command *c = NULL;

	/* `alias pi=aisb` must work: anything that is not a subcommand name is `run`'s. */
	/* hidden: the shell completion's helper (contrib/completion/aisb), not a table entry so
	 * that it is never offered or documented as a command */
	if (argc > 1 && streq(argv[1], "__complete"))
		return cmd_complete(argc - 1, argv + 1);
	if (argc > 1)
		c = cli_command_find(argv[1]);
	/* a git check that a killed aisb left pending runs before anything else (issue 21); `run`
	 * runs it once its flags are known (a preview only announces it) */
	if (c && c->run != cmd_run)
		(void)sessions_pending_checks(false);
	if (c)
		return c->run(argc - 1, argv + 1);
	return cmd_run(argc, argv);
}
