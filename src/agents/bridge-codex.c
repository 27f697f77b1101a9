// SPDX-License-Identifier: GPL-2.0-or-later
/* bridge-codex.c — codex's bridge: ~/.codex/config.toml rewritten for the sandbox
 * (agents/harness.h) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/bridge-internal.h"
#include "core/plan.h"
#include "util/util.h"

static const char codex_file[] = "~/.codex/config.toml";

/* One entry of model_providers: literal credentials dropped (only variable names reach the
 * sandbox), the variables its env_http_headers name passed, its base_url rewritten (*@ep gets
 * the endpoint; port 0: none). */
static int codex_provider(json_object *pv, const char *origin, const struct bridge_ctx *c, struct bridge_result *r,
			  struct bridge_endpoint *ep)
{
	json_object *eh;
	int e;

	if (bridge_obj_get(pv, "experimental_bearer_token")) {
		json_object_object_del(pv, "experimental_bearer_token");
		if ((e = bridge_note(r, "%s: dropped experimental_bearer_token (only variable names reach the "
			      "sandbox: use env_key)", origin)) < 0)
			return e;
	}
	if (bridge_obj_get(pv, "http_headers")) {
		json_object_object_del(pv, "http_headers");
		if ((e = bridge_note(r, "%s: dropped http_headers (literal values may be credentials: use "
			      "env_http_headers)", origin)) < 0)
			return e;
	}
	eh = bridge_obj_get(pv, "env_http_headers");
	if (eh && json_object_is_type(eh, json_type_object)) {
		json_object_object_foreach(eh, hn, hv) {
			(void)hn;
			const char *var = json_object_is_type(hv, json_type_string) ? json_object_get_string(hv) : NULL;
			if (var && plan_env_name_valid(var) && bridge_host_has(c, var) && (e = bridge_pass_var(r, var)) < 0)
				return e;
		}
	}
	return bridge_rewrite_url(pv, "base_url", origin, r, ep);
}

/* Every entry of model_providers; *@prov gets the @active one (NULL: not among them), whose
 * endpoint is the one that must be reachable. */
static int codex_providers(json_object *doc, const char *active, struct bridge_result *r, const struct bridge_ctx *c,
			   json_object **prov)
{
	json_object *provs = bridge_obj_get(doc, "model_providers");
	char origin[160];
	int e;

	if (!provs || !json_object_is_type(provs, json_type_object))
		return 0;
	json_object_object_foreach(provs, name, pv) {
		struct bridge_endpoint ep = { .port = 0 };

		if (!json_object_is_type(pv, json_type_object))
			continue;
		snprintf(origin, sizeof(origin), "%s model_providers.%.60s", codex_file, name);
		if ((e = codex_provider(pv, origin, c, r, &ep)) < 0)
			return e;
		if (streq(name, active)) {
			*prov = pv;
			if (ep.port)
				bridge_add_endpoint(r, ep.host, ep.port, ep.loopback, ep.tls, ep.origin);
		}
	}
	return 0;
}

/* The active provider's key: its env_key passed by name (a variable the host lacks is a
 * refusal, by bridge_resolve(): codex cannot reach its model without it); with no provider
 * entry and the built-in openai, api.openai.com and OPENAI_API_KEY. */
static int codex_key(json_object *prov, const char *active, const char *origin, const struct bridge_ctx *c,
		     struct bridge_result *r)
{
	const char *key;
	int e;

	if (!prov) {
		if (!streq(active, "openai"))
			return 0;
		bridge_add_endpoint(r, "api.openai.com", 443, false, true, origin);
		if (bridge_host_has(c, "OPENAI_API_KEY"))
			return bridge_key_var(r, "OPENAI_API_KEY");
		return bridge_note(r, "codex: OPENAI_API_KEY is not set and aisb never copies ~/.codex/auth.json: "
				   "export OPENAI_API_KEY, or log in inside the sandbox");
	}
	key = bridge_str_get(prov, "env_key");
	if (!key)
		return 0;
	if (!plan_env_name_valid(key)) {
		json_object_object_del(prov, "env_key");
		return bridge_note(r, "%s: dropped env_key (not a variable name)", origin);
	}
	if (bridge_host_has(c, key))
		return bridge_key_var(r, key);
	/* codex cannot reach its model without it: refused by bridge_resolve() */
	r->need_token = true;
	free(r->token_origin);
	if (asprintf(&r->token_origin, "%s (its env_key %s)", origin, key) < 0) {
		r->token_origin = NULL;
		return -ENOMEM;
	}
	if ((e = bridge_key_var(r, key)) < 0)
		return e;
	return 0;
}

/* mcp_servers: an env table (literal values) is dropped. */
static int codex_mcp(json_object *doc, struct bridge_result *r)
{
	json_object *mcp = bridge_obj_get(doc, "mcp_servers");
	int e;

	if (!mcp || !json_object_is_type(mcp, json_type_object))
		return 0;
	json_object_object_foreach(mcp, sn, sv) {
		if (json_object_is_type(sv, json_type_object) && bridge_obj_get(sv, "env")) {
			json_object_object_del(sv, "env");
			if ((e = bridge_note(r, "%s mcp_servers.%.60s: dropped env (literal values may be credentials: "
				      "use env_vars and --env NAME)", codex_file, sn)) < 0)
				return e;
		}
	}
	return 0;
}

/* The keys written on every run: codex without its own sandbox, and the project trusted.
 * NULL on -ENOMEM. */
static json_object *codex_force(const struct bridge_ctx *c)
{
	json_object *force = json_object_new_object();

	/* aisb is the sandbox: codex's own (bwrap, user namespaces) cannot nest inside it. */
	if (!force || bridge_set_str(force, "sandbox_mode", "danger-full-access") < 0)
		goto oom;
	if (c->project_dst) {
		json_object *projects = bridge_obj_child(force, "projects"), *pr;
		if (!projects || !(pr = bridge_obj_child(projects, c->project_dst)) ||
		    bridge_set_str(pr, "trust_level", "trusted") < 0)
			goto oom;
	}
	return force;
oom:
	json_object_put(force);
	return NULL;
}

int bridge_codex(json_object *const *files, const struct bridge_ctx *c, struct bridge_result *r)
{
	json_object *in = files ? files[0] : NULL;
	json_object *doc = in ? bridge_copy(in) : json_object_new_object();
	json_object *prov = NULL, *force = NULL;
	const char *active;
	char origin[160];
	int e;

	if (!doc)
		return -ENOMEM;
	if ((e = bridge_scrub_home(doc, c->host_home, codex_file, "", r, 0)) < 0)
		goto out;
	active = bridge_str_get(doc, "model_provider");
	if (!active)
		active = "openai";
	if ((e = codex_providers(doc, active, r, c, &prov)) < 0)
		goto out;
	snprintf(origin, sizeof(origin), "%s model_provider '%.60s'", codex_file, active);
	if ((e = codex_key(prov, active, origin, c, r)) < 0 || (e = codex_mcp(doc, r)) < 0)
		goto out;
	/* The host's trust entries name host paths; inside, only the project's own counts. */
	json_object_object_del(doc, "projects");
	if (!(force = codex_force(c))) {
		e = -ENOMEM;
		goto out;
	}
	if ((e = bridge_note(r, "codex: runs without its own sandbox (sandbox_mode = \"danger-full-access\"): aisb "
		      "is the sandbox, and codex's cannot nest inside it")) < 0)
		goto out;
	e = bridge_add_file(r, ".codex/config.toml", BRIDGE_TOML, TAKE_PTR(doc), TAKE_PTR(force));
out:
	json_object_put(doc);
	json_object_put(force);
	return e < 0 ? e : 0;
}
