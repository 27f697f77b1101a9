/* SPDX-License-Identifier: GPL-2.0-or-later */
/* harness.h — finding the command on the host when the sandbox cannot see it.
 *
 * On the host rootfs the sandbox sees /usr, /bin, /sbin, /lib* and /opt of the host, the project
 * and the --mount/--harness-from directories; a harness installed under the user's home
 * (~/.local/bin, ~/.npm-global, nvm, volta, bun) is invisible there. Before anything starts,
 * harness_check() looks for the command where the sandbox will look (its PATH, mapped back to
 * host paths); when it is not there but is on the host, the run is refused (127) with where it
 * was found and the exact --harness-from flag(s) that make it visible read-only. pi's fd/rg
 * download is announced with the packages that avoid it.
 */
#ifndef AISB_CLI_HARNESS_H
#define AISB_CLI_HARNESS_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/args.h"
#include "core/plan.h"

/* Where --harness-from puts a directory whose own path the sandbox owns (/root/..., /tmp/...):
 * HARNESS_RELOCATED + the host path. */
#define HARNESS_RELOCATED "/aisb-host"

/* Is @dir (a real path) ~/.local, ~/.config or ~/.cache, or above one of them? Those hold keyrings,
 * tokens and other programs' state, so they are never offered or mounted whole. Does not log. */
bool harness_dir_is_private(const char *dir, const char *home);

/* The directories to offer as --harness-from for a command found at @found_dir/NAME whose real
 * path is @real, given the user's @home and aisb's @state_dir. Well-known layouts: nvm
 * (~/.nvm/versions/node/V), ~/.npm-global, ~/.volta, ~/.bun; otherwise the install prefix (the
 * parent of a bin dir) when it holds the real file and is neither the home, nor holds the home
 * or the state dir; otherwise @found_dir plus the directory holding the real file (two levels
 * below the prefix, e.g. ~/.local/lib/node_modules). Fills out[0..1] (caller frees), returns
 * the count (1 or 2), or -ENOMEM. Pure. Does not log. */
int harness_suggest_dirs(const char *found_dir, const char *real, const char *home, const char *state_dir,
			 char *out[2]);

/* Is the plan's command an executable on the sandbox's PATH (host rootfs; true for images and
 * paths, which are not checked here)? Does not log. */
bool harness_visible(const struct aisb_plan *p);

/* Refuses (127) a host-rootfs run whose command is on the host but not visible in the sandbox,
 * naming where it is and the flags to add; announces pi's fd/rg download when @announce.
 * @home is the user's home. Return: 0 or 127. Logs on failure. */
int harness_check(const struct aisb_plan *p, env_getter get, const char *home, bool announce);

#endif
