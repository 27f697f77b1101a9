/* SPDX-License-Identifier: GPL-2.0-or-later */
/* commands.h — the subcommand table: one entry and one file per subcommand.
 *
 * Each handler gets the arguments after the subcommand name (argv[0] is the subcommand name)
 * and returns the process exit code. Handlers are thin: they build a plan with the library and
 * hand it on.
 */
#ifndef AISB_CLI_COMMANDS_H
#define AISB_CLI_COMMANDS_H

#include <stdbool.h>

struct cli_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

int cmd_run(int argc, char **argv);
int cmd_build(int argc, char **argv);
int cmd_pull(int argc, char **argv);
int cmd_update(int argc, char **argv);
int cmd_images(int argc, char **argv);
int cmd_rmi(int argc, char **argv);
int cmd_ps(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_logs(int argc, char **argv);
int cmd_clean(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_home(int argc, char **argv);
int cmd_trust(int argc, char **argv);

/* `aisb inspect REF` for pulled images (cmd-images.c): prints the image as JSON. Return: an exit
 * code, or -ENOENT when @ref names no pulled image. Logs on failure. */
int cli_inspect_image(const char *ref, bool json);

/* The table, NULL-terminated; defined in commands.c. */
extern const struct cli_command cli_commands[];

/* Returns the command named @name, or NULL. Does not log. */
const struct cli_command *cli_command_find(const char *name);

#endif
