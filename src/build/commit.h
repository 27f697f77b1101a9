/* SPDX-License-Identifier: GPL-2.0-or-later */
/* commit.h — turn a build's layer into an image in the store (design section 9).
 *
 * build_config_json() and build_manifest_json() are pure: they start from the base image's own
 * config and manifest JSON (so fields aisb does not model survive), apply what the recipe set
 * (Env, WorkingDir, User, Entrypoint/Cmd with Docker's "an ENTRYPOINT here without a CMD here
 * clears the base's CMD", Labels), add the aisb labels, append the layer's diff_id, a history
 * entry and the layer descriptor. build_commit() stores the layer, config and manifest blobs,
 * unpacks the image once and writes a pin for every name; a failure leaves no pin (blobs without
 * a pin are garbage for `aisb clean`, never an image).
 */
#ifndef AISB_BUILD_COMMIT_H
#define AISB_BUILD_COMMIT_H

#include <stddef.h>
#include <stdint.h>

#include "build/containerfile.h"
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
	const char *layer_digest;     /* "sha256:..." (uncompressed: also the diff_id) */
	uint64_t layer_size;
	const char *base_rootfs_id;   /* the base's unpacked tree, linked instead of unpacked again
				       * (store_rootfs_ensure_on()); NULL: unpack every layer */
	uint64_t base_size;           /* the base pin's unpacked bytes */
	const char *layer_path;       /* where layer_fd's file is, in the store's tmp/: it becomes
				       * the blob by rename (store_blob_adopt()); NULL: copied */
};

/* The new image config. Return: 0, -EINVAL for a malformed base config (*why set), -ENOMEM.
 * Caller frees *out. Does not log. */
int build_config_json(const struct build_commit_input *in, char **out, size_t *len, const char **why);

/* The new manifest (OCI media types) for config @config_digest/@config_size. Return: 0, -EINVAL
 * for a malformed base manifest (*why set), -ENOMEM. Caller frees *out. Does not log. */
int build_manifest_json(const struct build_commit_input *in, const char *config_digest, uint64_t config_size,
			char **out, size_t *len, const char **why);

/* Stores the layer read from @layer_fd (in->layer_digest/size, verified while copied), the config
 * and the manifest, unpacks the image, and pins it under each of @names (image references).
 * *pin_out (optional) gets the pin of names[0]. Logs on failure. */
int build_commit(struct store *s, const struct build_commit_input *in, int layer_fd, char *const *names,
		 struct store_ref *pin_out);

#endif
