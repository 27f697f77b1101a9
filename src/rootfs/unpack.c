// SPDX-License-Identifier: GPL-2.0-or-later
/* unpack.c — layer application with libarchive, relative to a root directory fd */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <linux/openat2.h>

#include "rootfs/unpack.h"
#include "util/chunkq.h"
#include "util/dl.h"
#include "util/log.h"
#include "util/sha256.h"
#include "util/util.h"

/* Each string of the path set costs its bytes, its NUL and about one malloc header. */
#define PATHSET_OVERHEAD 16

void unpack_limits_default(struct unpack_limits *l)
{
	*l = (struct unpack_limits){
		.max_entry_bytes = 8ULL << 30,
		.max_total_bytes = 64ULL << 30,
		.max_entries = 4000000,
		.max_hardlinks = 1000000,
		/* 4 million entries of 40 bytes take about 300 MiB with the slot array; images with
		 * 500k files (the largest we know) need ~60 MiB */
		.max_pathset_bytes = 256ULL << 20,
		.max_path_bytes = UNPACK_PATH_MAX,
		/* the deepest path on a Debian host with node, python and the agent CLIs installed is
		 * 20 levels (measured 2026-12-01); util's rm_rf() holds one fd per level */
		.max_depth = 128,
		.max_xattrs = 128,
	};
}

int unpack_path_normalize(const char *in, char **out)
{
	_cleanup_free_ char *buf = NULL;
	size_t n = 0, len;
	const char *p = in;

	*out = NULL;
	if (!in)
		return -EINVAL;
	len = strnlen(in, UNPACK_PATH_MAX + 1);
	if (len > UNPACK_PATH_MAX)
		return -ENAMETOOLONG;
	if (in[0] == '/')
		return -EINVAL;
	buf = malloc(len + 1);
	if (!buf)
		return -ENOMEM;
	while (*p) {
		const char *e = strchr(p, '/');
		size_t k = e ? (size_t)(e - p) : strlen(p);
		if (k == 0 || (k == 1 && p[0] == '.')) {
			/* "", "." components vanish */
		} else if (k == 2 && p[0] == '.' && p[1] == '.') {
			return -EINVAL;
		} else {
			if (n)
				buf[n++] = '/';
			memcpy(buf + n, p, k);
			n += k;
		}
		p += k;
		if (*p == '/')
			p++;
	}
	buf[n] = 0;
	*out = TAKE_PTR(buf);
	return 0;
}

enum unpack_whiteout unpack_whiteout_kind(const char *path, char **target)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t dirlen = slash ? (size_t)(slash - path) : 0;

	*target = NULL;
	if (strncmp(base, ".wh.", 4) != 0)
		return UNPACK_WH_NONE;
	if (streq(base, ".wh..wh..opq")) {
		*target = strndup(path, dirlen);
		return *target ? UNPACK_WH_OPAQUE : UNPACK_WH_OTHER;
	}
	if (strncmp(base, ".wh..wh.", 8) == 0)
		return UNPACK_WH_OTHER;
	if (!base[4] || streq(base + 4, ".") || streq(base + 4, ".."))
		return UNPACK_WH_OTHER;
	if (slash) {
		if (asprintf(target, "%.*s/%s", (int)dirlen, path, base + 4) < 0)
			*target = NULL;
	} else {
		*target = strdup(base + 4);
	}
	return *target ? UNPACK_WH_FILE : UNPACK_WH_OTHER;
}

/* ---- a string set of the paths this layer wrote (opaque whiteouts keep those) ---- */

struct pathset {
	char **slot;
	size_t cap, n;
	uint64_t bytes; /* slot array + strings, checked against the limit before each growth */
};

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static void pathset_done(struct pathset *s)
{
	for (size_t i = 0; i < s->cap; i++)
		free(s->slot[i]);
	free(s->slot);
	memset(s, 0, sizeof(*s));
}

static bool pathset_has(const struct pathset *s, const char *p)
{
	if (!s->cap)
		return false;
	for (size_t i = fnv1a(p) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
		if (!s->slot[i])
			return false;
		if (streq(s->slot[i], p))
			return true;
	}
}

/* Adds @p unless present. Return: 0, -E2BIG when that would take the set over @max bytes,
 * -ENOMEM. Does not log. */
static int pathset_add(struct pathset *s, const char *p, uint64_t max)
{
	uint64_t need = strlen(p) + 1 + PATHSET_OVERHEAD;

	if (pathset_has(s, p))
		return 0;
	if ((s->n + 1) * 2 > s->cap) {
		struct pathset g = { .cap = s->cap ? s->cap * 2 : 1024 };
		uint64_t grown = s->bytes - s->cap * sizeof(char *) + g.cap * sizeof(char *);
		if (grown + need > max)
			return -E2BIG;
		g.bytes = grown;
		g.slot = calloc(g.cap, sizeof(char *));
		if (!g.slot)
			return -ENOMEM;
		for (size_t i = 0; i < s->cap; i++) {
			if (!s->slot[i])
				continue;
			size_t j = fnv1a(s->slot[i]) & (g.cap - 1);
			while (g.slot[j])
				j = (j + 1) & (g.cap - 1);
			g.slot[j] = s->slot[i];
		}
		g.n = s->n;
		free(s->slot);
		*s = g;
	}
	if (s->bytes + need > max)
		return -E2BIG;
	size_t i = fnv1a(p) & (s->cap - 1);
	while (s->slot[i])
		i = (i + 1) & (s->cap - 1);
	s->slot[i] = strdup(p);
	if (!s->slot[i])
		return -ENOMEM;
	s->n++;
	s->bytes += need;
	return 0;
}

/* ---- the extraction state ---- */

struct layer_ctx {
	int rootfd;
	const char *what;
	const struct unpack_limits *lim;
	struct unpack_stats *st;
	struct pathset written;
	char *cached_dir; /* parent path whose fd is cached */
	int cached_fd;
	dev_t root_dev;
	ino_t root_ino;
	mode_t umask;       /* the process's, read once: files whose mode it keeps skip fchmod() */
	struct chunkq *in;  /* the decompressed stream this reads (its stage logs its own errors) */
};

/* A libarchive read error in the extraction: when the decompression stage before it failed, that
 * stage said why (or its producer stopped, with nothing to say), so only its code is returned;
 * otherwise the tar stream itself is bad. */
static int read_failed(struct layer_ctx *c, struct archive *a, const char *doing, const char *name, int code)
{
	int up = c->in ? chunkq_write_error(c->in) : 0;

	if (up < 0)
		return up;
	if (name)
		log_error("%s: %s '%s': %s", c->what, doing, name, archive_error_string(a));
	else
		log_error("%s: %s: %s", c->what, doing, archive_error_string(a));
	return code;
}

static void cache_drop(struct layer_ctx *c)
{
	free(c->cached_dir);
	c->cached_dir = NULL;
	if (c->cached_fd >= 0)
		close(c->cached_fd);
	c->cached_fd = -1;
}

static int openat2_dir(int dirfd, const char *path, uint64_t resolve)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV | resolve,
	};
	long fd = syscall(SYS_openat2, dirfd, *path ? path : ".", &how, sizeof(how));
	return fd < 0 ? -errno : (int)fd;
}

/* Opens @path (a directory, relative to @dirfd) without leaving the root: symlinks that stay
 * inside are followed, absolute ones and ones that climb out give EXDEV. */
static int open_beneath(int dirfd, const char *path)
{
	return openat2_dir(dirfd, path, 0);
}

/* How many levels directory @fd is below the root, walking "..": counted up to @max + 1.
 * Return: the depth, or -errno. */
static int real_depth(const struct layer_ctx *c, int fd, uint32_t max)
{
	_cleanup_close_ int cur = fcntl(fd, F_DUPFD_CLOEXEC, 3);

	if (cur < 0)
		return -errno;
	for (uint32_t d = 0;; d++) {
		struct stat st;
		int up;

		if (fstat(cur, &st) < 0)
			return -errno;
		if (st.st_dev == c->root_dev && st.st_ino == c->root_ino)
			return (int)d;
		if (d > max)
			return (int)d;
		up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up < 0)
			return -errno;
		close(cur);
		cur = up;
	}
}

/* Returns a (cached, not owned) fd of directory @dir, creating missing components 0755. */
static int parent_fd(struct layer_ctx *c, const char *dir)
{
	_cleanup_free_ char *buf = NULL;
	int fd, r;

	if (c->cached_dir && streq(c->cached_dir, dir))
		return c->cached_fd;
	cache_drop(c);
	/* The common case first: a path without symlinks is opened once, with RESOLVE_NO_SYMLINKS
	 * (it used to be opened beneath the root and then a second time only to learn that no
	 * symlink was on the way: 8,725 openat2() for 12,623 entries of bench/pull.sh's layer). */
	fd = openat2_dir(c->rootfd, dir, RESOLVE_NO_SYMLINKS);
	if (fd >= 0)
		goto cache;
	if (fd == -ELOOP)
		fd = open_beneath(c->rootfd, dir);
	if (fd == -ENOENT) {
		/* walk down, creating what is missing; each step resolved beneath the root */
		buf = strdup(dir);
		if (!buf)
			return -ENOMEM;
		for (char *s = buf;; s++) {
			if (*s != '/' && *s != 0)
				continue;
			char saved = *s;
			*s = 0;
			r = open_beneath(c->rootfd, buf);
			if (r == -ENOENT) {
				char *slash = strrchr(buf, '/');
				_cleanup_close_ int pfd = -1;
				if (slash) {
					*slash = 0;
					pfd = open_beneath(c->rootfd, buf);
					*slash = '/';
				} else {
					pfd = open_beneath(c->rootfd, "");
				}
				if (pfd < 0)
					return pfd;
				if (mkdirat(pfd, slash ? slash + 1 : buf, 0755) < 0 && errno != EEXIST)
					return -errno;
				r = open_beneath(c->rootfd, buf);
			}
			if (r < 0)
				return r;
			close(r);
			*s = saved;
			if (!saved)
				break;
		}
		fd = open_beneath(c->rootfd, dir);
	}
	if (fd < 0)
		return fd;
	r = openat2_dir(c->rootfd, dir, RESOLVE_NO_SYMLINKS);
	if (r >= 0) {
		close(r);
	} else if (r == -ELOOP) {
		/* Reached through a symlink: the directory may lie deeper than its name says, and
		 * chains of such links could build trees without bound (rm_rf() and the whiteout
		 * removal hold one fd per level). Count its real depth. */
		r = real_depth(c, fd, c->lim->max_depth);
		if (r < 0 || (uint32_t)r >= c->lim->max_depth) {
			close(fd);
			return r < 0 ? r : -EMLINK;
		}
	}
cache:
	c->cached_dir = strdup(dir);
	if (!c->cached_dir) {
		close(fd);
		return -ENOMEM;
	}
	c->cached_fd = fd;
	return fd;
}

/* Removes @name in @dirfd, recursively, at most @left levels deep (one fd each: the trees
 * unpack makes are bounded by max_depth, this is the second wall); never follows a symlink. */
static int remove_at(int at, const char *name, uint32_t left)
{
	struct stat st;
	if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (S_ISDIR(st.st_mode)) {
		if (left == 0)
			return -EMLINK;
		int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		DIR *d;
		struct dirent *de;
		int r = 0;
		if (fd < 0)
			return -errno;
		(void)fchmod(fd, (st.st_mode & 07777) | 0700);
		d = fdopendir(fd);
		if (!d) {
			close(fd);
			return -ENOMEM;
		}
		while ((de = readdir(d)))
			if (!streq(de->d_name, ".") && !streq(de->d_name, "..")) {
				int k = remove_at(dirfd(d), de->d_name, left - 1);
				if (k < 0 && !r)
					r = k;
			}
		closedir(d);
		if (r < 0)
			return r;
		return unlinkat(at, name, AT_REMOVEDIR) < 0 ? -errno : 0;
	}
	return unlinkat(at, name, 0) < 0 && errno != ENOENT ? -errno : 0;
}

/* Opaque directory @path: remove every child that this layer did not write itself. */
static int clear_opaque(struct layer_ctx *c, int dfd, const char *path, uint32_t left)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	while ((de = readdir(d)) && r == 0) {
		_cleanup_free_ char *child = NULL;
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		child = *path ? path_join(path, de->d_name) : strdup(de->d_name);
		if (!child) {
			r = -ENOMEM;
			break;
		}
		if (!pathset_has(&c->written, child)) {
			r = remove_at(dirfd(d), de->d_name, left);
		} else if (de->d_type == DT_DIR) {
			int sub;
			if (left == 0) {
				r = -EMLINK;
				break;
			}
			sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0) {
				r = -errno;
				break;
			}
			r = clear_opaque(c, sub, child, left - 1);
			close(sub);
		}
	}
	closedir(d);
	return r;
}

static void split(char *path, const char **dir, const char **base)
{
	char *slash = strrchr(path, '/');
	if (slash) {
		*slash = 0;
		*dir = path;
		*base = slash + 1;
	} else {
		*dir = "";
		*base = path;
	}
}

/* Names are the layer's: shown cut to 200 bytes (log.c replaces control bytes). */
static int refuse(struct layer_ctx *c, const char *name, const char *why)
{
	log_error("%s: entry '%.200s%s' %s: layer refused", c->what, name, strlen(name) > 200 ? "..." : "", why);
	return -EPERM;
}

/* A refusal for going over limit @what (of @lim, in @unit). */
static int refuse_over(struct layer_ctx *c, const char *name, const char *why, uint64_t lim, const char *unit)
{
	char buf[160];
	snprintf(buf, sizeof(buf), "%s: over the unpack limit of %llu %s", why, (unsigned long long)lim, unit);
	return refuse(c, name, buf);
}

static uint32_t path_depth(const char *p)
{
	uint32_t d = *p ? 1 : 0;
	for (; *p; p++)
		d += *p == '/';
	return d;
}

/* The limits of libarchive's tables that an entry brings along (aisb never applies them). */
static int check_entry_tables(struct layer_ctx *c, struct archive_entry *e, const char *raw)
{
	int n = archive_entry_xattr_count(e);
	if (n > 0 && (uint64_t)n > c->lim->max_xattrs)
		return refuse_over(c, raw, "has too many extended attributes", c->lim->max_xattrs, "per entry");
	return 0;
}

/* parent_fd() errors as refusals where the layer is to blame. */
static int parent_error(struct layer_ctx *c, const char *raw, int r)
{
	if (r == -EXDEV || r == -ELOOP)
		return refuse(c, raw, "reaches outside the root through a symlink");
	if (r == -ENOTDIR)
		return refuse(c, raw, "has a parent that is not a directory");
	if (r == -EMLINK)
		return refuse_over(c, raw, "lies too deep below the root (through a symlinked directory)",
				   c->lim->max_depth, "directory levels");
	return log_error_errno(r, "%s: cannot open the parent of '%.200s': %m", c->what, raw);
}

/* ---- judging an entry: everything decided from the entry itself, before the tree ----
 *
 * judge_entry() is the half of an entry's handling that reads only the entry, the limits and
 * this layer's path set: names, limits, whiteout kinds, types, link targets, sizes. It is what
 * both unpack_layer() and unpack_judge_layer() (the fuzz target's, in memory) run, so the fuzzer
 * exercises the very checks a registry's layer meets; apply_entry() then does what the verdict
 * says, in the tree, where openat2() keeps every step beneath the root. */

enum entry_act {
	ACT_NONE,     /* nothing to do (the root itself, aufs-internal whiteouts, devices) */
	ACT_OPAQUE,   /* clear target's lower contents */
	ACT_WHITEOUT, /* remove target from the lower layers */
	ACT_HARDLINK, /* link name to target (both normalised) */
	ACT_FILE,
	ACT_DIR,
	ACT_SYMLINK,
	ACT_FIFO,
	ACT_MAX
};

struct entry_plan {
	enum entry_act act;
	const char *raw;  /* the layer's name, for messages */
	char *name;       /* normalised */
	char *target;     /* ACT_OPAQUE, ACT_WHITEOUT, ACT_HARDLINK: normalised */
	int64_t size;     /* ACT_FILE */
};

static void entry_plan_done(struct entry_plan *p)
{
	free(p->name);
	free(p->target);
}

/* Judges entry @e. Return: 0 with @p filled (ACT_NONE: nothing to do), -EPERM for a refused
 * layer, -errno. Logs on failure. */
static int judge_entry(struct layer_ctx *c, struct archive_entry *e, struct entry_plan *p)
{
	const char *raw = archive_entry_pathname(e);
	mode_t type = archive_entry_filetype(e);
	const char *hl = archive_entry_hardlink(e);
	enum unpack_whiteout wh;
	int r;

	*p = (struct entry_plan){ .act = ACT_NONE, .raw = raw };
	if (!raw)
		return refuse(c, "(no name)", "has no name");
	if (++c->st->entries > c->lim->max_entries)
		return refuse_over(c, raw, "is one entry too many", c->lim->max_entries, "entries per image");
	r = unpack_path_normalize(raw, &p->name);
	if (r == -ENAMETOOLONG || (r == 0 && strlen(p->name) > c->lim->max_path_bytes))
		return refuse_over(c, raw, "has a name that is too long", c->lim->max_path_bytes, "bytes");
	if (r < 0)
		return refuse(c, raw, path_is_absolute(raw) ? "is an absolute path" : "contains '..'");
	if (!*p->name) /* the layer's root itself */
		return 0;
	if (path_depth(p->name) > c->lim->max_depth)
		return refuse_over(c, raw, "lies too deep below the root", c->lim->max_depth, "directory levels");
	if ((r = check_entry_tables(c, e, raw)) < 0)
		return r;

	wh = unpack_whiteout_kind(p->name, &p->target);
	if (wh != UNPACK_WH_NONE) {
		c->st->whiteouts++;
		if (wh == UNPACK_WH_OTHER)
			return 0;
		if (wh == UNPACK_WH_OPAQUE) {
			p->act = ACT_OPAQUE;
			return 0;
		}
		if (!pathset_has(&c->written, p->target)) /* whiteouts hide lower layers only */
			p->act = ACT_WHITEOUT;
		return 0;
	}

	if (type == AE_IFCHR || type == AE_IFBLK || type == AE_IFSOCK) {
		c->st->devices_skipped++;
		return 0;
	}

	r = pathset_add(&c->written, p->name, c->lim->max_pathset_bytes);
	if (r == -E2BIG)
		return refuse_over(c, raw, "takes the set of paths this layer wrote (kept for its whiteouts) too far",
				   c->lim->max_pathset_bytes >> 10, "KiB");
	if (r < 0)
		return log_error_errno(r, "%s: %m", c->what);

	if (hl) {
		if (c->st->hardlinks >= c->lim->max_hardlinks)
			return refuse_over(c, raw, "is one hardlink too many", c->lim->max_hardlinks, "hardlinks per image");
		r = unpack_path_normalize(hl, &p->target);
		if (r == -ENAMETOOLONG || (r == 0 && strlen(p->target) > c->lim->max_path_bytes))
			return refuse_over(c, raw, "is a hardlink with a target name that is too long",
					   c->lim->max_path_bytes, "bytes");
		if (r < 0 || !*p->target)
			return refuse(c, raw, "is a hardlink to a path outside the root");
		p->act = ACT_HARDLINK;
		return 0;
	}

	switch (type) {
	case AE_IFREG:
		p->size = archive_entry_size(e);
		if (p->size < 0 || (uint64_t)p->size > c->lim->max_entry_bytes)
			return refuse(c, raw, "is larger than the per-file cap");
		if (c->st->bytes + (uint64_t)p->size > c->lim->max_total_bytes)
			return refuse(c, raw, "takes the image over the total size cap");
		p->act = ACT_FILE;
		return 0;
	case AE_IFDIR:
		p->act = ACT_DIR;
		return 0;
	case AE_IFLNK: {
		const char *t = archive_entry_symlink(e);
		if (!t)
			return refuse(c, raw, "is a symlink without a target");
		if (strnlen(t, UNPACK_PATH_MAX + 1) > c->lim->max_path_bytes)
			return refuse_over(c, raw, "is a symlink with a target that is too long", c->lim->max_path_bytes,
					   "bytes");
		p->act = ACT_SYMLINK;
		return 0;
	}
	case AE_IFIFO:
		p->act = ACT_FIFO;
		return 0;
	default:
		return refuse(c, raw, "has an unknown file type");
	}
}

/* The next data block of a regular file entry of declared size @size, checked: 1 with @buf,
 * @len, @off set, 0 at its end. Return: -EPERM for data beyond the declared size, -EIO for a read
 * error. Logs on failure. */
static int next_block(struct layer_ctx *c, struct archive *a, const struct entry_plan *p, const void **buf,
		      size_t *len, la_int64_t *off)
{
	int r = archive_read_data_block(a, buf, len, off);

	if (r == ARCHIVE_EOF)
		return 0;
	if (r != ARCHIVE_OK)
		return read_failed(c, a, "reading", p->raw, -EIO);
	if (*off < 0 || (uint64_t)*off + *len > (uint64_t)p->size || (uint64_t)*off + *len > c->lim->max_entry_bytes)
		return refuse(c, p->raw, "has data beyond its declared size");
	return 1;
}

static int write_file(struct layer_ctx *c, struct archive *a, struct archive_entry *e, int pfd,
		      const char *base, const struct entry_plan *p)
{
	_cleanup_close_ int fd = -1;
	mode_t mode = archive_entry_perm(e), keep = mode & 01777;
	const char *name = p->raw;
	uint64_t end = 0;
	const void *buf;
	size_t len;
	la_int64_t off;
	int r;

	/* Created with its final mode when the umask keeps it (a mode without u+w still gives this
	 * O_WRONLY fd): one fchmod() less per file. Never setuid/setgid. */
	fd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, keep);
	if (fd < 0 && errno == EEXIST) {
		if ((r = remove_at(pfd, base, c->lim->max_depth + 1)) < 0)
			return log_error_errno(r, "%s: cannot replace '%s': %m", c->what, name);
		fd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, keep);
	}
	if (fd < 0)
		return log_error_errno(-errno, "%s: cannot create '%s': %m", c->what, name);
	while ((r = next_block(c, a, p, &buf, &len, &off)) > 0) {
		while (len > 0) {
			ssize_t k = pwrite(fd, buf, len, off);
			if (k < 0) {
				if (errno == EINTR)
					continue;
				return log_error_errno(-errno, "%s: writing '%s': %m", c->what, name);
			}
			buf = (const char *)buf + k;
			len -= (size_t)k;
			off += k;
		}
		if ((uint64_t)off > end)
			end = (uint64_t)off;
	}
	if (r < 0)
		return r;
	if (end < (uint64_t)p->size && ftruncate(fd, p->size) < 0) /* sparse tails */
		return log_error_errno(-errno, "%s: writing '%s': %m", c->what, name);
	if (mode & (S_ISUID | S_ISGID))
		c->st->setid_cleared++;
	if ((keep & ~c->umask) != keep && fchmod(fd, keep) < 0)
		return log_error_errno(-errno, "%s: chmod '%s': %m", c->what, name);
	{
		struct timespec ts[2] = { { .tv_sec = archive_entry_mtime(e), .tv_nsec = 0 },
					  { .tv_sec = archive_entry_mtime(e), .tv_nsec = 0 } };
		(void)futimens(fd, ts);
	}
	c->st->bytes += (uint64_t)p->size;
	c->st->files++;
	return 0;
}

/* ---- applying a judged entry to the tree ---- */

static int apply_opaque(struct layer_ctx *c, const struct entry_plan *p)
{
	int pfd, r;

	cache_drop(c);
	pfd = parent_fd(c, p->target);
	if (pfd < 0)
		return parent_error(c, p->raw, pfd);
	r = clear_opaque(c, pfd, p->target, c->lim->max_depth + 1);
	cache_drop(c);
	if (r == -EMLINK)
		return refuse_over(c, p->raw, "clears a tree that is too deep", c->lim->max_depth, "directory levels");
	return r < 0 ? log_error_errno(r, "%s: clearing opaque dir '%.200s': %m", c->what, p->target) : 0;
}

static int apply_whiteout(struct layer_ctx *c, const struct entry_plan *p)
{
	_cleanup_free_ char *pathcopy = strdup(p->target);
	const char *dir, *base;
	int pfd, r;

	if (!pathcopy)
		return -ENOMEM;
	cache_drop(c);
	split(pathcopy, &dir, &base);
	pfd = open_beneath(c->rootfd, dir);
	if (pfd == -ENOENT || pfd == -ENOTDIR)
		return 0;
	if (pfd < 0)
		return pfd == -EXDEV ? refuse(c, p->raw, "reaches outside the root through a symlink")
				     : log_error_errno(pfd, "%s: whiteout '%s': %m", c->what, p->raw);
	r = remove_at(pfd, base, c->lim->max_depth + 1);
	close(pfd);
	if (r == -EMLINK)
		return refuse_over(c, p->raw, "removes a tree that is too deep", c->lim->max_depth, "directory levels");
	return r < 0 ? log_error_errno(r, "%s: whiteout '%.200s': %m", c->what, p->raw) : 0;
}

static int apply_hardlink(struct layer_ctx *c, const struct entry_plan *p, int pfd, const char *base)
{
	_cleanup_free_ char *tname = strdup(p->target);
	_cleanup_close_ int tfd = -1;
	const char *tdir, *tbase, *raw = p->raw;
	struct stat st;
	int r;

	if (!tname)
		return -ENOMEM;
	split(tname, &tdir, &tbase);
	tfd = open_beneath(c->rootfd, tdir);
	if (tfd == -EXDEV || tfd == -ELOOP)
		return refuse(c, raw, "is a hardlink through a symlink that leaves the root");
	if (tfd < 0 || fstatat(tfd, tbase, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return refuse(c, raw, "is a hardlink to a missing target");
	if (S_ISDIR(st.st_mode))
		return refuse(c, raw, "is a hardlink to a directory");
	if ((r = remove_at(pfd, base, c->lim->max_depth + 1)) < 0)
		return log_error_errno(r, "%s: cannot replace '%s': %m", c->what, raw);
	if (linkat(tfd, tbase, pfd, base, 0) < 0)
		return log_error_errno(-errno, "%s: hardlink '%s': %m", c->what, raw);
	c->st->hardlinks++;
	return 0;
}

static int apply_dir(struct layer_ctx *c, struct archive_entry *e, int pfd, const char *base, const char *raw)
{
	struct stat st;
	mode_t mode = (archive_entry_perm(e) & 01777) | 0700;
	bool made = true;
	int r;

	if (mkdirat(pfd, base, mode) < 0) {
		made = false;
		if (errno != EEXIST)
			return log_error_errno(-errno, "%s: mkdir '%s': %m", c->what, raw);
		if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
		if (!S_ISDIR(st.st_mode)) {
			if ((r = remove_at(pfd, base, c->lim->max_depth + 1)) < 0 || mkdirat(pfd, base, mode) < 0)
				return log_error_errno(r < 0 ? r : -errno, "%s: replacing '%s': %m", c->what, raw);
		}
	}
	/* a directory made just now has its mode unless the umask took bits (as files do) */
	if ((!made || (mode & ~c->umask) != mode) && fchmodat(pfd, base, mode, 0) < 0)
		return log_error_errno(-errno, "%s: chmod '%s': %m", c->what, raw);
	if (archive_entry_perm(e) & S_ISGID)
		c->st->setid_cleared++;
	c->st->dirs++;
	return 0;
}

static int apply_symlink(struct layer_ctx *c, struct archive_entry *e, const char *dir, const char *base,
			 const char *raw)
{
	const char *t = archive_entry_symlink(e);
	int pfd, r;

	/* A symlink's target is only data: it is resolved inside the sandbox's root at run time.
	 * What matters is that aisb never writes through it, which open_beneath() enforces. */
	cache_drop(c);
	pfd = parent_fd(c, dir);
	if (pfd < 0)
		return parent_error(c, raw, pfd);
	if (symlinkat(t, pfd, base) < 0) {
		/* replace what is there; a failed remove_at() reports its own code, not a stale errno */
		r = -errno;
		if (r == -EEXIST && (r = remove_at(pfd, base, c->lim->max_depth + 1)) >= 0)
			r = symlinkat(t, pfd, base) < 0 ? -errno : 0;
		if (r < 0)
			return log_error_errno(r, "%s: symlink '%s': %m", c->what, raw);
	}
	cache_drop(c);
	c->st->symlinks++;
	return 0;
}

static int apply_fifo(struct layer_ctx *c, struct archive_entry *e, int pfd, const char *base, const char *raw)
{
	int r;

	if (mkfifoat(pfd, base, archive_entry_perm(e) & 0777) < 0) {
		r = -errno;
		if (r == -EEXIST && (r = remove_at(pfd, base, c->lim->max_depth + 1)) >= 0)
			r = mkfifoat(pfd, base, archive_entry_perm(e) & 0777) < 0 ? -errno : 0;
		if (r < 0)
			return log_error_errno(r, "%s: mkfifo '%s': %m", c->what, raw);
	}
	return 0;
}

static int apply_entry(struct layer_ctx *c, struct archive *a, struct archive_entry *e)
{
	_cleanup_(entry_plan_done) struct entry_plan p = { 0 };
	_cleanup_free_ char *pathcopy = NULL;
	const char *dir, *base;
	int pfd, r;

	if ((r = judge_entry(c, e, &p)) < 0)
		return r;
	switch (p.act) {
	case ACT_NONE:
		return 0;
	case ACT_OPAQUE:
		return apply_opaque(c, &p);
	case ACT_WHITEOUT:
		return apply_whiteout(c, &p);
	default:
		break;
	}
	pathcopy = strdup(p.name);
	if (!pathcopy)
		return -ENOMEM;
	split(pathcopy, &dir, &base);
	pfd = parent_fd(c, dir);
	if (pfd < 0)
		return parent_error(c, p.raw, pfd);
	switch (p.act) {
	case ACT_HARDLINK:
		return apply_hardlink(c, &p, pfd, base);
	case ACT_FILE:
		return write_file(c, a, e, pfd, base, &p);
	case ACT_DIR:
		return apply_dir(c, e, pfd, base, p.raw);
	case ACT_SYMLINK:
		return apply_symlink(c, e, dir, base, p.raw);
	case ACT_FIFO:
		return apply_fifo(c, e, pfd, base, p.raw);
	default:
		assert(!"an entry judged without an action");
		return -EINVAL;
	}
}

static void archive_freep(struct archive **a)
{
	if (*a)
		archive_read_free(*a);
}

/* The entries of one tar stream, in order. Logs on failure. */
static int extract_entries(struct layer_ctx *c, struct archive *a)
{
	struct archive_entry *e;

	for (;;) {
		int k = archive_read_next_header(a, &e), r;
		if (k == ARCHIVE_EOF)
			return 0;
		if (k == ARCHIVE_WARN)
			k = ARCHIVE_OK;
		if (k != ARCHIVE_OK)
			return read_failed(c, a, "corrupt layer", NULL, -EINVAL);
		if ((r = apply_entry(c, a, e)) < 0)
			return r;
	}
}

/* ---- the pipeline: decompression and extraction on threads of their own ----
 *
 * A layer is gzip (or zstd) of a tar. One thread decompressing and creating files does both in
 * sequence; `tar -xzf` runs gzip as a child, so the two overlap on two cores (measured: 1.29x
 * tar -xzf for the unpack from an OCI layout before this; docs/measurements.md). So a layer runs
 * as stages joined by chunk queues: [producer: download or read, digest, store] -> raw ->
 * [decompress: libarchive's gzip/zstd filters with the "raw" format] -> tar -> [extract:
 * libarchive's tar reader with no filter, and apply_entry()]. Only the extraction touches the
 * tree; the order of entries is the layer's. */

#define STREAM_CHUNK (256u << 10)
#define STREAM_QUEUE 16u /* chunks in flight per queue: 4 MiB */

struct unpack_stream {
	struct layer_ctx c;
	char *what;
	int src_fd;           /* the compressed layer in a file, or -1: unpack_stream_write() */
	struct chunkq *raw;   /* compressed bytes from unpack_stream_write() (NULL with src_fd) */
	struct chunkq *tar;   /* decompressed bytes */
	char *diff_id;        /* "sha256:..." the decompressed bytes must hash to, or NULL */
	struct sha256 md;     /* with diff_id: the decompress stage's hash of what it produced */
	pthread_t dec, ext;
	bool dec_on, ext_on;
	int dec_r, ext_r;
};

static la_ssize_t queue_read(struct archive *a, void *ud, const void **buf)
{
	ssize_t n = chunkq_read(ud, buf);
	(void)a;
	return n < 0 ? -1 : n; /* the producer stopped: the stage reading this checks why */
}

/* After the tar's end the extraction reads nothing more; the bytes that follow (padding to a
 * record, usually under 10 KiB) are only hashed for the diff_id. */
#define TRAILING_MAX (64u << 20)

/* Is the hash of everything the decompress stage produced @u->diff_id? Return: 0, or -EBADMSG
 * after saying which digest it was. Logs on failure. */
static int diff_id_check(struct unpack_stream *u)
{
	char got[7 + SHA256_HEX_SIZE] = "sha256:";

	if (sha256_final_hex(&u->md, got + 7) < 0)
		return log_error_errno(-ENOMEM, "%s: SHA-256 failed", u->what);
	if (!streq(got, u->diff_id))
		return log_error("%s: the uncompressed layer is %s, but the image config's diff_id says %s: the "
				 "image is corrupt or was tampered with", u->what, got, u->diff_id), -EBADMSG;
	return 0;
}

static void *decompress_main(void *ud)
{
	struct unpack_stream *u = ud;
	uint64_t trailing = 0;
	bool tar_ended = false;
	_cleanup_(archive_freep) struct archive *a = archive_read_new();
	struct archive_entry *e;
	const void *buf;
	size_t len;
	la_int64_t off;
	int r = 0, k;

	if (!a) {
		r = log_error_errno(-ENOMEM, "%s: %m", u->what);
		goto out;
	}
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_zstd(a);
	archive_read_support_filter_none(a);
	archive_read_support_format_raw(a);
	k = u->src_fd >= 0 ? archive_read_open_fd(a, u->src_fd, 1 << 20)
			   : archive_read_open(a, u->raw, NULL, queue_read, NULL);
	if (k == ARCHIVE_OK)
		k = archive_read_next_header(a, &e);
	if (k == ARCHIVE_EOF) /* an empty layer */
		goto out;
	while (k == ARCHIVE_OK || k == ARCHIVE_WARN) {
		k = archive_read_data_block(a, &buf, &len, &off);
		if (k == ARCHIVE_EOF)
			goto out;
		if (k != ARCHIVE_OK && k != ARCHIVE_WARN)
			break;
		if (u->diff_id && sha256_update(&u->md, buf, len) < 0) {
			r = log_error_errno(-ENOMEM, "%s: SHA-256 failed", u->what);
			goto out;
		}
		if (tar_ended) {
			/* the diff_id covers the padding too; bounded, as a stream of zeros after
			 * the end could be made to go on forever */
			trailing += len;
			if (trailing > TRAILING_MAX) {
				r = log_error_errno(-EFBIG, "%s: more than %u MiB after the end of the tar", u->what,
						    TRAILING_MAX >> 20);
				goto out;
			}
			continue;
		}
		r = chunkq_write(u->tar, buf, len);
		if (r == 1) { /* the tar stream ended: what follows is padding */
			r = 0;
			if (!u->diff_id)
				goto out;
			tar_ended = true;
			chunkq_close_write(u->tar, 0);
			continue;
		}
		if (r < 0) /* the extraction failed and said why */
			goto out;
	}
	r = u->raw ? chunkq_write_error(u->raw) : 0;
	if (r == 0) {
		log_error("%s: corrupt layer (decompressing): %s", u->what, archive_error_string(a));
		r = -EINVAL;
	}
out:
	if (r == 0 && u->diff_id)
		r = diff_id_check(u);
	if (!tar_ended)
		chunkq_close_write(u->tar, r);
	if (u->raw)
		chunkq_close_read(u->raw, r);
	u->dec_r = r;
	return NULL;
}

static void *extract_main(void *ud)
{
	struct unpack_stream *u = ud;
	_cleanup_(archive_freep) struct archive *a = archive_read_new();
	int r;

	if (!a) {
		r = log_error_errno(-ENOMEM, "%s: %m", u->what);
	} else {
		archive_read_support_filter_none(a);
		archive_read_support_format_tar(a);
		archive_read_support_format_gnutar(a);
		if (archive_read_open(a, u->tar, NULL, queue_read, NULL) != ARCHIVE_OK)
			r = read_failed(&u->c, a, "not a tar layer", NULL, -EINVAL);
		else
			r = extract_entries(&u->c, a);
	}
	cache_drop(&u->c);
	chunkq_close_read(u->tar, r);
	u->ext_r = r;
	return NULL;
}

/* The process's umask without changing it (umask(2) can only set it, and another thread may be
 * creating files): the "Umask:" line of /proc/self/status (Linux 4.7+). Unknown: 0777, so every
 * file gets its fchmod(). */
static mode_t process_umask(void)
{
	_cleanup_free_ char *buf = NULL;
	const char *p;

	if (read_file_at(AT_FDCWD, "/proc/self/status", 1 << 16, &buf, NULL) < 0 || !(p = strstr(buf, "\nUmask:")))
		return 0777;
	return (mode_t)(strtoul(p + 7, NULL, 8) & 0777);
}

static void stream_free(struct unpack_stream *u)
{
	if (!u)
		return;
	cache_drop(&u->c);
	pathset_done(&u->c.written);
	chunkq_free(u->raw);
	chunkq_free(u->tar);
	sha256_done(&u->md);
	free(u->diff_id);
	free(u->what);
	free(u);
}

/* Sets up @u's stages and starts its threads; @src_fd < 0 makes a stream fed by
 * unpack_stream_write(). Logs on failure. */
static int stream_start(int rootfd, int src_fd, const char *what, const char *diff_id,
			const struct unpack_limits *lim, struct unpack_stats *stats, struct unpack_stream **out)
{
	struct unpack_stream *u = calloc(1, sizeof(*u));
	struct stat rst;
	int r;

	if (!u)
		return log_error_errno(-ENOMEM, "%s: %m", what);
	u->c = (struct layer_ctx){ .rootfd = rootfd, .lim = lim, .st = stats, .cached_fd = -1 };
	u->src_fd = src_fd;
	u->what = strdup(what);
	if (!u->what) {
		stream_free(u);
		return log_error_errno(-ENOMEM, "%s: %m", what);
	}
	u->c.what = u->what;
	if (fstat(rootfd, &rst) < 0) {
		r = -errno;
		stream_free(u);
		return log_error_errno(r, "%s: cannot stat the root: %m", what);
	}
	u->c.root_dev = rst.st_dev;
	u->c.root_ino = rst.st_ino;
	u->c.umask = process_umask();
	/* libarchive is loaded here, in the calling thread (dl_load() is not thread-safe) */
	if (dl_load(&dl_libarchive) < 0 || (diff_id && dl_load(&dl_libcrypto) < 0)) {
		stream_free(u);
		return -ELIBACC; /* dl_load() said which library and package */
	}
	if (diff_id) {
		u->diff_id = strdup(diff_id);
		if (!u->diff_id || sha256_init(&u->md) < 0) {
			stream_free(u);
			return log_error_errno(-ENOMEM, "%s: %m", what);
		}
	}
	if ((src_fd < 0 && chunkq_new(STREAM_CHUNK, STREAM_QUEUE, &u->raw) < 0) ||
	    chunkq_new(STREAM_CHUNK, STREAM_QUEUE, &u->tar) < 0) {
		stream_free(u);
		return log_error_errno(-ENOMEM, "%s: %m", what);
	}
	u->c.in = u->tar;
	r = -pthread_create(&u->ext, NULL, extract_main, u);
	if (r == 0) {
		u->ext_on = true;
		r = -pthread_create(&u->dec, NULL, decompress_main, u);
	}
	if (r < 0) {
		if (u->ext_on) {
			chunkq_close_write(u->tar, r);
			pthread_join(u->ext, NULL);
		}
		stream_free(u);
		return log_error_errno(r, "%s: cannot start the unpack threads: %m", what);
	}
	u->dec_on = true;
	*out = u;
	return 0;
}

int unpack_stream_begin(int rootfd, const char *what, const char *diff_id, const struct unpack_limits *lim,
			struct unpack_stats *stats, struct unpack_stream **out)
{
	return stream_start(rootfd, -1, what, diff_id, lim, stats, out);
}

int unpack_stream_write(struct unpack_stream *u, const void *buf, size_t len)
{
	int r = chunkq_write(u->raw, buf, len);
	return r < 0 ? r : 0;
}

int unpack_stream_finish(struct unpack_stream *u, int err)
{
	int r;

	if (u->raw)
		chunkq_close_write(u->raw, err < 0 ? err : 0);
	pthread_join(u->dec, NULL);
	pthread_join(u->ext, NULL);
	r = u->ext_r < 0 ? u->ext_r : u->dec_r;
	if (err < 0)
		r = err;
	stream_free(u);
	return r;
}

int unpack_layer(int rootfd, int layer_fd, const char *what, const char *diff_id, const struct unpack_limits *lim,
		 struct unpack_stats *stats)
{
	struct unpack_stream *u;
	int r = stream_start(rootfd, layer_fd, what, diff_id, lim, stats, &u);

	if (r < 0)
		return r;
	return unpack_stream_finish(u, 0);
}

/* ---- judging a whole layer in memory (the fuzz target's way in) ---- */

struct membuf {
	const void *p;
	size_t len;
	bool done;
};

static la_ssize_t mem_read(struct archive *a, void *ud, const void **buf)
{
	struct membuf *m = ud;
	(void)a;
	if (m->done)
		return 0;
	m->done = true;
	*buf = m->p;
	return (la_ssize_t)m->len;
}

int unpack_judge_layer(const void *buf, size_t len, const char *what, const struct unpack_limits *lim,
		       struct unpack_stats *stats)
{
	struct layer_ctx c = { .rootfd = -1, .what = what, .lim = lim, .st = stats, .cached_fd = -1 };
	struct membuf m = { .p = buf, .len = len };
	_cleanup_(archive_freep) struct archive *a = NULL;
	struct archive_entry *e;
	int r = 0;

	if (dl_load(&dl_libarchive) < 0)
		return -ELIBACC; /* dl_load() said which library and package */
	a = archive_read_new();
	if (!a)
		return log_error_errno(-ENOMEM, "%s: %m", what);
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_zstd(a);
	archive_read_support_filter_none(a);
	archive_read_support_format_tar(a);
	archive_read_support_format_gnutar(a);
	if (archive_read_open(a, &m, NULL, mem_read, NULL) != ARCHIVE_OK)
		return read_failed(&c, a, "not a tar layer", NULL, -EINVAL);
	while (r == 0) {
		_cleanup_(entry_plan_done) struct entry_plan p = { 0 };
		int k = archive_read_next_header(a, &e);
		const void *b;
		size_t n;
		la_int64_t off;

		if (k == ARCHIVE_EOF)
			break;
		if (k != ARCHIVE_OK && k != ARCHIVE_WARN) {
			r = read_failed(&c, a, "corrupt layer", NULL, -EINVAL);
			break;
		}
		if ((r = judge_entry(&c, e, &p)) < 0)
			break;
		/* what apply_entry() counts once the tree took the entry */
		switch (p.act) {
		case ACT_FILE:
			while ((r = next_block(&c, a, &p, &b, &n, &off)) > 0)
				;
			if (r == 0) {
				stats->bytes += (uint64_t)p.size;
				stats->files++;
			}
			break;
		case ACT_HARDLINK:
			stats->hardlinks++;
			break;
		case ACT_DIR:
			stats->dirs++;
			break;
		case ACT_SYMLINK:
			stats->symlinks++;
			break;
		default:
			break;
		}
	}
	pathset_done(&c.written);
	return r;
}

int unpack_remove_entry(int dirfd, const char *name, uint32_t max_depth)
{
	return remove_at(dirfd, name, max_depth);
}

bool unpack_summary_fits(const struct unpack_summary *s, const struct unpack_limits *lim)
{
	/* the path set as pathset_add() grows it: every string, and a slot array that doubles
	 * from 1024 while it is more than half full (so at most 4 slots per string) */
	uint64_t slots = 4 * s->written + 1024;
	uint64_t pathset = s->path_bytes + s->written * (1 + PATHSET_OVERHEAD) + slots * sizeof(char *);

	return s->entries <= lim->max_entries && s->hardlinks <= lim->max_hardlinks &&
	       s->max_file <= lim->max_entry_bytes && s->file_bytes <= lim->max_total_bytes &&
	       s->max_depth <= lim->max_depth && s->max_name < lim->max_path_bytes &&
	       s->max_name < UNPACK_PATH_MAX && pathset <= lim->max_pathset_bytes;
}
