// SPDX-License-Identifier: GPL-2.0-or-later
/* bridge-claude.c — claude's bridge: ~/.claude.json and ~/.claude/settings.json rewritten for
 * the sandbox (agents/harness.h) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agents/bridge-internal.h"
#include "core/plan.h"
#include "util/util.h"

#define SANDBOX_HOME "/home/sandbox"
#define CLAUDE_KEY_VAR "AISB_ANTHROPIC_API_KEY"

/* Settings whose value is a host command that produces credentials. */
static const char *const claude_cred_helpers[] = {
	"apiKeyHelper", "awsCredentialExport", "awsAuthRefresh", "gcpAuthRefresh", "otelHeadersHelper",
};
/* The keys of ~/.claude.json that are preferences; the rest is state (accounts, caches, MCP
 * servers with their env, per-project history) and stays on the host. */
static const char *const claude_state_keys[] = {
	"theme", "editorMode", "verbose", "preferredNotifChannel", "autoCompactEnabled", "diffTool",
};

static bool credential_name(const char *n)
{
	static const char *const parts[] = { "KEY", "TOKEN", "SECRET", "PASSWORD", "AUTH", "CREDENTIAL" };
	for (size_t i = 0; i < ELEMENTSOF(parts); i++)
		if (strcasestr(n, parts[i]))
			return true;
	return false;
}

static const char claude_sfile[] = "~/.claude/settings.json";

/* settings.json: home paths, credential helpers (host commands) and credential values in its
 * env dropped. *@env gets its env object (created when absent). */
static int claude_settings(json_object *settings, const struct bridge_ctx *c, struct bridge_result *r,
			   json_object **env)
{
	char **drop = NULL;
	int e;

	if ((e = bridge_scrub_home(settings, c->host_home, claude_sfile, "", r, 0)) < 0)
		return e;
	for (size_t i = 0; i < ELEMENTSOF(claude_cred_helpers); i++)
		if (bridge_obj_get(settings, claude_cred_helpers[i])) {
			json_object_object_del(settings, claude_cred_helpers[i]);
			if ((e = bridge_note(r, "%s: dropped %s (a host command that produces credentials is never run)",
				      claude_sfile, claude_cred_helpers[i])) < 0)
				return e;
		}
	if (!(*env = bridge_obj_child(settings, "env")))
		return -ENOMEM;
	json_object_object_foreach(*env, name, v) {
		if (!json_object_is_type(v, json_type_string) || (credential_name(name) && !streq(name, "ANTHROPIC_BASE_URL"))) {
			if (strv_push(&drop, name) < 0 ||
			    bridge_note(r, "%s: dropped env.%s (values of credentials stay on the host: export it, "
				 "aisb passes ANTHROPIC_API_KEY and ANTHROPIC_AUTH_TOKEN by name)", claude_sfile, name) < 0) {
				strv_free(drop);
				return -ENOMEM;
			}
		}
	}
	for (size_t i = 0; drop && drop[i]; i++)
		json_object_object_del(*env, drop[i]);
	strv_free(drop);
	return 0;
}

/* The endpoint: settings' env overrides the process environment in claude. The URL, rewritten,
 * goes to the sandbox as ANTHROPIC_BASE_URL (and into @env when it came from there); none is
 * api.anthropic.com. */
static int claude_endpoint(json_object *env, const struct bridge_ctx *c, struct bridge_result *r)
{
	struct bridge_endpoint ep = { .port = 0 };
	_cleanup_free_ char *nu = NULL;
	const char *base;
	char origin[160];
	bool tls;
	int k, e;

	base = bridge_str_get(env, "ANTHROPIC_BASE_URL");
	if (base)
		snprintf(origin, sizeof(origin), "%s env.ANTHROPIC_BASE_URL", claude_sfile);
	else if ((base = c->get("ANTHROPIC_BASE_URL")) && *base)
		snprintf(origin, sizeof(origin), "$ANTHROPIC_BASE_URL");
	else {
		bridge_add_endpoint(r, "api.anthropic.com", 443, false, true, "claude's default endpoint");
		return 0;
	}
	/* read before bridge_set_str(), which frees the string @base may point into */
	tls = strncasecmp(base, "https://", 8) == 0;
	k = bridge_url_endpoint(base, ep.host, sizeof(ep.host), &ep.port, &ep.loopback, &nu);
	if (k == -ENOMEM)
		return k;
	if (k < 0) {
		json_object_object_del(env, "ANTHROPIC_BASE_URL");
		return bridge_note(r, "%s: not bridged (not an http(s) URL without user info)", origin);
	}
	if (bridge_obj_get(env, "ANTHROPIC_BASE_URL") && (e = bridge_set_str(env, "ANTHROPIC_BASE_URL", nu)) < 0)
		return e;
	if ((e = bridge_set_var(r, "ANTHROPIC_BASE_URL", nu)) < 0)
		return e;
	bridge_add_endpoint(r, ep.host, ep.port, ep.loopback, tls, origin);
	return 0;
}

/* The key reaches claude through apiKeyHelper, under another name: claude asks before it uses
 * an ANTHROPIC_API_KEY from the environment, and its answer stores the key's tail in
 * .claude.json (measured with 2.1.332). The helper runs inside the sandbox. ANTHROPIC_AUTH_TOKEN
 * is passed by name. */
static int claude_key(json_object *settings, const struct bridge_ctx *c, struct bridge_result *r)
{
	if (bridge_host_has(c, "ANTHROPIC_API_KEY")) {
		if (strv_push(&r->alias, CLAUDE_KEY_VAR "=ANTHROPIC_API_KEY") < 0 ||
		    strv_push(&r->keys, CLAUDE_KEY_VAR) < 0 ||
		    bridge_set_str(settings, "apiKeyHelper", "printenv " CLAUDE_KEY_VAR) < 0)
			return -ENOMEM;
	}
	if (bridge_host_has(c, "ANTHROPIC_AUTH_TOKEN"))
		return bridge_key_var(r, "ANTHROPIC_AUTH_TOKEN");
	return 0;
}

/* aisb is the sandbox: the permission prompts guard what aisb already confines. The host's own
 * choice of mode wins. */
static int claude_permissions(json_object *settings, struct bridge_result *r)
{
	json_object *perm = bridge_obj_child(settings, "permissions");
	int e;

	if (!perm)
		return -ENOMEM;
	if (bridge_str_get(perm, "defaultMode"))
		return 0;
	/* disableAutoMode: without it 2.1.332 offers to switch to auto mode on every start */
	if ((e = bridge_set_str(perm, "defaultMode", "bypassPermissions")) < 0 ||
	    (!bridge_str_get(perm, "disableAutoMode") && (e = bridge_set_str(perm, "disableAutoMode", "disable")) < 0))
		return e;
	return bridge_note(r, "claude: runs with permissions.defaultMode \"bypassPermissions\": aisb is the "
			   "sandbox (set permissions.defaultMode in %s to choose another)", claude_sfile);
}

/* The keys of settings.json written on every run, into @sforce. */
static int claude_settings_force(json_object *sforce)
{
	json_object *fenv;

	/* Only the model endpoint is allowed: no telemetry or update checks that would be denied. */
	if (!(fenv = bridge_obj_child(sforce, "env")) ||
	    bridge_set_str(fenv, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1") < 0 ||
	    bridge_set_str(fenv, "DISABLE_AUTOUPDATER", "1") < 0)
		return -ENOMEM;
	return bridge_set_bool(sforce, "skipDangerousModePermissionPrompt", true);
}

/* ~/.claude.json: preferences only (claude_state_keys, scalars that do not point into the
 * home) into @state, and in @tforce the screens that need Anthropic's servers done. */
static int claude_state(json_object *state_in, json_object *state, json_object *tforce, const struct bridge_ctx *c)
{
	int e;

	for (size_t i = 0; state_in && i < ELEMENTSOF(claude_state_keys); i++) {
		json_object *v = bridge_obj_get(state_in, claude_state_keys[i]);
		if (v && !json_object_is_type(v, json_type_object) && !json_object_is_type(v, json_type_array) &&
		    !(json_object_is_type(v, json_type_string) && bridge_value_in_home(json_object_get_string(v), c->host_home))) {
			json_object *cv = bridge_copy(v);
			if (!cv || json_object_object_add(state, claude_state_keys[i], cv) < 0) {
				json_object_put(cv);
				return -ENOMEM;
			}
		}
	}
	if ((e = bridge_set_bool(tforce, "hasCompletedOnboarding", true)) < 0 ||
	    (e = bridge_set_bool(tforce, "bypassPermissionsModeAccepted", true)) < 0)
		return e;
	if (c->project_dst) {
		json_object *projects = bridge_obj_child(tforce, "projects"), *pr;
		if (!projects || !(pr = bridge_obj_child(projects, c->project_dst)) ||
		    bridge_set_bool(pr, "hasTrustDialogAccepted", true) < 0 ||
		    bridge_set_bool(pr, "hasCompletedProjectOnboarding", true) < 0)
			return -ENOMEM;
	}
	return 0;
}

int bridge_claude(json_object *const *in, const struct bridge_ctx *c, struct bridge_result *r)
{
	json_object *state_in = in ? in[0] : NULL, *settings_in = in ? in[1] : NULL;
	json_object *settings = settings_in ? bridge_copy(settings_in) : json_object_new_object();
	json_object *state = json_object_new_object(), *env = NULL;
	json_object *sforce = json_object_new_object(), *tforce = json_object_new_object();
	int e = -ENOMEM;

	if (!settings || !state || !sforce || !tforce)
		goto out;
	if ((e = claude_settings(settings, c, r, &env)) < 0 || (e = claude_endpoint(env, c, r)) < 0 ||
	    (e = claude_key(settings, c, r)) < 0 || (e = claude_settings_force(sforce)) < 0 ||
	    (e = claude_permissions(settings, r)) < 0 || (e = claude_state(state_in, state, tforce, c)) < 0)
		goto out;
	/* One directory holds both files (CLAUDE_CONFIG_DIR), so an ephemeral home binds one tree. */
	if ((e = bridge_set_var(r, "CLAUDE_CONFIG_DIR", SANDBOX_HOME "/.claude")) < 0)
		goto out;
	if ((e = bridge_add_file(r, ".claude/.claude.json", BRIDGE_JSON, TAKE_PTR(state), TAKE_PTR(tforce))) < 0)
		goto out;
	e = bridge_add_file(r, ".claude/settings.json", BRIDGE_JSON, TAKE_PTR(settings), TAKE_PTR(sforce));
out:
	json_object_put(settings);
	json_object_put(state);
	json_object_put(sforce);
	json_object_put(tforce);
	return e < 0 ? e : 0;
}
