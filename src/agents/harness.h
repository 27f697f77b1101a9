/* SPDX-License-Identifier: GPL-2.0-or-later */
/* harness.h — aisb's harnesses, one table row each (src/agents/harness.c).
 *
 * Everything aisb knows about a harness it can run is in its row: the name (the --harness value,
 * the command, the --key-via-gate word), the host files its config bridge reads and the bridge
 * that rewrites them (bridge-internal.h), the flag that turns the bridge off, whether literal keys
 * become one token variable (pi's --pi-token-env), its own subcommands (so that a podman word that
 * is one of them goes to the harness, cli/args.c), and the programs it fetches from the internet
 * when they are missing. The CLI, the bridge and autophase read the table; none of them lists the
 * names, and the CLI makes each row's switch into a flag (cli/args.c). Adding a harness: its
 * bridge in its own file (bridge-NAME.c) and one row; the exact list is in docs/agents.md
 * ("Adding a harness").
 */
#ifndef AISB_AGENTS_HARNESS_H
#define AISB_AGENTS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>

#include "core/plan.h"

struct json_object;
struct bridge_ctx;
struct bridge_result;

#define HARNESS_FILES_MAX 2

enum bridge_format { BRIDGE_JSON, BRIDGE_TOML, BRIDGE_FORMAT_MAX };

struct harness_file {
	const char *rel;          /* below the host's $HOME, e.g. ".pi/agent/models.json" */
	enum bridge_format fmt;
};

struct harness {
	const char *name;         /* "pi": --harness, the command, --key-via-gate */
	/* the switch that turns the bridge off: an aisb flag, config key and AISB_ variable made
	 * from this one word (no-pi-config, AISB_NO_PI_CONFIG; cli/args.c), which sets
	 * no_harness_config[] of struct aisb_settings */
	const char *no_config_flag; /* "--no-pi-config" */
	struct harness_file files[HARNESS_FILES_MAX]; /* what its bridge reads ({NULL} ends) */
	/* the config bridge: @in[i] is files[i] parsed, NULL when absent (bridge-internal.h) */
	int (*bridge)(struct json_object *const *in, const struct bridge_ctx *c, struct bridge_result *r);
	bool token_env;           /* literal and '!command' keys become $--pi-token-env */
	const char *subcommands;  /* its own subcommands, each between spaces: " install list " */
	/* programs it downloads when the sandbox lacks them: words that must all be visible, each
	 * "a|b" when either will do; and what to tell the user then. NULL: none. */
	const char *fetches;
	const char *fetches_hint;
};

/* The harness named @name (or its first @n bytes), NULL when aisb has none of that name. */
const struct harness *harness_find(const char *name);
const struct harness *harness_findn(const char *name, size_t n);

/* The i-th row, NULL past the end. */
const struct harness *harness_at(size_t i);
/* The row number of @h (a row of the table): harness_at(harness_index(h)) == h. */
size_t harness_index(const struct harness *h);

/* The names for a message: "pi, codex or claude" with @last the final conjunction ("or", "and"),
 * or with @last NULL space-separated ("pi codex claude"). A static buffer; does not log. */
const char *harness_names(const char *last);

/* Is @word (a first argument word) one of @h's own subcommands? */
bool harness_has_subcommand(const struct harness *h, const char *word);

/* Whether the bridge of @h is turned off in @s (its --no-*-config switch). */
bool harness_config_off(const struct harness *h, const struct aisb_settings *s);

#endif
