/* SPDX-License-Identifier: GPL-2.0-or-later */
/* commit.h — turn a build's layer into an image in the store (docs/design.md §9).
 *
 * build_config_json() and build_manifest_json() are pure: they start from the base image's own
 * config and manifest JSON (so fields aisb does not model survive), apply what the recipe set
 * (Env, WorkingDir, User, Entrypoint/Cmd with Docker's "an ENTRYPOINT here without a CMD here
 * clears the base's CMD", Labels), add the aisb labels, append the layer's diff_id, a history
 * entry and the layer descriptor. build_layer_store() writes the layer blob and, in the same
 * pass, the image's tree; build_commit() stores the config and manifest blobs, names the tree
 * (or unpacks the layer when no tree was made) and writes a pin for every name; a failure leaves
 * no pin (blobs without a pin are garbage for `aisb clean`, never an image).
 */
#ifndef AISB_BUILD_COMMIT_H
#define AISB_BUILD_COMMIT_H

#include <stddef.h>
#include <stdint.h>

#include "build/containerfile.h"
#include "build/compress.h"
#include "build/layer.h"
#include "rootfs/store.h"

struct build_commit_input {
	const char *base_config;      /* the base's config JSON, or NULL for an empty base */
	size_t base_config_len;
	const char *base_manifest;    /* the base's manifest JSON, or NULL */
	size_t base_manifest_len;
	const struct cf_recipe *rc;
	char *const *labels;          /* extra "key=value" labels (aisb.base-digest, ...) */
	const char *created;          /* RFC 3339 UTC time of the build */
	const char *created_by;       /* history text, e.g. "aisb build -f Containerfile" */
	const char *layer_digest;     /* "sha256:..." of the blob (uncompressed: also the diff_id) */
	uint64_t layer_size;
	const char *diff_id;          /* the tar's "sha256:...", or NULL: @layer_digest (uncompressed) */
	const char *layer_media_type; /* NULL: LAYER_MEDIA_TYPE (uncompressed) */
	const char *base_rootfs_id;   /* the base's unpacked tree, linked instead of unpacked again
				       * (store_rootfs_ensure_on()); NULL: unpack every layer */
	uint64_t base_size;           /* the base pin's unpacked bytes */
	/* the image's tree, made from the upper while its layer was written (build_layer_store(),
	 * res.tree_done): taken by build_commit(), named or removed; NULL: the tree is unpacked from
	 * the layer blob on the base's linked tree */
	struct store_tree *tree;
	uint64_t tree_bytes;          /* with @tree: the layer's unpacked bytes (res.sum.file_bytes) */
};

/* The new image config. Return: 0, -EINVAL for a malformed base config (*why set), -ENOMEM.
 * Caller frees *out. Does not log. */
int build_config_json(const struct build_commit_input *in, char **out, size_t *len, const char **why);

/* The new manifest (OCI media types) for config @config_digest/@config_size. Return: 0, -EINVAL
 * for a malformed base manifest (*why set), -ENOMEM. Caller frees *out. Does not log. */
int build_manifest_json(const struct build_commit_input *in, const char *config_digest, uint64_t config_size,
			char **out, size_t *len, const char **why);

/* Writes the upper directory @upper_fd as the build's layer blob into @s in one pass: the tar
 * streams into the store's blob writer, which hashes it as it writes (that digest is
 * res->digest) and makes it durable before naming it (store_blob_commit()). With @tree (from
 * store_tree_begin() on the base), every entry is also applied to the tree (layer_write_out());
 * res->tree_done says whether the tree is the layer unpacked on the base: every entry made
 * and the layer within @lim (unpack_summary_fits()). Logs on failure. */
int build_layer_store(struct store *s, int upper_fd, struct store_tree *tree, const struct unpack_limits *lim,
		      struct layer_result *res);

/* The layer's blob as build_layer_store_as() stored it. */
struct build_layer_blob {
	char digest[72];        /* "sha256:..." of the stored (compressed) bytes */
	uint64_t size;
	const char *media_type; /* layer_compression_media_type() */
};

/* build_layer_store() with the tar compressed on its way into the store (build/compress.h):
 * res->digest is the tar's (the diff_id), @blob the stored bytes'. @level from
 * layer_compression_level(); @times the entries' mtimes (NULL: the upper's). Logs on failure. */
int build_layer_store_as(struct store *s, int upper_fd, struct store_tree *tree, const struct unpack_limits *lim,
			 enum layer_compression comp, int level, const struct layer_times *times,
			 struct layer_result *res, struct build_layer_blob *blob);

/* Stores the config and the manifest for the layer in->layer_digest (in the store already: from
 * build_layer_store()), makes the image's tree (in->tree named, or the layer unpacked on the
 * base's tree), and pins it under each of @names (image references). *pin_out (optional) gets the
 * pin of names[0]. A failure leaves no pin. Logs on failure. */
int build_commit(struct store *s, const struct build_commit_input *in, char *const *names,
		 struct store_ref *pin_out);

#endif
