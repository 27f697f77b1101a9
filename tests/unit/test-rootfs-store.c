// SPDX-License-Identifier: GPL-2.0-or-later
/* test-rootfs-store.c — store_rootfs_ensure_from(): layers missing from the store come from a
 * source while they unpack (streamed, and the later ones through the source's second
 * "connection"), a digest mismatch at the end leaves nothing, and a download that breaks after
 * the unpack had bytes is redone without streaming. The source serves crafted layers from memory
 * in odd-sized pieces. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <cmocka.h>

#include "rootfs/store.h"
#include "util/util.h"

#define N_LAYERS 3

struct layer {
	char *data;
	size_t len;
	char *digest;
};

struct fixture {
	char dir[64];
	struct store *s;
	struct layer l[N_LAYERS];
	struct oci_manifest m;
	struct oci_descriptor d[N_LAYERS];
	int fetched[N_LAYERS];  /* calls per layer, both paths */
	int ahead_calls;
	int corrupt;            /* layer whose bytes are served with one bit flipped, or -1 */
	int break_once;         /* layer whose first transfer fails mid-way with -EAGAIN, or -1 */
};

/* A gzip tar (in @tmp, read back into memory) of one file @name holding its name, plus a
 * whiteout entry when @whiteout is given. */
static void make_layer(struct layer *l, const char *tmp, const char *name, const char *whiteout)
{
	struct archive *a = archive_write_new();

	archive_write_set_format_pax_restricted(a);
	archive_write_add_filter_gzip(a);
	assert_int_equal(archive_write_open_filename(a, tmp), ARCHIVE_OK);
	for (int k = 0; k < 2; k++) {
		const char *n = k == 0 ? name : whiteout;
		struct archive_entry *e;
		if (!n)
			continue;
		e = archive_entry_new();
		archive_entry_set_pathname(e, n);
		archive_entry_set_filetype(e, AE_IFREG);
		archive_entry_set_perm(e, 0644);
		archive_entry_set_size(e, k == 0 ? (la_int64_t)strlen(name) : 0);
		assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
		if (k == 0)
			archive_write_data(a, name, strlen(name));
		archive_entry_free(e);
	}
	archive_write_close(a);
	archive_write_free(a);
	assert_int_equal(read_file_at(AT_FDCWD, tmp, 1 << 20, &l->data, &l->len), 0);
}

static int serve(struct fixture *f, const struct oci_descriptor *d, struct store_blob_writer *w, bool ahead)
{
	static const size_t step[] = { 1, 13, 4096, 100000, 7 };

	for (int i = 0; i < N_LAYERS; i++) {
		size_t off = 0;
		if (strcmp(d->digest, f->l[i].digest) != 0)
			continue;
		__atomic_add_fetch(&f->fetched[i], 1, __ATOMIC_SEQ_CST);
		if (ahead)
			__atomic_add_fetch(&f->ahead_calls, 1, __ATOMIC_SEQ_CST);
		for (size_t k = 0; off < f->l[i].len; k++) {
			size_t n = step[k % 5] < f->l[i].len - off ? step[k % 5] : f->l[i].len - off;
			char buf[100000];
			memcpy(buf, f->l[i].data + off, n);
			if (i == f->corrupt && off <= f->l[i].len - 1 && f->l[i].len - 1 < off + n)
				buf[f->l[i].len - 1 - off] ^= 1; /* the last byte: after the tar's end */
			if (store_blob_write(w, buf, n) < 0)
				return -EIO;
			off += n;
			if (off > f->l[i].len / 2 && __atomic_load_n(&f->break_once, __ATOMIC_SEQ_CST) == i &&
			    __atomic_exchange_n(&f->break_once, -1, __ATOMIC_SEQ_CST) == i)
				return -EAGAIN; /* what the registry client says when it cannot rewind */
		}
		return 0;
	}
	return -ENOENT;
}

static int fetch_main(void *ud, const struct oci_descriptor *d, struct store_blob_writer *w)
{
	return serve(ud, d, w, false);
}

static int fetch_ahead(void *ud, const struct oci_descriptor *d, struct store_blob_writer *w)
{
	return serve(ud, d, w, true);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	static const char *const names[N_LAYERS] = { "base", "mid", "top" };
	static const char *const whiteouts[N_LAYERS] = { NULL, ".wh.base", NULL };

	strcpy(f->dir, "/tmp/aisb-store-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	assert_int_equal(store_open(f->dir, &f->s), 0);
	for (int i = 0; i < N_LAYERS; i++) {
		char rel[128], tmp[96];
		snprintf(tmp, sizeof(tmp), "%s/layer.tgz", f->dir);
		make_layer(&f->l[i], tmp, names[i], whiteouts[i]);
		unlink(tmp);
		/* learn the digest through the store, then take the blob away again: "missing" */
		assert_int_equal(store_blob_put(f->s, f->l[i].data, f->l[i].len, &f->l[i].digest), 0);
		snprintf(rel, sizeof(rel), "blobs/sha256/%s", f->l[i].digest + 7);
		assert_int_equal(unlinkat(f->s->rootfd, rel, 0), 0);
		f->d[i] = (struct oci_descriptor){ .digest = f->l[i].digest, .size = (int64_t)f->l[i].len };
	}
	f->m = (struct oci_manifest){ .layers = f->d, .n_layers = N_LAYERS };
	f->corrupt = f->break_once = -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	for (int i = 0; i < N_LAYERS; i++) {
		free(f->l[i].data);
		free(f->l[i].digest);
	}
	store_free(f->s);
	rm_rf(f->dir);
	free(f);
	return 0;
}

static bool empty_dir(struct fixture *f, const char *sub)
{
	char p[128];
	struct dirent *de;
	bool empty = true;
	DIR *d;

	snprintf(p, sizeof(p), "%s/%s", f->dir, sub);
	d = opendir(p);
	assert_non_null(d);
	while ((de = readdir(d)))
		empty &= de->d_name[0] == '.';
	closedir(d);
	return empty;
}

static int ensure(struct fixture *f, char **path)
{
	struct unpack_limits lim;
	struct store_layer_source src = { .fetch = fetch_main, .fetch_ahead = fetch_ahead, .ud = f };

	unpack_limits_default(&lim);
	return store_rootfs_ensure_from(f->s, "sha256:0000000000000000000000000000000000000000000000000000000000000001",
					&f->m, &lim, &src, path, NULL);
}

static void test_layers_from_source(void **state)
{
	struct fixture *f = *state;
	_cleanup_free_ char *path = NULL, *p = NULL;
	struct stat st;

	assert_int_equal(ensure(f, &path), 0);
	assert_non_null(path);
	/* layer 2 whited out layer 1's file; layers 2 and 3 added theirs */
	assert_true(asprintf(&p, "%s/base", path) > 0);
	assert_int_not_equal(stat(p, &st), 0);
	free(p);
	assert_true(asprintf(&p, "%s/top", path) > 0);
	assert_int_equal(stat(p, &st), 0);
	for (int i = 0; i < N_LAYERS; i++) {
		assert_int_equal(f->fetched[i], 1); /* once each, by one path or the other */
		assert_true(store_has_blob(f->s, f->l[i].digest));
	}
	assert_true(empty_dir(f, "tmp"));
}

/* The top layer's last byte is wrong: its tar is complete before the digest fails, and still
 * nothing is left (no tree, no tmp/ entries, not that blob). Control: the test above. */
static void test_digest_mismatch_leaves_nothing(void **state)
{
	struct fixture *f = *state;
	_cleanup_free_ char *path = NULL;

	f->corrupt = N_LAYERS - 1;
	assert_int_equal(ensure(f, &path), -EBADMSG);
	assert_true(empty_dir(f, "rootfs"));
	assert_true(empty_dir(f, "tmp"));
	assert_false(store_has_blob(f->s, f->l[N_LAYERS - 1].digest));
	assert_int_equal(f->fetched[N_LAYERS - 1], 1); /* a blob that did not verify: not fetched again */
}

/* The first layer's stream breaks half-way (it cannot be rewound into the unpack): the tree is
 * built again with that layer downloaded first, and the result is complete. */
static void test_broken_stream_is_redone(void **state)
{
	struct fixture *f = *state;
	_cleanup_free_ char *path = NULL, *p = NULL;
	struct stat st;

	f->break_once = 0;
	assert_int_equal(ensure(f, &path), 0);
	assert_int_equal(f->fetched[0], 2);
	assert_true(asprintf(&p, "%s/top", path) > 0);
	assert_int_equal(stat(p, &st), 0);
	assert_true(empty_dir(f, "tmp"));
}


/* A build's tree: the base's tree linked in by a child (same inodes, directories anew), named by
 * store_tree_commit() for its manifest; aborted or refused, it leaves nothing in tmp/. */
static void test_tree_linked_in_child(void **state)
{
	static const char id[] = "1111111111111111111111111111111111111111111111111111111111111111";
	struct fixture *f = *state;
	struct unpack_limits lim;
	struct store_tree *t = NULL;
	_cleanup_free_ char *path = NULL;
	char p[256];
	struct stat a, b;

	unpack_limits_default(&lim);
	snprintf(p, sizeof(p), "%s/rootfs/%s/usr/lib", f->dir, id);
	assert_int_equal(mkdir_p(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/rootfs/%s/usr/lib/liba", f->dir, id);
	assert_int_equal(write_file_at(AT_FDCWD, p, "L\n", 2, 0644), 0);
	assert_int_equal(stat(p, &a), 0);
	snprintf(p, sizeof(p), "%s/rootfs/%s/lib", f->dir, id);
	assert_int_equal(symlink("usr/lib", p), 0);

	/* a base that is not in the store, or not an id: the caller unpacks instead */
	assert_int_equal(store_tree_begin(f->s, "2222222222222222222222222222222222222222222222222222222222222222", &lim,
					  true, &t), -EXDEV);
	assert_int_equal(store_tree_begin(f->s, "../x", &lim, true, &t), -EXDEV);
	/* aborted while (or after) the child links: nothing left */
	assert_int_equal(store_tree_begin(f->s, id, &lim, true, &t), 0);
	store_tree_abort(t);
	assert_true(empty_dir(f, "tmp"));

	assert_int_equal(store_tree_begin(f->s, id, &lim, true, &t), 0);
	assert_int_equal(store_tree_ready(t), 0);
	assert_int_equal(mkdirat(store_tree_fd(t), "new", 0755), 0);
	assert_int_equal(fstatat(store_tree_fd(t), "usr/lib/liba", &b, 0), 0);
	assert_int_equal(a.st_ino, b.st_ino); /* the base's file itself */
	assert_int_equal(fstatat(store_tree_fd(t), "usr/lib", &b, 0), 0);
	snprintf(p, sizeof(p), "%s/rootfs/%s/usr/lib", f->dir, id);
	assert_int_equal(stat(p, &a), 0);
	assert_int_not_equal(a.st_ino, b.st_ino); /* a directory of its own */
	assert_int_equal(fstatat(store_tree_fd(t), "lib", &b, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISLNK(b.st_mode));
	assert_int_equal(store_tree_commit(t, "sha256:0000000000000000000000000000000000000000000000000000000000000002",
					   &path), 0);
	snprintf(p, sizeof(p), "%s/new", path);
	assert_int_equal(stat(p, &b), 0);
	assert_true(empty_dir(f, "tmp"));
	/* the base is as it was */
	snprintf(p, sizeof(p), "%s/rootfs/%s/new", f->dir, id);
	assert_int_not_equal(stat(p, &b), 0);
}

/* The ids and file names that hash: the values of the formulas (sha256sum), so a change of
 * hashing code cannot move an existing store's trees or pins. */
static void test_hashed_names(void **state)
{
	struct fixture *f = *state;
	char id[65], name[301];
	const char *const names[] = { name, "." }; /* too long; a leading dot (11 bytes: it overflowed) */
	const char *const pin = "sha256:0000000000000000000000000000000000000000000000000000000000000002";
	const char *const files[] = {
		"refs/h-0d4e2ca9e9cbced7a7a5380eb29e1a3783b9b6d0db72de36a1051038e1c1fbc7.json",
		"refs/h-cdb4ee2aea69cc6a83331bbe96dc2caa9a299d21329efb0336fc02a82e1839a8.json",
	};

	/* printf 'sha256:0...01\naisb-unpack-1' | sha256sum */
	assert_int_equal(store_rootfs_id("sha256:0000000000000000000000000000000000000000000000000000000000000001", id), 0);
	assert_string_equal(id, "cdcb1895e3abef6d03921649688c255f5301531eb313d13e4cde2b1a99bcee83");
	memset(name, 'x', 300);
	name[300] = 0;
	for (size_t i = 0; i < 2; i++) {
		struct store_ref r = { .name = (char *)names[i], .digest = (char *)pin, .size = 1 }, back;
		struct stat st;

		assert_int_equal(store_ref_write(f->s, &r), 0);
		assert_int_equal(fstatat(f->s->rootfd, files[i], &st, 0), 0);
		assert_int_equal(store_ref_read(f->s, names[i], &back), 0);
		assert_string_equal(back.name, names[i]);
		store_ref_done(&back);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_layers_from_source, setup, teardown),
		cmocka_unit_test_setup_teardown(test_digest_mismatch_leaves_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_broken_stream_is_redone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tree_linked_in_child, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hashed_names, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
