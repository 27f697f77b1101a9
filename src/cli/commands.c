// SPDX-License-Identifier: GPL-2.0-or-later
/* commands.c — the subcommand dispatch table */
#include <string.h>

#include "cli/commands.h"
#include "util/macro.h"

const struct cli_command cli_commands[] = {
	{ "run", cmd_run, "run a command or harness in a sandbox (the default)" },
	{ "build", cmd_build, "build an image from a Containerfile subset or the built-in recipe" },
	{ NULL, NULL, NULL },
};

const struct cli_command *cli_command_find(const char *name)
{
	for (const struct cli_command *c = cli_commands; c->name; c++)
		if (streq(c->name, name))
			return c;
	return NULL;
}
