/* SPDX-License-Identifier: GPL-2.0-or-later */
/* unpack.h — apply OCI layer tarballs (plain, gzip, zstd) onto a rootfs directory, safely.
 *
 * Every entry is created relative to a directory fd: its parent is opened with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV), so no path, symlink or
 * hardlink in a layer can make aisb write outside the root. Refused outright (the whole layer
 * fails): absolute names, `..` components, parents reached through a symlink that leaves the
 * root (absolute or `../` targets), hardlinks whose target is outside, entries over the size
 * caps. Skipped and counted: device nodes and sockets. Never applied: ownership, xattrs (so no
 * file capabilities), setuid/setgid bits. Directories get u+rwx so later layers and `aisb rmi`
 * can always work in them. OCI whiteouts (`.wh.NAME`, `.wh..wh..opq`) remove what lower layers
 * put there.
 */
#ifndef AISB_ROOTFS_UNPACK_H
#define AISB_ROOTFS_UNPACK_H

#include <stdbool.h>
#include <stdint.h>

/* Bump when the unpacked result for the same layers changes: the rootfs id hashes it. */
#define UNPACK_VERSION "aisb-unpack-1"

/* Every table a layer can make aisb hold, or the kernel hold for it, has a bound here; going
 * over one refuses the layer with a message naming the limit. Tests lower them. */
struct unpack_limits {
	uint64_t max_entry_bytes;   /* one file */
	uint64_t max_total_bytes;   /* the sum over all layers of an image */
	uint64_t max_entries;       /* entries per image */
	uint64_t max_hardlinks;     /* hardlink entries per image */
	uint64_t max_pathset_bytes; /* memory of one layer's set of written paths (for whiteouts) */
	uint32_t max_path_bytes;    /* one entry name or link target; at most UNPACK_PATH_MAX */
	uint32_t max_depth;         /* directory levels below the root, after symlinked parents */
	uint32_t max_xattrs;        /* xattr records libarchive holds for one entry (never applied) */
};

struct unpack_stats {
	uint64_t entries, files, dirs, symlinks, hardlinks, whiteouts;
	uint64_t devices_skipped, setid_cleared;
	uint64_t bytes;
};

#define UNPACK_PATH_MAX 4096

/* Defaults: 8 GiB per entry, 64 GiB total, 4 million entries, 1 million hardlinks, 256 MiB of
 * path set, 4096-byte names, 128 levels, 128 xattrs per entry. */
void unpack_limits_default(struct unpack_limits *l);

enum unpack_whiteout { UNPACK_WH_NONE, UNPACK_WH_FILE, UNPACK_WH_OPAQUE, UNPACK_WH_OTHER, UNPACK_WH_MAX };

/* Normalises a layer entry name: drops "./", "." components, duplicate and trailing slashes.
 * The root itself becomes "". Return: 0, -EINVAL for an absolute name or a ".." component,
 * -ENAMETOOLONG for a name over UNPACK_PATH_MAX bytes. Does not log. */
int unpack_path_normalize(const char *in, char **out);

/* Classifies a normalised path. For UNPACK_WH_FILE *target is the path the whiteout removes; for
 * UNPACK_WH_OPAQUE the directory whose lower contents are hidden ("" for the root). OTHER is an
 * aufs-internal ".wh..wh.*" name that is skipped. Caller frees *target. Does not log. */
enum unpack_whiteout unpack_whiteout_kind(const char *path, char **target);

/* Applies the layer read from @layer_fd onto the directory @rootfd. @what names the layer in
 * messages. @diff_id ("sha256:...", or NULL: not checked) is what the uncompressed stream,
 * padding after the tar's end included, must hash to (the image config's rootfs.diff_ids): a
 * mismatch fails the layer with -EBADMSG once the stream ended, and the caller discards the
 * tree. @stats accumulates (and its bytes/entries count against @lim across calls).
 * Decompression runs on a second thread while the calling one waits for the extraction's.
 * Return: 0, -EPERM for a refused layer, -EBADMSG for a diff_id mismatch, other -errno. Logs on
 * failure. */
int unpack_layer(int rootfd, int layer_fd, const char *what, const char *diff_id, const struct unpack_limits *lim,
		 struct unpack_stats *stats);

/* Judges every entry of the layer in @buf (plain, gzip or zstd) as unpack_layer() does before it
 * touches the tree (names, limits, whiteouts, types, link targets, sizes, each file's data
 * against its declared size), without a tree: the same judge_entry() code, in memory, so the
 * fuzz target runs it thousands of times a second. What only the tree can tell (a parent reached
 * through a symlink, a hardlink's target) is left out. Return: 0, -EPERM for a layer
 * unpack_layer() would refuse for what this judges, other -errno. Logs on failure. */
int unpack_judge_layer(const void *buf, size_t len, const char *what, const struct unpack_limits *lim,
		       struct unpack_stats *stats);

/* A layer applied while its bytes arrive (a download): unpack_stream_begin() starts the
 * decompression and extraction threads, unpack_stream_write() hands them the compressed bytes,
 * unpack_stream_finish() ends the input and waits. The bytes are the layer's, unverified: the
 * caller verifies the digest at the end and discards @rootfd's tree when it does not match (the
 * extraction's guarantees above hold for any bytes). */
struct unpack_stream;
/* Logs on failure. */
int unpack_stream_begin(int rootfd, const char *what, const char *diff_id, const struct unpack_limits *lim,
			struct unpack_stats *stats, struct unpack_stream **out);
/* Waits while the stages are behind. Return: 0 (also once the tar stream ended: the rest is
 * dropped), or the error the unpack failed with (it logged why). Does not log. */
int unpack_stream_write(struct unpack_stream *u, const void *buf, size_t len);
/* @err 0: end of input; < 0: the producer failed (the stages stop without a message, and @err
 * is returned). Frees @u. Return: 0, -EPERM for a refused layer, other -errno. Logs what the
 * stages found. */
int unpack_stream_finish(struct unpack_stream *u, int err);

/* Removes @name in @dirfd as a layer entry replacing it does: recursively, never following a
 * symlink, at most @max_depth levels. Return: 0 (also when absent), -EMLINK past the depth,
 * -errno. Does not log. */
int unpack_remove_entry(int dirfd, const char *name, uint32_t max_depth);

/* What unpack_layer() counts against its limits for one layer applied on a tree of its own
 * (a build's layer on its base's linked tree counts from zero): entries (whiteouts too),
 * written (entries it keeps in its path set: all but whiteouts), path_bytes (their names'
 * bytes), file_bytes (regular files, hardlinks not again), max_file, hardlinks, max_depth
 * (components of the deepest name), max_name (bytes of the longest name or link target). */
struct unpack_summary {
	uint64_t entries, written, path_bytes, file_bytes, max_file, hardlinks;
	uint32_t max_depth, max_name;
};

/* Whether a layer with summary @s is within @lim everywhere: then unpack_layer() refuses none
 * of its entries for a limit (a conservative bound: false may also mean "close to one").
 * Pure. */
bool unpack_summary_fits(const struct unpack_summary *s, const struct unpack_limits *lim);

#endif
