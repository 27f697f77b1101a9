/* SPDX-License-Identifier: GPL-2.0-or-later */
/* import.h — the CLI side of clone workspaces (cmd-import.c): the export sandbox and liveness.
 *
 * workspace/workspace.h validates and publishes; it needs a sandbox to read the clone in, which
 * the CLI builds (plan_resolve + sandbox_run) and hands down as a workspace_exporter.
 */
#ifndef AISB_CLI_IMPORT_H
#define AISB_CLI_IMPORT_H

#include <stdbool.h>

#include "workspace/workspace.h"

/* Runs the export script in a sandbox (host rootfs, no network, the clone read-only, the output
 * directory read-write). Return: the script's exit code, or aisb's. Logs on failure. */
int cli_workspace_export(const struct workspace_export *e);

/* --review's question on the terminal (stdin): 1 yes ("y..."), 0 anything else or EOF, -ENOTTY
 * when stdin is not a terminal. */
int cli_import_confirm(void);

/* Is session @id live? Unknown counts as live. Does not log. */
bool cli_session_live(const char *state, const char *id);

#endif
