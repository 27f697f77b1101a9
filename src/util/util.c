// SPDX-License-Identifier: GPL-2.0-or-later
/* util.c — fd, file, path and string-vector helpers */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/util.h"

size_t strv_length(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void strv_sort(char **v)
{
	if (v)
		qsort(v, strv_length(v), sizeof(*v), cmp_str);
}

void strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

int strv_push_take(char ***v, char *s)
{
	size_t n = strv_length(*v);
	char **nv;

	if (!s)
		return -ENOMEM;
	nv = realloc(*v, (n + 2) * sizeof(char *));
	if (!nv) {
		free(s);
		return -ENOMEM;
	}
	nv[n] = s;
	nv[n + 1] = NULL;
	*v = nv;
	return 0;
}

int strv_push(char ***v, const char *s)
{
	return strv_push_take(v, strdup(s));
}

bool strv_contains(char *const *v, const char *s)
{
	for (size_t i = 0; v && v[i]; i++)
		if (streq(v[i], s))
			return true;
	return false;
}

char **strv_copy(char *const *v)
{
	char **c = calloc(1, sizeof(char *));
	if (!c)
		return NULL;
	for (size_t i = 0; v && v[i]; i++)
		if (strv_push(&c, v[i]) < 0) {
			strv_free(c);
			return NULL;
		}
	return c;
}

ssize_t read_full(int fd, void *buf, size_t n)
{
	size_t done = 0;
	while (done < n) {
		ssize_t k = read(fd, (char *)buf + done, n - done);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			break;
		done += (size_t)k;
	}
	return (ssize_t)done;
}

int write_full(int fd, const void *buf, size_t n)
{
	size_t done = 0;
	while (done < n) {
		ssize_t k = write(fd, (const char *)buf + done, n - done);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)k;
	}
	return 0;
}

int read_file_at(int dirfd, const char *path, size_t max, char **out, size_t *len)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	_cleanup_free_ char *buf = NULL;
	size_t cap = 4096, n = 0;

	if (fd < 0)
		return -errno;
	buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t k;
		if (n == cap) {
			char *nb;
			if (cap >= max)
				return -EFBIG;
			cap = cap * 2 > max ? max : cap * 2;
			nb = realloc(buf, cap + 1);
			if (!nb)
				return -ENOMEM;
			buf = nb;
		}
		k = read(fd, buf + n, cap - n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			break;
		n += (size_t)k;
	}
	buf[n] = 0;
	if (len)
		*len = n;
	*out = TAKE_PTR(buf);
	return 0;
}

int read_regular_at(int dirfd, const char *path, size_t max, char **out, size_t *len, struct stat *st)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	char fdpath[64];
	struct stat s;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &s) < 0)
		return -errno;
	if (!S_ISREG(s.st_mode))
		return -EINVAL;
	if (st)
		*st = s;
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	return read_file_at(AT_FDCWD, fdpath, max, out, len);
}

int write_file_at(int dirfd, const char *path, const char *data, size_t len, mode_t mode)
{
	_cleanup_close_ int fd = openat(dirfd, path,
					O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return -errno;
	return write_full(fd, data, len);
}

int mkdir_p(const char *path, mode_t mode)
{
	_cleanup_free_ char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int rm_rf_at(int parent, const char *name, dev_t dev)
{
	struct stat st;
	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (S_ISDIR(st.st_mode)) {
		int fd;
		DIR *d;
		struct dirent *de;
		int r = 0;

		if (st.st_dev != dev)
			return -EXDEV; /* a mount point: never descend */
		fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == EACCES && fchmodat(parent, name, (st.st_mode & 07777) | 0700, 0) == 0)
			/* our own dir without search/read bits, e.g. overlayfs's work/work (mode 000) */
			fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		d = fdopendir(fd);
		if (!d) {
			close(fd);
			return -errno;
		}
		while ((de = readdir(d))) {
			int k;
			if (streq(de->d_name, ".") || streq(de->d_name, ".."))
				continue;
			k = rm_rf_at(dirfd(d), de->d_name, dev);
			if (k < 0 && r == 0)
				r = k;
		}
		closedir(d);
		if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && r == 0)
			r = -errno;
		return r;
	}
	if (unlinkat(parent, name, 0) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int rm_rf(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	return rm_rf_at(AT_FDCWD, path, st.st_dev);
}

bool path_is_absolute(const char *p)
{
	return p && p[0] == '/';
}

bool path_has_dotdot(const char *p)
{
	const char *s = p;
	while ((s = strstr(s, ".."))) {
		bool start = s == p || s[-1] == '/';
		bool end = s[2] == 0 || s[2] == '/';
		if (start && end)
			return true;
		s += 2;
	}
	return false;
}

bool path_startswith(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);
	while (n > 1 && prefix[n - 1] == '/')
		n--;
	if (streq(prefix, "/"))
		return path[0] == '/';
	if (strncmp(path, prefix, n) != 0)
		return false;
	return path[n] == 0 || path[n] == '/';
}

char *path_join(const char *a, const char *b)
{
	char *r;
	size_t la = strlen(a);
	while (la > 0 && a[la - 1] == '/')
		la--;
	while (*b == '/')
		b++;
	if (asprintf(&r, "%.*s/%s", (int)la, a, b) < 0)
		return NULL;
	return r;
}

void hex_encode(const void *in, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *b = in;

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[2 * n] = 0;
}

int random_hex(char *buf, size_t nbytes)
{
	unsigned char raw[64];
	if (nbytes > sizeof(raw))
		return -EINVAL;
	if (getrandom(raw, nbytes, 0) != (ssize_t)nbytes)
		return -EIO;
	hex_encode(raw, nbytes, buf);
	return 0;
}

int parse_u64(const char *s, unsigned long long *out)
{
	char *end;
	unsigned long long v;
	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

/* The fallback for kernels without openat2: one component at a time, each with O_NOFOLLOW. */
static int openat_nofollow_walk(int dirfd, const char *path, int flags, mode_t mode)
{
	_cleanup_free_ char *copy = strdup(path);
	_cleanup_close_ int cur = -1;
	char *comp, *next;

	if (!copy)
		return -ENOMEM;
	if (path_is_absolute(path))
		cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	else if (dirfd == AT_FDCWD)
		cur = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	else
		cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	if (cur < 0)
		return -errno;
	for (comp = copy; *comp == '/'; comp++)
		;
	for (; comp && *comp; comp = next) {
		int fd;
		next = strchr(comp, '/');
		if (next) {
			*next++ = 0;
			while (*next == '/')
				next++;
		}
		if (streq(comp, ".."))
			return -EXDEV; /* never needed by callers: canonical or root-relative paths */
		if (next && *next)
			fd = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		else
			fd = openat(cur, comp, flags | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd < 0)
			return errno == ENOTDIR && next && *next ? -ELOOP : -errno;
		close(cur);
		cur = fd;
	}
	return TAKE_FD(cur);
}

int openat_nofollow(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (unsigned long long)(flags | O_CLOEXEC),
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	if (dirfd != AT_FDCWD && !path_is_absolute(path))
		how.resolve |= RESOLVE_BENEATH;
	fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS)
		return openat_nofollow_walk(dirfd, path, flags, mode);
	return fd < 0 ? -errno : fd;
}

/* Joins the components @v[0..n) into "/a/b". */
static char *join_components(char **v, size_t n)
{
	size_t len = 1;
	char *r, *q;
	for (size_t i = 0; i < n; i++)
		len += strlen(v[i]) + 1;
	r = q = malloc(len + 1);
	if (!r)
		return NULL;
	*q = 0;
	for (size_t i = 0; i < n; i++)
		q += snprintf(q, len + 1 - (size_t)(q - r), "/%s", v[i]);
	if (!n)
		snprintf(r, len + 1, "/");
	return r;
}

int path_resolve_trusted(const char *path, char **out, char **bad_link)
{
	_cleanup_strv_free_ char **todo = NULL, **done = NULL;
	_cleanup_free_ char *cwd = NULL;
	unsigned links = 0;

	*out = NULL;
	*bad_link = NULL;
	if (!path_is_absolute(path)) {
		cwd = getcwd(NULL, 0);
		if (!cwd)
			return -errno;
	}
	/* the components still to walk, last first (a stack) */
	{
		_cleanup_free_ char *full = NULL;
		char *save = NULL;
		_cleanup_strv_free_ char **fwd = NULL;
		if (asprintf(&full, "%s/%s", cwd ? cwd : "", path) < 0)
			return -ENOMEM;
		for (char *c = strtok_r(full, "/", &save); c; c = strtok_r(NULL, "/", &save))
			if (strv_push(&fwd, c) < 0)
				return -ENOMEM;
		for (size_t i = strv_length(fwd); i > 0; i--)
			if (strv_push(&todo, fwd[i - 1]) < 0)
				return -ENOMEM;
	}
	while (strv_length(todo)) {
		size_t nt = strv_length(todo), nd = strv_length(done);
		_cleanup_free_ char *comp = todo[nt - 1], *here = NULL, *parent = NULL;
		struct stat st;

		todo[nt - 1] = NULL;
		/* nt > 0: todo and comp are not NULL, but the analyzer does not tie strv_length() to the vector being non-NULL
		 * NOLINTNEXTLINE(clang-analyzer-core.NonNullParamChecker) */
		if (streq(comp, "."))
			continue;
		if (streq(comp, "..")) {
			if (nd) {
				free(done[nd - 1]); /* NOLINT(clang-analyzer-core.NullDereference): nd > 0 */
				done[nd - 1] = NULL;
			}
			continue;
		}
		if (strv_push(&done, comp) < 0)
			return -ENOMEM;
		here = join_components(done, nd + 1);
		if (!here)
			return -ENOMEM;
		if (lstat(here, &st) < 0)
			return -errno;
		if (!S_ISLNK(st.st_mode))
			continue;
		parent = join_components(done, nd);
		if (!parent)
			return -ENOMEM;
		if (++links > 40 || geteuid() == 0 || access(parent, W_OK) == 0) {
			*bad_link = TAKE_PTR(here);
			return -ELOOP;
		}
		{
			char target[4096];
			char *save = NULL;
			_cleanup_strv_free_ char **fwd = NULL;
			ssize_t n = readlink(here, target, sizeof(target) - 1);
			if (n < 0)
				return -errno;
			target[n] = 0;
			free(done[nd]);
			done[nd] = NULL;
			if (target[0] == '/')
				for (size_t i = 0; i < nd; i++) {
					free(done[i]);
					done[i] = NULL;
				}
			for (char *c = strtok_r(target, "/", &save); c; c = strtok_r(NULL, "/", &save))
				if (strv_push(&fwd, c) < 0)
					return -ENOMEM;
			for (size_t i = strv_length(fwd); i > 0; i--)
				/* NOLINTNEXTLINE(clang-analyzer-core.NullDereference): i <= strv_length(fwd) */
				if (strv_push(&todo, fwd[i - 1]) < 0)
					return -ENOMEM;
		}
	}
	*out = join_components(done, strv_length(done));
	return *out ? 0 : -ENOMEM;
}

int proc_start_time(pid_t pid, unsigned long long *out)
{
	char path[64];
	_cleanup_free_ char *buf = NULL;
	char *p;
	int r;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	r = read_file_at(AT_FDCWD, path, 4096, &buf, NULL);
	if (r < 0)
		return r;
	if (!buf)
		return -EINVAL;
	p = strrchr(buf, ')'); /* comm may contain spaces and parens */
	/* after ") " comes field 3; skip to field 22 */
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return -EINVAL;
	*out = strtoull(p + 1, NULL, 10);
	return 0;
}

bool proc_is(pid_t pid, unsigned long long start)
{
	unsigned long long now;
	return pid > 0 && proc_start_time(pid, &now) == 0 && now == start;
}
