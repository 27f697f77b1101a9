// SPDX-License-Identifier: GPL-2.0-or-later
/* test-build-commit.c — image config and manifest of a build; commit into a real store */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build/commit.h"
#include "build/containerfile.h"
#include "build/layer.h"
#include "rootfs/image.h"
#include "rootfs/oci.h"
#include "util/log.h"
#include "util/util.h"

#define S(x) ((char *)(x))
#define LAYER_D "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

static const char base_config[] =
	"{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Env\":[\"PATH=/usr/bin:/bin\"],"
	"\"Cmd\":[\"bash\"],\"Labels\":{\"base.label\":\"kept\"},\"ExposedPorts\":{\"80/tcp\":{}}},"
	"\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:1111111111111111111111111111111111111111111111111111111111111111\"]},"
	"\"history\":[{\"created_by\":\"base\"}]}";
static const char base_manifest[] =
	"{\"schemaVersion\":2,\"mediaType\":\"application/vnd.docker.distribution.manifest.v2+json\","
	"\"config\":{\"mediaType\":\"application/vnd.docker.container.image.v1+json\",\"digest\":"
	"\"sha256:2222222222222222222222222222222222222222222222222222222222222222\",\"size\":10},"
	"\"layers\":[{\"mediaType\":\"application/vnd.docker.image.rootfs.diff.tar.gzip\",\"digest\":"
	"\"sha256:3333333333333333333333333333333333333333333333333333333333333333\",\"size\":99}]}";

static void recipe(const char *text, char *const *base_env, struct containerfile *cf, struct cf_recipe *rc)
{
	struct cf_error err;
	struct cf_base b = { .env = base_env };
	assert_int_equal(cf_parse(text, strlen(text), cf, &err), 0);
	assert_int_equal(cf_resolve(cf, NULL, &b, rc, &err), 0);
}

static void test_config(void **state)
{
	char *benv[] = { S("PATH=/usr/bin:/bin"), NULL };
	char *labels[] = { S("aisb.base-digest=sha256:x"), S("aisb.builder=native"), NULL };
	struct containerfile cf;
	struct cf_recipe rc;
	struct oci_image_config c;
	_cleanup_free_ char *out = NULL;
	const char *why;
	size_t len;

	recipe("FROM b\nENV PATH=/opt/bin:$PATH A=1\nWORKDIR /w\nUSER 1000\nLABEL mine=yes\n"
	       "ENTRYPOINT [\"/e\"]\n",
	       benv, &cf, &rc);
	struct build_commit_input in = { .base_config = base_config, .base_config_len = strlen(base_config),
					 .rc = &rc, .labels = labels, .created = "2026-11-30T00:00:00Z",
					 .layer_digest = LAYER_D, .layer_size = 1024 };
	assert_int_equal(build_config_json(&in, &out, &len, &why), 0);
	assert_int_equal(oci_config_parse(out, len, &c), 0);
	assert_string_equal(c.env[0], "PATH=/opt/bin:/usr/bin:/bin");
	assert_string_equal(c.env[1], "A=1");
	assert_string_equal(c.working_dir, "/w");
	assert_string_equal(c.user, "1000");
	assert_string_equal(c.entrypoint[0], "/e");
	assert_null(c.cmd); /* the base's CMD is reset by an ENTRYPOINT without a CMD */
	assert_int_equal(strv_length(c.diff_ids), 2);
	assert_string_equal(c.diff_ids[1], LAYER_D);
	assert_true(strv_contains(c.labels, "base.label=kept"));
	assert_true(strv_contains(c.labels, "mine=yes"));
	assert_true(strv_contains(c.labels, "aisb.builder=native"));
	assert_non_null(strstr(out, "\"ExposedPorts\"")); /* unknown fields survive */
	assert_non_null(strstr(out, "\"created_by\":\"base\""));
	assert_non_null(strstr(out, "one layer for the whole build"));
	oci_config_done(&c);
	cf_recipe_done(&rc);
	cf_done(&cf);
	free(out);
	out = NULL;

	/* CMD alone keeps nothing of the base's CMD; no base at all makes a skeleton */
	recipe("FROM b\nCMD [\"x\"]\n", NULL, &cf, &rc);
	in = (struct build_commit_input){ .rc = &rc, .created = "2026-11-30T00:00:00Z", .layer_digest = LAYER_D };
	assert_int_equal(build_config_json(&in, &out, &len, &why), 0);
	assert_int_equal(oci_config_parse(out, len, &c), 0);
	assert_string_equal(c.os, "linux");
	assert_string_equal(c.cmd[0], "x");
	assert_int_equal(strv_length(c.diff_ids), 1);
	oci_config_done(&c);
	free(out);
	out = NULL;

	/* a base config that is not an object */
	in.base_config = "[1]";
	in.base_config_len = 3;
	assert_int_equal(build_config_json(&in, &out, &len, &why), -EINVAL);
	assert_non_null(why);
	cf_recipe_done(&rc);
	cf_done(&cf);
}

static void test_manifest(void **state)
{
	struct containerfile cf;
	struct cf_recipe rc;
	struct oci_manifest m;
	_cleanup_free_ char *out = NULL;
	const char *why;
	size_t len;

	recipe("FROM b\n", NULL, &cf, &rc);
	struct build_commit_input in = { .base_manifest = base_manifest, .base_manifest_len = strlen(base_manifest),
					 .rc = &rc, .layer_digest = LAYER_D, .layer_size = 1024 };
	assert_int_equal(build_manifest_json(&in, "sha256:4444444444444444444444444444444444444444444444444444444444444444",
					     77, &out, &len, &why),
			 0);
	assert_int_equal(oci_manifest_parse(out, len, NULL, &m, &why), 0);
	assert_false(m.is_index);
	assert_string_equal(m.config.media_type, OCI_MT_CONFIG);
	assert_int_equal(m.config.size, 77);
	assert_int_equal(m.n_layers, 2);
	assert_string_equal(m.layers[0].digest, "sha256:3333333333333333333333333333333333333333333333333333333333333333");
	assert_string_equal(m.layers[1].media_type, LAYER_MEDIA_TYPE);
	assert_string_equal(m.layers[1].digest, LAYER_D);
	assert_int_equal(m.layers[1].size, 1024);
	assert_true(oci_layer_media_type_is_supported(m.layers[1].media_type));
	oci_manifest_done(&m);
	cf_recipe_done(&rc);
	cf_done(&cf);
}

/* A build committed on an empty base lands in a real store, its tree made from the upper while
 * the layer blob was written, pinned under its names; the same without a tree (unpacked from the
 * blob) gives the same image. */
static void test_commit_store(void **state)
{
	char dir[] = "/tmp/aisb-test-commit-XXXXXX";
	_cleanup_free_ char *upper = NULL, *storedir = NULL, *f = NULL, *rootfs = NULL, *got = NULL;
	char *names[] = { S("localhost/aisb-build:0123"), S("localhost/demo"), NULL };
	struct containerfile cf;
	struct cf_recipe rc;
	struct layer_result lr, lr2;
	struct store *s = NULL;
	struct store_tree *tree = NULL;
	struct store_ref pin = { 0 }, pin2 = { 0 }, pin3 = { 0 };
	struct oci_image_config c;
	struct unpack_limits lim;
	size_t len;
	int ufd;

	assert_non_null(mkdtemp(dir));
	upper = path_join(dir, "upper");
	storedir = path_join(dir, "store");
	assert_int_equal(mkdir_p(upper, 0755), 0);
	f = path_join(upper, "hello.txt");
	assert_int_equal(write_file_at(AT_FDCWD, f, "hi\n", 3, 0644), 0);
	ufd = open(upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	unpack_limits_default(&lim);
	assert_int_equal(store_open(storedir, &s), 0);
	assert_int_equal(store_tree_begin(s, NULL, &lim, false, &tree), 0);
	assert_int_equal(build_layer_store(s, ufd, tree, &lim, &lr), 0);
	assert_true(lr.tree_done);
	assert_true(store_has_blob(s, lr.digest)); /* the blob is named before any tree or pin */

	recipe("FROM b\nENV GREETING=hi\nCMD [\"cat\", \"/hello.txt\"]\n", NULL, &cf, &rc);
	struct build_commit_input in = { .rc = &rc, .created = "2026-11-30T00:00:00Z", .created_by = "test",
					 .layer_digest = lr.digest, .layer_size = lr.size, .tree = tree,
					 .tree_bytes = lr.sum.file_bytes };
	assert_int_equal(build_commit(s, &in, names, &pin), 0);
	assert_string_equal(pin.name, "localhost/aisb-build:0123");
	assert_int_equal(pin.size, 3);
	rootfs = store_rootfs_path(s, pin.rootfs_id);
	{
		_cleanup_free_ char *p = path_join(rootfs, "hello.txt");
		struct stat a, b;
		assert_int_equal(read_file_at(AT_FDCWD, p, 100, &got, &len), 0);
		assert_string_equal(got, "hi\n");
		/* the upper's own inode: linked, not written again */
		assert_int_equal(stat(p, &a), 0);
		assert_int_equal(stat(f, &b), 0);
		assert_int_equal(a.st_ino, b.st_ino);
	}
	{
		/* nothing left in tmp/: the tree and the blob were named */
		_cleanup_free_ char *tmp = path_join(storedir, "tmp");
		DIR *d = opendir(tmp);
		struct dirent *de;
		int n = 0;
		while ((de = readdir(d)))
			n += de->d_name[0] != '.';
		closedir(d);
		assert_int_equal(n, 0);
	}
	/* the second name is the same image, found as a user would type it */
	assert_int_equal(image_find_pin(s, "localhost/demo", &pin2), 0);
	assert_string_equal(pin2.digest, pin.digest);
	assert_int_equal(image_load_config(s, &pin2, &c), 0);
	assert_string_equal(c.cmd[0], "cat");
	assert_true(strv_contains(c.env, "GREETING=hi"));
	oci_config_done(&c);

	/* control: the same upper without a tree is the same layer and the same image, unpacked */
	assert_int_equal(build_layer_store(s, ufd, NULL, &lim, &lr2), 0);
	assert_string_equal(lr2.digest, lr.digest);
	assert_false(lr2.tree_done);
	{
		char *n3[] = { S("localhost/again"), NULL };
		struct build_commit_input in2 = in;
		in2.tree = NULL;
		assert_int_equal(build_commit(s, &in2, n3, &pin3), 0);
		assert_string_equal(pin3.digest, pin.digest);
		assert_string_equal(pin3.rootfs_id, pin.rootfs_id);
	}

	/* a layer that is not in the store is refused and pins nothing new */
	{
		struct build_commit_input bad = in;
		char *n2[] = { S("localhost/other"), NULL };
		struct store_ref none;
		bad.layer_digest = LAYER_D;
		bad.tree = NULL;
		assert_true(build_commit(s, &bad, n2, NULL) < 0);
		assert_int_equal(image_find_pin(s, "localhost/other", &none), -ENOENT);
	}
	store_ref_done(&pin);
	store_ref_done(&pin2);
	store_ref_done(&pin3);
	store_free(s);
	cf_recipe_done(&rc);
	cf_done(&cf);
	close(ufd);
	rm_rf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_manifest),
		cmocka_unit_test(test_commit_store),
	};
	log_set_quiet(true);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
