/* SPDX-License-Identifier: GPL-2.0-or-later */
/* args.h — sandbox flags, config file and AISB_* environment, with one precedence.
 *
 * One option table drives all three sources: built-in defaults < `$XDG_CONFIG_HOME/aisb/config`
 * (`key = value`) < `AISB_<KEY>` environment < flags. Scalars are overridden by a later source;
 * lists (mount, env, allow, ...) accumulate. The flag parser follows the seed's rule: sandbox flags
 * are consumed until the first positional argument or unknown flag; that and everything after it
 * are harness arguments; `--` ends the flags and replaces the harness with the command after it.
 */
#ifndef AISB_CLI_ARGS_H
#define AISB_CLI_ARGS_H

#include "core/plan.h"

/* Sets the built-in defaults. Does not log. */
int args_defaults(struct aisb_settings *s);

/* Applies one `key = value` config text (the file's content). @origin names it in errors.
 * Return: 0, or -EINVAL after logging "origin:line: ..." (exit 78). Logs on failure. */
int args_apply_config(struct aisb_settings *s, const char *text, const char *origin);
/* The value of @key in config text (the last line setting it), for keys that are not run's
 * (autophase_launcher, which run's parser skips). Return: 1 found (*out malloc'd), 0 not, -ENOMEM.
 * Does not log. */
int args_config_lookup(const char *text, const char *key, char **out);

/* Applies a trusted project policy text (.aisb/config, cli/trust.h). Only the keys allow, env,
 * harness, memory, pids, cpus and workspace (= clone only) are accepted; any other key is -EINVAL naming it (exit 78).
 * Logs on failure. */
int args_apply_project(struct aisb_settings *s, const char *text, const char *origin);

/* Is @name a valid --home name (letters, digits, '.', '_', '-'; 1..64; not starting with '.' or
 * '-')? "default" and "project" are valid names with a meaning (cli/home.h). Does not log. */
bool args_home_name_valid(const char *name);

/* Applies every AISB_<KEY> variable that names an option. Logs on failure. */
int args_apply_env(struct aisb_settings *s, env_getter get);

/* Parses sandbox flags from argv[1..]. argv[0] is the program or subcommand name.
 * Return: 0; -EINVAL for a bad value (exit 78) or -E2BIG for a usage error (exit 2).
 * Logs on failure. */
int args_parse_flags(struct aisb_settings *s, int argc, char **argv);

/* All three sources in order. The config file is read from @config_path if non-NULL and present.
 * Return: 0, or the exit code to use (2 or 78). Logs on failure. */
int args_load(struct aisb_settings *s, int argc, char **argv, const char *config_path, env_getter get);

/* args_load() with a trusted project policy text between the user config and the environment
 * (design 10: defaults < user config < project policy < AISB_* < flags). @project_text may be
 * NULL. Return: 0, or the exit code to use (2 or 78). Logs on failure. */
int args_load_project(struct aisb_settings *s, int argc, char **argv, const char *config_path,
		      const char *project_text, const char *project_origin, env_getter get);
struct cli_flag;
/* Fills @out with the @i-th flag of the option table. Return: false past the last. Does not log. */
bool args_flag(size_t i, struct cli_flag *out);

/* Prints the run help to stdout. */
void args_print_help(const char *prog);


#endif
