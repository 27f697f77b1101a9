// SPDX-License-Identifier: GPL-2.0-or-later
/* layer.c — overlay upper directory → OCI layer tar (whiteouts converted) */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <sys/ioctl.h>
#include <linux/fs.h>
#include <unistd.h>

#include "build/layer.h"
#include "util/dl.h"
#include "util/log.h"
#include "util/sha256.h"
#include "util/util.h"

enum layer_kind layer_classify(const char *name, mode_t mode, dev_t rdev, bool opaque)
{
	if (strncmp(name, ".wh.", 4) == 0)
		return LAYER_REFUSED;
	if (S_ISCHR(mode) && major(rdev) == 0 && minor(rdev) == 0)
		return LAYER_WHITEOUT;
	if (S_ISDIR(mode))
		return opaque ? LAYER_OPAQUE : LAYER_NORMAL;
	if (S_ISREG(mode) || S_ISLNK(mode) || S_ISFIFO(mode))
		return LAYER_NORMAL;
	return LAYER_SKIP; /* sockets, devices: a fakeroot build cannot mknod them anyway */
}

char *layer_whiteout_path(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *r;

	if (slash) {
		if (asprintf(&r, "%.*s/.wh.%s", (int)(slash - path), path, slash + 1) < 0)
			return NULL;
	} else if (asprintf(&r, ".wh.%s", path) < 0) {
		return NULL;
	}
	return r;
}

/* Files of the upper with more than one name: (dev, ino) → the layer path of the first name and
 * its mode as the recipe left it (tree_file() then clears setuid/setgid on the shared inode, which
 * later names must not see: the layer's bytes may not depend on whether the tree is made). */
struct link_slot {
	dev_t dev;
	ino_t ino;
	mode_t mode;
	char *path;
};

/* The names' bytes are bounded like the unpacker's path set (rootfs/unpack.c): a hostile RUN
 * step's upper can make up to LAYER_MAX_ENTRIES names of up to UNPACK_PATH_MAX bytes. */
#define LAYER_LINKS_MAX_BYTES (256ULL << 20)

struct links {
	struct link_slot *slot;
	size_t cap, n;
	uint64_t bytes;
};

static size_t link_hash(dev_t dev, ino_t ino, size_t cap)
{
	return (size_t)(((uint64_t)ino * 0x9e3779b97f4a7c15ULL) ^ (uint64_t)dev) & (cap - 1);
}

static struct link_slot *links_find(struct links *l, dev_t dev, ino_t ino)
{
	if (!l->cap)
		return NULL;
	for (size_t i = link_hash(dev, ino, l->cap);; i = (i + 1) & (l->cap - 1)) {
		if (!l->slot[i].path)
			return &l->slot[i];
		if (l->slot[i].dev == dev && l->slot[i].ino == ino)
			return &l->slot[i];
	}
}

/* Adds @path and @mode for (dev, ino), which links_find() did not have. Return: 0, -ENOMEM, or
 * -EFBIG past LAYER_LINKS_MAX_BYTES. */
static int links_add(struct links *l, dev_t dev, ino_t ino, mode_t mode, const char *path)
{
	struct link_slot *sl;
	uint64_t need = strlen(path) + 1 + sizeof(*sl);

	if (l->bytes + need > LAYER_LINKS_MAX_BYTES)
		return -EFBIG;

	if ((l->n + 1) * 2 > l->cap) {
		struct links g = { .cap = l->cap ? l->cap * 2 : 256, .n = l->n };
		g.slot = calloc(g.cap, sizeof(*g.slot));
		if (!g.slot)
			return -ENOMEM;
		for (size_t i = 0; i < l->cap; i++)
			if (l->slot[i].path)
				*links_find(&g, l->slot[i].dev, l->slot[i].ino) = l->slot[i];
		free(l->slot);
		*l = g;
	}
	sl = links_find(l, dev, ino);
	sl->path = strdup(path);
	if (!sl->path)
		return -ENOMEM;
	sl->dev = dev;
	sl->ino = ino;
	sl->mode = mode;
	l->n++;
	l->bytes += need;
	return 0;
}

static void links_done(struct links *l)
{
	for (size_t i = 0; i < l->cap; i++)
		free(l->slot[i].path);
	free(l->slot);
}

struct writer {
	struct archive *a;
	const struct layer_out *out;
	struct sha256 md; /* with out->digest; else out->write hashes */
	uint64_t size;
	int err;
	struct layer_result *res;
	struct links links;
	bool tree; /* still applying the entries to out->tree_fd */
};

static ssize_t write_cb(struct archive *a, void *data, const void *buf, size_t len)
{
	struct writer *w = data;
	int r = w->out->write(w->out->ud, buf, len);

	(void)a;
	if (r < 0) {
		w->err = r;
		return -1;
	}
	if (w->out->digest && sha256_update(&w->md, buf, len) < 0) {
		w->err = -EIO;
		return -1;
	}
	w->size += len;
	return (ssize_t)len;
}

static int archive_fail(struct writer *w, const char *path)
{
	int r = w->err ? w->err : -EIO;
	return log_error_errno(r, "Failed to write the layer entry '%s': %s", path, archive_error_string(w->a));
}

int64_t layer_mtime(const struct layer_times *t, const struct timespec *mtime)
{
	int64_t s = mtime->tv_sec;

	if (!t)
		return s;
	/* nanoseconds: a context file saved in the second the build started keeps its time */
	if (t->all || s > t->since_ns / 1000000000 ||
	    (s == t->since_ns / 1000000000 && mtime->tv_nsec >= t->since_ns % 1000000000) ||
	    (t->clamp && s > t->epoch))
		return t->epoch;
	return s;
}

/* Counts entry @path as unpack_layer() will (see struct unpack_summary); @kept: not a whiteout. */
static void count_entry(struct writer *w, const char *path, bool kept)
{
	struct unpack_summary *u = &w->res->sum;
	size_t n = strlen(path) + 1; /* a directory's name gets a '/' in the tar */
	uint32_t depth = *path ? 1 : 0;

	for (const char *p = path; *p; p++)
		depth += *p == '/';
	u->entries++;
	if (kept) {
		u->written++;
		u->path_bytes += n;
	}
	if (depth > u->max_depth)
		u->max_depth = depth;
	if (n > u->max_name)
		u->max_name = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

/* Writes a header for @path from @st (owner 0:0, no atime/ctime, whole-second mtime); @link is a
 * symlink's target, @hardlink the first name of a file with several. */
static int put_header(struct writer *w, const char *path, const struct stat *st, mode_t type, const char *link,
		      const char *hardlink, int64_t size, bool kept)
{
	static const struct timespec zero;
	struct archive_entry *e = archive_entry_new();
	int r;

	if (!e)
		return log_error_errno(-ENOMEM, "%m");
	archive_entry_set_pathname(e, path);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, st ? st->st_mode & 07777 : 0644);
	archive_entry_set_uid(e, 0);
	archive_entry_set_gid(e, 0);
	archive_entry_set_mtime(e, (time_t)layer_mtime(w->out->times, st ? &st->st_mtim : &zero), 0);
	archive_entry_set_size(e, size);
	if (link)
		archive_entry_set_symlink(e, link);
	if (hardlink)
		archive_entry_set_hardlink(e, hardlink);
	r = archive_write_header(w->a, e);
	archive_entry_free(e);
	if (r != ARCHIVE_OK)
		return archive_fail(w, path);
	w->res->n_entries++;
	if (w->res->n_entries > LAYER_MAX_ENTRIES)
		return log_error_errno(-EFBIG, "The build changed more than %u files", LAYER_MAX_ENTRIES);
	count_entry(w, path, kept);
	return 0;
}

/* ---- the tree: each entry applied as unpack_layer() applies it (rootfs/unpack.c) ---- */

/* The tree's side failed: the layer goes on, the caller unpacks the blob instead. */
static void tree_fail(struct writer *w, int r, const char *path)
{
	if (w->tree)
		log_debug("the image tree cannot take '%s' from the upper (%s): it is unpacked from the layer instead",
			  path, strerror(-r));
	w->tree = false;
}

/* What is at @name in the tree goes, as an entry that replaces it does (unpack.c's remove_at). */
static int tree_clear(struct writer *w, int tdir, const char *name)
{
	return unpack_remove_entry(tdir, name, w->out->lim->max_depth + 1);
}

/* A directory entry: made (replacing a non-directory) with the unpacker's mode; for @opaque,
 * what the lower had in it goes (the unpacker's ".wh..wh..opq" right after the directory: no
 * entry of this layer is in it yet). Return: the directory's fd, or -errno. */
static int tree_dir(struct writer *w, int tdir, const char *name, mode_t perm, bool opaque)
{
	mode_t mode = (perm & 01777) | 0700;
	_cleanup_close_ int fd = -1;
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (mkdirat(tdir, name, mode) < 0) {
		struct stat st;
		if (errno != EEXIST || fstatat(tdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
		if (!S_ISDIR(st.st_mode) &&
		    ((r = tree_clear(w, tdir, name)) < 0 || (mkdirat(tdir, name, mode) < 0 && (r = -errno) < 0)))
			return r;
	}
	fd = openat(tdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchmod(fd, mode) < 0)
		return -errno;
	if (!opaque)
		return TAKE_FD(fd);
	r = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r < 0 || !(d = fdopendir(r))) {
		r = r < 0 ? -errno : (close(r), -ENOMEM);
		return r;
	}
	r = 0;
	while (r == 0 && (errno = 0, de = readdir(d)))
		if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
			r = tree_clear(w, dirfd(d), de->d_name);
	if (r == 0 && errno)
		r = -errno;
	closedir(d);
	return r < 0 ? r : TAKE_FD(fd);
}

/* Whether the upper file @fd can be linked into the tree as it is once its user xattrs are
 * gone (the unpacker applies none): overlay's own user.overlay.* on a copied-up file, or a RUN's
 * setfattr. Any other xattr (security.capability, an ACL) or an inode flag the unpacker would
 * not give (chattr: append-only, noatime, ...) means a copy. Removes the user xattrs. */
static bool tree_linkable(int fd)
{
	/* how ext4 stores the file, not its behaviour: a new file may get them too */
	const unsigned long layout = FS_EXTENT_FL | FS_HUGE_FILE_FL | 0x10000000 /* FS_INLINE_DATA_FL */;
	unsigned long flags = 0;
	char names[4096];
	ssize_t n = flistxattr(fd, names, sizeof(names));

	if (n < 0)
		return errno == ENOTSUP;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1) {
		if (strncmp(names + i, "user.", 5) != 0 || fremovexattr(fd, names + i) < 0)
			return false;
	}
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0)
		return errno == ENOTTY || errno == ENOTSUP || errno == EINVAL;
	return (flags & ~layout) == 0;
}

/* A regular file: the inode @fd that was just read into the layer (as @st says it) is linked
 * at @name, with the unpacker's mode (no setuid/setgid) and times (whole-second mtime, atime the
 * same); a copy where it cannot be linked. */
static int tree_file(struct writer *w, int tdir, const char *name, int fd, const struct stat *st)
{
	mode_t keep = st->st_mode & 01777;
	time_t mt = (time_t)layer_mtime(w->out->times, &st->st_mtim);
	struct timespec ts[2] = { { .tv_sec = mt }, { .tv_sec = mt } };
	_cleanup_close_ int ofd = -1;
	char proc[40];
	off_t off = 0;
	int r = tree_clear(w, tdir, name);

	if (r < 0)
		return r;
	if (tree_linkable(fd)) {
		if ((st->st_mode & 07777) != keep && fchmod(fd, keep) < 0)
			return -errno;
		if (futimens(fd, ts) < 0)
			return -errno;
		/* the inode behind the fd, not whatever the upper's name points at now */
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		if (linkat(AT_FDCWD, proc, tdir, name, AT_SYMLINK_FOLLOW) == 0)
			return 0;
		if (errno != EXDEV && errno != EMLINK && errno != EPERM && errno != ENOENT)
			return -errno;
	}
	ofd = openat(tdir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, keep);
	if (ofd < 0)
		return -errno;
	while (off < st->st_size) {
		ssize_t k = copy_file_range(fd, &off, ofd, NULL, (size_t)(st->st_size - off), 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -ESTALE;
	}
	if (fchmod(ofd, keep) < 0 || futimens(ofd, ts) < 0)
		return -errno;
	return 0;
}

/* A second name of a file: linked to the tree's first name, as the unpacker's hardlink entry. */
static int tree_hardlink(struct writer *w, int tdir, const char *name, const char *first)
{
	_cleanup_free_ char *dir = strdup(first);
	_cleanup_close_ int pfd = -1;
	char *slash = dir ? strrchr(dir, '/') : NULL;
	int r;

	if (!dir)
		return -ENOMEM;
	if (slash)
		*slash = 0;
	pfd = slash ? openat_nofollow(w->out->tree_fd, dir, O_RDONLY | O_DIRECTORY, 0)
		    : openat(w->out->tree_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return pfd == -1 ? -errno : pfd;
	if ((r = tree_clear(w, tdir, name)) < 0)
		return r;
	return linkat(pfd, slash ? slash + 1 : first, tdir, name, 0) < 0 ? -errno : 0;
}

/* A symlink or fifo, made anew (replacing what is there). */
static int tree_special(struct writer *w, int tdir, const char *name, const struct stat *st, const char *target)
{
	int r = tree_clear(w, tdir, name);

	if (r < 0)
		return r;
	if (target)
		return symlinkat(target, tdir, name) < 0 ? -errno : 0;
	return mkfifoat(tdir, name, st->st_mode & 0777) < 0 ? -errno : 0;
}

/* ---- the walk ---- */

static int put_file(struct writer *w, int dfd, int tdir, const char *name, const char *path, const struct stat *st)
{
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	struct link_slot *sl = NULL;
	struct stat now, after;
	char buf[65536];
	uint64_t left;
	int r;

	if (fd < 0)
		return log_error_errno(-errno, "Failed to open '%s' in the build's upper dir: %m", path);
	if (fstat(fd, &now) < 0 || !S_ISREG(now.st_mode) || now.st_size != st->st_size)
		return log_error_errno(-ESTALE, "'%s' changed while the layer was written", path);
	if (now.st_nlink > 1) {
		sl = links_find(&w->links, now.st_dev, now.st_ino);
		if (sl && sl->path) {
			struct stat first = *st;

			first.st_mode = (st->st_mode & S_IFMT) | (sl->mode & 07777);
			r = put_header(w, path, &first, AE_IFREG, NULL, sl->path, 0, true);
			if (r >= 0 && w->tree && (r = tree_hardlink(w, tdir, name, sl->path)) < 0) {
				tree_fail(w, r, path);
				r = 0;
			}
			w->res->sum.hardlinks++;
			return r;
		}
		if ((r = links_add(&w->links, now.st_dev, now.st_ino, st->st_mode, path)) == -EFBIG)
			return log_error_errno(r, "The build made more hard-linked files than a layer can hold "
					       "(their names take over %llu MiB)", LAYER_LINKS_MAX_BYTES >> 20);
		if (r < 0)
			return log_error_errno(r, "%m");
	}
	r = put_header(w, path, st, AE_IFREG, NULL, NULL, st->st_size, true);
	if (r < 0)
		return r;
	left = (uint64_t)st->st_size;
	while (left > 0) {
		ssize_t n = read(fd, buf, left < sizeof(buf) ? left : sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return log_error_errno(-errno, "Failed to read '%s': %m", path);
		if (n == 0)
			return log_error_errno(-ESTALE, "'%s' shrank while the layer was written", path);
		if (archive_write_data(w->a, buf, (size_t)n) != n)
			return archive_fail(w, path);
		left -= (uint64_t)n;
	}
	w->res->sum.file_bytes += (uint64_t)st->st_size;
	if ((uint64_t)st->st_size > w->res->sum.max_file)
		w->res->sum.max_file = (uint64_t)st->st_size;
	if (!w->tree)
		return 0;
	/* the tree gets the inode whose bytes are in the layer: unchanged while they were read */
	if (fstat(fd, &after) < 0 || after.st_size != now.st_size || after.st_mtim.tv_sec != now.st_mtim.tv_sec ||
	    after.st_mtim.tv_nsec != now.st_mtim.tv_nsec || after.st_ctim.tv_sec != now.st_ctim.tv_sec ||
	    after.st_ctim.tv_nsec != now.st_ctim.tv_nsec)
		return log_error_errno(-ESTALE, "'%s' changed while the layer was written", path);
	if ((r = tree_file(w, tdir, name, fd, st)) < 0)
		tree_fail(w, r, path);
	return 0;
}

static bool dir_is_opaque(int fd)
{
	static const char *const names[] = { "user.overlay.opaque", "trusted.overlay.opaque" };
	char v[4];

	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		ssize_t n = fgetxattr(fd, names[i], v, sizeof(v));
		if (n == 1 && v[0] == 'y')
			return true;
	}
	return false;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A directory of the upper at @path (@sub open on it), and what is below it; @tdir is its
 * parent in the tree (with w->tree). Takes @sub. */
static int put_dir(struct writer *w, int tdir, const char *name, const char *path, const struct stat *st, int sub,
		   bool opaque, unsigned depth);

/* Walks directory @dfd (layer path @rel, "" at the top) in name order; @tdfd is the same
 * directory in the tree, or -1. Takes both fds. */
static int walk(struct writer *w, int dfd, int tdfd, const char *rel, unsigned depth)
{
	_cleanup_strv_free_ char **names = NULL;
	_cleanup_close_ int tfd = tdfd;
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (depth > LAYER_MAX_DEPTH) {
		close(dfd);
		return log_error_errno(-EFBIG, "'%s' is nested deeper than %u levels", rel, LAYER_MAX_DEPTH);
	}
	d = fdopendir(dfd);
	if (!d) {
		r = -errno;
		close(dfd);
		return log_error_errno(r, "Failed to read '%s': %m", rel);
	}
	while ((errno = 0, de = readdir(d)))
		if (!streq(de->d_name, ".") && !streq(de->d_name, "..") && (r = strv_push(&names, de->d_name)) < 0)
			break;
	if (r == 0 && errno)
		r = -errno;
	if (r < 0) {
		closedir(d);
		return log_error_errno(r, "Failed to read '%s': %m", rel);
	}
	/* an empty directory leaves names NULL: qsort(NULL, 0) is undefined (glibc's base is nonnull) */
	if (names)
		qsort(names, strv_length(names), sizeof(char *), cmp_name);

	for (size_t i = 0; names && names[i] && r >= 0; i++) {
		_cleanup_free_ char *path = NULL;
		struct stat st;
		enum layer_kind k;
		int sub = -1, t;
		bool opaque = false;

		if (asprintf(&path, "%s%s%s", rel, *rel ? "/" : "", names[i]) < 0) {
			r = log_error_errno(-ENOMEM, "%m");
			break;
		}
		/* the unpacker refuses it (ENAMETOOLONG); refused here before anything holds it */
		if (strlen(path) > UNPACK_PATH_MAX) {
			r = log_error_errno(-EFBIG, "The build created a path longer than %d bytes ('%.80s...')",
					    UNPACK_PATH_MAX, path);
			break;
		}
		if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = log_error_errno(-errno, "Failed to stat '%s': %m", path);
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			sub = openat(dirfd(d), names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0) {
				r = log_error_errno(-errno, "Failed to open '%s': %m", path);
				break;
			}
			opaque = dir_is_opaque(sub);
		}
		k = layer_classify(names[i], st.st_mode, st.st_rdev, opaque);
		switch (k) {
		case LAYER_REFUSED:
			r = log_error_errno(-EINVAL, "The build created '%s': a name starting with '.wh.' would "
					    "delete a file when the layer is unpacked", path);
			break;
		case LAYER_SKIP:
			w->res->n_skipped++;
			break;
		case LAYER_WHITEOUT: {
			_cleanup_free_ char *wh = layer_whiteout_path(path);
			r = wh ? put_header(w, wh, &st, AE_IFREG, NULL, NULL, 0, false) : -ENOMEM;
			w->res->n_whiteouts++;
			if (r >= 0 && w->tree && (t = tree_clear(w, tfd, names[i])) < 0)
				tree_fail(w, t, path);
			break;
		}
		case LAYER_OPAQUE:
		case LAYER_NORMAL:
			if (S_ISDIR(st.st_mode)) {
				r = put_dir(w, tfd, names[i], path, &st, sub, k == LAYER_OPAQUE, depth);
				sub = -1;
			} else if (S_ISREG(st.st_mode)) {
				r = put_file(w, dirfd(d), tfd, names[i], path, &st);
			} else if (S_ISLNK(st.st_mode)) {
				char target[4096];
				ssize_t n = readlinkat(dirfd(d), names[i], target, sizeof(target) - 1);
				if (n < 0) {
					r = log_error_errno(-errno, "Failed to read the link '%s': %m", path);
					break;
				}
				target[n] = 0;
				r = put_header(w, path, &st, AE_IFLNK, target, NULL, 0, true);
				if ((size_t)n + 1 > w->res->sum.max_name)
					w->res->sum.max_name = (uint32_t)n + 1;
				if (r >= 0 && w->tree && (t = tree_special(w, tfd, names[i], &st, target)) < 0)
					tree_fail(w, t, path);
			} else {
				r = put_header(w, path, &st, AE_IFIFO, NULL, NULL, 0, true);
				if (r >= 0 && w->tree && (t = tree_special(w, tfd, names[i], &st, NULL)) < 0)
					tree_fail(w, t, path);
			}
			break;
		case LAYER_KIND_MAX:
			r = -EINVAL;
			break;
		}
		if (sub >= 0)
			close(sub);
	}
	closedir(d);
	return r;
}

static int put_dir(struct writer *w, int tdir, const char *name, const char *path, const struct stat *st, int sub,
		   bool opaque, unsigned depth)
{
	int tsub = -1, r = put_header(w, path, st, AE_IFDIR, NULL, NULL, 0, true);

	if (r >= 0 && opaque) {
		_cleanup_free_ char *opq = NULL;
		r = asprintf(&opq, "%s/.wh..wh..opq", path) < 0 ? log_error_errno(-ENOMEM, "%m")
								 : put_header(w, opq, NULL, AE_IFREG, NULL, NULL, 0, false);
		w->res->n_opaque++;
	}
	if (r < 0) {
		close(sub);
		return r;
	}
	/* the unpacker's depth bound: deeper than it goes, the tree is not made (nor would the
	 * unpacker make it: unpack_summary_fits() says no) */
	if (w->tree && depth + 1 > w->out->lim->max_depth)
		tree_fail(w, -EMLINK, path);
	if (w->tree && (tsub = tree_dir(w, tdir, name, st->st_mode, opaque)) < 0) {
		tree_fail(w, tsub, path);
		tsub = -1;
	}
	return walk(w, sub, tsub, path, depth + 1);
}

static int fd_write(void *ud, const void *buf, size_t len)
{
	return write_full(*(int *)ud, buf, len);
}

int layer_write(int upper_fd, int out_fd, struct layer_result *res)
{
	struct layer_out out = { .write = fd_write, .ud = &out_fd, .digest = true, .tree_fd = -1 };
	return layer_write_out(upper_fd, &out, res);
}

int layer_write_out(int upper_fd, const struct layer_out *out, struct layer_result *res)
{
	struct writer w = { .out = out, .res = res, .tree = out->tree_fd >= 0 && out->lim };
	int top, tree = -1, r;

	*res = (struct layer_result){ 0 };
	w.a = archive_write_new();
	if (!w.a || (out->digest && sha256_init(&w.md) < 0)) {
		/* a missing library was said once by dl_load(), with its package */
		if (dl_load(&dl_libarchive) < 0 || dl_load(&dl_libcrypto) < 0)
			r = -ELIBACC;
		else
			r = log_error_errno(-ENOMEM, "%m");
		goto out;
	}
	/* 1 MiB to out->write at a time, not libarchive's 10 KiB (30,000 calls for a 300 MB layer);
	 * the last block is not padded, so the bytes are the same for any block size */
	if (archive_write_set_format_pax_restricted(w.a) != ARCHIVE_OK ||
	    archive_write_set_bytes_per_block(w.a, 1 << 20) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(w.a, 1) != ARCHIVE_OK ||
	    archive_write_open2(w.a, &w, NULL, write_cb, NULL, NULL) != ARCHIVE_OK) {
		r = log_error_errno(-EIO, "Failed to start the layer: %s", archive_error_string(w.a));
		goto out;
	}
	top = openat(upper_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (top < 0) {
		r = log_error_errno(-errno, "Failed to open the build's upper dir: %m");
		goto out;
	}
	if (w.tree && (tree = openat(out->tree_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		tree_fail(&w, -errno, "/");
	r = walk(&w, top, tree, "", 0);
	if (r >= 0 && archive_write_close(w.a) != ARCHIVE_OK)
		r = archive_fail(&w, "(end)");
	if (r >= 0) {
		if (out->digest) {
			if (sha256_final_hex(&w.md, res->digest + 7) < 0) {
				r = log_error_errno(-EIO, "sha256 failed");
				goto out;
			}
			memcpy(res->digest, "sha256:", 7);
		}
		res->size = w.size;
		res->tree_done = w.tree;
	}
out:
	if (w.a)
		archive_write_free(w.a);
	sha256_done(&w.md);
	links_done(&w.links);
	return r;
}
