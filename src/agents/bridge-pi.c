// SPDX-License-Identifier: GPL-2.0-or-later
/* bridge-pi.c — pi's bridge: ~/.pi/agent/models.json and settings.json rewritten for the
 * sandbox (agents/harness.h) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/bridge-internal.h"
#include "core/plan.h"
#include "util/util.h"

bool bridge_thinking_valid(const char *level)
{
	static const char *const levels[] = { "off", "minimal", "low", "medium", "high", "xhigh" };
	for (size_t i = 0; i < ELEMENTSOF(levels); i++)
		if (streq(level, levels[i]))
			return true;
	return false;
}

enum key_kind { KEY_COMMAND, KEY_ENV, KEY_LITERAL };

/* pi's rule (resolve-config-value.js): "!cmd" runs cmd, a set variable's name is its value,
 * anything else is the literal. */
static enum key_kind classify(const char *v, const struct bridge_ctx *c)
{
	if (v[0] == '!')
		return KEY_COMMAND;
	if (plan_env_name_valid(v) && bridge_host_has(c, v))
		return KEY_ENV;
	return KEY_LITERAL;
}

/* Header values: a command is dropped (never run), a variable name kept and passed, a literal
 * dropped (it may be a credential, and only names may reach the sandbox home). */
static int pi_headers(json_object *o, const char *origin, const struct bridge_ctx *c, struct bridge_result *r)
{
	json_object *h = bridge_obj_get(o, "headers");
	char **drop = NULL;
	int e = 0;

	if (!h)
		return 0;
	if (!json_object_is_type(h, json_type_object)) {
		json_object_object_del(o, "headers");
		return 0;
	}
	json_object_object_foreach(h, name, v) {
		const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
		enum key_kind kk = *s ? classify(s, c) : KEY_LITERAL;

		if (kk == KEY_ENV) {
			if ((e = bridge_pass_var(r, s)) < 0)
				break;
			continue;
		}
		if ((e = strv_push(&drop, name)) < 0 ||
		    (e = bridge_note(r, "%s: dropped header '%s' (%s); name an environment variable as its value instead",
			      origin, name, kk == KEY_COMMAND ? "a '!command': aisb never runs host commands"
							      : "a literal value may be a credential")) < 0)
			break;
	}
	for (size_t i = 0; drop && drop[i]; i++)
		json_object_object_del(h, drop[i]);
	strv_free(drop);
	return e < 0 ? -ENOMEM : 0;
}

/* Built-in pi providers whose endpoint is known without models.json, and the variable pi reads
 * their key from (pi-ai's env-api-keys). */
static const struct { const char *name, *host, *env; } pi_builtin[] = {
	{ "anthropic", "api.anthropic.com", "ANTHROPIC_API_KEY" }, { "openai", "api.openai.com", "OPENAI_API_KEY" },
	{ "google", "generativelanguage.googleapis.com", "GEMINI_API_KEY" },
	{ "openrouter", "openrouter.ai", "OPENROUTER_API_KEY" }, { "xai", "api.x.ai", "XAI_API_KEY" },
	{ "groq", "api.groq.com", "GROQ_API_KEY" }, { "mistral", "api.mistral.ai", "MISTRAL_API_KEY" },
	{ "cerebras", "api.cerebras.ai", "CEREBRAS_API_KEY" }, { "deepseek", "api.deepseek.com", "DEEPSEEK_API_KEY" },
};

static const char pi_mfile[] = "~/.pi/agent/models.json", pi_sfile[] = "~/.pi/agent/settings.json";

/* A provider's apiKey: a set variable's name is passed by name (a model key); a literal or a
 * '!command' becomes a reference to the one token variable (c->token_env), and a command is
 * never run. */
static int pi_provider_key(json_object *pv, const char *origin, const struct bridge_ctx *c, struct bridge_result *r)
{
	const char *key = bridge_str_get(pv, "apiKey");
	enum key_kind kk;
	int e;

	if (!key)
		return 0;
	kk = classify(key, c);
	if (kk == KEY_ENV)
		return bridge_key_var(r, key);
	if ((e = bridge_set_str(pv, "apiKey", c->token_env)) < 0)
		return e;
	if (kk == KEY_COMMAND && (e = bridge_note(r, "%s: its apiKey '!command' is not run "
					   "(aisb never runs host commands); "
					   "the sandbox reads the key from $%s",
					   origin, c->token_env)) < 0)
		return e;
	r->need_token = true;
	if (!r->token_origin && !(r->token_origin = strdup(origin)))
		return -ENOMEM;
	return 0;
}

/* One provider of models.json: its key, its headers and those of its models and overrides, its
 * baseUrl and its models' (loopback -> host.aisb.internal). *@ep gets the provider's endpoint
 * (port 0: none). */
static int pi_provider(json_object *pv, const char *origin, const struct bridge_ctx *c, struct bridge_result *r,
		       struct bridge_endpoint *ep)
{
	json_object *ms;
	int e;

	if ((e = pi_provider_key(pv, origin, c, r)) < 0)
		return e;
	if ((e = pi_headers(pv, origin, c, r)) < 0 || (e = bridge_rewrite_url(pv, "baseUrl", origin, r, ep)) < 0)
		return e;
	ms = bridge_obj_get(pv, "models");
	for (size_t i = 0; ms && json_object_is_type(ms, json_type_array) &&
			   i < json_object_array_length(ms); i++) {
		json_object *m = json_object_array_get_idx(ms, i);
		if (!json_object_is_type(m, json_type_object))
			continue;
		if ((e = pi_headers(m, origin, c, r)) < 0 ||
		    (e = bridge_rewrite_url(m, "baseUrl", origin, r, NULL)) < 0)
			return e;
	}
	ms = bridge_obj_get(pv, "modelOverrides");
	if (ms && json_object_is_type(ms, json_type_object)) {
		json_object_object_foreach(ms, mid, m) {
			(void)mid;
			if (json_object_is_type(m, json_type_object) &&
			    (e = pi_headers(m, origin, c, r)) < 0)
				return e;
		}
	}
	return 0;
}

/* models.json: home paths scrubbed, every provider rewritten. The endpoint of the default
 * provider @dp goes to *@def; the others' are added to @r. */
static int pi_models(json_object *models, const char *dp, const struct bridge_ctx *c, struct bridge_result *r,
		     struct bridge_endpoint *def)
{
	json_object *provs = bridge_obj_get(models, "providers");
	int e;

	if ((e = bridge_scrub_home(models, c->host_home, pi_mfile, "", r, 0)) < 0)
		return e;
	if (!provs || !json_object_is_type(provs, json_type_object))
		return 0;
	json_object_object_foreach(provs, name, pv) {
		char origin[160];
		struct bridge_endpoint ep = { .port = 0 };

		if (!json_object_is_type(pv, json_type_object))
			continue;
		snprintf(origin, sizeof(origin), "%s provider '%.60s'", pi_mfile, name);
		if ((e = pi_provider(pv, origin, c, r, &ep)) < 0)
			return e;
		if (ep.port) {
			if (dp && streq(dp, name))
				*def = ep;
			else if ((e = bridge_add_endpoint(r, ep.host, ep.port, ep.loopback, ep.tls, ep.origin)) < 0)
				return e;
		}
	}
	return 0;
}

/* The endpoint that must be reachable: the default provider's when it is known (from
 * models.json, @def, or built in), else every provider models.json points somewhere. */
static int pi_endpoint(const char *dp, const struct bridge_endpoint *def, const struct bridge_ctx *c,
		       struct bridge_result *r)
{
	int e;

	if (def->port) {
		r->n_ep = 0;
		bridge_add_endpoint(r, def->host, def->port, def->loopback, def->tls, def->origin);
		return 0;
	}
	for (size_t i = 0; dp && i < ELEMENTSOF(pi_builtin); i++)
		if (streq(dp, pi_builtin[i].name)) {
			char origin[160];
			snprintf(origin, sizeof(origin), "%s defaultProvider '%s'", pi_sfile, dp);
			r->n_ep = 0;
			bridge_add_endpoint(r, pi_builtin[i].host, 443, false, true, origin);
			/* its key: by name from the host (auth.json, where a login keeps it, is never read) */
			if (bridge_host_has(c, pi_builtin[i].env) && (e = bridge_key_var(r, pi_builtin[i].env)) < 0)
				return e;
		}
	return 0;
}

int bridge_pi(json_object *const *in, const struct bridge_ctx *c, struct bridge_result *r)
{
	json_object *models_in = in ? in[0] : NULL, *settings_in = in ? in[1] : NULL;
	json_object *models = bridge_copy(models_in), *settings = settings_in ? bridge_copy(settings_in) : json_object_new_object();
	struct bridge_endpoint def = { .port = 0 };
	json_object *force = NULL;
	const char *dp;
	int e = -ENOMEM;

	if ((models_in && !models) || !settings)
		goto out;
	if ((e = bridge_scrub_home(settings, c->host_home, pi_sfile, "", r, 0)) < 0)
		goto out;
	dp = bridge_str_get(settings, "defaultProvider");
	if (models && (e = pi_models(models, dp, c, r, &def)) < 0)
		goto out;
	if ((e = pi_endpoint(dp, &def, c, r)) < 0)
		goto out;
	if (c->thinking) {
		/* the thinking level is policy: written over the sandbox's choice on every run */
		if (!(force = json_object_new_object()) ||
		    bridge_set_str(force, "defaultThinkingLevel", c->thinking) < 0) {
			e = -ENOMEM;
			goto out;
		}
	}
	if (models && (e = bridge_add_file(r, ".pi/agent/models.json", BRIDGE_JSON, TAKE_PTR(models), NULL)) < 0)
		goto out;
	e = bridge_add_file(r, ".pi/agent/settings.json", BRIDGE_JSON, TAKE_PTR(settings), TAKE_PTR(force));
out:
	json_object_put(models);
	json_object_put(settings);
	json_object_put(force);
	return e < 0 ? e : 0;
}
