/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bridge-internal.h — the pure parts of the bridges, shared by bridge.c and the unit tests.
 *
 * Everything here computes data: rewrite a parsed host config (json-c tree; TOML is read into the
 * same tree), merge it with the sandbox's copy, parse and format the TOML subset. Nothing reads
 * the host or writes a file.
 */
#ifndef AISB_AGENTS_BRIDGE_INTERNAL_H
#define AISB_AGENTS_BRIDGE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "agents/harness.h"
#include "core/plan.h"
#include "util/macro.h"


#define BRIDGE_FILE_MAX (1 << 20)   /* a host config file larger than this is refused */
#define BRIDGE_DEPTH_MAX 32         /* nesting depth of JSON/TOML values */
#define BRIDGE_HOST_INTERNAL "host.aisb.internal"
#define BRIDGE_ENDPOINTS_MAX 16
#define BRIDGE_FILES_MAX 4

struct bridge_endpoint {
	char host[256];      /* after the rewrite: host.aisb.internal for a loopback endpoint */
	uint16_t port;
	bool loopback;       /* the host config named a loopback address */
	bool tls;            /* https:// (or a built-in endpoint, always https) */
	char origin[160];    /* "~/.pi/agent/models.json provider 'mock'" */
};

struct bridge_file {
	const char *rel;          /* path below the sandbox home, e.g. ".pi/agent/models.json" */
	enum bridge_format fmt;
	json_object *doc;         /* host-derived content, forced keys included (owned) */
	json_object *force;       /* keys written on every run, over the merge (owned; may be NULL) */
};

/* What one harness's bridge computed. */
struct bridge_result {
	struct bridge_file files[BRIDGE_FILES_MAX];
	size_t n_files;
	struct bridge_endpoint ep[BRIDGE_ENDPOINTS_MAX];
	size_t n_ep;
	char **pass;              /* host variables to pass by name (their values are secrets) */
	char **alias;             /* "INSIDE=HOST": host variable HOST passed as INSIDE (secret) */
	char **set;               /* NAME=VALUE the sandbox gets (not secret: URLs, switches) */
	char **keys;              /* the names inside (of pass and alias) that hold a model key, not a
				   * header value: what --key-via-gate keeps outside */
	char **notes;             /* one line each, announced on stderr; never a value */
	bool need_token;          /* a literal or command key became a reference to the token variable */
	char *token_origin;       /* which key needs it, for the refusal message */
};

/* What the rewrites need to know about the host and the flags. */
struct bridge_ctx {
	const char *host_home;    /* values below it are dropped */
	const char *token_env;    /* pi: the ONE variable literal keys become; never NULL */
	const char *thinking;     /* pi: level to force, or NULL for "host" */
	const char *project_dst;  /* where the project appears inside (trust entries), or NULL */
	env_getter get;           /* host environment: is a named variable set? */
};

void bridge_result_done(struct bridge_result *r);

/* ---- pure helpers (bridge-common.c) ------------------------------------------------------ */

/* Parses JSON text, bounded in depth. NULL when it is not a JSON object. Does not log. */
json_object *bridge_json_parse(const char *text, size_t len);

/* Serializes @doc as pretty JSON with a trailing newline. Caller frees. Does not log. */
char *bridge_json_format(json_object *doc);

/**
 * bridge_merge() - three-way merge of a bridged file, per key
 * @base: what aisb derived from the host last time (NULL: never written)
 * @cur: the sandbox's current copy (NULL: deleted or unparseable -> re-seed from @host)
 * @host: what aisb derives from the host now
 *
 * A key the sandbox changed or added (it differs from @base) keeps the sandbox's value; an
 * untouched key (equal to @base) follows @host; a key the sandbox deleted stays deleted unless
 * the host changed it. Objects merge recursively; arrays and scalars are values.
 * Return: a new object, or NULL on -ENOMEM. Does not log.
 */
json_object *bridge_merge(json_object *base, json_object *cur, json_object *host);

/* Sets every key of @force in @dst (objects recursively). Return: 0 or -ENOMEM. Does not log. */
int bridge_overlay(json_object *dst, json_object *force);

/* Splits an http(s) URL into host and port (default by scheme) and reports whether the host is
 * loopback (127.0.0.0/8, ::1, localhost). On success and @rewritten non-NULL, *@rewritten is
 * the URL with a loopback host replaced by host.aisb.internal (or a copy). Does not log.
 * Return: 0, -EINVAL for an unusable URL, -ENOMEM. */
int bridge_url_endpoint(const char *url, char *host, size_t host_size, uint16_t *port, bool *loopback,
			char **rewritten);

/* Does @v point into @home (or start with "~/")? */
bool bridge_value_in_home(const char *v, const char *home);

/* ---- the bridges' shared helpers (bridge-common.c): what every bridge does to @r and to
 * the json-c trees. Return -ENOMEM (or -E2BIG: more than BRIDGE_FILES_MAX files) unless said
 * otherwise. None logs: notes go into @r and are announced by bridge_resolve(). */

/* Appends one line to @r->notes. */
_printf_(2, 3) int bridge_note(struct bridge_result *r, const char *fmt, ...);
/* Passes host variable @name by name (once). */
int bridge_pass_var(struct bridge_result *r, const char *name);
/* A variable that holds the model key (not a header's value): passed, and kept outside with
 * --key-via-gate. */
int bridge_key_var(struct bridge_result *r, const char *name);
/* The sandbox gets NAME=VALUE (not a secret). */
int bridge_set_var(struct bridge_result *r, const char *name, const char *value);
/* Adds file @rel; takes @doc and @force (may be NULL); @force is overlaid on @doc here and again
 * after every merge. */
int bridge_add_file(struct bridge_result *r, const char *rel, enum bridge_format fmt, json_object *doc,
		    json_object *force);
/* A deep copy of @o (NULL for NULL or on -ENOMEM). */
json_object *bridge_copy(json_object *o);
/* Removes every string below @o that points into the host's home, with a note naming the key
 * (@file, @path: where, for the note). Arrays lose the element. Return: 0, -ENOMEM, or -EINVAL
 * deeper than BRIDGE_DEPTH_MAX. */
int bridge_scrub_home(json_object *o, const char *home, const char *file, const char *path,
		      struct bridge_result *r, unsigned depth);
/* @o[@k], NULL when @o is NULL or has no @k. */
json_object *bridge_obj_get(json_object *o, const char *k);
/* @o[@k] when it is a string, else NULL. */
const char *bridge_str_get(json_object *o, const char *k);
/* @o[@k] = @v. */
int bridge_set_str(json_object *o, const char *k, const char *v);
int bridge_set_bool(json_object *o, const char *k, bool v);
/* @o[@k] as an object, created when absent or not an object; NULL on -ENOMEM. */
json_object *bridge_obj_child(json_object *o, const char *k);
/* Is @name set (and not empty) on the host? */
bool bridge_host_has(const struct bridge_ctx *c, const char *name);
/* Adds an endpoint the sandbox must reach (once per host:port, at most BRIDGE_ENDPOINTS_MAX).
 * Return: 0. */
int bridge_add_endpoint(struct bridge_result *r, const char *host, uint16_t port, bool loopback, bool tls,
			const char *origin);
/* Rewrites the URL in @o[@k] (loopback -> host.aisb.internal). An unusable URL is dropped with a
 * note. Return: 1 rewritten (*@ep, when non-NULL, gets the endpoint), 0 no URL or dropped,
 * -ENOMEM. */
int bridge_rewrite_url(json_object *o, const char *k, const char *origin, struct bridge_result *r,
		       struct bridge_endpoint *ep);

/* ---- the bridges, one per row of the harness table (agents/harness.h), one file each:
 * bridge-pi.c, bridge-codex.c, bridge-claude.c. */

/* The rewrites, one per row of the harness table (agents/harness.h). @in[i] is the parsed host
 * file of the row's files[i] (NULL: absent; @in itself may be NULL: no file at all) — pi:
 * models.json, settings.json; codex: config.toml; claude: ~/.claude.json, ~/.claude/settings.json.
 * They add to @r (files, endpoints, variables, notes). Return: 0 or -ENOMEM (or -EINVAL with a
 * note for unusable input). */
int bridge_pi(json_object *const *in, const struct bridge_ctx *c, struct bridge_result *r);
int bridge_codex(json_object *const *in, const struct bridge_ctx *c, struct bridge_result *r);
int bridge_claude(json_object *const *in, const struct bridge_ctx *c, struct bridge_result *r);

/* Is @level one of pi's thinking levels? (bridge-pi.c) */
bool bridge_thinking_valid(const char *level);
#define BRIDGE_THINKING_LEVELS "off minimal low medium high xhigh"

/* ---- the TOML subset (bridge-toml.c) ----------------------------------------------------- */

/**
 * bridge_toml_parse() - read the TOML subset codex configs use into a json-c object
 * @text: the file's content (NUL-terminated)
 * @out: the document
 * @err: on failure, "line N: what" (size @err_size); never quotes a value
 *
 * Supported: comments, `key = value` with bare, quoted and dotted keys, `[table]` and
 * `[a."b.c"]` headers, `[[array of tables]]`, basic and literal strings (single- and
 * multi-line), integers, floats, booleans, arrays (multi-line) and inline tables. Dates and
 * times are refused. Bounded: depth BRIDGE_DEPTH_MAX. Does not log.
 * Return: 0, -EINVAL (err set), -ENOMEM.
 */
int bridge_toml_parse(const char *text, json_object **out, char *err, size_t err_size);

/* Writes @doc (an object whose values the parser can produce) as TOML. Caller frees. NULL on
 * -ENOMEM. Does not log. */
char *bridge_toml_format(json_object *doc);

#endif
