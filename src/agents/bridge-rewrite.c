// SPDX-License-Identifier: GPL-2.0-or-later
/* bridge-rewrite.c — the pure rewrites of pi, codex and claude config, and the per-key merge */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agents/bridge-internal.h"
#include "core/plan.h"
#include "util/log.h"
#include "util/util.h"

#define SANDBOX_HOME "/home/sandbox"
#define CLAUDE_KEY_VAR "AISB_ANTHROPIC_API_KEY"

void bridge_result_done(struct bridge_result *r)
{
	for (size_t i = 0; i < r->n_files; i++) {
		json_object_put(r->files[i].doc);
		json_object_put(r->files[i].force);
	}
	strv_free(r->pass);
	strv_free(r->alias);
	strv_free(r->set);
	strv_free(r->keys);
	strv_free(r->notes);
	free(r->token_origin);
	memset(r, 0, sizeof(*r));
}

_printf_(2, 3) int bridge_note(struct bridge_result *r, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int k;

	va_start(ap, fmt);
	k = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (k < 0)
		return -ENOMEM;
	return strv_push_take(&r->notes, s) < 0 ? -ENOMEM : 0;
}

int bridge_pass_var(struct bridge_result *r, const char *name)
{
	if (strv_contains(r->pass, name))
		return 0;
	return strv_push(&r->pass, name) < 0 ? -ENOMEM : 0;
}

/* A variable that holds the model key (not a header's value): passed, and kept outside with
 * --key-via-gate. */
int bridge_key_var(struct bridge_result *r, const char *name)
{
	if (!strv_contains(r->keys, name) && strv_push(&r->keys, name) < 0)
		return -ENOMEM;
	return bridge_pass_var(r, name);
}

int bridge_set_var(struct bridge_result *r, const char *name, const char *value)
{
	char *s;
	if (asprintf(&s, "%s=%s", name, value) < 0)
		return -ENOMEM;
	return strv_push_take(&r->set, s) < 0 ? -ENOMEM : 0;
}

/* Takes @doc and @force (may be NULL); @force is overlaid on @doc here and again after every
 * merge. */
int bridge_add_file(struct bridge_result *r, const char *rel, enum bridge_format fmt, json_object *doc,
		    json_object *force)
{
	if (r->n_files >= BRIDGE_FILES_MAX || (force && bridge_overlay(doc, force) < 0)) {
		json_object_put(doc);
		json_object_put(force);
		return r->n_files >= BRIDGE_FILES_MAX ? -E2BIG : -ENOMEM;
	}
	r->files[r->n_files++] = (struct bridge_file){ rel, fmt, doc, force };
	return 0;
}

/* ---- JSON --------------------------------------------------------------------------------- */

json_object *bridge_json_parse(const char *text, size_t len)
{
	struct json_tokener *tok = json_tokener_new_ex(BRIDGE_DEPTH_MAX);
	json_object *o;
	size_t used;

	if (!tok)
		return NULL;
	o = json_tokener_parse_ex(tok, text, (int)len);
	used = json_tokener_get_parse_end(tok);
	if (o && json_tokener_get_error(tok) == json_tokener_success) {
		/* only whitespace may follow the value */
		while (used < len && isspace((unsigned char)text[used]))
			used++;
	}
	if (!o || json_tokener_get_error(tok) != json_tokener_success || used != len ||
	    !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

char *bridge_json_format(json_object *doc)
{
	const char *s = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
						       JSON_C_TO_STRING_NOSLASHESCAPE);
	char *out;
	if (!s || asprintf(&out, "%s\n", s) < 0)
		return NULL;
	return out;
}

json_object *bridge_copy(json_object *o)
{
	json_object *c = NULL;
	if (!o)
		return NULL;
	if (json_object_deep_copy(o, &c, NULL) < 0)
		return NULL;
	return c;
}

int bridge_overlay(json_object *dst, json_object *force)
{
	json_object_object_foreach(force, k, f) {
		json_object *d = NULL, *v;
		if (json_object_is_type(f, json_type_object) && json_object_object_get_ex(dst, k, &d) &&
		    json_object_is_type(d, json_type_object)) {
			if (bridge_overlay(d, f) < 0)
				return -ENOMEM;
			continue;
		}
		v = bridge_copy(f);
		if (!v || json_object_object_add(dst, k, v) < 0) {
			json_object_put(v);
			return -ENOMEM;
		}
	}
	return 0;
}

static bool same(json_object *a, json_object *b)
{
	return json_object_equal(a, b) == 1;
}

json_object *bridge_merge(json_object *base, json_object *cur, json_object *host)
{
	json_object *out;

	if (!cur)
		return bridge_copy(host);
	out = json_object_new_object();
	if (!out)
		return NULL;
	/* keys of the sandbox's copy: kept, followed or merged */
	json_object_object_foreach(cur, k, c) {
		json_object *b = NULL, *h = NULL, *v;

		if (base)
			json_object_object_get_ex(base, k, &b);
		if (host)
			json_object_object_get_ex(host, k, &h);
		if (json_object_is_type(c, json_type_object) && h && json_object_is_type(h, json_type_object))
			v = bridge_merge(b && json_object_is_type(b, json_type_object) ? b : NULL, c, h);
		else if (b && same(c, b))
			v = h ? bridge_copy(h) : NULL; /* untouched: follows the host, or goes with it */
		else
			v = bridge_copy(c);            /* the sandbox changed or invented it */
		if (v && json_object_object_add(out, k, v) < 0) {
			json_object_put(v);
			goto oom;
		}
	}
	/* keys only the host has: new, or deleted by the sandbox */
	if (host) {
		json_object_object_foreach(host, hk, h) {
			json_object *b = NULL, *v;

			if (json_object_object_get_ex(cur, hk, NULL))
				continue;
			if (base && json_object_object_get_ex(base, hk, &b) && same(b, h))
				continue; /* the sandbox deleted it and the host did not change it */
			v = bridge_copy(h);
			if (!v || json_object_object_add(out, hk, v) < 0) {
				json_object_put(v);
				goto oom;
			}
		}
	}
	return out;
oom:
	json_object_put(out);
	return NULL;
}

/* ---- values ------------------------------------------------------------------------------- */

static bool is_loopback_host(const char *h)
{
	struct in_addr a4;
	struct in6_addr a6;
	size_t n = strlen(h);

	if (strcasecmp(h, "localhost") == 0 || (n > 10 && strcasecmp(h + n - 10, ".localhost") == 0))
		return true;
	if (inet_pton(AF_INET, h, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, h, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6);
	return false;
}

int bridge_url_endpoint(const char *url, char *host, size_t host_size, uint16_t *port, bool *loopback,
			char **rewritten)
{
	const char *p, *hs, *he, *rest;
	unsigned long long pn;
	bool https;
	size_t hl;

	if (strncasecmp(url, "http://", 7) == 0)
		https = false, p = url + 7;
	else if (strncasecmp(url, "https://", 8) == 0)
		https = true, p = url + 8;
	else
		return -EINVAL;
	rest = p + strcspn(p, "/?#");
	/* userinfo may hold a credential: such a URL is not bridged */
	if (memchr(p, '@', (size_t)(rest - p)))
		return -EINVAL;
	if (*p == '[') {
		hs = p + 1;
		he = memchr(hs, ']', (size_t)(rest - hs));
		if (!he)
			return -EINVAL;
		p = he + 1;
	} else {
		hs = p;
		he = p + strcspn(p, ":/?#");
		p = he;
	}
	hl = (size_t)(he - hs);
	if (!hl || hl >= host_size)
		return -EINVAL;
	memcpy(host, hs, hl);
	host[hl] = 0;
	*port = https ? 443 : 80;
	if (*p == ':') {
		char num[8];
		size_t nl = (size_t)(rest - p - 1);
		if (!nl || nl >= sizeof(num))
			return -EINVAL;
		memcpy(num, p + 1, nl);
		num[nl] = 0;
		if (parse_u64(num, &pn) < 0 || pn == 0 || pn > 65535)
			return -EINVAL;
		*port = (uint16_t)pn;
	} else if (p != rest)
		return -EINVAL;
	*loopback = is_loopback_host(host);
	if (*loopback)
		snprintf(host, host_size, "%s", BRIDGE_HOST_INTERNAL);
	if (rewritten) {
		if (*loopback) {
			if (asprintf(rewritten, "%s://%s:%u%s", https ? "https" : "http", BRIDGE_HOST_INTERNAL,
				     (unsigned)*port, rest) < 0)
				return -ENOMEM;
		} else if (!(*rewritten = strdup(url)))
			return -ENOMEM;
	}
	return 0;
}

bool bridge_value_in_home(const char *v, const char *home)
{
	if (streq(v, "~") || strncmp(v, "~/", 2) == 0)
		return true;
	if (strncmp(v, "file://", 7) == 0)
		v += 7;
	return home && path_is_absolute(home) && !streq(home, "/") && path_startswith(v, home);
}

bool bridge_thinking_valid(const char *level)
{
	static const char *const levels[] = { "off", "minimal", "low", "medium", "high", "xhigh" };
	for (size_t i = 0; i < ELEMENTSOF(levels); i++)
		if (streq(level, levels[i]))
			return true;
	return false;
}

/* Removes every string below @o that points into the host's home, with a note naming the key.
 * Arrays lose the element. */
int bridge_scrub_home(json_object *o, const char *home, const char *file, const char *path,
		      struct bridge_result *r, unsigned depth)
{
	int k;

	if (depth > BRIDGE_DEPTH_MAX)
		return -EINVAL;
	if (json_object_is_type(o, json_type_object)) {
		char **drop = NULL;
		json_object_object_foreach(o, key, v) {
			char sub[512];
			snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", key);
			if (json_object_is_type(v, json_type_string) &&
			    bridge_value_in_home(json_object_get_string(v), home)) {
				if (strv_push(&drop, key) < 0 || bridge_note(r, "%s: dropped '%s' (it points into your home, "
								      "which the sandbox cannot see)", file, sub) < 0) {
					strv_free(drop);
					return -ENOMEM;
				}
			} else if ((k = bridge_scrub_home(v, home, file, sub, r, depth + 1)) < 0) {
				strv_free(drop);
				return k;
			}
		}
		for (size_t i = 0; drop && drop[i]; i++)
			json_object_object_del(o, drop[i]);
		strv_free(drop);
	} else if (json_object_is_type(o, json_type_array)) {
		for (size_t i = json_object_array_length(o); i-- > 0;) {
			json_object *v = json_object_array_get_idx(o, i);
			char sub[512];
			snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
			if (json_object_is_type(v, json_type_string) &&
			    bridge_value_in_home(json_object_get_string(v), home)) {
				json_object_array_del_idx(o, i, 1);
				if (bridge_note(r, "%s: dropped '%s' (it points into your home, which the sandbox cannot "
					 "see)", file, sub) < 0)
					return -ENOMEM;
			} else if ((k = bridge_scrub_home(v, home, file, sub, r, depth + 1)) < 0)
				return k;
		}
	}
	return 0;
}

json_object *bridge_obj_get(json_object *o, const char *k)
{
	json_object *v = NULL;
	if (o && json_object_object_get_ex(o, k, &v))
		return v;
	return NULL;
}

const char *bridge_str_get(json_object *o, const char *k)
{
	json_object *v = bridge_obj_get(o, k);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

int bridge_set_str(json_object *o, const char *k, const char *v)
{
	json_object *s = json_object_new_string(v);
	if (!s || json_object_object_add(o, k, s) < 0) {
		json_object_put(s);
		return -ENOMEM;
	}
	return 0;
}

int bridge_set_bool(json_object *o, const char *k, bool v)
{
	json_object *s = json_object_new_boolean(v);
	if (!s || json_object_object_add(o, k, s) < 0) {
		json_object_put(s);
		return -ENOMEM;
	}
	return 0;
}

/* @o[@k] as an object, created when absent or not an object. */
json_object *bridge_obj_child(json_object *o, const char *k)
{
	json_object *v = bridge_obj_get(o, k);
	if (v && json_object_is_type(v, json_type_object))
		return v;
	v = json_object_new_object();
	if (!v || json_object_object_add(o, k, v) < 0) {
		json_object_put(v);
		return NULL;
	}
	return v;
}

/* Is @name set (and not empty) on the host? */
bool bridge_host_has(const struct bridge_ctx *c, const char *name)
{
	const char *v = c->get(name);
	return v && *v;
}

int bridge_add_endpoint(struct bridge_result *r, const char *host, uint16_t port, bool loopback, bool tls,
			const char *origin)
{
	for (size_t i = 0; i < r->n_ep; i++)
		if (streq(r->ep[i].host, host) && r->ep[i].port == port)
			return 0;
	if (r->n_ep >= BRIDGE_ENDPOINTS_MAX)
		return 0;
	struct bridge_endpoint *e = &r->ep[r->n_ep++];
	snprintf(e->host, sizeof(e->host), "%s", host);
	e->port = port;
	e->loopback = loopback;
	e->tls = tls;
	snprintf(e->origin, sizeof(e->origin), "%s", origin);
	return 0;
}

/* Rewrites the URL in @o[@k] (loopback -> host.aisb.internal). An unusable URL is dropped with a
 * note. On success with @ep non-NULL, *@ep gets the endpoint. */
int bridge_rewrite_url(json_object *o, const char *k, const char *origin, struct bridge_result *r,
		       struct bridge_endpoint *ep)
{
	const char *url = bridge_str_get(o, k);
	_cleanup_free_ char *nu = NULL;
	char host[256];
	uint16_t port;
	bool lo, tls;
	int e;

	if (!url)
		return 0;
	/* read before bridge_set_str(), which frees the string @url points into */
	tls = strncasecmp(url, "https://", 8) == 0;
	e = bridge_url_endpoint(url, host, sizeof(host), &port, &lo, &nu);
	if (e == -ENOMEM)
		return e;
	if (e < 0) {
		json_object_object_del(o, k);
		return bridge_note(r, "%s: dropped '%s' (not an http(s) URL without user info)", origin, k);
	}
	if (bridge_set_str(o, k, nu) < 0)
		return -ENOMEM;
	if (ep) {
		snprintf(ep->host, sizeof(ep->host), "%s", host);
		ep->port = port;
		ep->loopback = lo;
		ep->tls = tls;
		snprintf(ep->origin, sizeof(ep->origin), "%s", origin);
	}
	return 1;
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

int bridge_pi(json_object *const *in, const struct bridge_ctx *c, struct bridge_result *r)
{
	json_object *models_in = in ? in[0] : NULL, *settings_in = in ? in[1] : NULL;
	static const char mfile[] = "~/.pi/agent/models.json", sfile[] = "~/.pi/agent/settings.json";
	json_object *models = bridge_copy(models_in), *settings = settings_in ? bridge_copy(settings_in) : json_object_new_object();
	struct bridge_endpoint def = { .port = 0 };
	json_object *force = NULL;
	const char *dp;
	int e = -ENOMEM;

	if ((models_in && !models) || !settings)
		goto out;
	if ((e = bridge_scrub_home(settings, c->host_home, sfile, "", r, 0)) < 0)
		goto out;
	dp = bridge_str_get(settings, "defaultProvider");
	if (models) {
		json_object *provs = bridge_obj_get(models, "providers");
		if ((e = bridge_scrub_home(models, c->host_home, mfile, "", r, 0)) < 0)
			goto out;
		if (provs && json_object_is_type(provs, json_type_object)) {
			json_object_object_foreach(provs, name, pv) {
				char origin[160];
				struct bridge_endpoint ep = { .port = 0 };
				const char *key;
				json_object *ms;

				if (!json_object_is_type(pv, json_type_object))
					continue;
				snprintf(origin, sizeof(origin), "%s provider '%.60s'", mfile, name);
				key = bridge_str_get(pv, "apiKey");
				if (key) {
					enum key_kind kk = classify(key, c);
					if (kk == KEY_ENV) {
						if ((e = bridge_key_var(r, key)) < 0)
							goto out;
					} else {
						if ((e = bridge_set_str(pv, "apiKey", c->token_env)) < 0)
							goto out;
						if (kk == KEY_COMMAND && (e = bridge_note(r, "%s: its apiKey '!command' is not run "
										   "(aisb never runs host commands); "
										   "the sandbox reads the key from $%s",
										   origin, c->token_env)) < 0)
							goto out;
						r->need_token = true;
						if (!r->token_origin && !(r->token_origin = strdup(origin))) {
							e = -ENOMEM;
							goto out;
						}
					}
				}
				if ((e = pi_headers(pv, origin, c, r)) < 0 || (e = bridge_rewrite_url(pv, "baseUrl", origin, r, &ep)) < 0)
					goto out;
				ms = bridge_obj_get(pv, "models");
				for (size_t i = 0; ms && json_object_is_type(ms, json_type_array) &&
						   i < json_object_array_length(ms); i++) {
					json_object *m = json_object_array_get_idx(ms, i);
					if (!json_object_is_type(m, json_type_object))
						continue;
					if ((e = pi_headers(m, origin, c, r)) < 0 ||
					    (e = bridge_rewrite_url(m, "baseUrl", origin, r, NULL)) < 0)
						goto out;
				}
				ms = bridge_obj_get(pv, "modelOverrides");
				if (ms && json_object_is_type(ms, json_type_object)) {
					json_object_object_foreach(ms, mid, m) {
						(void)mid;
						if (json_object_is_type(m, json_type_object) &&
						    (e = pi_headers(m, origin, c, r)) < 0)
							goto out;
					}
				}
				if (ep.port) {
					if (dp && streq(dp, name))
						def = ep;
					else if ((e = bridge_add_endpoint(r, ep.host, ep.port, ep.loopback, ep.tls, ep.origin)) < 0)
						goto out;
				}
			}
		}
	}
	/* The endpoint that must be reachable: the default provider's when it is known, else every
	 * provider models.json points somewhere. */
	if (def.port) {
		r->n_ep = 0;
		bridge_add_endpoint(r, def.host, def.port, def.loopback, def.tls, def.origin);
	} else if (dp) {
		for (size_t i = 0; i < ELEMENTSOF(pi_builtin); i++)
			if (streq(dp, pi_builtin[i].name)) {
				char origin[160];
				snprintf(origin, sizeof(origin), "%s defaultProvider '%s'", sfile, dp);
				r->n_ep = 0;
				bridge_add_endpoint(r, pi_builtin[i].host, 443, false, true, origin);
				/* its key: by name from the host (auth.json, where a login keeps it, is never read) */
				if (bridge_host_has(c, pi_builtin[i].env) && (e = bridge_key_var(r, pi_builtin[i].env)) < 0)
					goto out;
			}
	}
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

/* ---- codex -------------------------------------------------------------------------------- */

int bridge_codex(json_object *const *files, const struct bridge_ctx *c, struct bridge_result *r)
{
	static const char file[] = "~/.codex/config.toml";
	json_object *in = files ? files[0] : NULL;
	json_object *doc = in ? bridge_copy(in) : json_object_new_object();
	json_object *provs, *mcp, *prov = NULL, *force = NULL;
	const char *active;
	char origin[160];
	int e = -ENOMEM;

	if (!doc)
		return -ENOMEM;
	if ((e = bridge_scrub_home(doc, c->host_home, file, "", r, 0)) < 0)
		goto out;
	active = bridge_str_get(doc, "model_provider");
	if (!active)
		active = "openai";
	provs = bridge_obj_get(doc, "model_providers");
	if (provs && json_object_is_type(provs, json_type_object)) {
		json_object_object_foreach(provs, name, pv) {
			json_object *eh;
			struct bridge_endpoint ep = { .port = 0 };

			if (!json_object_is_type(pv, json_type_object))
				continue;
			snprintf(origin, sizeof(origin), "%s model_providers.%.60s", file, name);
			if (bridge_obj_get(pv, "experimental_bearer_token")) {
				json_object_object_del(pv, "experimental_bearer_token");
				if ((e = bridge_note(r, "%s: dropped experimental_bearer_token (only variable names reach the "
					      "sandbox: use env_key)", origin)) < 0)
					goto out;
			}
			if (bridge_obj_get(pv, "http_headers")) {
				json_object_object_del(pv, "http_headers");
				if ((e = bridge_note(r, "%s: dropped http_headers (literal values may be credentials: use "
					      "env_http_headers)", origin)) < 0)
					goto out;
			}
			eh = bridge_obj_get(pv, "env_http_headers");
			if (eh && json_object_is_type(eh, json_type_object)) {
				json_object_object_foreach(eh, hn, hv) {
					(void)hn;
					const char *var = json_object_is_type(hv, json_type_string) ? json_object_get_string(hv) : NULL;
					if (var && plan_env_name_valid(var) && bridge_host_has(c, var) && (e = bridge_pass_var(r, var)) < 0)
						goto out;
				}
			}
			if ((e = bridge_rewrite_url(pv, "base_url", origin, r, &ep)) < 0)
				goto out;
			if (streq(name, active)) {
				prov = pv;
				if (ep.port)
					bridge_add_endpoint(r, ep.host, ep.port, ep.loopback, ep.tls, ep.origin);
			}
		}
	}
	snprintf(origin, sizeof(origin), "%s model_provider '%.60s'", file, active);
	if (prov) {
		const char *key = bridge_str_get(prov, "env_key");
		if (key) {
			if (!plan_env_name_valid(key)) {
				json_object_object_del(prov, "env_key");
				if ((e = bridge_note(r, "%s: dropped env_key (not a variable name)", origin)) < 0)
					goto out;
			} else if (bridge_host_has(c, key)) {
				if ((e = bridge_key_var(r, key)) < 0)
					goto out;
			} else {
				/* codex cannot reach its model without it: refused by bridge_resolve() */
				r->need_token = true;
				free(r->token_origin);
				if (asprintf(&r->token_origin, "%s (its env_key %s)", origin, key) < 0) {
					r->token_origin = NULL;
					goto out;
				}
				if ((e = bridge_key_var(r, key)) < 0)
					goto out;
			}
		}
	} else if (streq(active, "openai")) {
		bridge_add_endpoint(r, "api.openai.com", 443, false, true, origin);
		if (bridge_host_has(c, "OPENAI_API_KEY")) {
			if ((e = bridge_key_var(r, "OPENAI_API_KEY")) < 0)
				goto out;
		} else if ((e = bridge_note(r, "codex: OPENAI_API_KEY is not set and aisb never copies ~/.codex/auth.json: "
				     "export OPENAI_API_KEY, or log in inside the sandbox")) < 0)
			goto out;
	}
	mcp = bridge_obj_get(doc, "mcp_servers");
	if (mcp && json_object_is_type(mcp, json_type_object)) {
		json_object_object_foreach(mcp, sn, sv) {
			if (json_object_is_type(sv, json_type_object) && bridge_obj_get(sv, "env")) {
				json_object_object_del(sv, "env");
				if ((e = bridge_note(r, "%s mcp_servers.%.60s: dropped env (literal values may be credentials: "
					      "use env_vars and --env NAME)", file, sn)) < 0)
					goto out;
			}
		}
	}
	/* The host's trust entries name host paths; inside, only the project's own counts. */
	json_object_object_del(doc, "projects");
	/* aisb is the sandbox: codex's own (bwrap, user namespaces) cannot nest inside it. */
	if (!(force = json_object_new_object()) || bridge_set_str(force, "sandbox_mode", "danger-full-access") < 0) {
		e = -ENOMEM;
		goto out;
	}
	if (c->project_dst) {
		json_object *projects = bridge_obj_child(force, "projects"), *pr;
		if (!projects || !(pr = bridge_obj_child(projects, c->project_dst)) ||
		    bridge_set_str(pr, "trust_level", "trusted") < 0) {
			e = -ENOMEM;
			goto out;
		}
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

/* ---- claude ------------------------------------------------------------------------------- */

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

int bridge_claude(json_object *const *in, const struct bridge_ctx *c, struct bridge_result *r)
{
	json_object *state_in = in ? in[0] : NULL, *settings_in = in ? in[1] : NULL;
	static const char sfile[] = "~/.claude/settings.json";
	json_object *settings = settings_in ? bridge_copy(settings_in) : json_object_new_object();
	json_object *state = json_object_new_object(), *env, *perm;
	json_object *sforce = json_object_new_object(), *tforce = json_object_new_object(), *fenv;
	struct bridge_endpoint ep = { .port = 0 };
	const char *base;
	char origin[160];
	int e = -ENOMEM;

	if (!settings || !state || !sforce || !tforce)
		goto out;
	if ((e = bridge_scrub_home(settings, c->host_home, sfile, "", r, 0)) < 0)
		goto out;
	for (size_t i = 0; i < ELEMENTSOF(claude_cred_helpers); i++)
		if (bridge_obj_get(settings, claude_cred_helpers[i])) {
			json_object_object_del(settings, claude_cred_helpers[i]);
			if ((e = bridge_note(r, "%s: dropped %s (a host command that produces credentials is never run)",
				      sfile, claude_cred_helpers[i])) < 0)
				goto out;
		}
	if (!(env = bridge_obj_child(settings, "env")))
		goto out;
	{
		char **drop = NULL;
		json_object_object_foreach(env, name, v) {
			if (!json_object_is_type(v, json_type_string) || (credential_name(name) && !streq(name, "ANTHROPIC_BASE_URL"))) {
				if (strv_push(&drop, name) < 0 ||
				    bridge_note(r, "%s: dropped env.%s (values of credentials stay on the host: export it, "
					 "aisb passes ANTHROPIC_API_KEY and ANTHROPIC_AUTH_TOKEN by name)", sfile, name) < 0) {
					strv_free(drop);
					goto out;
				}
			}
		}
		for (size_t i = 0; drop && drop[i]; i++)
			json_object_object_del(env, drop[i]);
		strv_free(drop);
	}
	/* The endpoint: settings' env overrides the process environment in claude. */
	base = bridge_str_get(env, "ANTHROPIC_BASE_URL");
	if (base)
		snprintf(origin, sizeof(origin), "%s env.ANTHROPIC_BASE_URL", sfile);
	else if ((base = c->get("ANTHROPIC_BASE_URL")) && *base)
		snprintf(origin, sizeof(origin), "$ANTHROPIC_BASE_URL");
	else
		base = NULL;
	if (base) {
		_cleanup_free_ char *nu = NULL;
		/* read before bridge_set_str(), which frees the string @base may point into */
		bool tls = strncasecmp(base, "https://", 8) == 0;
		int k = bridge_url_endpoint(base, ep.host, sizeof(ep.host), &ep.port, &ep.loopback, &nu);
		if (k == -ENOMEM)
			goto out;
		if (k < 0) {
			json_object_object_del(env, "ANTHROPIC_BASE_URL");
			if ((e = bridge_note(r, "%s: not bridged (not an http(s) URL without user info)", origin)) < 0)
				goto out;
		} else {
			if (bridge_obj_get(env, "ANTHROPIC_BASE_URL") && (e = bridge_set_str(env, "ANTHROPIC_BASE_URL", nu)) < 0)
				goto out;
			if ((e = bridge_set_var(r, "ANTHROPIC_BASE_URL", nu)) < 0)
				goto out;
			bridge_add_endpoint(r, ep.host, ep.port, ep.loopback, tls, origin);
		}
	} else
		bridge_add_endpoint(r, "api.anthropic.com", 443, false, true, "claude's default endpoint");
	/* The key reaches claude through apiKeyHelper, under another name: claude asks before it
	 * uses an ANTHROPIC_API_KEY from the environment, and its answer stores the key's tail in
	 * .claude.json (measured with 2.1.332). The helper runs inside the sandbox. */
	if (bridge_host_has(c, "ANTHROPIC_API_KEY")) {
		if (strv_push(&r->alias, CLAUDE_KEY_VAR "=ANTHROPIC_API_KEY") < 0 ||
		    strv_push(&r->keys, CLAUDE_KEY_VAR) < 0 ||
		    bridge_set_str(settings, "apiKeyHelper", "printenv " CLAUDE_KEY_VAR) < 0) {
			e = -ENOMEM;
			goto out;
		}
	}
	if (bridge_host_has(c, "ANTHROPIC_AUTH_TOKEN") && (e = bridge_key_var(r, "ANTHROPIC_AUTH_TOKEN")) < 0)
		goto out;
	/* Only the model endpoint is allowed: no telemetry or update checks that would be denied. */
	if (!(fenv = bridge_obj_child(sforce, "env")) ||
	    bridge_set_str(fenv, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1") < 0 ||
	    bridge_set_str(fenv, "DISABLE_AUTOUPDATER", "1") < 0) {
		e = -ENOMEM;
		goto out;
	}
	/* aisb is the sandbox: the permission prompts guard what aisb already confines. The host's own
	 * choice of mode wins. */
	if (!(perm = bridge_obj_child(settings, "permissions")))
		goto out;
	if (!bridge_str_get(perm, "defaultMode")) {
		/* disableAutoMode: without it 2.1.332 offers to switch to auto mode on every start */
		if ((e = bridge_set_str(perm, "defaultMode", "bypassPermissions")) < 0 ||
		    (!bridge_str_get(perm, "disableAutoMode") && (e = bridge_set_str(perm, "disableAutoMode", "disable")) < 0) ||
		    (e = bridge_note(r, "claude: runs with permissions.defaultMode \"bypassPermissions\": aisb is the "
			      "sandbox (set permissions.defaultMode in %s to choose another)", sfile)) < 0)
			goto out;
	}
	if ((e = bridge_set_bool(sforce, "skipDangerousModePermissionPrompt", true)) < 0)
		goto out;

	/* ~/.claude.json: preferences only, and the screens that need Anthropic's servers done. */
	for (size_t i = 0; state_in && i < ELEMENTSOF(claude_state_keys); i++) {
		json_object *v = bridge_obj_get(state_in, claude_state_keys[i]);
		if (v && !json_object_is_type(v, json_type_object) && !json_object_is_type(v, json_type_array) &&
		    !(json_object_is_type(v, json_type_string) && bridge_value_in_home(json_object_get_string(v), c->host_home))) {
			json_object *cv = bridge_copy(v);
			if (!cv || json_object_object_add(state, claude_state_keys[i], cv) < 0) {
				json_object_put(cv);
				goto out;
			}
		}
	}
	if ((e = bridge_set_bool(tforce, "hasCompletedOnboarding", true)) < 0 ||
	    (e = bridge_set_bool(tforce, "bypassPermissionsModeAccepted", true)) < 0)
		goto out;
	if (c->project_dst) {
		json_object *projects = bridge_obj_child(tforce, "projects"), *pr;
		if (!projects || !(pr = bridge_obj_child(projects, c->project_dst)) ||
		    bridge_set_bool(pr, "hasTrustDialogAccepted", true) < 0 ||
		    bridge_set_bool(pr, "hasCompletedProjectOnboarding", true) < 0) {
			e = -ENOMEM;
			goto out;
		}
	}
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
