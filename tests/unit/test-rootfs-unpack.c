// SPDX-License-Identifier: GPL-2.0-or-later
/* test-rootfs-unpack.c — path safety and whiteout classification (tables), and real layers
 * crafted with libarchive and applied into a temporary directory (no privileges needed). */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <cmocka.h>
#include <openssl/evp.h>

#include "rootfs/unpack.h"
#include "util/dl.h"
#include "util/util.h"

static void test_normalize(void **state)
{
	static const struct {
		const char *in, *out;
	} t[] = {
		{ "a/b", "a/b" },      { "./a/b", "a/b" },  { "a//b/", "a/b" }, { "./", "" },  { ".", "" },
		{ "a/./b/.", "a/b" },  { "..a/b..", "..a/b.." }, { ".wh.x", ".wh.x" },
		{ "/etc/passwd", NULL }, { "../x", NULL }, { "a/../b", NULL }, { "a/..", NULL }, { "..", NULL },
	};
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		char *o = NULL;
		int k = unpack_path_normalize(t[i].in, &o);
		if (t[i].out) {
			if (k != 0)
				fail_msg("'%s' refused", t[i].in);
			assert_string_equal(o, t[i].out);
		} else if (k != -EINVAL) {
			fail_msg("'%s' accepted as '%s'", t[i].in, o);
		}
		free(o);
	}
}

static void test_whiteout(void **state)
{
	static const struct {
		const char *in;
		enum unpack_whiteout kind;
		const char *target;
	} t[] = {
		{ "a/b", UNPACK_WH_NONE, NULL },        { "a/.wh.b", UNPACK_WH_FILE, "a/b" },
		{ ".wh.top", UNPACK_WH_FILE, "top" },   { "d/.wh..wh..opq", UNPACK_WH_OPAQUE, "d" },
		{ ".wh..wh..opq", UNPACK_WH_OPAQUE, "" }, { "x/.wh..wh.plnk", UNPACK_WH_OTHER, NULL },
		{ "x/.wh.", UNPACK_WH_OTHER, NULL },    { "x/.wh...", UNPACK_WH_OTHER, NULL },
		{ "x/a.wh.b", UNPACK_WH_NONE, NULL },
	};
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		char *target;
		enum unpack_whiteout k = unpack_whiteout_kind(t[i].in, &target);
		if (k != t[i].kind)
			fail_msg("'%s': kind %d", t[i].in, k);
		if (t[i].target)
			assert_string_equal(target, t[i].target);
		free(target);
	}
}

/* ---- crafted layers ---- */

struct ent {
	const char *path;
	char type;           /* f d l h c, X: an empty file with @data (decimal) xattrs */
	const char *data;    /* file content, link target */
	int mode;
};

static int make_layer(const char *file, const struct ent *e, size_t n, bool gzip)
{
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	if (gzip)
		archive_write_add_filter_gzip(a);
	assert_int_equal(archive_write_open_filename(a, file), ARCHIVE_OK);
	for (size_t i = 0; i < n; i++) {
		struct archive_entry *x = archive_entry_new();
		archive_entry_set_pathname(x, e[i].path);
		archive_entry_set_perm(x, e[i].mode ? e[i].mode : 0644);
		switch (e[i].type) {
		case 'f':
			archive_entry_set_filetype(x, AE_IFREG);
			archive_entry_set_size(x, (la_int64_t)strlen(e[i].data));
			break;
		case 'X':
			archive_entry_set_filetype(x, AE_IFREG);
			archive_entry_set_size(x, 0);
			break;
		case 'd':
			archive_entry_set_filetype(x, AE_IFDIR);
			break;
		case 'l':
			archive_entry_set_filetype(x, AE_IFLNK);
			archive_entry_set_symlink(x, e[i].data);
			break;
		case 'h':
			archive_entry_set_filetype(x, AE_IFREG);
			archive_entry_set_hardlink(x, e[i].data);
			break;
		case 'c':
			archive_entry_set_filetype(x, AE_IFCHR);
			archive_entry_set_rdev(x, makedev(1, 3));
			break;
		}
		for (long k = 0; e[i].type == 'X' && k < strtol(e[i].data, NULL, 10); k++) {
			char key[32];
			snprintf(key, sizeof(key), "user.x%ld", k);
			archive_entry_xattr_add_entry(x, key, "v", 1);
		}
		assert_int_equal(archive_write_header(a, x), ARCHIVE_OK);
		if (e[i].type == 'f')
			archive_write_data(a, e[i].data, strlen(e[i].data));
		archive_entry_free(x);
	}
	archive_write_close(a);
	archive_write_free(a);
	return 0;
}

struct env {
	char dir[64];
	char root[80];
	char outside[80];
	char layer[80];
	int rootfd;
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	strcpy(e->dir, "/tmp/aisb-unpack-XXXXXX");
	assert_non_null(mkdtemp(e->dir));
	snprintf(e->root, sizeof(e->root), "%s/root", e->dir);
	snprintf(e->outside, sizeof(e->outside), "%s/outside", e->dir);
	snprintf(e->layer, sizeof(e->layer), "%s/layer.tar", e->dir);
	assert_int_equal(mkdir(e->root, 0755), 0);
	assert_int_equal(mkdir(e->outside, 0755), 0);
	e->rootfd = open(e->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	close(e->rootfd);
	rm_rf(e->dir);
	free(e);
	return 0;
}

static int apply(struct env *e, const struct ent *ents, size_t n, bool gzip, const struct unpack_limits *lim)
{
	struct unpack_limits def;
	struct unpack_stats st = { 0 };
	int fd, k;
	if (!lim) {
		unpack_limits_default(&def);
		lim = &def;
	}
	make_layer(e->layer, ents, n, gzip);
	fd = open(e->layer, O_RDONLY | O_CLOEXEC);
	k = unpack_layer(e->rootfd, fd, "test layer", NULL, lim, &st);
	close(fd);
	return k;
}

static bool exists_at(const char *dir, const char *p)
{
	char buf[512];
	struct stat st;
	snprintf(buf, sizeof(buf), "%s/%s", dir, p);
	return lstat(buf, &st) == 0;
}

static mode_t mode_at(const char *dir, const char *p)
{
	char buf[256];
	struct stat st;
	snprintf(buf, sizeof(buf), "%s/%s", dir, p);
	assert_int_equal(lstat(buf, &st), 0);
	return st.st_mode;
}

static void test_unpack_basic(void **state)
{
	struct env *e = *state;
	const struct ent l[] = {
		{ "./", 'd', NULL, 0755 },
		{ "./bin/", 'd', NULL, 0755 },
		{ "./bin/su", 'f', "#!x", 04755 },
		{ "./bin/sh", 'l', "su", 0777 },
		{ "./bin/su2", 'h', "bin/su", 0 },
		{ "./dev/null", 'c', NULL, 0666 },
		{ "deep/implicit/file", 'f', "x", 0644 },
		{ "usr/lib/", 'd', NULL, 0755 },
		{ "lib", 'l', "usr/lib", 0777 },
		{ "lib/through", 'f', "in-root symlink parent is fine", 0644 }, /* lands in usr/lib */
		{ "abs", 'l', "/etc/passwd", 0777 },                              /* only data */
	};
	assert_int_equal(apply(e, l, ELEMENTSOF(l), true, NULL), 0);
	assert_int_equal(mode_at(e->root, "bin/su") & 07777, 0755); /* setuid cleared */
	assert_true(S_ISLNK(mode_at(e->root, "bin/sh")));
	assert_true(exists_at(e->root, "bin/su2"));
	assert_false(exists_at(e->root, "dev/null")); /* device skipped */
	assert_true(exists_at(e->root, "deep/implicit/file"));
	assert_true(exists_at(e->root, "usr/lib/through"));
	assert_true(S_ISLNK(mode_at(e->root, "abs")));
}

static void test_unpack_refusals(void **state)
{
	struct env *e = *state;
	const struct ent dotdot[] = { { "../outside/pwned", 'f', "x", 0 } };
	const struct ent absolute[] = { { "/tmp/pwned", 'f', "x", 0 } };
	const struct ent symabs[] = { { "esc", 'l', e->outside, 0777 }, { "esc/pwned", 'f', "x", 0 } };
	const struct ent symrel[] = { { "up", 'l', "../outside", 0777 }, { "up/pwned", 'f', "x", 0 } };
	const struct ent hard[] = { { "hl", 'h', "../outside/target", 0 } };
	const struct ent hardabs[] = { { "hl", 'h', "/etc/passwd", 0 } };
	const struct ent hardsym[] = { { "s", 'l', e->outside, 0777 }, { "hl", 'h', "s/target", 0 } };
	const struct ent wh_sym[] = { { "w", 'l', e->outside, 0777 }, { "w/.wh.target", 'f', "", 0 } };
	char target[128];
	int fd;

	snprintf(target, sizeof(target), "%s/target", e->outside);
	fd = open(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	close(fd);

	assert_int_equal(apply(e, dotdot, ELEMENTSOF(dotdot), false, NULL), -EPERM);
	assert_int_equal(apply(e, absolute, ELEMENTSOF(absolute), false, NULL), -EPERM);
	assert_int_equal(apply(e, symabs, ELEMENTSOF(symabs), false, NULL), -EPERM);
	assert_int_equal(apply(e, symrel, ELEMENTSOF(symrel), true, NULL), -EPERM);
	assert_int_equal(apply(e, hard, ELEMENTSOF(hard), false, NULL), -EPERM);
	assert_int_equal(apply(e, hardabs, ELEMENTSOF(hardabs), false, NULL), -EPERM);
	assert_int_equal(apply(e, hardsym, ELEMENTSOF(hardsym), false, NULL), -EPERM);
	assert_int_equal(apply(e, wh_sym, ELEMENTSOF(wh_sym), false, NULL), -EPERM);
	assert_false(exists_at(e->outside, "pwned"));
	assert_true(exists_at(e->outside, "target"));
	assert_false(exists_at(e->dir, "pwned"));
}

static void test_unpack_caps(void **state)
{
	struct env *e = *state;
	const struct ent big[] = { { "big", 'f', "0123456789abcdef", 0 } };
	struct unpack_limits lim;

	unpack_limits_default(&lim);
	lim.max_entry_bytes = 10;
	lim.max_total_bytes = 1000;
	lim.max_entries = 100;
	assert_int_equal(apply(e, big, 1, false, &lim), -EPERM);
	lim.max_entry_bytes = 100;
	lim.max_total_bytes = 10;
	assert_int_equal(apply(e, big, 1, false, &lim), -EPERM);
	lim.max_total_bytes = 100;
	lim.max_entries = 0;
	assert_int_equal(apply(e, big, 1, false, &lim), -EPERM);
	lim.max_entries = 10;
	assert_int_equal(apply(e, big, 1, false, &lim), 0); /* control */
}

static void test_unpack_whiteouts(void **state)
{
	struct env *e = *state;
	const struct ent l1[] = {
		{ "a/x", 'f', "1", 0 }, { "a/y", 'f', "1", 0 }, { "b/z", 'f', "1", 0 }, { "b/sub/deep", 'f', "1", 0 },
		{ "c", 'f', "file", 0 },
	};
	const struct ent l2[] = {
		{ "a/.wh.x", 'f', "", 0 },
		{ "b/kept", 'f', "written before the marker", 0 },
		{ "b/.wh..wh..opq", 'f', "", 0 },
		{ "b/new", 'f', "2", 0 },
		{ "c/", 'd', NULL, 0755 }, /* a dir replaces a file */
		{ "c/in", 'f', "3", 0 },
		{ ".wh.nothing-here", 'f', "", 0 },
	};
	assert_int_equal(apply(e, l1, ELEMENTSOF(l1), true, NULL), 0);
	assert_int_equal(apply(e, l2, ELEMENTSOF(l2), true, NULL), 0);
	assert_false(exists_at(e->root, "a/x"));
	assert_true(exists_at(e->root, "a/y"));
	assert_false(exists_at(e->root, "b/z"));
	assert_false(exists_at(e->root, "b/sub"));
	assert_true(exists_at(e->root, "b/kept"));
	assert_true(exists_at(e->root, "b/new"));
	assert_true(exists_at(e->root, "c/in"));
	assert_false(exists_at(e->root, "a/.wh.x"));
	assert_false(exists_at(e->root, "b/.wh..wh..opq"));
}

/* ---- hostile layers against each bound (limits lowered so the layers stay small) ---- */

/* @n entries named by @fmt with the index (and file content "x"); the caller frees. */
static struct ent *gen_files(size_t n, const char *fmt)
{
	struct ent *v = calloc(n, sizeof(*v));
	assert_non_null(v);
	for (size_t i = 0; i < n; i++) {
		char *p;
		assert_true(asprintf(&p, fmt, i) > 0);
		v[i] = (struct ent){ p, 'f', "x", 0644 };
	}
	return v;
}

static void free_ents(struct ent *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)v[i].path);
	free(v);
}

static void limits_small(struct unpack_limits *lim)
{
	unpack_limits_default(lim);
	lim->max_entries = 1000;
	lim->max_hardlinks = 3;
	lim->max_pathset_bytes = 64 << 10;
	lim->max_path_bytes = 100;
	lim->max_depth = 8;
	/* libarchive's pax writer spells each xattr twice (LIBARCHIVE.xattr. and SCHILY.xattr.) and
	 * its reader keeps both records: 2 xattrs are 4 records (measured) */
	lim->max_xattrs = 4;
}

static void test_bound_entries(void **state)
{
	struct env *e = *state;
	struct unpack_limits lim;
	struct ent *v = gen_files(1001, "f%05zu");

	limits_small(&lim);
	assert_int_equal(apply(e, v, 1001, true, &lim), -EPERM); /* one over */
	assert_false(exists_at(e->root, "f01000"));
	assert_int_equal(apply(e, v, 1000, true, &lim), 0); /* control: exactly at the bound */
	assert_true(exists_at(e->root, "f00999"));
	free_ents(v, 1001);
}

static void test_bound_path_length(void **state)
{
	struct env *e = *state;
	struct unpack_limits lim;
	char longname[102], target[102];
	const struct ent over[] = { { longname, 'f', "x", 0644 } };
	const struct ent ok[] = { { longname, 'f', "x", 0644 } };
	const struct ent sym[] = { { "s", 'l', target, 0777 } };
	const struct ent hard[] = { { "t", 'f', "x", 0644 }, { "h", 'h', target, 0 } };

	limits_small(&lim);
	memset(longname, 'n', 101);
	longname[101] = 0;
	assert_int_equal(apply(e, over, 1, false, &lim), -EPERM);
	longname[100] = 0;
	assert_int_equal(apply(e, ok, 1, false, &lim), 0); /* control: 100 bytes */
	/* link targets: the same bound */
	memset(target, 't', 101);
	target[101] = 0;
	assert_int_equal(apply(e, sym, 1, false, &lim), -EPERM);
	assert_int_equal(apply(e, hard, 2, false, &lim), -EPERM);
	assert_false(exists_at(e->root, "s"));
	target[1] = 0; /* "t" */
	assert_int_equal(apply(e, sym, 1, false, &lim), 0);
	assert_int_equal(apply(e, hard, 2, false, &lim), 0);
	assert_true(exists_at(e->root, "h"));
}

static void test_bound_path_length_default(void **state)
{
	/* The default bound is PATH_MAX itself: a 5000-byte pax name is refused, 4095 bytes
	 * (201-byte components, under NAME_MAX) unpack. */
	struct env *e = *state;
	char *name = malloc(5001);
	const struct ent l[] = { { name, 'f', "x", 0644 } };

	for (int i = 0; i < 5000; i++)
		name[i] = (i % 202 == 201) ? '/' : 'a';
	name[5000] = 0;
	assert_int_equal(apply(e, l, 1, false, NULL), -EPERM);
	name[4095] = 0;
	if (name[4094] == '/')
		name[4094] = 'a';
	assert_int_equal(apply(e, l, 1, false, NULL), 0);
	name[201] = 0;
	assert_true(exists_at(e->root, name));
	free(name);
}

static void test_bound_depth(void **state)
{
	struct env *e = *state;
	struct unpack_limits lim;
	const struct ent deep[] = { { "1/2/3/4/5/6/7/8/9", 'f', "x", 0644 } };
	const struct ent ok[] = { { "1/2/3/4/5/6/7/8", 'f', "x", 0644 } };
	/* a symlinked directory makes a short name lie deep: l/x is really level 8, l/x/y 9 */
	const struct ent viasym[] = { { "d/2/3/4/5/6/7/", 'd', NULL, 0755 }, { "l", 'l', "d/2/3/4/5/6/7", 0777 },
				      { "l/x/y", 'f', "x", 0644 } };
	const struct ent viasym_ok[] = { { "l/x", 'f', "x", 0644 } };

	limits_small(&lim);
	assert_int_equal(apply(e, deep, 1, false, &lim), -EPERM);
	assert_false(exists_at(e->root, "1/2/3/4/5/6/7/8/9"));
	assert_int_equal(apply(e, ok, 1, false, &lim), 0);
	assert_int_equal(apply(e, viasym, 3, false, &lim), -EPERM);
	assert_false(exists_at(e->root, "d/2/3/4/5/6/7/x/y"));
	assert_int_equal(apply(e, viasym_ok, 1, false, &lim), 0);
	assert_true(exists_at(e->root, "d/2/3/4/5/6/7/x"));
}

static void test_bound_remove_depth(void **state)
{
	/* Trees are bounded when unpack makes them; removal has its own wall for anything else
	 * (here a tree made directly on disk, 20 levels). */
	struct env *e = *state;
	struct unpack_limits lim;
	const struct ent wh[] = { { ".wh.t", 'f', "", 0644 } };
	char p[256];
	size_t n = (size_t)snprintf(p, sizeof(p), "%s/t", e->root);

	assert_int_equal(mkdir(p, 0755), 0);
	for (int i = 0; i < 20; i++) {
		n += (size_t)snprintf(p + n, sizeof(p) - n, "/d");
		assert_int_equal(mkdir(p, 0755), 0);
	}
	limits_small(&lim);
	assert_int_equal(apply(e, wh, 1, false, &lim), -EPERM);
	assert_true(exists_at(e->root, "t/d"));
	lim.max_depth = 32;
	assert_int_equal(apply(e, wh, 1, false, &lim), 0); /* control */
	assert_false(exists_at(e->root, "t"));
}

static void test_bound_hardlinks(void **state)
{
	struct env *e = *state;
	struct unpack_limits lim;
	const struct ent l[] = { { "t", 'f', "x", 0644 }, { "h1", 'h', "t", 0 }, { "h2", 'h', "t", 0 },
				 { "h3", 'h', "t", 0 }, { "h4", 'h', "t", 0 } };

	limits_small(&lim);
	assert_int_equal(apply(e, l, 5, false, &lim), -EPERM);
	assert_false(exists_at(e->root, "h4"));
	assert_int_equal(apply(e, l, 4, false, &lim), 0); /* control: three */
	assert_true(exists_at(e->root, "h3"));
}

static void test_bound_pathset(void **state)
{
	/* 64 KiB of path set: 500 names of 80 bytes fit (8 KiB of slots + 500 * 97 bytes), 1000
	 * do not (16 KiB of slots + 97 KiB). */
	struct env *e = *state;
	struct unpack_limits lim;
	struct ent *v = gen_files(1000, "%075zu.txt");

	limits_small(&lim);
	assert_int_equal(apply(e, v, 1000, true, &lim), -EPERM);
	assert_int_equal(apply(e, v, 500, true, &lim), 0); /* control */
	free_ents(v, 1000);
}

static void test_bound_xattrs(void **state)
{
	struct env *e = *state;
	struct unpack_limits lim;
	const struct ent over[] = { { "x3", 'X', "3", 0644 } };
	const struct ent ok[] = { { "x2", 'X', "2", 0644 } };

	limits_small(&lim);
	assert_int_equal(apply(e, over, 1, false, &lim), -EPERM);
	assert_false(exists_at(e->root, "x3"));
	assert_int_equal(apply(e, ok, 1, false, &lim), 0);
	assert_true(exists_at(e->root, "x2"));
}


/* ---- streamed layers (unpack_stream_*): the same result as from a file, fed in odd pieces ---- */

/* unpack_judge_layer() (the fuzz target's way in) refuses, in memory, what unpack_layer() refuses
 * for the entry itself, takes what it takes with the same counts, and leaves what only the tree
 * can tell (a parent reached through a symlink) to the tree. */
static int judge(struct env *e, const struct ent *ents, size_t n, bool gzip, const struct unpack_limits *lim,
		 struct unpack_stats *st)
{
	struct unpack_limits def;
	_cleanup_free_ char *buf = NULL;
	size_t len;

	if (!lim) {
		unpack_limits_default(&def);
		lim = &def;
	}
	make_layer(e->layer, ents, n, gzip);
	assert_int_equal(read_file_at(AT_FDCWD, e->layer, 1 << 24, &buf, &len), 0);
	*st = (struct unpack_stats){ 0 };
	return unpack_judge_layer(buf, len, "test layer", lim, st);
}

static void test_judge_agrees(void **state)
{
	struct env *e = *state;
	const struct ent ok[] = {
		{ "./", 'd', NULL, 0755 },       { "bin/", 'd', NULL, 0755 },    { "bin/su", 'f', "#!x", 04755 },
		{ "bin/sh", 'l', "su", 0777 },   { "bin/su2", 'h', "bin/su", 0 }, { "dev/null", 'c', NULL, 0666 },
		{ "a/.wh.b", 'f', "", 0 },       { "a/.wh..wh..opq", 'f', "", 0 },
	};
	const struct ent dotdot[] = { { "../outside/pwned", 'f', "x", 0 } };
	const struct ent absolute[] = { { "/tmp/pwned", 'f', "x", 0 } };
	const struct ent hard[] = { { "hl", 'h', "../outside/target", 0 } };
	const struct ent unknown_ok[] = { { "esc", 'l', e->outside, 0777 }, { "esc/pwned", 'f', "x", 0 } };
	struct unpack_stats js, st = { 0 };
	struct unpack_limits lim;
	struct ent *v = gen_files(1001, "f%05zu");
	int fd;

	assert_int_equal(judge(e, ok, ELEMENTSOF(ok), true, NULL, &js), 0);
	make_layer(e->layer, ok, ELEMENTSOF(ok), true);
	fd = open(e->layer, O_RDONLY | O_CLOEXEC);
	unpack_limits_default(&lim);
	assert_int_equal(unpack_layer(e->rootfd, fd, "test layer", NULL, &lim, &st), 0);
	close(fd);
	assert_int_equal(js.entries, st.entries);
	assert_int_equal(js.files, st.files);
	assert_int_equal(js.dirs, st.dirs);
	assert_int_equal(js.symlinks, st.symlinks);
	assert_int_equal(js.hardlinks, st.hardlinks);
	assert_int_equal(js.whiteouts, st.whiteouts);
	assert_int_equal(js.devices_skipped, st.devices_skipped);
	assert_int_equal(js.bytes, st.bytes);

	assert_int_equal(judge(e, dotdot, ELEMENTSOF(dotdot), false, NULL, &js), -EPERM);
	assert_int_equal(judge(e, absolute, ELEMENTSOF(absolute), false, NULL, &js), -EPERM);
	assert_int_equal(judge(e, hard, ELEMENTSOF(hard), false, NULL, &js), -EPERM);
	/* the symlinked parent is the tree's to refuse */
	assert_int_equal(judge(e, unknown_ok, ELEMENTSOF(unknown_ok), false, NULL, &js), 0);
	assert_int_equal(apply(e, unknown_ok, ELEMENTSOF(unknown_ok), false, NULL), -EPERM);
	/* a bound: one over is refused, exactly at it is taken */
	limits_small(&lim);
	assert_int_equal(judge(e, v, 1001, true, &lim, &js), -EPERM);
	assert_int_equal(judge(e, v, 1000, true, &lim, &js), 0);
	assert_int_equal(js.files, 1000);
	free_ents(v, 1001);
	/* nothing was written by the judge */
	assert_false(exists_at(e->outside, "pwned"));
	assert_false(exists_at(e->root, "f00000"));
}

static const struct ent stream_layer[] = {
	{ "./", 'd', NULL, 0755 },
	{ "bin/", 'd', NULL, 0755 },
	{ "bin/tool", 'f', "#!/bin/sh\necho streamed\n", 0755 },
	{ "bin/link", 'l', "tool", 0777 },
	{ "bin/hard", 'h', "bin/tool", 0 },
	{ "etc/ro", 'f', "read-only", 0444 },
	{ "etc/rw", 'f', "group and others write: more than a usual umask keeps", 0666 },
	{ "etc/.wh.gone", 'f', "", 0644 },
	/* directories: made with their mode when the umask keeps it, else chmodded, and an entry
	 * for a directory that exists already sets its mode too */
	{ "var/", 'd', NULL, 0775 },
	{ "tmp/", 'd', NULL, 01777 },
	{ "priv/", 'd', NULL, 0700 },
	{ "bin/", 'd', NULL, 0750 },
};

static char *read_all(const char *file, size_t *len)
{
	char *buf = NULL;
	assert_int_equal(read_file_at(AT_FDCWD, file, 1 << 20, &buf, len), 0);
	return buf;
}

/* Feeds @len bytes of @buf in pieces of 1, 7, 4093, 1 MiB, ... bytes, checked against @diff_id
 * when non-NULL; returns finish()'s code. */
static int feed_checked(struct env *e, const char *buf, size_t len, size_t stop_at, int err, const char *diff_id)
{
	static const size_t step[] = { 1, 7, 4093, 1 << 20, 3 };
	struct unpack_limits lim;
	struct unpack_stats st = { 0 };
	struct unpack_stream *u;
	size_t off = 0;

	unpack_limits_default(&lim);
	assert_int_equal(unpack_stream_begin(e->rootfd, "stream layer", diff_id, &lim, &st, &u), 0);
	for (size_t i = 0; off < len && off < stop_at; i++) {
		size_t k = step[i % ELEMENTSOF(step)];
		if (k > len - off)
			k = len - off;
		(void)unpack_stream_write(u, buf + off, k);
		off += k;
	}
	return unpack_stream_finish(u, err);
}

static int feed(struct env *e, const char *buf, size_t len, size_t stop_at, int err)
{
	return feed_checked(e, buf, len, stop_at, err, NULL);
}

static int feed_id(struct env *e, const char *buf, size_t len, const char *diff_id)
{
	return feed_checked(e, buf, len, SIZE_MAX, 0, diff_id);
}

static void test_stream_equals_file(void **state)
{
	struct env *e = *state;
	_cleanup_free_ char *buf = NULL;
	size_t len;

	make_layer(e->layer, stream_layer, ELEMENTSOF(stream_layer), true);
	buf = read_all(e->layer, &len);
	assert_int_equal(feed(e, buf, len, SIZE_MAX, 0), 0);
	assert_int_equal(mode_at(e->root, "bin/tool") & 07777, 0755);
	assert_int_equal(mode_at(e->root, "etc/ro") & 07777, 0444);
	assert_int_equal(mode_at(e->root, "etc/rw") & 07777, 0666); /* the mode, not the umask's */
	assert_int_equal(mode_at(e->root, "var") & 07777, 0775);
	assert_int_equal(mode_at(e->root, "tmp") & 07777, 01777);
	assert_int_equal(mode_at(e->root, "priv") & 07777, 0700);
	assert_int_equal(mode_at(e->root, "bin") & 07777, 0750);
	assert_true(S_ISLNK(mode_at(e->root, "bin/link")));
	assert_true(exists_at(e->root, "bin/hard"));
	assert_false(exists_at(e->root, "etc/gone"));
	{
		_cleanup_free_ char *got = NULL;
		char p[128];
		snprintf(p, sizeof(p), "%s/bin/tool", e->root);
		got = read_all(p, NULL);
		assert_string_equal(got, "#!/bin/sh\necho streamed\n");
	}
}

/* Bytes after the end of the tar stream (registry padding) are taken and dropped. */
static void test_stream_trailing_bytes(void **state)
{
	struct env *e = *state;
	_cleanup_free_ char *buf = NULL, *more = NULL;
	size_t len;

	make_layer(e->layer, stream_layer, ELEMENTSOF(stream_layer), false);
	buf = read_all(e->layer, &len);
	more = calloc(1, len + (3 << 20));
	memcpy(more, buf, len);
	assert_int_equal(feed(e, more, len + (3 << 20), SIZE_MAX, 0), 0);
	assert_true(exists_at(e->root, "bin/tool"));
}

/* The producer fails half-way: its code comes back, the stages stop (no hang). Control: the
 * whole layer (above). */
static void test_stream_producer_abort(void **state)
{
	struct env *e = *state;
	_cleanup_free_ char *buf = NULL;
	size_t len;

	make_layer(e->layer, stream_layer, ELEMENTSOF(stream_layer), true);
	buf = read_all(e->layer, &len);
	assert_int_equal(feed(e, buf, len, len / 2, -ECONNRESET), -ECONNRESET);
}

/* A corrupt gzip stream fails the unpack (the decompression says so), and the producer's
 * writes keep returning (it can still hash the rest); a truncated one fails too. */
static void test_stream_corrupt(void **state)
{
	struct env *e = *state;
	_cleanup_free_ char *buf = NULL;
	size_t len;

	make_layer(e->layer, stream_layer, ELEMENTSOF(stream_layer), true);
	buf = read_all(e->layer, &len);
	for (size_t i = 10; i < len - 8; i++)
		buf[i] ^= 0x5a;
	assert_true(feed(e, buf, len, SIZE_MAX, 0) < 0);
	free(buf);
	buf = read_all(e->layer, &len);
	assert_true(feed(e, buf, len / 2, SIZE_MAX, 0) < 0);
}

/* "sha256:<hex>" of @len bytes of @buf */
static void sha256_id(const void *buf, size_t len, char out[7 + 64 + 1])
{
	unsigned char md[32];
	unsigned int n = 0;
	EVP_MD_CTX *c;

	assert_int_equal(dl_load(&dl_libcrypto), 0);
	c = EVP_MD_CTX_new();
	assert_non_null(c);
	assert_int_equal(EVP_DigestInit_ex(c, EVP_sha256(), NULL), 1);
	assert_int_equal(EVP_DigestUpdate(c, buf, len), 1);
	assert_int_equal(EVP_DigestFinal_ex(c, md, &n), 1);
	EVP_MD_CTX_free(c);
	memcpy(out, "sha256:", 7);
	hex_encode(md, 32, out + 7);
}

/* The diff_id is checked against the uncompressed stream, padding after the tar's end included:
 * the plain tar's hash passes for the plain and the gzip'd layer (control), any other fails
 * with -EBADMSG, streamed or from a file. */
static void test_diff_id(void **state)
{
	struct env *e = *state;
	_cleanup_free_ char *plain = NULL, *gz = NULL, *padded = NULL;
	char id[72], padded_id[72], wrong[72];
	struct unpack_limits lim;
	struct unpack_stats st = { 0 };
	size_t plen, glen;
	int fd;

	make_layer(e->layer, stream_layer, ELEMENTSOF(stream_layer), false);
	plain = read_all(e->layer, &plen);
	sha256_id(plain, plen, id);
	padded = calloc(1, plen + 8192);
	assert_non_null(padded);
	memcpy(padded, plain, plen);
	sha256_id(padded, plen + 8192, padded_id);
	snprintf(wrong, sizeof(wrong), "sha256:%064d", 0);
	make_layer(e->layer, stream_layer, ELEMENTSOF(stream_layer), true);
	gz = read_all(e->layer, &glen);

	unpack_limits_default(&lim);
	fd = open(e->layer, O_RDONLY | O_CLOEXEC); /* the gzip'd one */
	assert_int_equal(unpack_layer(e->rootfd, fd, "gz layer", id, &lim, &st), 0);
	close(fd);
	fd = open(e->layer, O_RDONLY | O_CLOEXEC);
	assert_int_equal(unpack_layer(e->rootfd, fd, "gz layer", wrong, &lim, &st), -EBADMSG);
	close(fd);
	assert_int_equal(feed_id(e, plain, plen, id), 0);
	assert_int_equal(feed_id(e, plain, plen, wrong), -EBADMSG);
	assert_int_equal(feed_id(e, gz, glen, id), 0);
	/* the padding counts: the padded stream's own hash passes, the bare tar's does not */
	assert_int_equal(feed_id(e, padded, plen + 8192, padded_id), 0);
	assert_int_equal(feed_id(e, padded, plen + 8192, id), -EBADMSG);
}

/* A refusal in a streamed layer is the same refusal. */
static void test_stream_refusal(void **state)
{
	struct env *e = *state;
	const struct ent bad[] = { { "../escape", 'f', "x", 0644 } };
	_cleanup_free_ char *buf = NULL;
	size_t len;

	make_layer(e->layer, bad, ELEMENTSOF(bad), true);
	buf = read_all(e->layer, &len);
	assert_int_equal(feed(e, buf, len, SIZE_MAX, 0), -EPERM);
	assert_false(exists_at(e->dir, "escape"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normalize),
		cmocka_unit_test(test_whiteout),
		cmocka_unit_test_setup_teardown(test_unpack_basic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unpack_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unpack_caps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unpack_whiteouts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bound_entries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bound_path_length, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bound_path_length_default, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bound_depth, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bound_remove_depth, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bound_hardlinks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bound_pathset, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bound_xattrs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stream_equals_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stream_trailing_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stream_producer_abort, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stream_corrupt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stream_refusal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_diff_id, setup, teardown),
		cmocka_unit_test_setup_teardown(test_judge_agrees, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
