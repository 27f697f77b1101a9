// SPDX-License-Identifier: GPL-2.0-or-later
/* bridge-common.c — what the bridges share: JSON in and out, the per-key merge, URLs, and the
 * helpers of bridge-internal.h */
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
