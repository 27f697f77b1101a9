/* SPDX-License-Identifier: GPL-2.0-or-later */
/* layer.h — commit an overlay upper directory as one OCI layer (docs/design.md §9).
 *
 * The upper directory of a build's overlay holds what the RUN/COPY steps changed, in overlayfs's
 * own encoding: a deleted lower file is a character device 0:0 (a "whiteout"), a directory that
 * replaced a lower one carries the xattr user.overlay.opaque=y (userxattr mounts, the unprivileged
 * case; trusted.overlay.opaque when root mounted it). An OCI layer says the same with names:
 * ".wh.NAME" deletes NAME, ".wh..wh..opq" inside a directory hides everything below it from lower
 * layers. layer_classify() is the pure decision; layer_write() walks the upper in name order and
 * writes an uncompressed pax tar (media type application/vnd.oci.image.layer.v1.tar, so the
 * digest is the diff_id): owners 0:0 (a fakeroot build has one owner), setuid/setgid bits kept as
 * the recipe made them (the store's unpacker clears them), sockets skipped, a file with several
 * names written once and then as hardlink entries. A name in the upper that itself starts with
 * ".wh." is refused: in a layer it would delete a file on unpack. layer_write_out() can apply
 * the same entries, in the same pass, to the image's tree (see struct layer_out), so the tree
 * is what unpacking the layer gives without the layer being unpacked.
 */
#ifndef AISB_BUILD_LAYER_H
#define AISB_BUILD_LAYER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "rootfs/unpack.h"

#define LAYER_MEDIA_TYPE "application/vnd.oci.image.layer.v1.tar"
#define LAYER_MAX_DEPTH 256u
#define LAYER_MAX_ENTRIES 2000000u

enum layer_kind {
	LAYER_NORMAL,    /* file, directory, symlink, fifo: copied as it is */
	LAYER_WHITEOUT,  /* char 0:0: becomes an empty ".wh.NAME" */
	LAYER_OPAQUE,    /* directory with overlay.opaque=y: the directory, then ".wh..wh..opq" */
	LAYER_SKIP,      /* sockets, other device nodes: not representable, counted */
	LAYER_REFUSED,   /* a name starting with ".wh.": would be read as a whiteout */
	LAYER_KIND_MAX
};

/* How the upper entry @name (one component) with @mode/@rdev, and for directories @opaque (the
 * overlay.opaque xattr is "y"), goes into the layer. Pure. */
enum layer_kind layer_classify(const char *name, mode_t mode, dev_t rdev, bool opaque);

/* The layer path that deletes @path: "a/b" → "a/.wh.b". Caller frees; NULL on ENOMEM. */
char *layer_whiteout_path(const char *path);

/* The entries' mtimes, for rebuilds that are byte for byte the same (docs/images.md,
 * "Reproducible builds"). Whole seconds since the epoch. */
struct layer_times {
	int64_t epoch;    /* what a rewritten mtime becomes */
	int64_t since_ns; /* an mtime at or after this (in ns) was written by the build itself: it
			   * becomes @epoch */
	bool clamp;    /* SOURCE_DATE_EPOCH: an mtime after @epoch becomes @epoch */
	bool all;      /* --timestamp (podman's): every mtime becomes @epoch */
};

/* The mtime (whole seconds) that the layer records for @mtime under @t (NULL: as it is). Pure. */
int64_t layer_mtime(const struct layer_times *t, const struct timespec *mtime);

/* Where layer_write_out() puts the layer. */
struct layer_out {
	/* the tar's bytes, in order; a return < 0 (-errno) stops the layer with that error */
	int (*write)(void *ud, const void *buf, size_t len);
	void *ud;
	bool digest;                     /* compute res->digest here (false: @write hashes, as a store blob does) */
	/* >= 0: every entry is also applied to this tree (a linked copy of the overlay's lower) as
	 * unpack_layer() applies the layer's entry, with @lim's depth for its removals: a regular
	 * file by linking the very inode that was read (after its mode, times and user xattrs are
	 * made what the unpacker would make; a copy when it has other xattrs or inode flags), the
	 * rest made anew. Nothing is read twice and no file data is written again. */
	int tree_fd;
	const struct unpack_limits *lim;
	const struct layer_times *times; /* NULL: the upper's mtimes as they are */
};

struct layer_result {
	char digest[72];      /* "sha256:<hex>" of the tar = diff_id (with out->digest) */
	uint64_t size;
	unsigned n_entries, n_whiteouts, n_opaque, n_skipped;
	struct unpack_summary sum; /* what unpack_layer() would count of this layer */
	/* the tree got every entry: it is what unpacking the layer on the lower makes, provided
	 * unpack_summary_fits(&sum, lim) (else unpack_layer() would refuse the layer, and the
	 * caller unpacks the blob to get its refusal) */
	bool tree_done;
};

/* Writes the upper directory @upper_fd as an OCI layer tar to @out (and its tree) and fills
 * @res. Files with more than one name in the upper become one file and hardlink entries to its
 * first name in walk order (as tar and the OCI runtimes write them); the unpacker links them
 * again. A failure on the tree's side is not one of the layer: the walk goes on without the
 * tree (res->tree_done false; said at debug level). Return: 0, -EINVAL for a refused name,
 * -EFBIG past the bounds, -ESTALE for a file that changed while it was read, -errno. Logs on
 * failure. */
int layer_write_out(int upper_fd, const struct layer_out *out, struct layer_result *res);

/* layer_write_out() to the file @out_fd, with the digest, without a tree. Logs on failure. */
int layer_write(int upper_fd, int out_fd, struct layer_result *res);

#endif
