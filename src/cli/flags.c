// SPDX-License-Identifier: GPL-2.0-or-later
/* flags.c — reading a subcommand's words against its flag table (cli/flags.h) */
#include <string.h>

#include "cli/flags.h"
#include "util/log.h"
#include "util/util.h"

void cli_args_init(struct cli_args *a, const char *cmd, int argc, char *const *argv)
{
	const struct cli_command *c = cli_command_find(cmd);

	*a = (struct cli_args){ .cmd = cmd, .flags = c ? c->flags : NULL, .argc = argc, .argv = argv, .i = 1 };
}

static const struct cli_flag *find_long(const struct cli_args *a, const char *name, size_t n)
{
	for (size_t i = 0; a->flags && a->flags[i].name; i++)
		if (strlen(a->flags[i].name) == n && strncmp(a->flags[i].name, name, n) == 0)
			return &a->flags[i];
	return NULL;
}

static const struct cli_flag *find_short(const struct cli_args *a, char c)
{
	for (size_t i = 0; c && a->flags && a->flags[i].name; i++)
		if (a->flags[i].short_name == c)
			return &a->flags[i];
	return NULL;
}

/* "ps: unknown flag '--x'", or with @after "ps: '--tag' needs a value". Names the flag, never
 * what follows its '=': a value typed after a wrong flag may be a secret. */
static enum cli_arg bad(const struct cli_args *a, const char *what, const char *word, bool after)
{
	int n = (int)strcspn(word, "=");

	if (after)
		log_error("%s: '%.*s' %s (see 'aisb %s --help')", a->cmd, n, word, what, a->cmd);
	else
		log_error("%s: %s '%.*s' (see 'aisb %s --help')", a->cmd, what, n, word, a->cmd);
	return CLI_ARG_BAD;
}

static enum cli_arg short_flag(struct cli_args *a, const struct cli_flag **flag, const char **value)
{
	char word[3] = { '-', *a->bundle, '\0' };
	const struct cli_flag *f = find_short(a, *a->bundle);

	a->bundle++;
	if (!f)
		return a->bundle = NULL, bad(a, "unknown flag", word, false);
	*flag = f;
	*value = NULL;
	if (f->value == CLI_VALUE_NONE || f->optional_value) {
		if (!*a->bundle)
			a->bundle = NULL;
		return CLI_ARG_FLAG;
	}
	if (*a->bundle) /* -tNAME */
		*value = a->bundle;
	else if (a->i < a->argc)
		*value = a->argv[a->i++];
	else
		return a->bundle = NULL, bad(a, "needs a value", word, true);
	a->bundle = NULL;
	return CLI_ARG_FLAG;
}

enum cli_arg cli_args_next(struct cli_args *a, const struct cli_flag **flag, const char **value)
{
	const char *w, *eq;
	const struct cli_flag *f;

	*flag = NULL;
	*value = NULL;
	if (a->bundle)
		return short_flag(a, flag, value);
	if (a->i >= a->argc)
		return CLI_ARG_END;
	w = a->argv[a->i++];
	if (!a->words_only && streq(w, "--")) {
		a->words_only = true;
		return cli_args_next(a, flag, value);
	}
	if (a->words_only || w[0] != '-' || !w[1]) {
		if (a->stop_at_word)
			a->words_only = true;
		*value = w;
		return CLI_ARG_WORD;
	}
	if (w[1] != '-') {
		a->bundle = w + 1;
		return short_flag(a, flag, value);
	}
	eq = strchr(w + 2, '=');
	f = find_long(a, w + 2, eq ? (size_t)(eq - w - 2) : strlen(w + 2));
	if (!f)
		return bad(a, "unknown flag", w, false);
	*flag = f;
	if (f->value == CLI_VALUE_NONE) {
		if (eq)
			return bad(a, "takes no value", w, true);
		return CLI_ARG_FLAG;
	}
	if (eq)
		*value = eq + 1;
	else if (!f->optional_value) {
		if (a->i >= a->argc)
			return bad(a, "needs a value", w, true);
		*value = a->argv[a->i++];
	}
	return CLI_ARG_FLAG;
}

int cli_flag_unhandled(const char *cmd, const struct cli_flag *f)
{
	log_error("%s: internal error: the parser has no case for --%s of its table", cmd, f ? f->name : "?");
	return AISB_EXIT_FAILED;
}
