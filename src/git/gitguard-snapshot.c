// SPDX-License-Identifier: GPL-2.0-or-later
/* gitguard-snapshot.c — record a work tree's git entry points exactly, compare two records.
 *
 * The list of what is recorded is gitguard.h's ("Snapshots"); the config syntax and the
 * include paths come from the same parser gitguard_check() uses (gitguard-parse.c). An entry is
 * its host path plus a canonical byte string (kind, mode, content or link target), so two
 * snapshots compare with memcmp and a difference names the path.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "git/gitguard.h"
#include "util/strbuf.h"
#include "util/util.h"

#define MAX_ENTRIES 4096
#define MAX_HOOK_DEPTH 4

struct snap_entry {
	char *path;
	char *data; /* kind, mode, content: see record() */
	size_t len;
};

struct gitguard_snapshot {
	struct snap_entry *v;
	size_t n;
	const char *home;
};

void gitguard_snapshot_free(struct gitguard_snapshot *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].path);
		free(s->v[i].data);
	}
	free(s->v);
	free(s);
}

size_t gitguard_snapshot_size(const struct gitguard_snapshot *s)
{
	return s ? s->n : 0;
}

static bool has_entry(const struct gitguard_snapshot *s, const char *path)
{
	for (size_t i = 0; i < s->n; i++)
		if (streq(s->v[i].path, path))
			return true;
	return false;
}

static int add_entry(struct gitguard_snapshot *s, const char *path, struct strbuf *b)
{
	struct snap_entry *v;

	if (s->n >= MAX_ENTRIES)
		return -EFBIG;
	v = realloc(s->v, (s->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->v = v;
	v[s->n].path = strdup(path);
	if (!v[s->n].path)
		return -ENOMEM;
	v[s->n].data = b->p ? TAKE_PTR(b->p) : strdup("");
	v[s->n].len = b->n;
	if (!v[s->n].data) {
		free(v[s->n].path);
		return -ENOMEM;
	}
	s->n++;
	return 0;
}

static int record_dir(struct gitguard_snapshot *s, const char *path, unsigned depth);

/* Records @path as absent ("-"), a symlink ("l" target), a regular file ("f" mode, content), a
 * directory ("d" mode, then its entries when @walk) or anything else ("o" mode). With @content
 * the file's bytes are returned too (for configs, which are scanned for includes). */
static int record(struct gitguard_snapshot *s, const char *path, bool walk, unsigned depth, char **content,
		  size_t *clen)
{
	struct strbuf b = { 0 };
	struct stat st;
	int r;

	if (has_entry(s, path))
		return 0;
	if (lstat(path, &st) < 0) {
		if (errno != ENOENT && errno != ENOTDIR)
			return -errno;
		r = strbuf_puts(&b, "-");
		goto add;
	}
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			return -errno;
		target[n] = 0;
		r = strbuf_printf(&b, "l %s", target);
	} else if (S_ISREG(st.st_mode)) {
		_cleanup_free_ char *data = NULL;
		size_t len = 0;
		r = read_regular_at(AT_FDCWD, path, GITGUARD_MAX_CONFIG, &data, &len, &st);
		if (r < 0)
			return r; /* also when it was swapped for something else since the lstat() */
		r = strbuf_printf(&b, "f %o %zu\n", (unsigned)(st.st_mode & 07777), len);
		if (r >= 0 && len)
			r = strbuf_put(&b, data, len);
		if (r >= 0 && content) {
			*content = TAKE_PTR(data);
			*clen = len;
		}
	} else if (S_ISDIR(st.st_mode))
		r = strbuf_printf(&b, "d %o", (unsigned)(st.st_mode & 07777));
	else
		r = strbuf_printf(&b, "o %o", (unsigned)(st.st_mode & 07777));
add:
	if (r >= 0)
		r = add_entry(s, path, &b);
	free(b.p);
	if (r >= 0 && walk && S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode))
		r = record_dir(s, path, depth + 1);
	return r < 0 ? r : 0;
}

/* Every entry of a hooks directory (a hook may be any name git grows later). */
static int record_dir(struct gitguard_snapshot *s, const char *path, unsigned depth)
{
	_cleanup_strv_free_ char **names = NULL;
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (depth > MAX_HOOK_DEPTH)
		return -EFBIG;
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (strv_length(names) >= MAX_ENTRIES) {
			r = -EFBIG;
			break;
		}
		if (strv_push(&names, de->d_name) < 0) {
			r = -ENOMEM;
			break;
		}
	}
	closedir(d);
	for (size_t i = 0; r == 0 && names && names[i]; i++) {
		_cleanup_free_ char *p = path_join(path, names[i]);
		r = p ? record(s, p, true, depth, NULL, NULL) : -ENOMEM;
	}
	return r;
}

struct include_scan {
	const char *base;   /* directory of the config (relative includes start there) */
	const char *home;
	char **includes;    /* absolute paths */
	char **hookdirs;
};

static char *resolve(const char *base, const char *home, const char *path)
{
	char *r;
	if (strncmp(path, "~/", 2) == 0)
		return home && asprintf(&r, "%s/%s", home, path + 2) >= 0 ? r : NULL;
	if (path[0] == '/')
		return strdup(path);
	return path_join(base, path);
}

static int include_fn(const char *section, const char *subsection, const char *name, const char *value, void *ud)
{
	struct include_scan *sc = ud;
	char ***list = NULL;
	char *p;

	(void)subsection;
	if (!value || !*value)
		return 0;
	if (streq(name, "path") && (streq(section, "include") || streq(section, "includeif")))
		list = &sc->includes;
	else if (streq(section, "core") && streq(name, "hookspath"))
		list = &sc->hookdirs;
	if (!list)
		return 0;
	/* a relative include starts at the config's directory; a relative hooksPath at the work
	 * tree (resolved by the caller) */
	p = list == &sc->hookdirs ? strdup(value) : resolve(sc->base, sc->home, value);
	if (!p)
		return 0; /* `~/` without a home: git would not find it either */
	return strv_push_take(list, p) < 0 ? -ENOMEM : 0;
}

/* A config file: recorded, then what it includes (recursively) and its core.hooksPath dir.
 * @worktree: where a relative hooksPath starts. */
static int record_config(struct gitguard_snapshot *s, const char *path, const char *worktree, unsigned depth)
{
	_cleanup_free_ char *data = NULL, *dir = NULL;
	struct include_scan sc = { .home = s->home };
	size_t len = 0;
	int r;

	if (depth > GITGUARD_MAX_INCLUDE_DEPTH || has_entry(s, path))
		return 0;
	r = record(s, path, false, 0, &data, &len);
	if (r < 0 || !data)
		return r;
	{
		const char *slash = strrchr(path, '/');
		dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
		if (!dir)
			return -ENOMEM;
	}
	sc.base = dir;
	/* a config git cannot parse is recorded all the same; what was read of it counts */
	(void)gitguard_config_parse(data, len, include_fn, &sc);
	for (size_t i = 0; r == 0 && sc.includes && sc.includes[i]; i++)
		r = record_config(s, sc.includes[i], worktree, depth + 1);
	for (size_t i = 0; r == 0 && sc.hookdirs && sc.hookdirs[i]; i++) {
		_cleanup_free_ char *h = resolve(worktree, s->home, sc.hookdirs[i]);
		if (h)
			r = record(s, h, true, 0, NULL, NULL);
	}
	strv_free(sc.includes);
	strv_free(sc.hookdirs);
	return r;
}

static int record_gitdir(struct gitguard_snapshot *s, const char *gitdir, const char *worktree)
{
	static const char *const configs[] = { "config", "config.worktree" };
	static const char *const files[] = { "commondir", "gitdir", "info/attributes", "info/exclude",
					     "objects/info/alternates", "objects/info/http-alternates" };
	int r = 0;

	for (size_t i = 0; r == 0 && i < ELEMENTSOF(configs); i++) {
		_cleanup_free_ char *p = path_join(gitdir, configs[i]);
		r = p ? record_config(s, p, worktree, 0) : -ENOMEM;
	}
	for (size_t i = 0; r == 0 && i < ELEMENTSOF(files); i++) {
		_cleanup_free_ char *p = path_join(gitdir, files[i]);
		r = p ? record(s, p, false, 0, NULL, NULL) : -ENOMEM;
	}
	if (r == 0) {
		_cleanup_free_ char *p = path_join(gitdir, "hooks");
		r = p ? record(s, p, true, 0, NULL, NULL) : -ENOMEM;
	}
	return r;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct snap_entry *)a)->path, ((const struct snap_entry *)b)->path);
}

int gitguard_snapshot_take(const char *worktree, const char *gitdir, const char *commondir, const char *home,
			   struct gitguard_snapshot **out)
{
	struct gitguard_snapshot *s = calloc(1, sizeof(*s));
	_cleanup_free_ char *dotgit = path_join(worktree, ".git");
	int r;

	*out = NULL;
	if (!s || !dotgit) {
		free(s);
		return -ENOMEM;
	}
	s->home = home;
	/* the work tree's .git: the gitdir itself (recorded as a directory, not walked), or a
	 * gitfile whose target is what git uses */
	r = record(s, dotgit, false, 0, NULL, NULL);
	if (r == 0)
		r = record_gitdir(s, gitdir, worktree);
	if (r == 0 && commondir && !streq(commondir, gitdir))
		r = record_gitdir(s, commondir, worktree);
	if (r < 0) {
		gitguard_snapshot_free(s);
		return r;
	}
	s->home = NULL; /* the caller's string: not kept past this call */
	qsort(s->v, s->n, sizeof(*s->v), cmp_entry);
	*out = s;
	return 0;
}

int gitguard_snapshot_diff(const struct gitguard_snapshot *a, const struct gitguard_snapshot *b, char **what)
{
	size_t i = 0, j = 0;
	const char *path = NULL, *how = NULL;

	*what = NULL;
	while (!path && (i < a->n || j < b->n)) {
		int c = i >= a->n ? 1 : j >= b->n ? -1 : strcmp(a->v[i].path, b->v[j].path);
		if (c < 0) {
			path = a->v[i].path, how = "was removed";
		} else if (c > 0) {
			path = b->v[j].path, how = "appeared";
		} else {
			const struct snap_entry *x = &a->v[i++], *y = &b->v[j++];
			/* an entry recorded as absent that now exists "appeared" */
			if (x->len != y->len || memcmp(x->data, y->data, x->len) != 0) {
				path = x->path;
				how = streq(x->data, "-") ? "appeared" : streq(y->data, "-") ? "was removed" : "changed";
			}
			continue;
		}
		break;
	}
	if (!path)
		return 0;
	if (asprintf(what, "'%s' %s", path, how) < 0) {
		*what = NULL;
		return -ENOMEM;
	}
	return 1;
}
