// SPDX-License-Identifier: GPL-2.0-or-later
/* harness.c — the harness table (agents/harness.h) */
#include <stdio.h>
#include <string.h>

#include "agents/bridge-internal.h"
#include "agents/harness.h"
#include "util/util.h"

static const struct harness harnesses[] = {
	{
		.name = "pi",
		.no_config_flag = "--no-pi-config",
		.files = { { ".pi/agent/models.json", BRIDGE_JSON }, { ".pi/agent/settings.json", BRIDGE_JSON } },
		.bridge = bridge_pi,
		.token_env = true,
		.subcommands = " install remove uninstall update list config ",
		/* measured with pi 0.73: tools-manager.js looks for fd, fdfind and rg, and otherwise
		 * fetches them from GitHub on every start */
		.fetches = "rg fd|fdfind",
		.fetches_hint = "pi looks for fd and rg and downloads them from GitHub when missing: install them "
				"on the host (Debian/Ubuntu: apt-get install fd-find ripgrep; pi also finds Debian's "
				"'fdfind'), or run an image that has them (aisb build)",
	},
	{
		.name = "codex",
		.no_config_flag = "--no-codex-config",
		.files = { { ".codex/config.toml", BRIDGE_TOML } },
		.bridge = bridge_codex,
		/* codex --help (0.171 as installed here) */
		.subcommands = " agents exec e review login logout mcp plugin app-server remote-control completion "
			       "update doctor sandbox debug apply a resume queue archive delete migrate-rollouts "
			       "migrate-nfs-db unarchive fork cloud exec-server features help ",
	},
	{
		.name = "claude",
		.no_config_flag = "--no-claude-config",
		.files = { { ".claude.json", BRIDGE_JSON }, { ".claude/settings.json", BRIDGE_JSON } },
		.bridge = bridge_claude,
		/* claude --help (2.1 as installed here) */
		.subcommands = " agents attach auth auto-mode doctor gateway import install logs mcp plugin purge "
			       "respawn rm setup-token stop ultrareview update ",
	},
};

_Static_assert(ELEMENTSOF(harnesses) <= PLAN_HARNESSES_MAX,
	       "struct aisb_settings has a switch for PLAN_HARNESSES_MAX harnesses (core/plan.h)");

size_t harness_index(const struct harness *h)
{
	return (size_t)(h - harnesses);
}

const struct harness *harness_findn(const char *name, size_t n)
{
	for (size_t i = 0; name && i < ELEMENTSOF(harnesses); i++)
		if (strlen(harnesses[i].name) == n && strncmp(harnesses[i].name, name, n) == 0)
			return &harnesses[i];
	return NULL;
}

const struct harness *harness_find(const char *name)
{
	return name ? harness_findn(name, strlen(name)) : NULL;
}

const struct harness *harness_at(size_t i)
{
	return i < ELEMENTSOF(harnesses) ? &harnesses[i] : NULL;
}

const char *harness_names(const char *last)
{
	static char buf[256];
	size_t o = 0, n = ELEMENTSOF(harnesses);

	buf[0] = '\0';
	for (size_t i = 0; i < n && o < sizeof(buf); i++) {
		if (i && !last)
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, " ");
		else if (i && i + 1 < n)
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, ", ");
		else if (i)
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, " %s ", last);
		if (o < sizeof(buf))
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s", harnesses[i].name);
	}
	return buf;
}

bool harness_has_subcommand(const struct harness *h, const char *word)
{
	size_t n = strlen(word);

	if (!h || !h->subcommands || !n || strchr(word, ' '))
		return false;
	for (const char *p = strstr(h->subcommands, word); p; p = strstr(p + 1, word))
		if (p > h->subcommands && p[-1] == ' ' && p[n] == ' ')
			return true;
	return false;
}

bool harness_config_off(const struct harness *h, const struct aisb_settings *s)
{
	return s->no_harness_config[harness_index(h)];
}
