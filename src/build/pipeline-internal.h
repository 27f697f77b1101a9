/* SPDX-License-Identifier: GPL-2.0-or-later */
/* pipeline-internal.h — what the files of build_run() share (build/pipeline.h): the two builders'
 * entry points, the context as the COPY steps see it, the cache's names and pins, and the
 * build's scratch and state files. Only src/build's pipeline files and their tests include it.
 */
#ifndef AISB_BUILD_PIPELINE_INTERNAL_H
#define AISB_BUILD_PIPELINE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "build/containerfile.h"
#include "build/context.h"
#include "build/pipeline.h"

struct net_plan;
struct store;
struct store_ref;

/* The recipe's name in messages: the file, or "(built-in recipe)". Does not log. */
const char *build_recipe_name(const struct build_request *req);

/* Logs a recipe error @err (from cf_parse()/cf_resolve(), @r) against @name, with its line.
 * Return: the exit code, 125 for -ENOMEM, else 78. */
int build_report_recipe(const char *name, int r, const struct cf_error *err);

/* The request's registry flags laid over the environment's @reg (image_opts_init()), as
 * regflag_apply() would have applied them one by one: --tls-verify and --cert-dir replace, the
 * --authfile files (last given first) go before the environment's. Return: 0, -ENOMEM. Does
 * not log. */
int build_registry_over(struct registry_opts *reg, const struct build_request *o);

/* The context as the COPY steps see it: the listing and, per COPY step, what it takes. */
struct ctx_state {
	struct build_context ctx;
	bool **copies;
	size_t n_copies;
};

/* Frees what @cs holds and zeroes it; a zeroed @cs is fine. Does not log. */
void ctx_state_done(struct ctx_state *cs);

/* Lists the context (only when a COPY needs it), checks every COPY source against it and, with
 * @hash, hashes what the COPY steps take. Return: 0 or -errno. Logs on failure. */
int build_load_context(const char *context, const struct cf_recipe *rc, bool hash, struct ctx_state *cs);

/* The build's tag (content hash of @in), its cache pin name localhost/aisb-build:TAG and, for
 * -t @name, localhost/NAME. Return: 0, -ENOMEM. Does not log. (build/cache.c) */
int build_names(const struct build_tag_input *in, const char *name, char tag[65], char **cache_ref,
		char **tag_local);

/* The same inputs were built before when the pin @cache_ref is complete: then nothing runs, -t
 * (@tag_local, or NULL) is pointed at it and the image's name printed. Return: 1 on a hit, 0 on
 * a miss, -errno. Logs on failure. (build/cache.c) */
int build_cache_hit(struct store *s, const char *cache_ref, const char *tag_local);

/* Records @pin (an imported image) under @refstr as well; *@canonical (when not NULL) the
 * parsed name. Return: 0 or -errno. Logs on failure. (build/cache.c) */
int build_pin_as(struct store *s, const struct store_ref *pin, const char *refstr, char **canonical);

/* A new private directory STORE/tmp/build-XXXXXX (same filesystem as the store: results
 * appear by rename). Return: its path, or NULL. Logs on failure. */
char *build_dir_new(struct store *s);

/* $XDG_STATE_HOME/aisb/build-TAG.SUFFIX, created 0600 and truncated; @what names it in
 * messages. Return: the fd, or -1 (warned: the build goes on without it). */
int build_state_file(const char *tag, const char *suffix, const char *what);

/* --builder podman (or its fallback): build, save, import; a cache hit runs nothing. @text:
 * the recipe as checked; @np: the allowlist's plan, or NULL: RUN steps get no network
 * (--network=none), as the native builder's. Returns an exit code. (build/podman-job.c) */
int build_podman(const struct build_request *req, const char *text, size_t len, const struct containerfile *cf,
		 const struct cf_recipe *rc, const struct net_plan *np);

/* The native builder: FROM through the store, the steps on the build's overlay (native.c), one
 * layer, the image committed and pinned; a cache hit runs nothing. Returns an exit code.
 * (build/native-job.c) */
int build_native(const struct build_request *req, const struct containerfile *cf, const struct cf_recipe *rc0,
		 const struct net_plan *np);

#endif
