// SPDX-License-Identifier: GPL-2.0-or-later
/* commit.c — image config and manifest of a build, and storing them */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "build/commit.h"
#include "build/layer.h"
#include "rootfs/oci.h"
#include "rootfs/ref.h"
#include "rootfs/unpack.h"
#include "util/log.h"
#include "util/util.h"

static void json_putp(struct json_object **o)
{
	if (*o)
		json_object_put(*o);
}
#define _cleanup_json_ _cleanup_(json_putp)

/* Parses @buf as a JSON object, or makes an empty one for NULL. */
static int parse_object(const char *buf, size_t len, struct json_object **out)
{
	struct json_tokener *tok;
	struct json_object *o;

	if (!buf) {
		*out = json_object_new_object();
		return *out ? 0 : -ENOMEM;
	}
	if (len > OCI_JSON_MAX)
		return -EINVAL;
	tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	o = json_tokener_parse_ex(tok, buf, (int)len);
	json_tokener_free(tok);
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return -EINVAL;
	}
	*out = o;
	return 0;
}

/* The member @key of @o as an object, created (or replaced when not an object). */
static struct json_object *child_object(struct json_object *o, const char *key)
{
	struct json_object *c;

	if (json_object_object_get_ex(o, key, &c) && json_object_is_type(c, json_type_object))
		return c;
	c = json_object_new_object();
	if (!c || json_object_object_add(o, key, c) < 0)
		return NULL;
	return c;
}

static struct json_object *child_array(struct json_object *o, const char *key)
{
	struct json_object *c;

	if (json_object_object_get_ex(o, key, &c) && json_object_is_type(c, json_type_array))
		return c;
	c = json_object_new_array();
	if (!c || json_object_object_add(o, key, c) < 0)
		return NULL;
	return c;
}

static struct json_object *strv_to_json(char *const *v)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; a && v && v[i]; i++)
		if (json_object_array_add(a, json_object_new_string(v[i])) < 0) {
			json_object_put(a);
			return NULL;
		}
	return a;
}

static int set(struct json_object *o, const char *key, struct json_object *v)
{
	if (!v)
		return -ENOMEM;
	return json_object_object_add(o, key, v) < 0 ? -ENOMEM : 0;
}

static int finish(struct json_object *o, char **out, size_t *len)
{
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

	if (!s)
		return -ENOMEM;
	*out = strdup(s);
	if (!*out)
		return -ENOMEM;
	if (len)
		*len = strlen(*out);
	return 0;
}

int build_config_json(const struct build_commit_input *in, char **out, size_t *len, const char **why)
{
	_cleanup_json_ struct json_object *root = NULL;
	const struct cf_recipe *rc = in->rc;
	struct json_object *cfg, *labels, *rootfs, *diff_ids, *history, *h;
	const char *os, *arch, *variant;
	int r;

	*why = NULL;
	r = parse_object(in->base_config, in->base_config_len, &root);
	if (r == -EINVAL)
		*why = "the base image config is not a JSON object";
	if (r < 0)
		return r;
	if (!in->base_config) {
		oci_host_platform(&os, &arch, &variant);
		if ((r = set(root, "architecture", json_object_new_string(arch))) < 0 ||
		    (r = set(root, "os", json_object_new_string(os))) < 0)
			return r;
		if (variant && (r = set(root, "variant", json_object_new_string(variant))) < 0)
			return r;
	}
	if ((r = set(root, "created", json_object_new_string(in->created))) < 0)
		return r;
	cfg = child_object(root, "config");
	if (!cfg)
		return -ENOMEM;
	if ((r = set(cfg, "Env", strv_to_json(rc->env))) < 0)
		return r;
	if (rc->workdir && !streq(rc->workdir, "/") && (r = set(cfg, "WorkingDir", json_object_new_string(rc->workdir))) < 0)
		return r;
	if (rc->user && (r = set(cfg, "User", json_object_new_string(rc->user))) < 0)
		return r;
	if (rc->entrypoint_set && (r = set(cfg, "Entrypoint", strv_to_json(rc->entrypoint))) < 0)
		return r;
	if (rc->cmd_set) {
		if ((r = set(cfg, "Cmd", strv_to_json(rc->cmd))) < 0)
			return r;
	} else if (rc->entrypoint_set) {
		json_object_object_del(cfg, "Cmd"); /* Docker: a new ENTRYPOINT resets the base's CMD */
	}
	labels = child_object(cfg, "Labels");
	if (!labels)
		return -ENOMEM;
	for (size_t i = 0; i < rc->n_labels; i++)
		if ((r = set(labels, rc->labels[i].key, json_object_new_string(rc->labels[i].value))) < 0)
			return r;
	for (size_t i = 0; in->labels && in->labels[i]; i++) {
		const char *eq = strchr(in->labels[i], '=');
		_cleanup_free_ char *k = eq ? strndup(in->labels[i], (size_t)(eq - in->labels[i])) : NULL;
		if (!eq)
			continue;
		if (!k)
			return -ENOMEM;
		if ((r = set(labels, k, json_object_new_string(eq + 1))) < 0)
			return r;
	}
	rootfs = child_object(root, "rootfs");
	if (!rootfs || (r = set(rootfs, "type", json_object_new_string("layers"))) < 0)
		return rootfs ? r : -ENOMEM;
	diff_ids = child_array(rootfs, "diff_ids");
	if (!diff_ids ||
	    json_object_array_add(diff_ids, json_object_new_string(in->diff_id ? in->diff_id : in->layer_digest)) < 0)
		return -ENOMEM;
	history = child_array(root, "history");
	h = json_object_new_object();
	if (!history || !h || json_object_array_add(history, h) < 0) {
		json_object_put(h);
		return -ENOMEM;
	}
	if ((r = set(h, "created", json_object_new_string(in->created))) < 0 ||
	    (r = set(h, "created_by", json_object_new_string(in->created_by ? in->created_by : "aisb build"))) < 0 ||
	    (r = set(h, "comment", json_object_new_string("one layer for the whole build"))) < 0)
		return r;
	return finish(root, out, len);
}

static struct json_object *descriptor(const char *mt, const char *digest, uint64_t size)
{
	struct json_object *d = json_object_new_object();

	if (!d || set(d, "mediaType", json_object_new_string(mt)) < 0 ||
	    set(d, "digest", json_object_new_string(digest)) < 0 ||
	    set(d, "size", json_object_new_int64((int64_t)size)) < 0) {
		json_object_put(d);
		return NULL;
	}
	return d;
}

int build_manifest_json(const struct build_commit_input *in, const char *config_digest, uint64_t config_size,
			char **out, size_t *len, const char **why)
{
	_cleanup_json_ struct json_object *base = NULL, *m = NULL;
	struct json_object *layers, *bl;
	int r;

	*why = NULL;
	r = parse_object(in->base_manifest, in->base_manifest_len, &base);
	if (r == -EINVAL)
		*why = "the base image manifest is not a JSON object";
	if (r < 0)
		return r;
	m = json_object_new_object();
	layers = json_object_new_array();
	if (!m || !layers)
		return json_object_put(layers), -ENOMEM;
	if ((r = set(m, "schemaVersion", json_object_new_int(2))) < 0 ||
	    (r = set(m, "mediaType", json_object_new_string(OCI_MT_MANIFEST))) < 0 ||
	    (r = set(m, "config", descriptor(OCI_MT_CONFIG, config_digest, config_size))) < 0 ||
	    (r = set(m, "layers", layers)) < 0)
		return r;
	/* the base's layer descriptors as they are (Docker media types stay valid) */
	if (json_object_object_get_ex(base, "layers", &bl)) {
		if (!json_object_is_type(bl, json_type_array)) {
			*why = "the base manifest's layers are not an array";
			return -EINVAL;
		}
		for (size_t i = 0; i < json_object_array_length(bl); i++) {
			struct json_object *d = json_object_array_get_idx(bl, i);
			if (!json_object_is_type(d, json_type_object)) {
				*why = "a base layer descriptor is not an object";
				return -EINVAL;
			}
			if (json_object_array_add(layers, json_object_get(d)) < 0)
				return -ENOMEM;
		}
	}
	if (json_object_array_add(layers, descriptor(in->layer_media_type ? in->layer_media_type : LAYER_MEDIA_TYPE,
						     in->layer_digest, in->layer_size)) < 0)
		return -ENOMEM;
	return finish(m, out, len);
}

/* the compressed bytes, counted, into the store's blob writer (which hashes them) */
struct blob_sink_state {
	struct store_blob_writer *w;
	uint64_t size;
};

static int blob_sink(void *ud, const void *buf, size_t len)
{
	struct blob_sink_state *b = ud;
	b->size += len;
	return store_blob_write(b->w, buf, len);
}

static int compress_sink(void *ud, const void *buf, size_t len)
{
	return layer_compressor_write(ud, buf, len);
}

int build_layer_store_as(struct store *s, int upper_fd, struct store_tree *tree, const struct unpack_limits *lim,
			 enum layer_compression comp, int level, const struct layer_times *times,
			 struct layer_result *res, struct build_layer_blob *blob)
{
	struct blob_sink_state bs = { 0 };
	struct layer_compressor *z = NULL;
	_cleanup_free_ char *digest = NULL;
	int r = store_blob_begin(s, NULL, -1, &bs.w);

	if (r < 0)
		return r;
	if ((r = layer_compressor_new(comp, level, blob_sink, &bs, &z)) < 0) {
		store_blob_abort(bs.w);
		return r;
	}
	{
		/* layer.c hashes the tar (the diff_id); the blob writer the compressed bytes */
		struct layer_out out = { .write = compress_sink, .ud = z, .digest = true,
					 .tree_fd = tree ? store_tree_fd(tree) : -1, .lim = lim, .times = times };
		r = layer_write_out(upper_fd, &out, res);
	}
	if (r < 0) {
		layer_compressor_free(z);
		store_blob_abort(bs.w);
		return r;
	}
	if ((r = layer_compressor_finish(z)) < 0) {
		store_blob_abort(bs.w);
		return log_error_errno(r, "Failed to compress the layer (%s): %m", layer_compression_name(comp));
	}
	r = store_blob_commit(bs.w, &digest);
	if (r < 0)
		return r;
	if (strlen(digest) >= sizeof(blob->digest))
		return log_error_errno(-EINVAL, "internal: digest '%s' too long", digest);
	memcpy(blob->digest, digest, strlen(digest) + 1);
	blob->size = bs.size;
	blob->media_type = layer_compression_media_type(comp);
	if (res->tree_done && !unpack_summary_fits(&res->sum, lim)) {
		log_debug("the layer is near an unpack limit: the image tree is unpacked from it instead");
		res->tree_done = false;
	}
	return 0;
}

int build_layer_store(struct store *s, int upper_fd, struct store_tree *tree, const struct unpack_limits *lim,
		      struct layer_result *res)
{
	struct build_layer_blob blob;
	int r = build_layer_store_as(s, upper_fd, tree, lim, LAYER_COMP_NONE, 0, NULL, res, &blob);

	if (r == 0 && !streq(blob.digest, res->digest))
		return log_error_errno(-EINVAL, "internal: the uncompressed layer's digests differ");
	return r;
}

int build_commit(struct store *s, const struct build_commit_input *in, char *const *names,
		 struct store_ref *pin_out)
{
	_cleanup_free_ char *cfg = NULL, *man = NULL, *cfg_digest = NULL, *man_digest = NULL, *rootfs = NULL;
	struct store_tree *tree = in->tree;
	struct oci_manifest m = { 0 };
	struct unpack_limits lim;
	const char *why = NULL;
	size_t cfg_len = 0, man_len = 0;
	uint64_t size = 0;
	char id[65], plat[64];
	const char *os, *arch, *variant;
	int r;

	/* 1. the layer is in the store already (build_layer_store()) */
	if (!store_has_blob(s, in->layer_digest)) {
		store_tree_abort(tree);
		return log_error_errno(-ENOENT, "internal: the layer %s is not in the store", in->layer_digest);
	}
	/* 2. config and manifest */
	r = build_config_json(in, &cfg, &cfg_len, &why);
	if (r < 0)
		r = log_error_errno(r, "Failed to write the image config: %s", why ? why : "out of memory");
	else
		r = store_blob_put(s, cfg, cfg_len, &cfg_digest);
	if (r >= 0 && (r = build_manifest_json(in, cfg_digest, cfg_len, &man, &man_len, &why)) < 0)
		r = log_error_errno(r, "Failed to write the image manifest: %s", why ? why : "out of memory");
	if (r >= 0)
		r = store_blob_put(s, man, man_len, &man_digest);
	if (r < 0) {
		store_tree_abort(tree);
		return r;
	}

	/* 3. the tree (made from the upper with the layer, or unpacked from it), then the pins */
	if (tree) {
		r = store_tree_commit(tree, man_digest, &rootfs);
		if (r < 0)
			return r;
		size = in->base_size + in->tree_bytes;
	} else {
		r = oci_manifest_parse(man, man_len, OCI_MT_MANIFEST, &m, &why);
		if (r < 0)
			return log_error_errno(r, "internal: the new manifest does not parse: %s", why ? why : "?");
		unpack_limits_default(&lim);
		r = m.n_layers ? store_rootfs_ensure_on(s, man_digest, &m, &lim, in->base_rootfs_id, m.n_layers - 1,
							in->base_size, &rootfs, &size)
			       : store_rootfs_ensure(s, man_digest, &m, &lim, &rootfs, &size);
		oci_manifest_done(&m);
		if (r < 0)
			return r;
	}
	if ((r = store_rootfs_id(man_digest, id)) < 0)
		return r;
	oci_host_platform(&os, &arch, &variant);
	snprintf(plat, sizeof(plat), "%s/%s%s%s", os, arch, variant ? "/" : "", variant ? variant : "");
	for (size_t i = 0; names && names[i]; i++) {
		struct oci_ref ref;
		struct store_ref pin = { .digest = man_digest, .platform = plat, .resolved_at = (int64_t)time(NULL),
					 .config = cfg_digest, .rootfs_id = id, .unpacker = (char *)UNPACK_VERSION,
					 .size = size };

		r = oci_ref_parse(names[i], &ref);
		if (r < 0)
			return log_error_errno(r, "'%s' is not an image name", names[i]);
		pin.name = ref.name;
		r = store_ref_write(s, &pin);
		if (r >= 0 && i == 0 && pin_out) {
			*pin_out = (struct store_ref){ .name = strdup(ref.name), .digest = strdup(man_digest),
						       .platform = strdup(plat), .resolved_at = pin.resolved_at,
						       .config = strdup(cfg_digest), .rootfs_id = strdup(id),
						       .unpacker = strdup(UNPACK_VERSION), .size = size };
			if (!pin_out->name || !pin_out->digest || !pin_out->platform || !pin_out->config ||
			    !pin_out->rootfs_id)
				r = log_error_errno(-ENOMEM, "%m");
		}
		oci_ref_done(&ref);
		if (r < 0)
			return r;
	}
	return 0;
}
