/* SPDX-License-Identifier: GPL-2.0-or-later */
/* home.h — which persistent sandbox home a run uses, and where it lives on the host.
 *
 * Homes live under the state dir as homes/<NAME>/ and are mounted at /home/sandbox. NAME comes
 * from --home (config `home`, AISB_HOME): "default" (also when unset: one home shared by every
 * project, as before), "project" (one home per project, named after the project's real path:
 * project-<basename>-<12 hex of its sha256>), or any other valid name (a named home shared by
 * whoever names it). `--ephemeral-home` uses none of them. `aisb home` (cmd-home.c) lists,
 * prints and resets them.
 */
#ifndef AISB_CLI_HOME_H
#define AISB_CLI_HOME_H

#include <stdbool.h>

/* The home name for the setting @setting (NULL: "default") and the project's real path
 * @project_real (NULL with --no-cwd). Caller frees *name.
 * Return: 0; -EINVAL when "project" is asked without a project (logged); -ENOMEM.
 * Logs on failure. */
int home_resolve_name(const char *setting, const char *project_real, char **name);

/* The per-project home name for @project_real: "project-<basename>-<12 hex>" (basename reduced to
 * [A-Za-z0-9._-], at most 32 characters). Caller frees; NULL on failure. Does not log. */
char *home_project_name(const char *project_real);

#endif
