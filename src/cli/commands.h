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
#include <stddef.h>
#include <string.h>

#include "build/pipeline.h"

/* What a flag's value (or a positional word) is, for completion: only local state is offered
 * (cli/complete.h). */
enum cli_value {
	CLI_VALUE_NONE,    /* a flag without a value */
	CLI_VALUE_WORD,    /* free text: nothing is offered */
	CLI_VALUE_CHOICE,  /* one of the words in .choices */
	CLI_VALUE_DIR,     /* a directory */
	CLI_VALUE_FILE,    /* a file */
	CLI_VALUE_ENV,     /* the name of an exported variable */
	CLI_VALUE_IMAGE,   /* an image in the store */
	CLI_VALUE_ALLOW,   /* an allow entry from the allow files in reach */
	CLI_VALUE_SESSION, /* a session id */
	CLI_VALUE_MAX,
};

/* One flag a subcommand accepts. run's come from the option table in args.c (args_flag()); the
 * other subcommands' are listed with them in commands.c. The man page check and the completion
 * read these, so a flag added here without docs fails `make check`. */
struct cli_flag {
	const char *name;     /* "all", without the leading "--" */
	char short_name;      /* 'a', or 0 */
	enum cli_value value;
	const char *choices;  /* CLI_VALUE_CHOICE: "native podman" */
	bool optional_value;  /* "--volumes[=GLOB]": a value only after '=' */
};

struct cli_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
	const struct cli_flag *flags; /* terminated by a NULL name; NULL for run (args_flag()) */
	enum cli_value positional;    /* what its positional arguments are */
};

int cmd_run(int argc, char **argv);
int cmd_build(int argc, char **argv);
int cmd_pull(int argc, char **argv);
int cmd_update(int argc, char **argv);
int cmd_push(int argc, char **argv);
int cmd_save(int argc, char **argv);
int cmd_load(int argc, char **argv);
int cmd_images(int argc, char **argv);
int cmd_rmi(int argc, char **argv);
int cmd_ps(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_logs(int argc, char **argv);
int cmd_clean(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_home(int argc, char **argv);
int cmd_trust(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_autophase(int argc, char **argv);

/* `aisb inspect REF` for pulled images (cmd-images.c): prints the image as JSON. Return: an exit
 * code, or -ENOENT when @ref names no pulled image. Logs on failure. */
int cli_inspect_image(const char *ref, bool json);

/* A build's internal cache entry (BUILD_CACHE_PREFIX, build/pipeline.h)? */
static inline bool cli_is_build_cache(const char *name)
{
	return strncmp(name, BUILD_CACHE_PREFIX, sizeof(BUILD_CACHE_PREFIX) - 1) == 0;
}

/* The table, NULL-terminated; defined in commands.c. */
extern const struct cli_command cli_commands[];

/**
 * cli_command_flag() - the @i-th flag of @c
 * @c: the subcommand (run's flags are the option table's)
 * @i: index from 0
 * @out: filled with the flag
 *
 * Return: true, or false past the last flag. Does not log.
 */
bool cli_command_flag(const struct cli_command *c, size_t i, struct cli_flag *out);

/* Returns the command named @name, or NULL. Does not log. */
const struct cli_command *cli_command_find(const char *name);

#endif
