/* SPDX-License-Identifier: GPL-2.0-or-later */
/* recompress.h — `aisb push --compression-format`: an image's uncompressed layers compressed on
 * the way out.
 *
 * An image built with --compression-format none (or by aisb before issue 26) holds its layers as
 * plain tars. layer_recompress_manifest() compresses each of them (build/compress.h) into a new
 * blob of the store, checking while it reads that the tar still hashes to its digest (the
 * diff_id the config names), and returns the manifest with those layers' media type, digest and
 * size replaced; the config is unchanged (diff_ids name the tars). Layers that are compressed
 * already, or that are not the image's to redistribute (foreign, non-distributable), are kept as
 * they are (podman's push without --force-compression). The new blobs have no pin: the next
 * store_gc() (`aisb rmi`) collects them.
 */
#ifndef AISB_BUILD_RECOMPRESS_H
#define AISB_BUILD_RECOMPRESS_H

#include <stddef.h>

#include "build/compress.h"
#include "rootfs/store.h"

/**
 * layer_recompress_manifest() - the manifest @man with its uncompressed layers compressed
 * @s: the store that holds the layers and gets the compressed blobs
 * @man: the manifest JSON as the store holds it (OCI or Docker schema 2)
 * @len: its length
 * @comp: LAYER_COMP_GZIP or LAYER_COMP_ZSTD
 * @level: from layer_compression_level()
 * @out: the new manifest (caller frees), or NULL when no layer needed it
 * @out_len: its length
 * @n_done: how many layers were compressed
 *
 * Return: 0; -EINVAL for zstd in a Docker schema 2 manifest (it has no zstd layer type) or a
 * malformed manifest; -EBADMSG for a stored layer that does not hash to its digest; -errno.
 * Logs on failure.
 */
int layer_recompress_manifest(struct store *s, const char *man, size_t len, enum layer_compression comp, int level,
			      char **out, size_t *out_len, unsigned *n_done);

#endif
