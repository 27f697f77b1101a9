/* SPDX-License-Identifier: GPL-2.0-or-later */
/* compress.h — a build layer's tar compressed as it streams into the store (issue 26).
 *
 * A layer is pushed as it is stored, so it is compressed once, at commit: gzip by default (what
 * every registry client reads), zstd on request (`--compression-format zstd`, podman's flag), or
 * none. The bytes are a function of the tar, the format and the level only: no timestamp or
 * file name in the gzip header, one thread, a fixed level — so the same build gives the same
 * blob digest (for one libarchive/zlib/libzstd version), and `skopeo copy` or a podman round
 * trip keeps the digest because there is nothing left for them to compress. The compressor is
 * libarchive's raw writer with its gzip or zstd filter (already loaded for the tar).
 */
#ifndef AISB_BUILD_COMPRESS_H
#define AISB_BUILD_COMPRESS_H

#include <stddef.h>

enum layer_compression {
	LAYER_COMP_GZIP, /* the default */
	LAYER_COMP_ZSTD,
	LAYER_COMP_NONE,
	LAYER_COMP_MAX,
};

/* Default levels: gzip 6 (zlib's and Go's default, what podman writes), zstd 3 (zstd's). */
#define LAYER_GZIP_LEVEL 6
#define LAYER_ZSTD_LEVEL 3

/* Parses "gzip", "zstd" or "none" (podman's --compression-format words, and none). Return: 0 or
 * -EINVAL. Does not log. */
int layer_compression_parse(const char *s, enum layer_compression *out);

/* Parses a --compression-level value (a number 1..19; whether it fits the format is
 * layer_compression_level()'s to say, once the format is known). Return: the number, or -EINVAL.
 * Does not log. */
int layer_compression_level_parse(const char *s);

/* Checks @level for @c (gzip 1..9, zstd 1..19; none takes none); -1 picks the default. Return:
 * the level (0 for none), or -EINVAL. Does not log. */
int layer_compression_level(enum layer_compression c, int level);

/* The OCI layer media type of a layer compressed with @c. */
const char *layer_compression_media_type(enum layer_compression c);

/* The word for @c ("gzip", "zstd", "none"). */
const char *layer_compression_name(enum layer_compression c);

struct layer_compressor;

/* Starts a compressor with @c at @level (from layer_compression_level()) whose output goes to
 * @sink(@ud, ...) (a return < 0 stops it). Return: 0, -ELIBACC (libarchive missing; said),
 * -ENOMEM, -EINVAL. Logs on failure. */
int layer_compressor_new(enum layer_compression c, int level, int (*sink)(void *ud, const void *buf, size_t len),
			 void *ud, struct layer_compressor **out);

/* Compresses @len bytes of @buf. Return: 0, or the sink's error / -EIO. Does not log. */
int layer_compressor_write(struct layer_compressor *z, const void *buf, size_t len);

/* Flushes the rest to the sink and frees @z. Return: 0, or the sink's error / -EIO. Does not log. */
int layer_compressor_finish(struct layer_compressor *z);

/* Frees @z without flushing (an abort); NULL is fine. */
void layer_compressor_free(struct layer_compressor *z);

#endif
