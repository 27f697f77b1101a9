// SPDX-License-Identifier: GPL-2.0-or-later
/* test-build-context.c — context scan and COPY selection, and what changes the build tag */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build/containerfile.h"
#include "build/context.h"
#include "util/log.h"
#include "util/util.h"

#define S(x) ((char *)(x))

static char dir[] = "/tmp/aisb-test-ctx-XXXXXX";
static int dfd = -1;

static void put(const char *path, const char *content, mode_t mode)
{
	_cleanup_free_ char *d = strdup(path);
	char *slash = strrchr(d, '/');
	if (slash) {
		_cleanup_free_ char *full = NULL;
		*slash = 0;
		full = path_join(dir, d);
		assert_int_equal(mkdir_p(full, 0755), 0);
	}
	unlinkat(dfd, path, 0);
	assert_int_equal(write_file_at(dfd, path, content, strlen(content), mode), 0);
	assert_int_equal(fchmodat(dfd, path, mode, 0), 0);
}

static int setup(void **state)
{
	assert_non_null(mkdtemp(dir));
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	put("Containerfile", "FROM x\n", 0644);
	put("app/main.c", "int main(void){return 0;}\n", 0644);
	put("app/run.sh", "#!/bin/sh\n", 0755);
	put("app/sub/deep.txt", "deep\n", 0644);
	put("notes.txt", "notes\n", 0644);
	put("a.log", "log\n", 0644);
	put("secrets/key", "KEY\n", 0600);
	put("secrets/public.pem", "PEM\n", 0644);
	put("node_modules/m/index.js", "js\n", 0644);
	assert_int_equal(symlinkat("app/main.c", dfd, "link"), 0);
	put(".containerignore", "node_modules\n**/*.log\nsecrets\n!secrets/public.pem\n", 0644);
	return 0;
}

static int teardown(void **state)
{
	close(dfd);
	rm_rf(dir);
	return 0;
}

static ssize_t find(const struct build_context *c, const char *path)
{
	for (size_t i = 0; i < c->n; i++)
		if (streq(c->e[i].path, path))
			return (ssize_t)i;
	return -1;
}

static void test_scan(void **state)
{
	struct ignore ig;
	struct build_context c;

	assert_int_equal(context_load_ignore(dfd, &ig), 0);
	assert_int_equal(ig.n, 4);
	assert_int_equal(context_scan(dfd, &ig, &c), 0);
	assert_true(find(&c, "app") >= 0);
	assert_true(find(&c, "app/sub/deep.txt") >= 0);
	assert_true(find(&c, "notes.txt") >= 0);
	assert_true(find(&c, "a.log") < 0);
	assert_true(find(&c, "node_modules") < 0);
	assert_true(find(&c, "node_modules/m/index.js") < 0);
	assert_true(find(&c, "secrets/key") < 0);
	assert_true(find(&c, "secrets/public.pem") >= 0); /* the exception below an excluded dir */
	assert_true(find(&c, "secrets") >= 0);            /* ...keeps its directory */
	assert_true(S_ISLNK(c.e[find(&c, "link")].mode));
	assert_string_equal(c.e[find(&c, "link")].link, "app/main.c");
	for (size_t i = 1; i < c.n; i++)
		assert_true(strcmp(c.e[i - 1].path, c.e[i].path) < 0);
	context_done(&c);
	ignore_done(&ig);
}

static void test_select(void **state)
{
	struct ignore ig;
	struct build_context c;
	bool *take;
	const char *missing = NULL;
	char *s1[] = { S("app"), NULL };
	char *s2[] = { S("*.txt"), S("link"), NULL };
	char *s3[] = { S("nope"), NULL };
	char *s4[] = { S("a.log"), NULL }; /* excluded: as if absent */
	char *s5[] = { S("."), NULL };
	char *s6[] = { S("app/*/deep.txt"), NULL };

	assert_int_equal(context_load_ignore(dfd, &ig), 0);
	assert_int_equal(context_scan(dfd, &ig, &c), 0);
	take = calloc(c.n, sizeof(bool));

	assert_int_equal(context_select(&c, s1, take, &missing), 0);
	assert_true(take[find(&c, "app")]);
	assert_true(take[find(&c, "app/sub/deep.txt")]);
	assert_false(take[find(&c, "notes.txt")]);

	memset(take, 0, c.n);
	assert_int_equal(context_select(&c, s2, take, &missing), 0);
	assert_true(take[find(&c, "notes.txt")]);
	assert_false(take[find(&c, "app/sub/deep.txt")]); /* '*' does not cross '/' */
	assert_true(take[find(&c, "link")]);
	assert_false(take[find(&c, "app/main.c")]);       /* the link itself, not its target */

	assert_int_equal(context_select(&c, s3, take, &missing), -ENOENT);
	assert_string_equal(missing, "nope");
	assert_int_equal(context_select(&c, s4, take, &missing), -ENOENT);
	assert_string_equal(missing, "a.log");

	memset(take, 0, c.n);
	assert_int_equal(context_select(&c, s5, take, &missing), 0);
	for (size_t i = 0; i < c.n; i++)
		assert_true(take[i]);

	memset(take, 0, c.n);
	assert_int_equal(context_select(&c, s6, take, &missing), 0);
	assert_true(take[find(&c, "app/sub/deep.txt")]);

	free(take);
	context_done(&c);
	ignore_done(&ig);
}

/* Computes the tag of recipe @text with @args over the current context. */
static void tag_of(const char *text, char *const *args, const char *base, char hex[65])
{
	struct containerfile cf;
	struct cf_recipe rc;
	struct cf_error err;
	struct ignore ig;
	struct build_context c;
	bool *copies[8];
	size_t nc = 0;
	uint64_t budget = CTX_MAX_BYTES;
	_cleanup_free_ char *ser = NULL;
	size_t serlen;
	struct build_tag_input in;

	assert_int_equal(cf_parse(text, strlen(text), &cf, &err), 0);
	assert_int_equal(cf_resolve(&cf, args, NULL, &rc, &err), 0);
	assert_int_equal(context_load_ignore(dfd, &ig), 0);
	assert_int_equal(context_scan(dfd, &ig, &c), 0);
	for (size_t i = 0; i < rc.n_steps; i++) {
		const char *missing;
		if (rc.steps[i].kind != CF_COPY)
			continue;
		copies[nc] = calloc(c.n + 1, sizeof(bool));
		assert_int_equal(context_select(&c, rc.steps[i].sources, copies[nc], &missing), 0);
		assert_int_equal(context_hash_files(dfd, &c, copies[nc], &budget), 0);
		nc++;
	}
	ser = cf_serialize(&cf, &serlen);
	in = (struct build_tag_input){ .builder = "native", .base_digest = base, .recipe = ser, .recipe_len = serlen,
				       .build_args = args, .ctx = &c, .copies = (const bool *const *)copies,
				       .n_copies = nc };
	assert_int_equal(build_tag(&in, hex), 0);
	assert_int_equal(strlen(hex), 64);
	for (size_t i = 0; i < nc; i++)
		free(copies[i]);
	context_done(&c);
	ignore_done(&ig);
	cf_recipe_done(&rc);
	cf_done(&cf);
}

#define BASE1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define BASE2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"

static void test_tag_inputs(void **state)
{
	static const char recipe[] = "FROM x\nARG V=1\nCOPY app /app/\nRUN make\n";
	char *args1[] = { S("V=1"), NULL };
	char *args2[] = { S("V=2"), NULL };
	char t0[65], t[65];

	tag_of(recipe, NULL, BASE1, t0);
	/* unchanged inputs: the same tag */
	tag_of(recipe, NULL, BASE1, t);
	assert_string_equal(t, t0);
	/* layout-only recipe change: the same tag */
	tag_of("# c\nfrom x\n\narg V=1\ncopy app /app/\nrun \\\n make\n", NULL, BASE1, t);
	assert_string_equal(t, t0);
	/* a changed line */
	tag_of("FROM x\nARG V=1\nCOPY app /app/\nRUN make install\n", NULL, BASE1, t);
	assert_string_not_equal(t, t0);
	/* the base digest */
	tag_of(recipe, NULL, BASE2, t);
	assert_string_not_equal(t, t0);
	/* a build arg, even one equal to the default (it is an explicit input) */
	tag_of(recipe, args1, BASE1, t);
	assert_string_not_equal(t, t0);
	{
		char t1[65];
		memcpy(t1, t, sizeof(t1));
		tag_of(recipe, args2, BASE1, t);
		assert_string_not_equal(t, t1);
	}
	/* a context file COPY takes: content, then mode */
	put("app/sub/deep.txt", "deeper\n", 0644);
	tag_of(recipe, NULL, BASE1, t);
	assert_string_not_equal(t, t0);
	put("app/sub/deep.txt", "deep\n", 0644);
	tag_of(recipe, NULL, BASE1, t);
	assert_string_equal(t, t0); /* back to the same content: back to the same tag */
	assert_int_equal(fchmodat(dfd, "app/run.sh", 0700, 0), 0);
	tag_of(recipe, NULL, BASE1, t);
	assert_string_not_equal(t, t0);
	assert_int_equal(fchmodat(dfd, "app/run.sh", 0755, 0), 0);
	/* a new file inside a copied directory */
	put("app/new.c", "x", 0644);
	tag_of(recipe, NULL, BASE1, t);
	assert_string_not_equal(t, t0);
	assert_int_equal(unlinkat(dfd, "app/new.c", 0), 0);
	/* a context file COPY does not take, and an ignored one: no change */
	put("notes.txt", "other notes\n", 0644);
	put("app/debug.log", "ignored\n", 0644);
	tag_of(recipe, NULL, BASE1, t);
	assert_string_equal(t, t0);
	assert_int_equal(unlinkat(dfd, "app/debug.log", 0), 0);
	/* mtime alone: no change */
	assert_int_equal(utimensat(dfd, "app/main.c", NULL, 0), 0);
	tag_of(recipe, NULL, BASE1, t);
	assert_string_equal(t, t0);
	/* a changed ignore file that now lets a file into a copied directory */
	put("app/debug.log", "now seen\n", 0644);
	put(".containerignore", "node_modules\nsecrets\n!secrets/public.pem\n", 0644);
	tag_of(recipe, NULL, BASE1, t);
	assert_string_not_equal(t, t0);
	put(".containerignore", "node_modules\n**/*.log\nsecrets\n!secrets/public.pem\n", 0644);
	tag_of(recipe, NULL, BASE1, t);
	assert_string_equal(t, t0);
	assert_int_equal(unlinkat(dfd, "app/debug.log", 0), 0);
}

static void test_tag_serialization(void **state)
{
	char *args[] = { S("B=2"), S("A=1"), NULL };
	char *args_rev[] = { S("A=1"), S("B=2"), NULL };
	struct build_tag_input in = { .builder = "native", .base_digest = BASE1, .recipe = "R", .recipe_len = 1,
				      .build_args = args };
	_cleanup_free_ char *s = NULL, *s2 = NULL;
	char h1[65], h2[65];

	assert_int_equal(build_tag_serialize(&in, &s, NULL), 0);
	assert_string_equal(s, BUILD_TAG_VERSION "\nbuilder 6:native\nbase 71:" BASE1 "\nrecipe 1:R\narg 3:A=1\narg 3:B=2\n");
	/* build-arg order on the command line does not matter */
	assert_int_equal(build_tag(&in, h1), 0);
	in.build_args = args_rev;
	assert_int_equal(build_tag(&in, h2), 0);
	assert_string_equal(h1, h2);
	/* the builder is an input */
	in.builder = "podman";
	assert_int_equal(build_tag(&in, h2), 0);
	assert_string_not_equal(h1, h2);
	/* length prefixes: moving bytes between fields changes the tag */
	in.builder = "native";
	in.build_args = NULL;
	in.recipe = "Rarg 3:A=1";
	in.recipe_len = strlen(in.recipe);
	assert_int_equal(build_tag_serialize(&in, &s2, NULL), 0);
	assert_string_not_equal(s, s2);
	/* sha256 helper: known vector */
	assert_int_equal(build_sha256_hex("abc", 3, h1), 0);
	assert_string_equal(h1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_special_file(void **state)
{
	struct build_context c;
	bool *take;
	const char *missing;
	uint64_t budget = CTX_MAX_BYTES;
	char *src[] = { S("fifo"), NULL };

	assert_int_equal(mkfifoat(dfd, "fifo", 0644), 0);
	assert_int_equal(context_scan(dfd, NULL, &c), 0);
	take = calloc(c.n, sizeof(bool));
	assert_int_equal(context_select(&c, src, take, &missing), 0);
	assert_int_equal(context_hash_files(dfd, &c, take, &budget), -EINVAL);
	free(take);
	context_done(&c);
	unlinkat(dfd, "fifo", 0);

	/* the byte budget */
	{
		char *all[] = { S("."), NULL };
		assert_int_equal(context_scan(dfd, NULL, &c), 0);
		take = calloc(c.n, sizeof(bool));
		assert_int_equal(context_select(&c, all, take, &missing), 0);
		budget = 10;
		assert_int_equal(context_hash_files(dfd, &c, take, &budget), -EFBIG);
		free(take);
		context_done(&c);
	}
}

/* An empty context (a Containerfile from stdin, or a build dir with nothing in it): c.e stays NULL,
 * and qsort(NULL, 0, ...) is undefined (glibc declares the base nonnull; UBSan aborts on it). */
static void test_empty_context(void **state)
{
	char edir[] = "/tmp/aisb-test-ctx-empty-XXXXXX", edir2[] = "/tmp/aisb-test-ctx-one-XXXXXX";
	struct build_context c;
	int efd;

	assert_non_null(mkdtemp(edir));
	efd = open(edir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(efd >= 0);
	assert_int_equal(context_scan(efd, NULL, &c), 0);
	assert_int_equal(c.n, 0);
	context_done(&c);
	close(efd);
	rm_rf(edir);
	/* control: one file, one entry */
	assert_non_null(mkdtemp(edir2));
	efd = open(edir2, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(write_file_at(efd, "f", "x", 1, 0644), 0);
	assert_int_equal(context_scan(efd, NULL, &c), 0);
	assert_int_equal(c.n, 1);
	context_done(&c);
	close(efd);
	rm_rf(edir2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scan),
		cmocka_unit_test(test_select),
		cmocka_unit_test(test_tag_inputs),
		cmocka_unit_test(test_tag_serialization),
		cmocka_unit_test(test_special_file),
		cmocka_unit_test(test_empty_context),
	};
	log_set_quiet(true);
	return cmocka_run_group_tests(tests, setup, teardown);
}
