// SPDX-License-Identifier: GPL-2.0-or-later
/* layer.c — overlay upper directory → OCI layer tar (whiteouts converted) */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "build/layer.h"
#include "util/dl.h"
#include "util/log.h"
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

struct writer {
	struct archive *a;
	int out_fd;
	EVP_MD_CTX *md;
	uint64_t size;
	int err;
	struct layer_result *res;
};

static ssize_t write_cb(struct archive *a, void *data, const void *buf, size_t len)
{
	struct writer *w = data;
	int r = write_full(w->out_fd, buf, len);

	(void)a;
	if (r < 0) {
		w->err = r;
		return -1;
	}
	if (EVP_DigestUpdate(w->md, buf, len) != 1) {
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

/* Writes a header for @path from @st (owner 0:0, no atime/ctime, whole-second mtime). */
static int put_header(struct writer *w, const char *path, const struct stat *st, mode_t type, const char *link,
		      int64_t size)
{
	struct archive_entry *e = archive_entry_new();
	int r;

	if (!e)
		return log_error_errno(-ENOMEM, "%m");
	archive_entry_set_pathname(e, path);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, st ? st->st_mode & 07777 : 0644);
	archive_entry_set_uid(e, 0);
	archive_entry_set_gid(e, 0);
	archive_entry_set_mtime(e, st ? st->st_mtim.tv_sec : 0, 0);
	archive_entry_set_size(e, size);
	if (link)
		archive_entry_set_symlink(e, link);
	r = archive_write_header(w->a, e);
	archive_entry_free(e);
	if (r != ARCHIVE_OK)
		return archive_fail(w, path);
	w->res->n_entries++;
	if (w->res->n_entries > LAYER_MAX_ENTRIES)
		return log_error_errno(-EFBIG, "The build changed more than %u files", LAYER_MAX_ENTRIES);
	return 0;
}

static int put_file(struct writer *w, int dfd, const char *name, const char *path, const struct stat *st)
{
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	struct stat now;
	char buf[65536];
	uint64_t left;
	int r;

	if (fd < 0)
		return log_error_errno(-errno, "Failed to open '%s' in the build's upper dir: %m", path);
	if (fstat(fd, &now) < 0 || !S_ISREG(now.st_mode) || now.st_size != st->st_size)
		return log_error_errno(-ESTALE, "'%s' changed while the layer was written", path);
	r = put_header(w, path, st, AE_IFREG, NULL, st->st_size);
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

/* Walks directory @dfd (layer path @rel, "" at the top) in name order. Takes @dfd. */
static int walk(struct writer *w, int dfd, const char *rel, unsigned depth)
{
	_cleanup_strv_free_ char **names = NULL;
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
		int sub = -1;
		bool opaque = false;

		if (asprintf(&path, "%s%s%s", rel, *rel ? "/" : "", names[i]) < 0) {
			r = log_error_errno(-ENOMEM, "%m");
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
			r = wh ? put_header(w, wh, &st, AE_IFREG, NULL, 0) : -ENOMEM;
			w->res->n_whiteouts++;
			break;
		}
		case LAYER_OPAQUE:
		case LAYER_NORMAL:
			if (S_ISDIR(st.st_mode)) {
				r = put_header(w, path, &st, AE_IFDIR, NULL, 0);
				if (r >= 0 && k == LAYER_OPAQUE) {
					_cleanup_free_ char *opq = NULL;
					if (asprintf(&opq, "%s/.wh..wh..opq", path) < 0)
						r = -ENOMEM;
					else
						r = put_header(w, opq, NULL, AE_IFREG, NULL, 0);
					w->res->n_opaque++;
				}
				if (r >= 0) {
					r = walk(w, sub, path, depth + 1);
					sub = -1;
				}
			} else if (S_ISREG(st.st_mode)) {
				r = put_file(w, dirfd(d), names[i], path, &st);
			} else if (S_ISLNK(st.st_mode)) {
				char target[4096];
				ssize_t n = readlinkat(dirfd(d), names[i], target, sizeof(target) - 1);
				if (n < 0) {
					r = log_error_errno(-errno, "Failed to read the link '%s': %m", path);
					break;
				}
				target[n] = 0;
				r = put_header(w, path, &st, AE_IFLNK, target, 0);
			} else {
				r = put_header(w, path, &st, AE_IFIFO, NULL, 0);
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

int layer_write(int upper_fd, int out_fd, struct layer_result *res)
{
	struct writer w = { .out_fd = out_fd, .res = res };
	unsigned char dig[32];
	int top, r;

	*res = (struct layer_result){ 0 };
	w.md = EVP_MD_CTX_new();
	w.a = archive_write_new();
	if (!w.md || !w.a || EVP_DigestInit_ex(w.md, EVP_sha256(), NULL) != 1) {
		/* a missing library was said once by dl_load(), with its package */
		if (dl_load(&dl_libarchive) < 0 || dl_load(&dl_libcrypto) < 0)
			r = -ELIBACC;
		else
			r = log_error_errno(-ENOMEM, "%m");
		goto out;
	}
	if (archive_write_set_format_pax_restricted(w.a) != ARCHIVE_OK ||
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
	r = walk(&w, top, "", 0);
	if (r >= 0 && archive_write_close(w.a) != ARCHIVE_OK)
		r = archive_fail(&w, "(end)");
	if (r >= 0) {
		if (EVP_DigestFinal_ex(w.md, dig, NULL) != 1) {
			r = log_error_errno(-EIO, "sha256 failed");
			goto out;
		}
		memcpy(res->digest, "sha256:", 7);
		hex_encode(dig, 32, res->digest + 7);
		res->size = w.size;
	}
out:
	if (w.a)
		archive_write_free(w.a);
	EVP_MD_CTX_free(w.md);
	return r;
}
