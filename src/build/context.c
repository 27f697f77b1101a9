// SPDX-License-Identifier: GPL-2.0-or-later
/* context.c — build context scan, COPY selection, content hashing and the build tag */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build/context.h"
#include "util/strbuf.h"
#include "util/log.h"
#include "util/util.h"
#include "util/sha256.h"

int build_sha256_hex(const void *data, size_t len, char hex[65])
{
	return sha256_hex(data, len, hex) < 0 ? -EIO : 0;
}

int context_load_ignore(int dirfd, struct ignore *ig)
{
	static const char *const names[] = { ".containerignore", ".dockerignore" };
	unsigned bad = 0;
	int r;

	*ig = (struct ignore){ 0 };
	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		_cleanup_free_ char *buf = NULL;
		size_t len = 0;

		r = read_file_at(dirfd, names[i], IGNORE_MAX_FILE, &buf, &len);
		if (r == -ENOENT)
			continue;
		if (r < 0)
			return log_error_errno(r, "Failed to read '%s' in the build context: %m", names[i]);
		r = ignore_parse(buf, len, ig, &bad);
		if (r == -EINVAL)
			return log_error_errno(r, "%s:%u: a NUL byte or an unterminated '['", names[i], bad);
		if (r < 0)
			return log_error_errno(r, "Failed to parse '%s': %m", names[i]);
		return 0;
	}
	return 0;
}

void context_done(struct build_context *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->e[i].path);
		free(c->e[i].link);
	}
	free(c->e);
	c->e = NULL;
	c->n = 0;
}

struct scan {
	const struct ignore *ig;
	struct build_context *c;
	size_t cap;
};

static int scan_push(struct scan *sc, const char *path, const struct stat *st, char *link)
{
	struct ctx_entry *e;

	if (sc->c->n >= CTX_MAX_ENTRIES) {
		free(link);
		return -EFBIG;
	}
	if (sc->c->n == sc->cap) {
		size_t cap = sc->cap ? sc->cap * 2 : 256;
		e = realloc(sc->c->e, cap * sizeof(*e));
		if (!e) {
			free(link);
			return -ENOMEM;
		}
		sc->c->e = e;
		sc->cap = cap;
	}
	e = &sc->c->e[sc->c->n];
	*e = (struct ctx_entry){ .mode = st->st_mode, .size = (uint64_t)st->st_size, .link = link };
	e->path = strdup(path);
	if (!e->path) {
		free(link);
		return -ENOMEM;
	}
	sc->c->n++;
	return 0;
}

/* Walks directory @fd (path @rel, "" for the root). Return: number of entries kept below. */
static int scan_dir(struct scan *sc, int fd, const char *rel, unsigned depth)
{
	DIR *d;
	struct dirent *de;
	int kept = 0, r = 0;

	if (depth > CTX_MAX_DEPTH) {
		close(fd);
		return -EFBIG;
	}
	d = fdopendir(fd);
	if (!d) {
		r = -errno;
		close(fd);
		return r;
	}
	while ((errno = 0, de = readdir(d))) {
		_cleanup_free_ char *path = NULL;
		struct stat st;
		bool excluded;

		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (asprintf(&path, "%s%s%s", rel, *rel ? "/" : "", de->d_name) < 0) {
			r = -ENOMEM;
			break;
		}
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = -errno;
			break;
		}
		excluded = ignore_is_excluded(sc->ig, path);
		if (S_ISDIR(st.st_mode)) {
			size_t at = sc->c->n;
			int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0) {
				r = -errno;
				break;
			}
			/* push first so the directory precedes its children; drop it again when it is
			 * excluded and nothing below was re-included */
			r = scan_push(sc, path, &st, NULL);
			if (r < 0) {
				close(sub);
				break;
			}
			r = scan_dir(sc, sub, path, depth + 1);
			if (r < 0)
				break;
			if (excluded && r == 0) {
				free(sc->c->e[at].path);
				memmove(&sc->c->e[at], &sc->c->e[at + 1], (sc->c->n - at - 1) * sizeof(sc->c->e[0]));
				sc->c->n--;
			} else {
				kept++;
			}
			r = 0;
			continue;
		}
		if (excluded)
			continue;
		if (S_ISLNK(st.st_mode)) {
			char buf[4096];
			ssize_t n = readlinkat(dirfd(d), de->d_name, buf, sizeof(buf) - 1);
			char *l;
			if (n < 0) {
				r = -errno;
				break;
			}
			buf[n] = 0;
			l = strdup(buf);
			if (!l) {
				r = -ENOMEM;
				break;
			}
			r = scan_push(sc, path, &st, l);
		} else {
			r = scan_push(sc, path, &st, NULL);
		}
		if (r < 0)
			break;
		kept++;
	}
	if (r == 0 && errno != 0)
		r = -errno;
	closedir(d);
	return r < 0 ? r : kept;
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ctx_entry *)a)->path, ((const struct ctx_entry *)b)->path);
}

int context_scan(int dirfd, const struct ignore *ig, struct build_context *out)
{
	struct build_context c = { 0 };
	struct scan sc = { .ig = ig, .c = &c };
	int fd, r;

	*out = c;
	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return log_error_errno(-errno, "Failed to open the build context: %m");
	r = scan_dir(&sc, fd, "", 0);
	if (r < 0) {
		context_done(&c);
		if (r == -EFBIG)
			return log_error_errno(r, "The build context has more than %u entries or is deeper than %u "
					       "levels (list what to leave out in .containerignore)",
					       CTX_MAX_ENTRIES, CTX_MAX_DEPTH);
		return log_error_errno(r, "Failed to read the build context: %m");
	}
	/* an empty context leaves c.e NULL: qsort(NULL, 0) is undefined (glibc's base is nonnull) */
	if (c.n)
		qsort(c.e, c.n, sizeof(c.e[0]), entry_cmp);
	*out = c;
	return 0;
}

static bool has_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

int context_select(const struct build_context *c, char *const *sources, bool *take, const char **missing)
{
	for (size_t s = 0; sources && sources[s]; s++) {
		const char *src = sources[s];
		bool any = false;

		if (streq(src, ".")) {
			for (size_t i = 0; i < c->n; i++)
				take[i] = true;
			continue; /* an empty context is a valid "." */
		}
		for (size_t i = 0; i < c->n; i++) {
			const char *p = c->e[i].path;
			bool hit = has_glob(src) ? ignore_glob_match(src, p, false) : streq(src, p);
			if (!hit)
				continue;
			any = true;
			take[i] = true;
			if (S_ISDIR(c->e[i].mode))
				for (size_t k = 0; k < c->n; k++)
					if (path_startswith(c->e[k].path, p))
						take[k] = true;
		}
		if (!any) {
			*missing = src;
			return -ENOENT;
		}
	}
	return 0;
}

static const char *type_name(mode_t m)
{
	if (S_ISFIFO(m))
		return "a fifo";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISCHR(m) || S_ISBLK(m))
		return "a device";
	return "not a regular file";
}

int context_hash_files(int dirfd, struct build_context *c, const bool *take, uint64_t *budget)
{
	for (size_t i = 0; i < c->n; i++) {
		struct ctx_entry *e = &c->e[i];
		_cleanup_close_ int fd = -1;
		struct sha256 md = { 0 };
		uint64_t total = 0;
		struct stat st;
		int r = 0;

		if (!take[i] || e->sha256[0] || S_ISDIR(e->mode) || S_ISLNK(e->mode))
			continue;
		if (!S_ISREG(e->mode))
			return log_error_errno(-EINVAL, "COPY: '%s' in the build context is %s; only files, "
					       "directories and symlinks are copied", e->path, type_name(e->mode));
		fd = openat(dirfd, e->path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			return log_error_errno(-errno, "Failed to open '%s' in the build context: %m", e->path);
		if (fstat(fd, &st) < 0)
			return log_error_errno(-errno, "Failed to stat '%s': %m", e->path);
		if (!S_ISREG(st.st_mode))
			return log_error_errno(-ESTALE, "'%s' in the build context changed while it was read", e->path);
		if (sha256_init(&md) < 0) {
			sha256_done(&md);
			return log_error_errno(-ENOMEM, "Failed to start sha256");
		}
		r = sha256_fd(&md, fd, *budget, -1, &total);
		if (r == 0)
			r = sha256_final_hex(&md, e->sha256); /* written on success only */
		sha256_done(&md);
		if (r == -EFBIG)
			return log_error_errno(r, "COPY takes more than %" PRIu64 " bytes from the build context",
					       (uint64_t)CTX_MAX_BYTES);
		if (r < 0)
			return log_error_errno(r, "Failed to read '%s' in the build context: %m", e->path);
		*budget -= total;
		e->size = total; /* what was hashed is what counts */
	}
	return 0;
}

/* ---- the tag ---- */

/* A length-prefixed field: no value can forge the next record. */
static int ob_field(struct strbuf *b, const char *s, size_t n)
{
	int r = strbuf_printf(b, "%zu:", n);
	if (r >= 0)
		r = strbuf_put(b, s, n);
	if (r >= 0)
		r = strbuf_put(b, "\n", 1);
	return r;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int build_tag_serialize(const struct build_tag_input *in, char **out, size_t *len)
{
	_cleanup_free_ char **args = NULL;
	struct strbuf b = { 0 };
	size_t na = strv_length(in->build_args);
	int r;

	args = calloc(na + 1, sizeof(char *));
	if (!args)
		return -ENOMEM;
	if (na)
		memcpy(args, in->build_args, na * sizeof(char *));
	qsort(args, na, sizeof(char *), cmp_str);

	r = strbuf_printf(&b, "%s\nbuilder ", BUILD_TAG_VERSION);
	if (r >= 0)
		r = ob_field(&b, in->builder, strlen(in->builder));
	if (r >= 0)
		r = strbuf_put(&b, "base ", 5);
	if (r >= 0)
		r = ob_field(&b, in->base_digest, strlen(in->base_digest));
	if (r >= 0)
		r = strbuf_put(&b, "recipe ", 7);
	if (r >= 0)
		r = ob_field(&b, in->recipe, in->recipe_len);
	for (size_t i = 0; i < na && r >= 0; i++) {
		r = strbuf_put(&b, "arg ", 4);
		if (r >= 0)
			r = ob_field(&b, args[i], strlen(args[i]));
	}
	for (size_t k = 0; k < in->n_copies && r >= 0; k++) {
		r = strbuf_printf(&b, "copy %zu\n", k);
		for (size_t i = 0; in->ctx && i < in->ctx->n && r >= 0; i++) {
			const struct ctx_entry *e = &in->ctx->e[i];
			const char *what = "";

			if (!in->copies[k][i])
				continue;
			if (S_ISREG(e->mode)) {
				if (!e->sha256[0]) {
					r = -EINVAL;
					break;
				}
				what = e->sha256;
			} else if (S_ISLNK(e->mode)) {
				what = e->link ? e->link : "";
			}
			r = strbuf_printf(&b, "entry %06o %" PRIu64 " ", (unsigned)e->mode, S_ISREG(e->mode) ? e->size : 0);
			if (r >= 0)
				r = ob_field(&b, e->path, strlen(e->path));
			if (r >= 0)
				r = ob_field(&b, what, strlen(what));
		}
	}
	if (r < 0) {
		free(b.p);
		return r;
	}
	*out = b.p;
	if (len)
		*len = b.n;
	return 0;
}

int build_tag(const struct build_tag_input *in, char hex[65])
{
	_cleanup_free_ char *s = NULL;
	size_t n = 0;
	int r = build_tag_serialize(in, &s, &n);

	if (r < 0)
		return r;
	return build_sha256_hex(s, n, hex);
}
