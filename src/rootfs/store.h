/* SPDX-License-Identifier: GPL-2.0-or-later */
/* store.h — the content-hashed image store under $XDG_CACHE_HOME/aisb (docs/design.md §8).
 *
 *   blobs/sha256/<hex>   manifests, configs and layers, each verified while it streamed in
 *   rootfs/<id>/         an unpacked image; id = sha256(manifest digest "\n" UNPACK_VERSION)
 *   refs/<name>.json     a pin: name → manifest digest, platform, resolved-at, config, rootfs id
 *   tmp/                 partial blobs and rootfs trees; same filesystem, so results appear by
 *                        atomic rename and a crash leaves only tmp/ litter (cleared when unlocked)
 *   locks/               flock(2) files: one per blob, per rootfs and per ref, so two concurrent
 *                        pulls of one image download and unpack it once
 * Nothing in blobs/, rootfs/ or refs/ is ever written in place.
 */
#ifndef AISB_ROOTFS_STORE_H
#define AISB_ROOTFS_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rootfs/oci.h"
#include "rootfs/unpack.h"

struct store {
	char *root;
	int rootfd;
};

struct store_ref {
	char *name;          /* canonical reference */
	char *digest;        /* the pinned manifest digest (platform manifest, not the index) */
	char *platform;      /* "linux/amd64" */
	int64_t resolved_at; /* unix time the tag was last resolved upstream */
	char *config;        /* config blob digest */
	char *rootfs_id;
	char *unpacker;      /* UNPACK_VERSION of the tree rootfs_id names (NULL in older pins) */
	uint64_t size;       /* unpacked bytes */
};

/* Opens (creating) the store at @root. Logs on failure. */
int store_open(const char *root, struct store **out);
void store_free(struct store *s);

/* Takes an exclusive flock on locks/<kind>-<key>.lock; returns the fd (close to release).
 * Does not log. */
int store_lock(struct store *s, const char *kind, const char *key, bool shared);
/* Like store_lock(shared) but fails with -EWOULDBLOCK instead of waiting. */
int store_trylock(struct store *s, const char *kind, const char *key, bool shared);

/* Blobs. */
bool store_has_blob(struct store *s, const char *digest);
int store_blob_open(struct store *s, const char *digest); /* read fd, or -errno; does not log */
/* Opens the blob @d names for reading, checking that the store holds exactly @d's size (push and
 * save send what the descriptor says). Return: fd, -ENOENT (not in the store), -EBADMSG, -EINVAL.
 * Logs on failure. */
int store_blob_open_desc(struct store *s, const struct oci_descriptor *d);
int store_blob_read(struct store *s, const char *digest, size_t max, char **buf, size_t *len);

struct store_blob_writer;
/* Starts a blob in tmp/. @digest: the expected digest, or NULL to learn it at commit (archives);
 * @size: the expected size, or -1. Logs on failure. */
int store_blob_begin(struct store *s, const char *digest, int64_t size, struct store_blob_writer **w);
/* Hashes and writes; -EFBIG once more than the expected size arrived. Does not log. */
int store_blob_write(struct store_blob_writer *w, const void *buf, size_t len);
/* Discards what was written so far (for a retry). Does not log. */
int store_blob_reset(struct store_blob_writer *w);
/* Verifies size and digest and renames into blobs/; a mismatch deletes the partial file and is
 * -EBADMSG. *digest_out (optional) gets the digest. Frees @w. Logs on failure. */
int store_blob_commit(struct store_blob_writer *w, char **digest_out);
/* Checks size and digest of what was written so far without storing it (logs a mismatch).
 * Return: 0 or -EBADMSG. */
int store_blob_verify(struct store_blob_writer *w);
/* From now on every byte written also goes to @fn, after it was hashed and written; fn's
 * return is ignored (a consumer that failed says so itself, and the writer still hashes the
 * rest: a corrupted blob is then reported as corrupted). Once @fn got bytes,
 * store_blob_reset() fails with -ESPIPE. Does not log. */
typedef int (*store_blob_tee_fn)(void *ud, const void *buf, size_t len);
void store_blob_set_tee(struct store_blob_writer *w, store_blob_tee_fn fn, void *ud);
/* Makes every later store_blob_write() on @w fail with -ECANCELED (from another thread: stops a
 * download that is no longer wanted). Does not log. */
void store_blob_cancel(struct store_blob_writer *w);
/* Deletes the partial file and frees @w; accepts NULL. */
void store_blob_abort(struct store_blob_writer *w);
/* Bytes written so far. */
uint64_t store_blob_written(const struct store_blob_writer *w);
/* Removes blob @digest unless a pin names it as its manifest or config (cleanup after a failed
 * pull). Does not log. */
int store_blob_remove_unpinned(struct store *s, const char *digest);
/* Imports @len bytes from memory as a blob; returns its digest in *digest_out. Logs on failure. */
int store_blob_put(struct store *s, const void *buf, size_t len, char **digest_out);

/* Rootfs. */
/* The rootfs id of @manifest_digest for this unpacker (also used to name lock files after
 * arbitrary strings). Return: 0, or -ELIBACC when libcrypto cannot be loaded (logged once):
 * never an id that is not the hash. */
int store_rootfs_id(const char *manifest_digest, char id[65]);
char *store_rootfs_path(struct store *s, const char *id);
/* Unpacks the layers of @m (all blobs present) into rootfs/<id> unless it exists. A refused or
 * failed layer leaves nothing. *path_out gets the directory. Logs on failure. */
int store_rootfs_ensure(struct store *s, const char *manifest_digest, const struct oci_manifest *m,
			const struct unpack_limits *lim, char **path_out, uint64_t *size_out);

/* Where store_rootfs_ensure_from() gets a layer that is not in the store: @fetch writes blob @d
 * into @w with store_blob_write() (no commit). Return: 0; -EAGAIN when the transfer broke after
 * bytes had gone to a streamed unpack (the store then starts the tree again, fetching before
 * unpacking); other -errno (logged). */
struct store_layer_source {
	int (*fetch)(void *ud, const struct oci_descriptor *d, struct store_blob_writer *w);
	void *ud;
	/* Optional: the same through a second connection, called on one other thread, so that the
	 * later layers download into the store while an earlier one unpacks. */
	int (*fetch_ahead)(void *ud, const struct oci_descriptor *d, struct store_blob_writer *w);
};
/* store_rootfs_ensure(), with missing layers fetched from @src while they unpack: download,
 * digest and unpack run concurrently (unpack.h), and a layer whose digest does not match at the
 * end discards the whole tree, so a bad blob still leaves nothing. Logs on failure. */
int store_rootfs_ensure_from(struct store *s, const char *manifest_digest, const struct oci_manifest *m,
			     const struct unpack_limits *lim, const struct store_layer_source *src, char **path_out,
			     uint64_t *size_out);

/* store_rootfs_ensure() for an image whose first @n_base layers are those of the tree
 * rootfs/@base_rootfs_id (a build's FROM, whose rootfs lock the caller holds): the new tree
 * starts as a copy of that one made of hardlinks (trees are never written in place; see
 * link_tree() in store.c) and only the layers after them are unpacked; @base_size (the base
 * pin's size) is added to *size_out. When the base tree is gone or an inode is at its link limit,
 * every layer is unpacked as by store_rootfs_ensure(). Logs on failure. */
int store_rootfs_ensure_on(struct store *s, const char *manifest_digest, const struct oci_manifest *m,
			   const struct unpack_limits *lim, const char *base_rootfs_id, size_t n_base, uint64_t base_size,
			   char **path_out, uint64_t *size_out);

/* A tree that its caller fills itself, for a build that applies its layer while it writes the
 * layer's blob (build/layer.h), instead of unpacking the blob afterwards. It lives in tmp/ until
 * store_tree_commit() names it, so a failed or interrupted build leaves only tmp/ litter. */
struct store_tree;
/* Starts a tree in tmp/ as a copy of rootfs/@base_rootfs_id made of hardlinks (see
 * store_rootfs_ensure_on(); the caller holds that tree's rootfs lock), or empty for NULL. With
 * @in_child the copy is made by a child process while the caller goes on (a build's RUN steps),
 * and the tree is ready only after store_tree_ready(). Return: 0; -EXDEV (the base tree is gone)
 * or -EMLINK (an inode at its link limit, or too deep), not logged: the caller unpacks every
 * layer instead; other -errno, logged. */
int store_tree_begin(struct store *s, const char *base_rootfs_id, const struct unpack_limits *lim, bool in_child,
		     struct store_tree **out);
/* Waits until the copy of the base is complete. Return: 0, or store_tree_begin()'s errors for
 * the copy, -ECHILD when the linking child was killed (then the tree is unusable: abort it and
 * unpack the layers instead). Logs what store_tree_begin() logs. */
int store_tree_ready(struct store_tree *t);
/* The tree's directory. */
int store_tree_fd(const struct store_tree *t);
/* Names @t rootfs/<id> for image @manifest_digest (under that rootfs lock; when the tree exists
 * already, that one is kept and @t removed). *path_out gets the directory. Frees @t. Logs on
 * failure. */
int store_tree_commit(struct store_tree *t, const char *manifest_digest, char **path_out);
/* Removes the unfinished tree and frees @t; accepts NULL. */
void store_tree_abort(struct store_tree *t);

/* Refs (pins). */
int store_ref_read(struct store *s, const char *name, struct store_ref *r); /* -ENOENT; no log */
int store_ref_write(struct store *s, const struct store_ref *r);            /* logs */
int store_ref_remove(struct store *s, const char *name);                    /* -ENOENT; no log */
int store_ref_list(struct store *s, struct store_ref **refs, size_t *n);    /* logs */
void store_ref_done(struct store_ref *r);

/* The unpacked size another pin of tree @rootfs_id recorded: a tree is made once (its first
 * pull, load or build counts its bytes), so a later pin of the same tree under another name (a
 * load of an image the store holds, a second name) finds its size here. Return: 0 with *size
 * set; -ENOENT when no pin of that tree records one. Logs only when refs/ cannot be read. */
int store_rootfs_pinned_size(struct store *s, const char *rootfs_id, uint64_t *size);

/* Is a pin resolved at @resolved_at still good at @now with @ttl_days (0: never; -1: always)? */
bool store_pin_is_fresh(int64_t resolved_at, int64_t now, long ttl_days);

/* Removes rootfs trees and blobs no pin refers to. Logs on failure. */
int store_gc(struct store *s, uint64_t *freed);

#endif
