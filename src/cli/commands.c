// SPDX-License-Identifier: GPL-2.0-or-later
/* commands.c — the subcommand dispatch table */
#include <string.h>

#include "cli/commands.h"
#include "util/macro.h"

const struct cli_command cli_commands[] = {
	{ "run", cmd_run, "run a command or harness in a sandbox (the default)" },
	{ "build", cmd_build, "build an image from a Containerfile subset or the built-in recipe" },
	{ "pull", cmd_pull, "pull an image into the store (registry, oci:, oci-archive:, docker-archive:)" },
	{ "images", cmd_images, "list pulled images" },
	{ "rmi", cmd_rmi, "remove an image from the store" },
	{ "update", cmd_update, "re-resolve pinned image tags (--check: only compare)" },
	{ "ps", cmd_ps, "list live sessions" },
	{ "inspect", cmd_inspect, "show a session (or an image)" },
	{ "logs", cmd_logs, "show a session's record and egress log" },
	{ "clean", cmd_clean, "remove ended sessions (--all, --volumes)" },
	{ "home", cmd_home, "show, list or reset the persistent sandbox homes" },
	{ "trust", cmd_trust, "approve a project's .aisb/config and .aisb/allow (--show, --revoke)" },
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
