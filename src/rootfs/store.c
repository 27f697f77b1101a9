// SPDX-License-Identifier: GPL-2.0-or-later
/* store.c — blobs verified while streaming, rootfs trees by content hash, pins, locks */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "rootfs/ref.h"
#include "rootfs/store.h"
#include "util/dl.h"
#include "util/log.h"
#include "util/sha256.h"
#include "util/util.h"

static const char *const store_dirs[] = { "blobs", "blobs/sha256", "rootfs", "refs", "tmp", "locks" };

int store_open(const char *root, struct store **out)
{
	_cleanup_free_ struct store *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return log_error_errno(-ENOMEM, "%m");
	r = mkdir_p(root, 0700);
	if (r < 0)
		return log_error_errno(r, "cannot create the image store '%s': %m", root);
	s->rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->rootfd < 0)
		return log_error_errno(-errno, "cannot open the image store '%s': %m", root);
	for (size_t i = 0; i < ELEMENTSOF(store_dirs); i++)
		if (mkdirat(s->rootfd, store_dirs[i], 0700) < 0 && errno != EEXIST) {
			r = -errno;
			close(s->rootfd);
			return log_error_errno(r, "cannot create '%s/%s': %m", root, store_dirs[i]);
		}
	s->root = strdup(root);
	if (!s->root) {
		close(s->rootfd);
		return log_error_errno(-ENOMEM, "%m");
	}
	*out = TAKE_PTR(s);
	return 0;
}

void store_free(struct store *s)
{
	if (!s)
		return;
	if (s->rootfd >= 0)
		close(s->rootfd);
	free(s->root);
	free(s);
}

static int lock_common(struct store *s, const char *kind, const char *key, bool shared, bool wait)
{
	_cleanup_free_ char *p = NULL;
	int fd;

	if (asprintf(&p, "locks/%s-%s.lock", kind, key) < 0)
		return -ENOMEM;
	fd = openat(s->rootfd, p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	while (flock(fd, (shared ? LOCK_SH : LOCK_EX) | (wait ? 0 : LOCK_NB)) < 0) {
		int e = errno;
		if (e == EINTR)
			continue;
		close(fd);
		return -e;
	}
	return fd;
}

int store_lock(struct store *s, const char *kind, const char *key, bool shared)
{
	return lock_common(s, kind, key, shared, true);
}

int store_trylock(struct store *s, const char *kind, const char *key, bool shared)
{
	return lock_common(s, kind, key, shared, false);
}

static const char *digest_hex(const char *digest)
{
	return digest + 7; /* after "sha256:", callers validated */
}

static char *blob_relpath(const char *digest)
{
	char *p;
	if (!oci_digest_is_valid(digest))
		return NULL;
	if (asprintf(&p, "blobs/sha256/%s", digest_hex(digest)) < 0)
		return NULL;
	return p;
}

bool store_has_blob(struct store *s, const char *digest)
{
	_cleanup_free_ char *p = blob_relpath(digest);
	return p && faccessat(s->rootfd, p, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

int store_blob_open(struct store *s, const char *digest)
{
	_cleanup_free_ char *p = blob_relpath(digest);
	int fd;
	if (!p)
		return -EINVAL;
	fd = openat(s->rootfd, p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	return fd < 0 ? -errno : fd;
}

int store_blob_read(struct store *s, const char *digest, size_t max, char **buf, size_t *len)
{
	_cleanup_free_ char *p = blob_relpath(digest);
	if (!p)
		return -EINVAL;
	return read_file_at(s->rootfd, p, max, buf, len);
}

/* ---- blob writer ---- */

#define BLOB_WRITEBACK_CHUNK (8u << 20)

struct store_blob_writer {
	struct store *s;
	char *expected;
	int64_t size;
	uint64_t written;
	uint64_t flushed;      /* bytes whose writeback was started (store_blob_write()) */
	struct sha256 md;
	char tmpname[64];
	int fd;
	store_blob_tee_fn tee; /* a consumer of the bytes as they arrive (a streamed unpack) */
	void *tee_ud;
	bool teed;             /* it got some: no rewinding */
	bool final;            /* the digest below is computed */
	volatile int cancelled; /* store_blob_cancel() from another thread */
	char digest[7 + 65];
};

void store_blob_abort(struct store_blob_writer *w)
{
	if (!w)
		return;
	if (w->fd >= 0) {
		close(w->fd);
		unlinkat(w->s->rootfd, w->tmpname, 0);
	}
	sha256_done(&w->md);
	free(w->expected);
	free(w);
}

int store_blob_begin(struct store *s, const char *digest, int64_t size, struct store_blob_writer **out)
{
	struct store_blob_writer *w = calloc(1, sizeof(*w));
	char rnd[17];
	int r;

	if (!w)
		return log_error_errno(-ENOMEM, "%m");
	w->s = s;
	w->fd = -1;
	w->size = size;
	if (digest && !(w->expected = strdup(digest))) {
		store_blob_abort(w);
		return log_error_errno(-ENOMEM, "%m");
	}
	if (sha256_init(&w->md) < 0) {
		store_blob_abort(w);
		return log_error_errno(-ENOMEM, "cannot initialise sha256");
	}
	if ((r = random_hex(rnd, 8)) < 0) {
		store_blob_abort(w);
		return log_error_errno(r, "%m");
	}
	snprintf(w->tmpname, sizeof(w->tmpname), "tmp/blob-%s", rnd);
	w->fd = openat(s->rootfd, w->tmpname, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (w->fd < 0) {
		r = -errno;
		store_blob_abort(w);
		return log_error_errno(r, "cannot create a file in '%s/tmp': %m", s->root);
	}
	*out = w;
	return 0;
}

void store_blob_cancel(struct store_blob_writer *w)
{
	__atomic_store_n(&w->cancelled, 1, __ATOMIC_RELAXED);
}

void store_blob_set_tee(struct store_blob_writer *w, store_blob_tee_fn fn, void *ud)
{
	w->tee = fn;
	w->tee_ud = ud;
}

int store_blob_write(struct store_blob_writer *w, const void *buf, size_t len)
{
	int r;

	if (__atomic_load_n(&w->cancelled, __ATOMIC_RELAXED))
		return -ECANCELED;
	if (w->size >= 0 && w->written + len > (uint64_t)w->size)
		return -EFBIG;
	if (sha256_update(&w->md, buf, len) < 0)
		return -EIO;
	w->written += len;
	if ((r = write_full(w->fd, buf, len)) < 0)
		return r;
	/* The disk write of every full 8 MiB starts now, not at the fdatasync() before the blob is
	 * named: that one then waits for the last chunk, not for a whole 300 MB build layer. */
	if (w->written - w->flushed >= BLOB_WRITEBACK_CHUNK) {
		(void)sync_file_range(w->fd, (off_t)w->flushed, (off_t)(w->written - w->flushed), SYNC_FILE_RANGE_WRITE);
		w->flushed = w->written;
	}
	if (w->tee && len) {
		w->teed = true;
		/* A failed consumer (it logged why) does not stop the writer: the rest is still
		 * hashed, so a corrupted blob is reported as corrupted, not as a bad layer. */
		(void)w->tee(w->tee_ud, buf, len);
	}
	return 0;
}

int store_blob_reset(struct store_blob_writer *w)
{
	if (w->teed)
		return -ESPIPE; /* the consumer has the bytes already */
	if (ftruncate(w->fd, 0) < 0 || lseek(w->fd, 0, SEEK_SET) < 0)
		return -errno;
	w->written = w->flushed = 0;
	if (sha256_init(&w->md) < 0)
		return -EIO;
	return 0;
}

uint64_t store_blob_written(const struct store_blob_writer *w)
{
	return w->written;
}

/* Computes the digest once and checks size and digest. Logs a mismatch. */
static int blob_check(struct store_blob_writer *w)
{
	if (!w->final) {
		if (sha256_final_hex(&w->md, w->digest + 7) < 0)
			return log_error_errno(-EIO, "sha256 failed");
		memcpy(w->digest, "sha256:", 7);
		w->final = true;
	}
	if (w->size >= 0 && w->written != (uint64_t)w->size) {
		log_error("blob %s: got %llu bytes, expected %lld: refused (truncated download?)",
			  w->expected ?: w->digest, (unsigned long long)w->written, (long long)w->size);
		return -EBADMSG;
	}
	if (w->expected && !streq(w->expected, w->digest)) {
		log_error("blob %s: content hashes to %s: refused (corrupted or tampered)", w->expected, w->digest);
		return -EBADMSG;
	}
	return 0;
}

int store_blob_verify(struct store_blob_writer *w)
{
	return blob_check(w);
}

int store_blob_commit(struct store_blob_writer *w, char **digest_out)
{
	_cleanup_free_ char *dst = NULL;
	int r;

	if ((r = blob_check(w)) < 0) {
		store_blob_abort(w);
		return r;
	}
	/* Make the content durable before its name claims it. */
	if (fdatasync(w->fd) < 0) {
		r = -errno;
		store_blob_abort(w);
		return log_error_errno(r, "cannot write blob %s: %m", w->digest);
	}
	dst = blob_relpath(w->digest);
	if (!dst || renameat(w->s->rootfd, w->tmpname, w->s->rootfd, dst) < 0) {
		r = dst ? -errno : -ENOMEM;
		store_blob_abort(w);
		return log_error_errno(r, "cannot store blob %s: %m", w->digest);
	}
	close(w->fd);
	w->fd = -1;
	if (digest_out && !(*digest_out = strdup(w->digest))) {
		store_blob_abort(w);
		return -ENOMEM;
	}
	store_blob_abort(w);
	return 0;
}

int store_blob_put(struct store *s, const void *buf, size_t len, char **digest_out)
{
	struct store_blob_writer *w;
	int r = store_blob_begin(s, NULL, (int64_t)len, &w);
	if (r < 0)
		return r;
	r = store_blob_write(w, buf, len);
	if (r < 0) {
		store_blob_abort(w);
		return log_error_errno(r, "cannot write a blob: %m");
	}
	return store_blob_commit(w, digest_out);
}

/* ---- rootfs ---- */

int store_rootfs_id(const char *manifest_digest, char id[65])
{
	struct sha256 c = { 0 };
	int ok;

	if (dl_load(&dl_libcrypto) < 0)
		return -ELIBACC;
	/* The id changes with the unpacker, so a fixed unpacker never reuses an old tree. */
	ok = sha256_init(&c) == 0 && sha256_update(&c, manifest_digest, strlen(manifest_digest)) == 0 &&
	     sha256_update(&c, "\n", 1) == 0 && sha256_update(&c, UNPACK_VERSION, strlen(UNPACK_VERSION)) == 0 &&
	     sha256_final_hex(&c, id) == 0;
	sha256_done(&c);
	if (!ok)
		return log_error_errno(-ENOMEM, "SHA-256 failed");
	return 0;
}

char *store_rootfs_path(struct store *s, const char *id)
{
	char *p;
	if (asprintf(&p, "%s/rootfs/%s", s->root, id) < 0)
		return NULL;
	return p;
}

static int tee_to_unpack(void *ud, const void *buf, size_t len)
{
	return unpack_stream_write(ud, buf, len);
}

/* Fetches @d from @src into @w while the unpack applies it to @tfd. The tree is the caller's to
 * discard on failure; the blob is kept only when the unpack succeeded and the digest matched.
 * Frees @w. Logs on failure. */
static int stream_layer(int tfd, const struct oci_descriptor *d, const char *what, const struct unpack_limits *lim,
			struct unpack_stats *st, const struct store_layer_source *src, struct store_blob_writer *w)
{
	struct unpack_stream *u;
	int r, ru, rv;

	if ((r = unpack_stream_begin(tfd, what, d->diff_id, lim, st, &u)) < 0) {
		store_blob_abort(w);
		return r;
	}
	store_blob_set_tee(w, tee_to_unpack, u);
	r = src->fetch(src->ud, d, w);
	ru = unpack_stream_finish(u, r);
	if (r < 0) {
		store_blob_abort(w);
		return r;
	}
	if (ru < 0) {
		/* refused or unreadable: were these the bytes the digest names? (says so if not) */
		rv = store_blob_verify(w);
		store_blob_abort(w);
		return rv < 0 ? rv : ru;
	}
	return store_blob_commit(w, NULL);
}

/* Applies layer @d to @tfd: from the store; or, missing there and @src given, fetched (while it
 * unpacks with @stream, else first). Logs on failure. */
static int apply_layer(struct store *s, int tfd, const struct oci_descriptor *d, const char *what,
		       const struct unpack_limits *lim, struct unpack_stats *st, const struct store_layer_source *src,
		       bool stream)
{
	_cleanup_close_ int lock = -1, lfd = -1;
	struct store_blob_writer *w;
	int r;

	if (src && !store_has_blob(s, d->digest)) {
		if (!oci_digest_is_valid(d->digest))
			return log_error("%s: invalid digest in the manifest", what), -EINVAL;
		/* one download per blob even with concurrent pulls: whoever holds the lock fetches */
		lock = store_lock(s, "blob", d->digest + 7, false);
		if (lock < 0)
			return log_error_errno(lock, "cannot lock blob %s: %m", d->digest);
		if (!store_has_blob(s, d->digest)) {
			if ((r = store_blob_begin(s, d->digest, d->size, &w)) < 0)
				return r;
			if (stream)
				return stream_layer(tfd, d, what, lim, st, src, w);
			if ((r = src->fetch(src->ud, d, w)) < 0) {
				store_blob_abort(w);
				return r;
			}
			if ((r = store_blob_commit(w, NULL)) < 0)
				return r;
		}
	}
	lfd = store_blob_open(s, d->digest);
	if (lfd < 0)
		return log_error_errno(lfd, "%s: blob missing from the store: %m", what);
	r = unpack_layer(tfd, lfd, what, d->diff_id, lim, st);
	if (r == -EPERM) {
		/* the layer is unsafe for every image that uses it: do not keep it */
		_cleanup_free_ char *bp = blob_relpath(d->digest);
		if (bp)
			(void)unlinkat(s->rootfd, bp, 0);
	}
	return r;
}

/* ---- downloading ahead: later layers into the store while an earlier one unpacks ----
 *
 * Layers are applied strictly in order (a whiteout in layer N acts on what 1..N-1 left), but
 * nothing orders their downloads. One helper thread with the source's second connection walks
 * the layers after the one being unpacked and fetches each missing blob into the store (verified
 * and committed as usual); the unpacking thread streams a layer itself when the helper has not
 * started it, waits for it when it is in flight, and reads it from the store when it is there. */

enum ahead_state { AHEAD_TODO, AHEAD_MAIN, AHEAD_BUSY, AHEAD_DONE, AHEAD_FAILED, AHEAD_STATE_MAX };

struct ahead {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct store *s;
	const struct oci_manifest *m;
	const struct store_layer_source *src;
	enum ahead_state *state;
	size_t at;                      /* the layer being unpacked */
	int err;                        /* why the AHEAD_FAILED layer failed (logged) */
	bool stop;
	struct store_blob_writer *busy; /* the helper's download, for store_blob_cancel() */
	pthread_t thread;
};

/* Fetches blob @d into the store through @fn, unless present; the helper's writer is published
 * in @a->busy while it runs. Logs on failure. */
static int ahead_fetch(struct ahead *a, const struct oci_descriptor *d)
{
	_cleanup_close_ int lock = -1;
	struct store_blob_writer *w;
	int r;

	if (!oci_digest_is_valid(d->digest))
		return -EINVAL; /* said by the unpacking thread when it gets there */
	lock = store_lock(a->s, "blob", d->digest + 7, false);
	if (lock < 0)
		return lock;
	if (store_has_blob(a->s, d->digest))
		return 0;
	if ((r = store_blob_begin(a->s, d->digest, d->size, &w)) < 0)
		return r;
	pthread_mutex_lock(&a->mu);
	a->busy = a->stop ? NULL : w;
	if (a->stop)
		store_blob_cancel(w);
	pthread_mutex_unlock(&a->mu);
	r = a->src->fetch_ahead(a->src->ud, d, w);
	pthread_mutex_lock(&a->mu);
	a->busy = NULL;
	pthread_mutex_unlock(&a->mu);
	if (r < 0) {
		store_blob_abort(w);
		return r;
	}
	return store_blob_commit(w, NULL);
}

static void *ahead_main(void *ud)
{
	struct ahead *a = ud;

	pthread_mutex_lock(&a->mu);
	for (;;) {
		size_t i;
		int r;

		for (i = a->at + 1; i < a->m->n_layers && a->state[i] != AHEAD_TODO; i++)
			;
		if (a->stop || i >= a->m->n_layers)
			break;
		a->state[i] = AHEAD_BUSY;
		pthread_mutex_unlock(&a->mu);
		r = ahead_fetch(a, &a->m->layers[i]);
		pthread_mutex_lock(&a->mu);
		/* the failure was logged here: the unpacking thread fails with it when it gets there
		 * (never a second download of a blob that did not verify) */
		a->state[i] = r < 0 ? AHEAD_FAILED : AHEAD_DONE;
		if (r < 0)
			a->err = r;
		pthread_cond_broadcast(&a->cv);
		if (r < 0)
			break;
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

/* Before layer @i unpacks (waiting while the helper fetches it). Return: 1 when the helper
 * put it into the store, 0 when the unpacking thread fetches it itself, or the helper's error
 * (logged). */
static int ahead_claim(struct ahead *a, size_t i)
{
	int r;

	pthread_mutex_lock(&a->mu);
	a->at = i;
	while (a->state[i] == AHEAD_BUSY)
		pthread_cond_wait(&a->cv, &a->mu);
	r = a->state[i] == AHEAD_DONE ? 1 : a->state[i] == AHEAD_FAILED ? a->err : 0;
	a->state[i] = AHEAD_MAIN;
	pthread_mutex_unlock(&a->mu);
	return r;
}

static void ahead_stop(struct ahead *a)
{
	pthread_mutex_lock(&a->mu);
	a->stop = true;
	if (a->busy)
		store_blob_cancel(a->busy);
	pthread_mutex_unlock(&a->mu);
	pthread_join(a->thread, NULL);
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	free(a->state);
}

/* Starts the helper when @src has a second connection and there is a later layer to fetch.
 * Return: true when it runs. */
static bool ahead_start(struct ahead *a, struct store *s, const struct oci_manifest *m,
			const struct store_layer_source *src)
{
	size_t missing = 0;

	for (size_t i = 1; i < m->n_layers; i++)
		missing += !store_has_blob(s, m->layers[i].digest);
	if (!src || !src->fetch_ahead || !missing)
		return false;
	*a = (struct ahead){ .s = s, .m = m, .src = src };
	a->state = calloc(m->n_layers, sizeof(*a->state));
	if (!a->state)
		return false;
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
	if (pthread_create(&a->thread, NULL, ahead_main, a) != 0) {
		pthread_cond_destroy(&a->cv);
		pthread_mutex_destroy(&a->mu);
		free(a->state);
		return false; /* then every layer streams in turn: slower, not wrong */
	}
	return true;
}

/* @path below @at as a DIR (never through a symlink), or NULL with errno set. */
static DIR *opendir_at(int at, const char *path)
{
	int fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	DIR *d;
	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return d;
}

/* Recreates the contents of directory @src in the empty directory @dst: directories anew with
 * the same mode, everything else (files, symlinks, fifos) as hardlinks, at most @left levels
 * deep. That is a copy of an unpacked tree because trees in rootfs/ are never written in place:
 * runs put an overlay (or a read-only bind) over them, and unpacking replaces an entry (create
 * with O_EXCL, after removing what was there) instead of writing into it, so a file shared
 * between two trees cannot change in either. Return: 0 or -errno (EMLINK: too deep, or an inode
 * at the filesystem's link limit). Does not log. */
static int link_tree(int src, int dst, uint32_t left)
{
	DIR *d = opendir_at(src, ".");
	struct dirent *de;
	int r = 0;

	if (!d)
		return errno ? -errno : -ENOMEM;
	while (r == 0 && (de = readdir(d))) {
		struct stat st;
		int sfd, dfd;

		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN) {
			r = linkat(dirfd(d), de->d_name, dst, de->d_name, 0) < 0 ? -errno : 0;
			continue;
		}
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = -errno;
			break;
		}
		if (!S_ISDIR(st.st_mode)) {
			r = linkat(dirfd(d), de->d_name, dst, de->d_name, 0) < 0 ? -errno : 0;
			continue;
		}
		if (left == 0) {
			r = -EMLINK;
			break;
		}
		if (mkdirat(dst, de->d_name, 0700) < 0) {
			r = -errno;
			break;
		}
		sfd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		dfd = openat(dst, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		r = sfd < 0 || dfd < 0 ? -errno : link_tree(sfd, dfd, left - 1);
		if (r == 0 && fchmod(dfd, st.st_mode & 07777) < 0)
			r = -errno;
		if (sfd >= 0)
			close(sfd);
		if (dfd >= 0)
			close(dfd);
	}
	closedir(d);
	return r;
}

/* A fresh empty tmp/rootfs-*: *tmprel and *tmpabs name it, *tfd is its fd. Logs on failure. */
static int tree_tmp_new(struct store *s, char **tmprel, char **tmpabs, int *tfd)
{
	char rnd[17];
	int r;

	if ((r = random_hex(rnd, 8)) < 0)
		return log_error_errno(r, "%m");
	if (asprintf(tmprel, "tmp/rootfs-%s", rnd) < 0 || asprintf(tmpabs, "%s/%s", s->root, *tmprel) < 0)
		return log_error_errno(-ENOMEM, "%m");
	if (mkdirat(s->rootfd, *tmprel, 0755) < 0)
		return log_error_errno(-errno, "cannot create '%s': %m", *tmpabs);
	*tfd = openat(s->rootfd, *tmprel, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (*tfd < 0) {
		r = log_error_errno(-errno, "cannot open '%s': %m", *tmpabs);
		(void)rm_rf(*tmpabs);
		return r;
	}
	return 0;
}

/* The base's tree into @tfd: the base's layers once more would cost what the first pull did;
 * this costs a link per file (bounded like the unpack that made the base). Logs on failure,
 * except for -EMLINK and -EXDEV (the caller unpacks everything instead). */
static int tree_link_base(int base_fd, int tfd, const struct unpack_limits *lim, const char *tmpabs)
{
	int r = link_tree(base_fd, tfd, lim->max_depth + 1);

	if (r < 0 && r != -EMLINK && r != -EXDEV)
		log_error_errno(r, "cannot link the base image's tree into '%s': %m", tmpabs);
	return r;
}

/* The finished tree @tfd (tmp/ @tmprel) becomes @rel. Logs on failure. */
static int tree_publish(struct store *s, int tfd, const char *tmprel, const char *rel, const char *tmpabs)
{
	if (fchmod(tfd, 0755) < 0)
		return log_error_errno(-errno, "chmod '%s': %m", tmpabs);
	if (renameat(s->rootfd, tmprel, s->rootfd, rel) < 0)
		return log_error_errno(-errno, "cannot move the unpacked image into '%s/%s': %m", s->root, rel);
	return 0;
}

/* Unpacks every layer into a fresh tmp/rootfs-* and renames it to @rel; with @base_fd >= 0 the
 * tree starts as a hardlinked copy of that tree, whose content is the first @n_base layers, and
 * only the rest are unpacked (-EMLINK or -EXDEV from the copy: the caller unpacks everything).
 * Logs on failure, except for those two. */
static int build_tree(struct store *s, const char *rel, const struct oci_manifest *m, const struct unpack_limits *lim,
		      const struct store_layer_source *src, bool stream, int base_fd, size_t n_base,
		      struct unpack_stats *st)
{
	_cleanup_free_ char *tmprel = NULL, *tmpabs = NULL;
	_cleanup_close_ int tfd = -1;
	struct ahead ahead;
	bool ahead_on = false;
	int r;

	if ((r = tree_tmp_new(s, &tmprel, &tmpabs, &tfd)) < 0)
		return r;
	if (base_fd >= 0) {
		r = tree_link_base(base_fd, tfd, lim, tmpabs);
		if (r < 0)
			goto fail;
	} else {
		n_base = 0;
	}
	ahead_on = stream && ahead_start(&ahead, s, m, src);
	for (size_t i = n_base; i < m->n_layers; i++) {
		char what[128];
		int fetched = ahead_on ? ahead_claim(&ahead, i) : 0;
		snprintf(what, sizeof(what), "layer %zu/%zu (%.19s)", i + 1, m->n_layers, m->layers[i].digest);
		r = fetched < 0 ? fetched : apply_layer(s, tfd, &m->layers[i], what, lim, st, fetched ? NULL : src, stream);
		if (r < 0)
			goto fail;
	}
	if (ahead_on) {
		ahead_on = false;
		ahead_stop(&ahead);
	}
	r = tree_publish(s, tfd, tmprel, rel, tmpabs);
	if (r < 0)
		goto fail;
	return 0;
fail:
	if (ahead_on)
		ahead_stop(&ahead);
	(void)rm_rf(tmpabs);
	return r < 0 ? r : -EIO;
}

struct store_tree {
	struct store *s;
	char *tmprel, *tmpabs;
	int fd;
	pid_t pid; /* the child still linking the base in, or 0 */
	int r;     /* what linking the base gave (store_tree_ready()) */
};

/* Waits for the linking child; SIGKILL first with @kill (an abort). */
static int tree_reap(struct store_tree *t, bool kill_it)
{
	int st;

	if (t->pid <= 0)
		return t->r;
	if (kill_it)
		(void)kill(t->pid, SIGKILL);
	while (waitpid(t->pid, &st, 0) < 0)
		if (errno != EINTR) {
			t->r = -errno;
			goto out;
		}
	/* the child exits with the errno of a failed link (EMLINK, EXDEV...), 0 when done; killed
	 * (the OOM killer): -ECHILD */
	t->r = WIFEXITED(st) ? -WEXITSTATUS(st) : -ECHILD;
out:
	t->pid = 0;
	return t->r;
}

void store_tree_abort(struct store_tree *t)
{
	if (!t)
		return;
	(void)tree_reap(t, true);
	if (t->fd >= 0)
		close(t->fd);
	if (t->tmpabs)
		(void)rm_rf(t->tmpabs);
	free(t->tmprel);
	free(t->tmpabs);
	free(t);
}

int store_tree_begin(struct store *s, const char *base_rootfs_id, const struct unpack_limits *lim, bool in_child,
		     struct store_tree **out)
{
	_cleanup_free_ char *brel = NULL;
	_cleanup_close_ int bfd = -1;
	struct store_tree *t;
	int r;

	if (base_rootfs_id) {
		if (strlen(base_rootfs_id) != 64 || strspn(base_rootfs_id, "0123456789abcdef") != 64)
			return -EXDEV;
		if (asprintf(&brel, "rootfs/%s", base_rootfs_id) < 0)
			return log_error_errno(-ENOMEM, "%m");
		bfd = openat(s->rootfd, brel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (bfd < 0)
			return -EXDEV; /* the base tree is gone: unpacked in full instead */
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return log_error_errno(-ENOMEM, "%m");
	t->s = s;
	t->fd = -1;
	r = tree_tmp_new(s, &t->tmprel, &t->tmpabs, &t->fd);
	if (r < 0) {
		free(t->tmpabs); /* tree_tmp_new() removed what it made */
		t->tmpabs = NULL;
		store_tree_abort(t);
		return r;
	}
	if (bfd >= 0 && in_child) {
		/* a process, not a thread: the caller forks its build steps meanwhile, and a child of a
		 * single-threaded process has nothing half-locked */
		t->pid = fork();
		if (t->pid < 0) {
			r = log_error_errno(-errno, "fork: %m");
			store_tree_abort(t);
			return r;
		}
		if (t->pid == 0) {
			r = link_tree(bfd, t->fd, lim->max_depth + 1);
			_exit(r < 0 && -r < 256 ? -r : r < 0 ? EIO : 0);
		}
	} else if (bfd >= 0 && (t->r = tree_link_base(bfd, t->fd, lim, t->tmpabs)) < 0) {
		r = t->r;
		store_tree_abort(t);
		return r;
	}
	*out = t;
	return 0;
}

int store_tree_ready(struct store_tree *t)
{
	int r = tree_reap(t, false);

	if (r < 0 && r != -EMLINK && r != -EXDEV)
		log_error_errno(r, "cannot link the base image's tree into '%s': %m", t->tmpabs);
	return r;
}

int store_tree_fd(const struct store_tree *t)
{
	return t->fd;
}

int store_tree_commit(struct store_tree *t, const char *manifest_digest, char **path_out)
{
	char id[65];
	_cleanup_free_ char *rel = NULL;
	_cleanup_close_ int lock = -1;
	struct stat sb;
	int r;

	if ((r = store_rootfs_id(manifest_digest, id)) < 0)
		goto out;
	if (asprintf(&rel, "rootfs/%s", id) < 0) {
		r = log_error_errno(-ENOMEM, "%m");
		goto out;
	}
	lock = store_lock(t->s, "rootfs", id, false);
	if (lock < 0) {
		r = log_error_errno(lock, "cannot lock rootfs %s: %m", id);
		goto out;
	}
	/* the same image made by someone else meanwhile: theirs is as good (same layers) */
	if (!(fstatat(t->s->rootfd, rel, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(sb.st_mode))) {
		r = tree_publish(t->s, t->fd, t->tmprel, rel, t->tmpabs);
		if (r < 0)
			goto out;
		free(t->tmpabs);
		t->tmpabs = NULL; /* published: nothing to remove */
	}
	*path_out = store_rootfs_path(t->s, id);
	r = *path_out ? 0 : log_error_errno(-ENOMEM, "%m");
out:
	store_tree_abort(t);
	return r;
}

/* store_rootfs_ensure_from() and store_rootfs_ensure_on() in one. */
static int rootfs_ensure(struct store *s, const char *manifest_digest, const struct oci_manifest *m,
			 const struct unpack_limits *lim, const struct store_layer_source *src, const char *base_id,
			 size_t n_base, uint64_t base_size, char **path_out, uint64_t *size_out)
{
	char id[65];
	_cleanup_free_ char *rel = NULL;
	_cleanup_close_ int lock = -1;
	struct unpack_stats st = { 0 };
	struct stat sb;
	int r;

	if ((r = store_rootfs_id(manifest_digest, id)) < 0)
		return r;
	if (asprintf(&rel, "rootfs/%s", id) < 0)
		return log_error_errno(-ENOMEM, "%m");
	lock = store_lock(s, "rootfs", id, false);
	if (lock < 0)
		return log_error_errno(lock, "cannot lock rootfs %s: %m", id);
	if (fstatat(s->rootfd, rel, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(sb.st_mode)) {
		*path_out = store_rootfs_path(s, id);
		return *path_out ? 0 : -ENOMEM;
	}
	if (base_id) {
		_cleanup_free_ char *brel = NULL;
		_cleanup_close_ int bfd = -1;
		if (asprintf(&brel, "rootfs/%s", base_id) < 0)
			return log_error_errno(-ENOMEM, "%m");
		bfd = openat(s->rootfd, brel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		r = bfd < 0 ? -EXDEV : build_tree(s, rel, m, lim, NULL, false, bfd, n_base, &st);
		if (r == 0)
			st.bytes += base_size;
		else if (r == -EMLINK || r == -EXDEV)
			log_debug("the base tree cannot be linked (%s): unpacking every layer", strerror(-r));
		if (r != -EMLINK && r != -EXDEV)
			goto done;
		st = (struct unpack_stats){ 0 };
	}
	r = build_tree(s, rel, m, lim, src, src != NULL, -1, 0, &st);
	if (r == -EAGAIN) {
		/* a streamed download broke after the unpack had its first bytes, so it could not
		 * simply be retried: start again, downloading each missing layer (with retries)
		 * before unpacking it */
		log_debug("a streamed layer download was interrupted: pulling again without streaming");
		st = (struct unpack_stats){ 0 };
		r = build_tree(s, rel, m, lim, src, false, -1, 0, &st);
	}
done:
	if (r < 0)
		return r;
	if (st.devices_skipped)
		log_info("skipped %llu device node(s) in the image (the sandbox has its own /dev)",
			 (unsigned long long)st.devices_skipped);
	if (st.setid_cleared)
		log_info("cleared setuid/setgid bits on %llu file(s)", (unsigned long long)st.setid_cleared);
	if (size_out)
		*size_out = st.bytes;
	*path_out = store_rootfs_path(s, id);
	return *path_out ? 0 : -ENOMEM;
}

int store_rootfs_ensure_from(struct store *s, const char *manifest_digest, const struct oci_manifest *m,
			     const struct unpack_limits *lim, const struct store_layer_source *src, char **path_out,
			     uint64_t *size_out)
{
	return rootfs_ensure(s, manifest_digest, m, lim, src, NULL, 0, 0, path_out, size_out);
}

int store_rootfs_ensure_on(struct store *s, const char *manifest_digest, const struct oci_manifest *m,
			   const struct unpack_limits *lim, const char *base_rootfs_id, size_t n_base, uint64_t base_size,
			   char **path_out, uint64_t *size_out)
{
	if (!base_rootfs_id || n_base > m->n_layers || strlen(base_rootfs_id) != 64 ||
	    strspn(base_rootfs_id, "0123456789abcdef") != 64)
		base_rootfs_id = NULL;
	return rootfs_ensure(s, manifest_digest, m, lim, NULL, base_rootfs_id, n_base, base_size, path_out, size_out);
}

int store_rootfs_ensure(struct store *s, const char *manifest_digest, const struct oci_manifest *m,
			const struct unpack_limits *lim, char **path_out, uint64_t *size_out)
{
	return store_rootfs_ensure_from(s, manifest_digest, m, lim, NULL, path_out, size_out);
}

/* ---- refs ---- */

static char *ref_filename(const char *name)
{
	size_t n = strlen(name);
	/* room for the escaped name, and at least for the hashed one: "h-", 64 digits, ".json" */
	char *out = malloc(n * 3 + 8 > 72 ? n * 3 + 8 : 72), *o = out;
	static const char hex[] = "0123456789ABCDEF";

	if (!out)
		return NULL;
	for (const char *p = name; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		    c == '-' || c == '_') {
			*o++ = (char)c;
		} else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	memcpy(o, ".json", 6);
	if (strlen(out) > 240 || out[0] == '.') {
		/* too long for one file name: hash it (the name itself is inside the file) */
		if (sha256_hex(name, n, out + 2) < 0) {
			free(out);
			return NULL; /* callers say -ENOMEM; a missing libcrypto was said by dl_load() */
		}
		out[0] = 'h', out[1] = '-'; /* a prefix over the old name: not a string of its own */
		memcpy(out + 66, ".json", 6);
	}
	return out;
}

void store_ref_done(struct store_ref *r)
{
	if (!r)
		return;
	free(r->name);
	free(r->digest);
	free(r->platform);
	free(r->config);
	free(r->rootfs_id);
	free(r->unpacker);
	memset(r, 0, sizeof(*r));
}

static int ref_parse_json(const char *buf, struct store_ref *r)
{
	json_object *o = json_tokener_parse(buf), *v;
	int ret = -EINVAL;

	memset(r, 0, sizeof(*r));
	if (!o)
		return -EINVAL;
#define S(key, field)                                                                                          \
	if (json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string) &&                   \
	    !(r->field = strdup(json_object_get_string(v))))                                                        \
		goto out;
	S("name", name) S("digest", digest) S("platform", platform) S("config", config) S("rootfs", rootfs_id)
	S("unpacker", unpacker)
#undef S
	if (json_object_object_get_ex(o, "resolved_at", &v))
		r->resolved_at = json_object_get_int64(v);
	if (json_object_object_get_ex(o, "size", &v))
		r->size = (uint64_t)json_object_get_int64(v);
	if (r->name && r->digest && oci_digest_is_valid(r->digest))
		ret = 0;
out:
	json_object_put(o);
	if (ret < 0)
		store_ref_done(r);
	return ret;
}

int store_ref_read(struct store *s, const char *name, struct store_ref *r)
{
	_cleanup_free_ char *fn = ref_filename(name), *rel = NULL, *buf = NULL;
	int k;

	memset(r, 0, sizeof(*r));
	if (!fn || asprintf(&rel, "refs/%s", fn) < 0)
		return -ENOMEM;
	k = read_file_at(s->rootfd, rel, 1 << 16, &buf, NULL);
	if (k < 0)
		return k;
	k = ref_parse_json(buf, r);
	if (k == 0 && !streq(r->name, name)) {
		store_ref_done(r);
		return -ENOENT;
	}
	return k;
}

int store_ref_write(struct store *s, const struct store_ref *r)
{
	_cleanup_free_ char *fn = ref_filename(r->name), *rel = NULL, *tmp = NULL;
	json_object *o = json_object_new_object();
	char rnd[17];
	const char *text;
	int k;

	if (!fn || !o || asprintf(&rel, "refs/%s", fn) < 0 || random_hex(rnd, 8) < 0 ||
	    asprintf(&tmp, "tmp/ref-%s", rnd) < 0) {
		json_object_put(o);
		return log_error_errno(-ENOMEM, "%m");
	}
	json_object_object_add(o, "name", json_object_new_string(r->name));
	json_object_object_add(o, "digest", json_object_new_string(r->digest));
	if (r->platform)
		json_object_object_add(o, "platform", json_object_new_string(r->platform));
	json_object_object_add(o, "resolved_at", json_object_new_int64(r->resolved_at));
	if (r->config)
		json_object_object_add(o, "config", json_object_new_string(r->config));
	if (r->rootfs_id)
		json_object_object_add(o, "rootfs", json_object_new_string(r->rootfs_id));
	if (r->unpacker)
		json_object_object_add(o, "unpacker", json_object_new_string(r->unpacker));
	json_object_object_add(o, "size", json_object_new_int64((int64_t)r->size));
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
	k = write_file_at(s->rootfd, tmp, text, strlen(text), 0644);
	if (k == 0 && renameat(s->rootfd, tmp, s->rootfd, rel) < 0)
		k = -errno;
	json_object_put(o);
	if (k < 0) {
		unlinkat(s->rootfd, tmp, 0);
		return log_error_errno(k, "cannot record the pin for '%s': %m", r->name);
	}
	return 0;
}

int store_ref_remove(struct store *s, const char *name)
{
	_cleanup_free_ char *fn = ref_filename(name), *rel = NULL;
	struct store_ref r;
	int k = store_ref_read(s, name, &r);
	if (k < 0)
		return k;
	store_ref_done(&r);
	if (!fn || asprintf(&rel, "refs/%s", fn) < 0)
		return -ENOMEM;
	return unlinkat(s->rootfd, rel, 0) < 0 ? -errno : 0;
}

static int cmp_ref(const void *a, const void *b)
{
	return strcmp(((const struct store_ref *)a)->name, ((const struct store_ref *)b)->name);
}

int store_ref_list(struct store *s, struct store_ref **refs, size_t *n)
{
	int fd = openat(s->rootfd, "refs", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct store_ref *v = NULL;
	size_t k = 0;
	DIR *d;
	struct dirent *de;

	*refs = NULL;
	*n = 0;
	if (fd < 0)
		return log_error_errno(-errno, "cannot open '%s/refs': %m", s->root);
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return log_error_errno(-ENOMEM, "%m");
	}
	while ((de = readdir(d))) {
		_cleanup_free_ char *buf = NULL;
		struct store_ref r, *nv;
		if (de->d_name[0] == '.' || read_file_at(dirfd(d), de->d_name, 1 << 16, &buf, NULL) < 0 ||
		    ref_parse_json(buf, &r) < 0)
			continue;
		nv = realloc(v, (k + 1) * sizeof(*v));
		if (!nv) {
			store_ref_done(&r);
			break;
		}
		v = nv;
		v[k++] = r;
	}
	closedir(d);
	if (k)
		qsort(v, k, sizeof(*v), cmp_ref);
	*refs = v;
	*n = k;
	return 0;
}

int store_rootfs_pinned_size(struct store *s, const char *rootfs_id, uint64_t *size)
{
	struct store_ref *refs;
	size_t n;
	int r = -ENOENT;

	*size = 0;
	if (store_ref_list(s, &refs, &n) < 0)
		return -ENOENT;
	for (size_t i = 0; i < n; i++) {
		if (r < 0 && refs[i].rootfs_id && streq(refs[i].rootfs_id, rootfs_id) && refs[i].size) {
			*size = refs[i].size;
			r = 0;
		}
		store_ref_done(&refs[i]);
	}
	free(refs);
	return r;
}

bool store_pin_is_fresh(int64_t resolved_at, int64_t now, long ttl_days)
{
	if (ttl_days < 0)
		return true;
	if (ttl_days == 0)
		return false;
	if (now < resolved_at) /* clock went backwards: re-resolve */
		return false;
	return now - resolved_at < (int64_t)ttl_days * 86400;
}

int store_blob_remove_unpinned(struct store *s, const char *digest)
{
	_cleanup_free_ char *p = blob_relpath(digest);
	struct store_ref *refs = NULL;
	size_t n = 0;
	bool used = false;
	int r;

	if (!p)
		return -EINVAL;
	if ((r = store_ref_list(s, &refs, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		used |= streq(refs[i].digest, digest) || (refs[i].config && streq(refs[i].config, digest));
		store_ref_done(&refs[i]);
	}
	free(refs);
	if (used)
		return 0;
	return unlinkat(s->rootfd, p, 0) < 0 && errno != ENOENT ? -errno : 0;
}

/* ---- garbage collection ---- */

static bool strv_has(char **v, const char *s)
{
	return strv_contains(v, s);
}

int store_gc(struct store *s, uint64_t *freed)
{
	_cleanup_strv_free_ char **keep_blobs = calloc(1, sizeof(char *));
	_cleanup_strv_free_ char **keep_rootfs = calloc(1, sizeof(char *));
	struct store_ref *refs = NULL;
	size_t n = 0;
	int r;
	DIR *d;
	struct dirent *de;
	_cleanup_close_ int gclock = -1;

	*freed = 0;
	if (!keep_blobs || !keep_rootfs)
		return log_error_errno(-ENOMEM, "%m");
	/* pulls hold the store lock shared; wait until none runs */
	gclock = store_lock(s, "store", "gc", false);
	if (gclock < 0)
		return log_error_errno(gclock, "cannot lock the store: %m");
	if ((r = store_ref_list(s, &refs, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *buf = NULL;
		struct oci_manifest m;
		size_t len;
		strv_push(&keep_blobs, refs[i].digest);
		if (refs[i].rootfs_id)
			strv_push(&keep_rootfs, refs[i].rootfs_id);
		if (store_blob_read(s, refs[i].digest, OCI_JSON_MAX, &buf, &len) == 0 &&
		    oci_manifest_parse(buf, len, NULL, &m, NULL) == 0) {
			if (m.config.digest)
				strv_push(&keep_blobs, m.config.digest);
			for (size_t j = 0; j < m.n_layers; j++)
				strv_push(&keep_blobs, m.layers[j].digest);
			oci_manifest_done(&m);
		}
		store_ref_done(&refs[i]);
	}
	free(refs);

	if ((d = opendir_at(s->rootfd, "rootfs"))) {
		while ((de = readdir(d))) {
			_cleanup_free_ char *p = NULL;
			int l;
			if (de->d_name[0] == '.' || strv_has(keep_rootfs, de->d_name))
				continue;
			/* a running session holds its rootfs lock shared: leave that tree alone */
			l = store_trylock(s, "rootfs", de->d_name, false);
			if (l < 0)
				continue;
			p = store_rootfs_path(s, de->d_name);
			if (p && rm_rf(p) == 0)
				(*freed)++;
			close(l);
		}
		closedir(d);
	}
	if ((d = opendir_at(s->rootfd, "blobs/sha256"))) {
		while ((de = readdir(d))) {
			_cleanup_free_ char *dg = NULL;
			if (de->d_name[0] == '.' || asprintf(&dg, "sha256:%s", de->d_name) < 0 || strv_has(keep_blobs, dg))
				continue;
			if (unlinkat(dirfd(d), de->d_name, 0) == 0)
				(*freed)++;
		}
		closedir(d);
	}
	/* tmp/ litter from crashed pulls: we hold the exclusive store lock, nothing is in flight */
	if ((d = opendir_at(s->rootfd, "tmp"))) {
		while ((de = readdir(d))) {
			_cleanup_free_ char *p = NULL;
			if (de->d_name[0] == '.' || asprintf(&p, "%s/tmp/%s", s->root, de->d_name) < 0)
				continue;
			(void)rm_rf(p);
		}
		closedir(d);
	}
	return 0;
}

int store_blob_open_desc(struct store *s, const struct oci_descriptor *d)
{
	struct stat sb;
	int fd;

	if (!oci_digest_is_valid(d->digest) || d->size < 0)
		return log_error("invalid descriptor in a manifest"), -EINVAL;
	fd = store_blob_open(s, d->digest);
	if (fd < 0)
		return log_error_errno(fd, "blob %s is not in the store (pull the image again): %m", d->digest);
	if (fstat(fd, &sb) < 0 || (uint64_t)sb.st_size != (uint64_t)d->size) {
		close(fd);
		return log_error("blob %s in the store is not the descriptor's %lld bytes: refused", d->digest,
				 (long long)d->size), -EBADMSG;
	}
	return fd;
}
