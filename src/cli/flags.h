/* SPDX-License-Identifier: GPL-2.0-or-later */
/* flags.h — reading a subcommand's words against its flag table (cli/commands.h).
 *
 * Each subcommand has one table of the flags it takes (struct cli_flag, next to its parser in
 * cmd-*.c); the completion, the man page check (tests/install/man.bats) and the parser all read
 * it, so a flag cannot be accepted without being offered and documented, or the reverse. The
 * parser walks its words with cli_args_next(), which knows the spellings getopt_long() accepts:
 * --name, --name=VALUE, --name VALUE, -n, -nVALUE, -n VALUE, bundles (-aq), and "--" ending the
 * flags. A flag's value follows its table row: CLI_VALUE_NONE takes none, optional_value only
 * after '=', every other kind one.
 */
#ifndef AISB_CLI_FLAGS_H
#define AISB_CLI_FLAGS_H

#include <stdbool.h>

#include "cli/commands.h"

struct cli_args {
	const char *cmd;              /* "ps": for the messages */
	const struct cli_flag *flags; /* its table, NULL-terminated */
	int argc;
	char *const *argv;
	int i;                        /* the next word (starts at 1: argv[0] is the subcommand) */
	const char *bundle;           /* the rest of a "-aq" bundle, or NULL */
	bool words_only;              /* after "--", or after the first word with @stop_at_word */
	bool stop_at_word;            /* the first positional word ends the flags (getopt's "+") */
};

enum cli_arg {
	CLI_ARG_END,   /* no word left */
	CLI_ARG_FLAG,  /* *@flag is the row, *@value its value (NULL when it has none) */
	CLI_ARG_WORD,  /* a positional word in *@value */
	CLI_ARG_BAD,   /* an unknown flag, a missing or unexpected value: logged; exit 2 */
};

/* Starts reading @argv of the subcommand @cmd (its table from cli_command_find()). */
void cli_args_init(struct cli_args *a, const char *cmd, int argc, char *const *argv);

/* The next word. Logs on CLI_ARG_BAD ("ps: unknown flag '--x' (see 'aisb ps --help')"). */
enum cli_arg cli_args_next(struct cli_args *a, const struct cli_flag **flag, const char **value);

/* Is @f the row named @name? */
static inline bool cli_flag_is(const struct cli_flag *f, const char *name)
{
	return f && strcmp(f->name, name) == 0;
}

/* The parser met a row it has no case for: a table and a parser that disagree (a bug). Logs;
 * returns the exit code 125. */
int cli_flag_unhandled(const char *cmd, const struct cli_flag *f);

#endif
