// SPDX-License-Identifier: GPL-2.0-or-later
/* manifest.c — the package versions of a built tree (dpkg, apk, npm globals) */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <json-c/json.h>
#include <linux/openat2.h>

#include "build/copy.h"
#include "build/manifest.h"
#include "util/log.h"
#include "util/util.h"

/* A name or version as it may appear in the manifest: 1..255 bytes, no blank or control. */
static bool word_ok(const char *s, size_t n)
{
	if (n == 0 || n > 255)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f)
			return false;
	return true;
}

/* The value of field "@name:" (dpkg: "Name: v"; apk: "N:v") in the paragraph [p, end). */
static const char *para_field(const char *p, const char *end, const char *name, size_t *vlen)
{
	size_t n = strlen(name);

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		if ((size_t)(le - p) >= n && strncmp(p, name, n) == 0) {
			const char *v = p + n;
			while (v < le && (*v == ' ' || *v == '\t'))
				v++;
			*vlen = (size_t)(le - v);
			return v;
		}
		p = nl ? nl + 1 : end;
	}
	return NULL;
}

/* Calls @fn for each blank-line separated paragraph of [text, text+len). */
static int each_paragraph(const char *text, size_t len, int (*fn)(const char *, const char *, FILE *), FILE *f)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *q = p, *pe = end;
		int r;

		while (q < end) {
			const char *e = memchr(q, '\n', (size_t)(end - q));
			if (!e)
				break;
			if (e + 1 < end && e[1] == '\n') {
				pe = e + 1;
				break;
			}
			q = e + 1;
		}
		r = fn(p, pe, f);
		if (r < 0)
			return r;
		p = pe < end ? pe + 1 : end;
	}
	return 0;
}

static int dpkg_para(const char *p, const char *pe, FILE *f)
{
	size_t nl = 0, vl = 0, sl = 0;
	const char *name = para_field(p, pe, "Package:", &nl), *ver = para_field(p, pe, "Version:", &vl),
		   *st = para_field(p, pe, "Status:", &sl);

	if (name && ver && st && sl >= 9 && strncmp(st + sl - 9, "installed", 9) == 0 &&
	    !(sl >= 13 && strncmp(st + sl - 13, "not-installed", 13) == 0) && word_ok(name, nl) && word_ok(ver, vl))
		fprintf(f, "%.*s %.*s\n", (int)nl, name, (int)vl, ver);
	return 0;
}

static int apk_para(const char *p, const char *pe, FILE *f)
{
	size_t nl = 0, vl = 0;
	const char *name = para_field(p, pe, "P:", &nl), *ver = para_field(p, pe, "V:", &vl);

	if (name && ver && word_ok(name, nl) && word_ok(ver, vl))
		fprintf(f, "%.*s %.*s\n", (int)nl, name, (int)vl, ver);
	return 0;
}

/* Runs @fn over @text into a new string. */
static int render(const char *text, size_t len, int (*fn)(const char *, const char *, FILE *), char **out)
{
	char *buf = NULL;
	size_t blen = 0;
	FILE *f = open_memstream(&buf, &blen);
	int r;

	if (!f)
		return -ENOMEM;
	r = each_paragraph(text, len, fn, f);
	if (fclose(f) != 0 || r < 0) {
		free(buf);
		return r < 0 ? r : -ENOMEM;
	}
	*out = buf;
	return 0;
}

int manifest_dpkg(const char *status, size_t len, char **out)
{
	return render(status, len, dpkg_para, out);
}

int manifest_apk(const char *db, size_t len, char **out)
{
	return render(db, len, apk_para, out);
}

int manifest_npm_package(const char *json, size_t len, char **out)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o = NULL, *n, *v;
	const char *name, *ver;

	if (!tok)
		return -ENOMEM;
	if (len <= MANIFEST_PKG_JSON_MAX)
		o = json_tokener_parse_ex(tok, json, (int)len);
	json_tokener_free(tok);
	if (o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, "name", &n) &&
	    json_object_object_get_ex(o, "version", &v) && json_object_is_type(n, json_type_string) &&
	    json_object_is_type(v, json_type_string)) {
		name = json_object_get_string(n);
		ver = json_object_get_string(v);
		if (word_ok(name, strlen(name)) && word_ok(ver, strlen(ver))) {
			int r = asprintf(out, "npm:%s %s\n", name, ver);
			json_object_put(o);
			return r < 0 ? -ENOMEM : 0;
		}
	}
	json_object_put(o);
	*out = strdup("");
	return *out ? 0 : -ENOMEM;
}

static int open_in_root(int root_fd, const char *path, int flags)
{
	struct open_how how = { .flags = (uint64_t)(flags | O_CLOEXEC),
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	long fd = syscall(SYS_openat2, root_fd, path, &how, sizeof(how));

	return fd < 0 ? -errno : (int)fd;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds the package.json of every package in @dir (inside the root; "@scope" dirs one level
 * deeper) to @lines. */
static int npm_dir(int root_fd, const char *dir, char ***lines, size_t *n, unsigned depth)
{
	_cleanup_close_ int fd = open_in_root(root_fd, dir, O_RDONLY | O_DIRECTORY);
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (fd < 0)
		return fd == -ENOENT || fd == -ENOTDIR ? 0 : fd;
	d = fdopendir(fd);
	if (!d)
		return -errno;
	fd = -1; /* owned by d; NOLINT(clang-analyzer-deadcode.DeadStores): read by its _cleanup_close_, which clang-analyzer does not model */
	while (r >= 0 && (de = readdir(d))) {
		_cleanup_free_ char *sub = NULL, *pj = NULL, *json = NULL, *line = NULL;
		size_t len = 0;

		if (de->d_name[0] == '.')
			continue;
		if (asprintf(&sub, "%s/%s", dir, de->d_name) < 0) {
			r = -ENOMEM;
			break;
		}
		if (de->d_name[0] == '@' && depth == 0) {
			r = npm_dir(root_fd, sub, lines, n, 1);
			continue;
		}
		if (asprintf(&pj, "%s/package.json", sub) < 0) {
			r = -ENOMEM;
			break;
		}
		if (copy_read_file(root_fd, pj, MANIFEST_PKG_JSON_MAX, &json, &len) < 0)
			continue; /* not a package (or an unreadable one): nothing to list */
		r = manifest_npm_package(json, len, &line);
		if (r < 0 || !*line)
			continue;
		if (*n >= MANIFEST_NPM_MAX) {
			r = -E2BIG;
			break;
		}
		r = strv_push_take(lines, TAKE_PTR(line));
		if (r >= 0)
			(*n)++;
	}
	closedir(d);
	return r;
}

int manifest_collect(int root_fd, char **out)
{
	static const char *const npm_dirs[] = { "/usr/local/lib/node_modules", "/usr/lib/node_modules" };
	_cleanup_free_ char *db = NULL, *dpkg = NULL, *apk = NULL;
	_cleanup_strv_free_ char **npm = NULL;
	char *buf = NULL;
	size_t len = 0, n_npm = 0, blen = 0;
	FILE *f;
	int r;

	*out = NULL;
	r = copy_read_file(root_fd, "/var/lib/dpkg/status", MANIFEST_DB_MAX, &db, &len);
	if (r >= 0)
		r = manifest_dpkg(db, len, &dpkg);
	if (r < 0 && r != -ENOENT)
		return log_error_errno(r, "build: cannot read the dpkg database: %m");
	free(db);
	db = NULL;
	r = copy_read_file(root_fd, "/lib/apk/db/installed", MANIFEST_DB_MAX, &db, &len);
	if (r >= 0)
		r = manifest_apk(db, len, &apk);
	if (r < 0 && r != -ENOENT)
		return log_error_errno(r, "build: cannot read the apk database: %m");
	for (size_t i = 0; i < ELEMENTSOF(npm_dirs); i++) {
		r = npm_dir(root_fd, npm_dirs[i], &npm, &n_npm, 0);
		if (r < 0)
			return log_error_errno(r, "build: cannot list the global npm packages in '%s': %m", npm_dirs[i]);
	}
	if (!dpkg && !apk && !n_npm)
		return 0;
	if (n_npm)
		qsort(npm, n_npm, sizeof(*npm), cmp_str);
	f = open_memstream(&buf, &blen);
	if (!f)
		return log_error_errno(-ENOMEM, "Out of memory");
	fputs(dpkg ? dpkg : "", f);
	fputs(apk ? apk : "", f);
	for (size_t i = 0; i < n_npm; i++)
		fputs(npm[i], f);
	if (fclose(f) != 0) {
		free(buf);
		return log_error_errno(-ENOMEM, "Out of memory");
	}
	*out = buf;
	return 0;
}
