/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bridge.h — the harness config bridges: the user's pi, codex and claude config, rewritten for
 * the sandbox home.
 *
 * A harness inside aisb starts with an empty home. The bridge reads the host's own config of the
 * harness being run (pi: ~/.pi/agent/models.json and settings.json; codex: ~/.codex/config.toml;
 * claude: ~/.claude.json, ~/.claude/settings.json and ANTHROPIC_* from the environment), never a
 * credential file, and computes a rewritten copy: keys become references to environment variables
 * that are passed by name, `!command` values are dropped (a host command is never run), values
 * that point into the host's $HOME are dropped, loopback endpoints become host.aisb.internal.
 * bridge_resolve() does this while the plan is resolved (it reads, never writes, so previews stay
 * pure) and refuses (78) when the harness's model endpoint is not allowed, naming the exact flag;
 * bridge_apply() writes the files into the sandbox home at session start, merged per key with
 * what the sandbox changed since aisb last wrote them. The full rules are in docs/agents.md.
 */
#ifndef AISB_AGENTS_BRIDGE_H
#define AISB_AGENTS_BRIDGE_H

#include <stdio.h>

#include "core/plan.h"

struct bridge_plan;

/**
 * bridge_resolve() - bridge the host config of the harness @p will run
 * @p: the plan being resolved: the last stage of plan_resolve() (cli/resolve.h), its only
 *     caller, after the image's config made the command final; gets the token and key
 *     variables (secret), the sandbox variables the bridge sets, and p->bridge
 * @s: settings (harness, --pi-token-env, --thinking, --no-*-config)
 * @get: host environment
 * @host_home: the caller's home (where the host config lives)
 *
 * Does nothing for a `--` command, a shell, or an image whose Entrypoint/Cmd replaced the harness. Announces on stderr what it passes and what it
 * dropped (names only, never a value).
 * Return: 0, or an exit code (78: endpoint not allowed, token variable unset, bad --thinking;
 * 125). Logs on failure.
 */
int bridge_resolve(struct aisb_plan *p, const struct aisb_settings *s, env_getter get, const char *host_home);

/**
 * bridge_apply() - write the bridged files into the sandbox home
 * @p: the plan
 * @ss: its session (session_create(): canonical state dir, home and session dir)
 *
 * Persistent home: each file is merged per key against the copy of what aisb wrote last (kept
 * under the state dir, out of the sandbox's reach) and replaced atomically, without following
 * any symlink the sandbox may have planted. Ephemeral home: the files go to the session dir,
 * which the mount plan binds into the tmpfs home (bridge_home_binds()).
 * Return: 0 or -errno. Logs on failure.
 */
int bridge_apply(const struct aisb_plan *p, const struct aisb_session *ss);

/* The directories (relative to the home, e.g. ".pi") under <session dir>/bridge-home that an
 * ephemeral home binds: decided by bridge_resolve(), written there by bridge_apply();
 * NULL-terminated, NULL when none. */
const char *const *bridge_home_binds(const struct bridge_plan *b);

/* One --dry-run line per bridged harness. Does not log. */
void bridge_print(const struct bridge_plan *b, FILE *f);

/* The bridge as --print-policy key=value lines (bridge, bridge_file, bridge_endpoint, bridge_env).
 * Does not log. */
void bridge_print_policy(const struct bridge_plan *b, FILE *f);

void bridge_plan_free(struct bridge_plan *b);

#endif
