// SPDX-License-Identifier: GPL-2.0-or-later
/* commands.c — the subcommand dispatch table */
#include <string.h>

#include "cli/commands.h"
#include "util/macro.h"

const struct cli_command cli_commands[] = {
	{ "run", cmd_run, "run a command or harness in a sandbox (the default)" },
	{ "ps", cmd_ps, "list live sessions" },
	{ "inspect", cmd_inspect, "show a session (or an image)" },
	{ "logs", cmd_logs, "show a session's record and egress log" },
	{ "clean", cmd_clean, "remove ended sessions (--all, --volumes)" },
	{ "doctor", cmd_doctor, "check prerequisites and print fixes (--deep)" },
	{ NULL, NULL, NULL },
};

const struct cli_command *cli_command_find(const char *name)
{
	for (const struct cli_command *c = cli_commands; c->name; c++)
		if (streq(c->name, name))
			return c;
	return NULL;
}
