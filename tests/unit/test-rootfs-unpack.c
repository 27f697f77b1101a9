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

#include "rootfs/unpack.h"
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
	char type;           /* f d l h c */
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
	k = unpack_layer(e->rootfd, fd, "test layer", lim, &st);
	close(fd);
	return k;
}

static bool exists_at(const char *dir, const char *p)
{
	char buf[256];
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
	struct unpack_limits lim = { .max_entry_bytes = 10, .max_total_bytes = 1000, .max_entries = 100 };
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normalize),
		cmocka_unit_test(test_whiteout),
		cmocka_unit_test_setup_teardown(test_unpack_basic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unpack_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unpack_caps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unpack_whiteouts, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
