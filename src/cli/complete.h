/* SPDX-License-Identifier: GPL-2.0-or-later */
/* complete.h — shell completion from the flag tables: `aisb __complete WORD...`.
 *
 * contrib/completion/aisb (bash) passes the words of the command line after the program name,
 * the last one being the word under the cursor, and offers what this prints: one candidate per
 * line (a whole word; the script trims what bash already split off at '=' or ':'), or one
 * directive line ":dirs", ":files" or ":env" that the shell expands itself (compgen). The rules,
 * from the seed:
 *   - run's flags are the option table's (args.c), every other subcommand's are its own
 *     (commands.c), so completion cannot offer a flag the parser does not know;
 *   - a word that is neither a flag nor a subcommand ends run's sandbox flags, as does '--' or an
 *     unknown flag: from there on the words are the harness's and nothing is offered;
 *   - values come from local state only: fixed lists (--net, --harness, --builder), exported
 *     variable names (--env), directories (--mount, --workdir), the image store (--image, rmi),
 *     allow files (--allow: the --allow-file files on the line and ./.aisb/allow), session ids.
 *     Nothing resolves a name, reads the network, or writes anything.
 */
#ifndef AISB_CLI_COMPLETE_H
#define AISB_CLI_COMPLETE_H

#include <stddef.h>

#include "cli/commands.h"

/* Local state the completion may read; a test supplies fakes. Each lister returns a strv
 * (caller frees) or NULL. */
struct complete_env {
	char **(*images)(void *data);
	char **(*sessions)(void *data);
	/* the allow entries in file @path (one per line, comments dropped), or NULL */
	char **(*allow_file)(void *data, const char *path);
	void *data;
};

/**
 * complete_words() - the candidates for the last of @words
 * @words: the words after the program name; the last is the one being completed (may be "")
 * @n: how many (>= 1)
 * @env: where local state comes from
 * @out: set to a strv of candidate lines (directives first), possibly empty
 *
 * Return: 0 or -ENOMEM. Does not log.
 */
int complete_words(char *const *words, size_t n, const struct complete_env *env, char ***out);

/* `aisb __complete WORD...`: prints complete_words() on the host's state. Return: an exit code. */
int cmd_complete(int argc, char **argv);

#endif
