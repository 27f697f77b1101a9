// SPDX-License-Identifier: GPL-2.0-or-later
/* copy.c — COPY from the build context into the build's root, resolved inside that root */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "build/copy.h"
#include "build/ignore.h"
#include "util/log.h"
#include "util/sha256.h"
#include "util/util.h"

/* Opens @path (relative to the root, "" = the root) with every symlink and ".." kept inside
 * @root_fd. Does not log. */
static int open_in_root(int root_fd, const char *path, int flags)
{
	struct open_how how = { .flags = (uint64_t)(flags | O_CLOEXEC),
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	long fd = syscall(SYS_openat2, root_fd, *path ? path : ".", &how, sizeof(how));

	return fd < 0 ? -errno : (int)fd;
}

static int make_room(int pfd, const char *name, const char *target);

/* mkdir -p of @dir (absolute inside the root, cleaned) with @mode for what it creates; returns an
 * O_PATH fd of the directory. Logs on failure. */
static int mkdirs_in_root(int root_fd, const char *dir, mode_t mode)
{
	_cleanup_free_ char *rel = strdup(dir[0] == '/' ? dir + 1 : dir);
	size_t n;
	int fd;

	if (!rel)
		return log_error_errno(-ENOMEM, "%m");
	n = strlen(rel);
	for (size_t i = 0; i <= n; i++) {
		if (rel[i] != '/' && rel[i] != 0)
			continue;
		rel[i] = 0;
		fd = open_in_root(root_fd, rel, O_PATH | O_DIRECTORY);
		if (fd == -ENOENT) {
			char *slash = strrchr(rel, '/');
			const char *name = slash ? slash + 1 : rel;
			int pfd;

			if (slash)
				*slash = 0;
			pfd = open_in_root(root_fd, slash ? rel : "", O_PATH | O_DIRECTORY);
			if (slash)
				*slash = '/';
			if (pfd < 0)
				return log_error_errno(pfd, "COPY: cannot open the parent of '/%s': %m", rel);
			if ((mkdirat(pfd, name, mode) < 0 && errno != EEXIST) || fchmodat(pfd, name, mode, 0) < 0) {
				int r = -errno;
				close(pfd);
				return log_error_errno(r, "COPY: cannot create '/%s': %m", rel);
			}
			close(pfd);
			fd = open_in_root(root_fd, rel, O_PATH | O_DIRECTORY);
		}
		if (fd < 0)
			return log_error_errno(fd, "COPY: '/%s' is not a directory in the image: %m", rel);
		if (i < n) {
			close(fd);
			rel[i] = '/';
		} else {
			return fd;
		}
	}
	return -EINVAL; /* not reached */
}

int copy_read_file(int root_fd, const char *path, size_t max, char **out, size_t *len)
{
	_cleanup_close_ int fd = open_in_root(root_fd, path[0] == '/' ? path + 1 : path, O_RDONLY | O_NOFOLLOW);
	_cleanup_free_ char *buf = NULL;
	size_t n = 0, cap = 0;

	if (fd < 0)
		return fd;
	for (;;) {
		ssize_t k;
		if (n == cap) {
			char *nb;
			if (cap >= max)
				return -EFBIG;
			cap = cap ? (cap * 2 > max ? max : cap * 2) : (max < 65536 ? max : 65536);
			nb = realloc(buf, cap + 1);
			if (!nb)
				return -ENOMEM;
			buf = nb;
		}
		k = read(fd, buf + n, cap - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		n += (size_t)k;
	}
	if (!buf && !(buf = malloc(1)))
		return -ENOMEM;
	buf[n] = 0;
	*out = TAKE_PTR(buf);
	*len = n;
	return 0;
}

int copy_mkdir(int root_fd, const char *dir, mode_t mode)
{
	return mkdirs_in_root(root_fd, dir, mode);
}

int copy_write_file(int root_fd, const char *path, const char *data, size_t len, mode_t mode)
{
	_cleanup_free_ char *parent = strdup(path);
	char *slash = parent ? strrchr(parent, '/') : NULL;
	int pfd, dfd, r;

	if (!parent || !slash)
		return log_error_errno(parent ? -EINVAL : -ENOMEM, "internal: '%s' is not absolute", path);
	*slash = 0;
	pfd = mkdirs_in_root(root_fd, *parent ? parent : "/", 0755);
	if (pfd < 0)
		return pfd;
	dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(pfd);
	if (dfd < 0)
		return log_error_errno(-errno, "Failed to open the directory of '%s': %m", path);
	r = make_room(dfd, slash + 1, path);
	if (r >= 0) {
		r = write_file_at(dfd, slash + 1, data, len, mode);
		if (r < 0)
			log_error_errno(r, "Failed to write '%s': %m", path);
	}
	close(dfd);
	return r;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* Removes a non-directory at @pfd/@name so a file or link can take its place. */
static int make_room(int pfd, const char *name, const char *target)
{
	struct stat st;

	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : log_error_errno(-errno, "COPY: cannot stat '%s': %m", target);
	if (S_ISDIR(st.st_mode))
		return log_error_errno(-EISDIR, "COPY: '%s' is a directory in the image; write the destination "
				       "with a trailing '/' to copy into it", target);
	if (unlinkat(pfd, name, 0) < 0)
		return log_error_errno(-errno, "COPY: cannot replace '%s': %m", target);
	return 0;
}

static int copy_file(int ctx_fd, const struct ctx_entry *e, int pfd, const char *name, const char *target,
		     mode_t mode)
{
	_cleanup_close_ int in = -1, out = -1;
	struct sha256 md = { 0 };
	char hex[SHA256_HEX_SIZE];
	int r = 0;

	if (!e->sha256[0])
		return log_error_errno(-EINVAL, "internal: '%s' was not hashed before COPY", e->path);
	in = openat(ctx_fd, e->path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (in < 0)
		return log_error_errno(-errno, "COPY: cannot open '%s' in the context: %m", e->path);
	r = make_room(pfd, name, target);
	if (r < 0)
		return r;
	out = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return log_error_errno(-errno, "COPY: cannot create '%s': %m", target);
	if (sha256_init(&md) < 0) {
		sha256_done(&md);
		return log_error_errno(-ENOMEM, "%m");
	}
	r = sha256_fd(&md, in, UINT64_MAX, out, NULL);
	if (r >= 0)
		r = sha256_final_hex(&md, hex);
	sha256_done(&md);
	if (r < 0)
		return log_error_errno(r, "COPY: cannot copy '%s' to '%s': %m", e->path, target);
	if (!streq(hex, e->sha256)) {
		(void)unlinkat(pfd, name, 0);
		return log_error_errno(-ESTALE, "COPY: '%s' changed in the context after the build tag was "
				       "computed; run the build again", e->path);
	}
	if (fchmod(out, mode) < 0)
		return log_error_errno(-errno, "COPY: cannot set the mode of '%s': %m", target);
	/* the context's mtime, as docker and podman keep it: a rebuild of an unchanged context
	 * writes the same layer (the layer clamps it, docs/images.md "Reproducible builds") */
	{
		struct stat st;
		if (fstat(in, &st) < 0)
			return log_error_errno(-errno, "COPY: cannot stat '%s' in the context: %m", e->path);
		struct timespec ts[2] = { st.st_mtim, st.st_mtim };
		if (futimens(out, ts) < 0)
			return log_error_errno(-errno, "COPY: cannot set the mtime of '%s': %m", target);
	}
	return 0;
}

/* Puts context entry @e at @target (absolute inside the root). */
static int put_entry(int ctx_fd, int root_fd, const struct ctx_entry *e, const char *target, mode_t chmod_mode)
{
	_cleanup_free_ char *parent = NULL;
	mode_t mode = chmod_mode != (mode_t)-1 ? chmod_mode : e->mode & 07777;
	const char *name;
	int pfd, r;

	if (S_ISDIR(e->mode)) {
		int fd = mkdirs_in_root(root_fd, target, mode);
		if (fd < 0)
			return fd;
		close(fd);
		return 0;
	}
	parent = strdup(target);
	if (!parent)
		return log_error_errno(-ENOMEM, "%m");
	*strrchr(parent, '/') = 0;
	name = base_name(target);
	pfd = mkdirs_in_root(root_fd, *parent ? parent : "/", 0755);
	if (pfd < 0)
		return pfd;
	if (S_ISLNK(e->mode)) {
		r = make_room(pfd, name, target);
		if (r >= 0 && symlinkat(e->link ? e->link : "", pfd, name) < 0)
			r = log_error_errno(-errno, "COPY: cannot create the link '%s': %m", target);
	} else if (S_ISREG(e->mode)) {
		/* O_PATH fds cannot be written through: reopen the directory itself */
		int dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		r = dfd < 0 ? log_error_errno(-errno, "COPY: cannot open the directory of '%s': %m", target)
			    : copy_file(ctx_fd, e, dfd, name, target, mode);
		if (dfd >= 0)
			close(dfd);
	} else {
		r = log_error_errno(-EINVAL, "COPY: '%s' is not a file, directory or link", e->path);
	}
	close(pfd);
	return r;
}

static bool has_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

int copy_step(int ctx_fd, const struct build_context *ctx, const bool *take, const struct cf_step *st,
	      int root_fd)
{
	size_t dn = strlen(st->dest);
	bool dest_dir = dn > 0 && st->dest[dn - 1] == '/';
	_cleanup_free_ char *dest = cf_path_clean(st->dest, NULL);
	int r = 0;

	if (!dest)
		return log_error_errno(-ENOMEM, "%m");
	if (!dest_dir) {
		int fd = open_in_root(root_fd, dest + 1, O_PATH | O_DIRECTORY);
		if (fd >= 0) {
			dest_dir = true;
			close(fd);
		}
	}
	for (size_t s = 0; st->sources && st->sources[s] && r >= 0; s++) {
		const char *src = st->sources[s];
		bool whole = streq(src, ".");

		if (whole) {
			/* the context's contents into dest */
			int fd = mkdirs_in_root(root_fd, dest, 0755);
			if (fd < 0)
				return fd;
			close(fd);
		}
		for (size_t i = 0; i < ctx->n && r >= 0; i++) {
			const struct ctx_entry *e = &ctx->e[i];
			_cleanup_free_ char *target = NULL;

			if (!take[i])
				continue;
			if (whole) {
				target = path_join(dest, e->path);
				r = target ? put_entry(ctx_fd, root_fd, e, target, st->chmod) : -ENOMEM;
				continue;
			}
			if (has_glob(src) ? !ignore_glob_match(src, e->path, false) : !streq(src, e->path))
				continue;
			if (S_ISDIR(e->mode)) {
				size_t pl = strlen(e->path);
				int fd = mkdirs_in_root(root_fd, dest, st->chmod != (mode_t)-1 ? st->chmod : e->mode & 07777);
				if (fd < 0)
					return fd;
				close(fd);
				for (size_t k = 0; k < ctx->n && r >= 0; k++) {
					_cleanup_free_ char *t = NULL;
					if (!take[k] || k == i || !path_startswith(ctx->e[k].path, e->path))
						continue;
					t = path_join(dest, ctx->e[k].path + pl + 1);
					r = t ? put_entry(ctx_fd, root_fd, &ctx->e[k], t, st->chmod) : -ENOMEM;
				}
				continue;
			}
			target = dest_dir ? path_join(dest, base_name(e->path)) : strdup(dest);
			r = target ? put_entry(ctx_fd, root_fd, e, target, st->chmod) : -ENOMEM;
		}
	}
	return r == -ENOMEM ? log_error_errno(r, "%m") : r;
}
