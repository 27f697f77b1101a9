// SPDX-License-Identifier: GPL-2.0-or-later
/* test-build-copy.c — COPY into a build root: Docker's placement rules, modes, symlinks resolved
 * inside the root, and the re-hash check */
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
#include "build/copy.h"
#include "util/log.h"
#include "util/util.h"

static char dir[] = "/tmp/aisb-test-copy-XXXXXX";
static char *ctxd, *rootd, *hostd;
static int ctx_fd = -1, root_fd = -1;

static void put(const char *base, const char *rel, const char *content, mode_t mode)
{
	_cleanup_free_ char *p = path_join(base, rel);
	char *slash = strrchr(p, '/');
	*slash = 0;
	assert_int_equal(mkdir_p(p, 0755), 0);
	*slash = '/';
	unlink(p);
	assert_int_equal(write_file_at(AT_FDCWD, p, content, strlen(content), mode), 0);
	assert_int_equal(chmod(p, mode), 0);
}

static char *get(const char *rel)
{
	_cleanup_free_ char *p = path_join(rootd, rel);
	char *buf = NULL;
	size_t len;
	if (read_file_at(AT_FDCWD, p, 4096, &buf, &len) < 0)
		return NULL;
	return buf;
}

static mode_t mode_of(const char *rel)
{
	_cleanup_free_ char *p = path_join(rootd, rel);
	struct stat st;
	if (lstat(p, &st) < 0)
		return (mode_t)-1;
	return st.st_mode;
}

static int setup(void **state)
{
	_cleanup_free_ char *p = NULL, *q = NULL;

	assert_non_null(mkdtemp(dir));
	ctxd = path_join(dir, "ctx");
	rootd = path_join(dir, "root");
	hostd = path_join(dir, "host-only");
	assert_int_equal(mkdir_p(hostd, 0755), 0);
	put(ctxd, "a.txt", "A\n", 0640);
	put(ctxd, "run.sh", "#!/bin/sh\n", 0755);
	put(ctxd, "app/main.c", "main\n", 0644);
	put(ctxd, "app/sub/deep.txt", "deep\n", 0600);
	p = path_join(ctxd, "app/link");
	assert_int_equal(symlink("main.c", p), 0);
	/* the image: /usr/lib, /lib -> /usr/lib (absolute), /escape -> ../../..<host-only> */
	free(p);
	p = path_join(rootd, "usr/lib");
	assert_int_equal(mkdir_p(p, 0755), 0);
	free(p);
	p = path_join(rootd, "lib");
	assert_int_equal(symlink("/usr/lib", p), 0);
	free(p);
	p = path_join(rootd, "escape");
	if (asprintf(&q, "../../../../../../../..%s", hostd) < 0)
		return -1;
	assert_int_equal(symlink(q, p), 0);
	free(p);
	p = path_join(rootd, hostd); /* the same path inside the root exists: links land there */
	assert_int_equal(mkdir_p(p, 0755), 0);
	free(p);
	p = path_join(rootd, "existing-dir");
	assert_int_equal(mkdir_p(p, 0755), 0);
	ctx_fd = open(ctxd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	root_fd = open(rootd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return ctx_fd >= 0 && root_fd >= 0 ? 0 : -1;
}

static int teardown(void **state)
{
	close(ctx_fd);
	close(root_fd);
	rm_rf(dir);
	free(ctxd);
	free(rootd);
	free(hostd);
	return 0;
}

/* Parses a one-COPY recipe and runs it. Returns copy_step()'s result. */
static int do_copy(const char *line)
{
	_cleanup_free_ char *text = NULL;
	struct containerfile cf;
	struct cf_recipe rc;
	struct cf_error err;
	struct build_context c;
	bool *take;
	const char *missing;
	uint64_t budget = CTX_MAX_BYTES;
	int r;

	assert_true(asprintf(&text, "FROM x\nWORKDIR /w\n%s\n", line) > 0);
	assert_int_equal(cf_parse(text, strlen(text), &cf, &err), 0);
	assert_int_equal(cf_resolve(&cf, NULL, NULL, &rc, &err), 0);
	assert_int_equal(context_scan(ctx_fd, NULL, &c), 0);
	take = calloc(c.n + 1, sizeof(bool));
	assert_int_equal(context_select(&c, rc.steps[1].sources, take, &missing), 0);
	assert_int_equal(context_hash_files(ctx_fd, &c, take, &budget), 0);
	r = copy_step(ctx_fd, &c, take, &rc.steps[1], root_fd);
	free(take);
	context_done(&c);
	cf_recipe_done(&rc);
	cf_done(&cf);
	return r;
}

static void test_placement(void **state)
{
	_cleanup_free_ char *s1 = NULL, *s2 = NULL, *s3 = NULL, *s4 = NULL, *s5 = NULL, *s6 = NULL;

	/* a file into a directory (trailing '/'), mode kept */
	assert_int_equal(do_copy("COPY a.txt /dest/"), 0);
	assert_string_equal((s1 = get("dest/a.txt")), "A\n");
	assert_int_equal(mode_of("dest/a.txt") & 07777, 0640);
	/* a file to a file name, relative to WORKDIR */
	assert_int_equal(do_copy("COPY a.txt renamed.txt"), 0);
	assert_string_equal((s2 = get("w/renamed.txt")), "A\n");
	/* a directory: its contents, recursively; links as links */
	assert_int_equal(do_copy("COPY app /opt/app"), 0);
	assert_string_equal((s3 = get("opt/app/sub/deep.txt")), "deep\n");
	assert_int_equal(mode_of("opt/app/sub/deep.txt") & 07777, 0600);
	assert_true(S_ISLNK(mode_of("opt/app/link")));
	assert_true(mode_of("opt/app/app") == (mode_t)-1); /* not the directory itself */
	/* an existing directory without trailing '/' is a directory */
	assert_int_equal(do_copy("COPY run.sh /existing-dir"), 0);
	assert_int_equal(mode_of("existing-dir/run.sh") & 07777, 0755);
	/* --chmod */
	assert_int_equal(do_copy("COPY --chmod=700 a.txt /chmod/"), 0);
	assert_int_equal(mode_of("chmod/a.txt") & 07777, 0700);
	/* wildcard and the whole context */
	assert_int_equal(do_copy("COPY *.txt /glob/"), 0);
	assert_string_equal((s4 = get("glob/a.txt")), "A\n");
	assert_int_equal(do_copy("COPY . /all/"), 0);
	assert_string_equal((s5 = get("all/app/main.c")), "main\n");
	/* replacing a file works; a file over a directory is refused */
	put(ctxd, "a.txt", "A2\n", 0640);
	assert_int_equal(do_copy("COPY a.txt /dest/"), 0);
	assert_string_equal((s6 = get("dest/a.txt")), "A2\n");
	assert_int_equal(do_copy("COPY a.txt /existing-dir/run.sh/"), -ENOTDIR);
	{
		_cleanup_free_ char *p = path_join(rootd, "adir/x");
		assert_int_equal(mkdir_p(p, 0755), 0);
		assert_int_equal(do_copy("COPY a.txt /adir/x"), 0); /* an existing dir: into it */
		assert_int_equal(mode_of("adir/x/a.txt") & 07777, 0640);
	}
}

static void test_symlinks_stay_inside(void **state)
{
	_cleanup_free_ char *s = NULL, *host = NULL, *in_root = NULL;
	struct stat st;

	/* /lib -> /usr/lib is the image's /usr/lib, not the host's */
	assert_int_equal(do_copy("COPY a.txt /lib/aisb-test.txt"), 0);
	assert_non_null((s = get("usr/lib/aisb-test.txt")));
	assert_int_equal(stat("/usr/lib/aisb-test.txt", &st), -1);
	/* a relative link climbing out lands at the same path inside the root */
	assert_int_equal(do_copy("COPY a.txt /escape/"), 0);
	host = path_join(hostd, "a.txt");
	assert_int_equal(stat(host, &st), -1);
	in_root = path_join(rootd, host);
	assert_int_equal(stat(in_root, &st), 0);
}

static void test_changed_after_hash(void **state)
{
	_cleanup_free_ char *text = NULL;
	struct containerfile cf;
	struct cf_recipe rc;
	struct cf_error err;
	struct build_context c;
	bool *take;
	const char *missing;
	uint64_t budget = CTX_MAX_BYTES;
	static const char t[] = "FROM x\nCOPY run.sh /changed/\n";

	assert_int_equal(cf_parse(t, strlen(t), &cf, &err), 0);
	assert_int_equal(cf_resolve(&cf, NULL, NULL, &rc, &err), 0);
	assert_int_equal(context_scan(ctx_fd, NULL, &c), 0);
	take = calloc(c.n + 1, sizeof(bool));
	assert_int_equal(context_select(&c, rc.steps[0].sources, take, &missing), 0);
	assert_int_equal(context_hash_files(ctx_fd, &c, take, &budget), 0);
	put(ctxd, "run.sh", "#!/bin/sh\necho tampered\n", 0755);
	assert_int_equal(copy_step(ctx_fd, &c, take, &rc.steps[0], root_fd), -ESTALE);
	assert_true(mode_of("changed/run.sh") == (mode_t)-1); /* removed again */
	free(take);
	context_done(&c);
	cf_recipe_done(&rc);
	cf_done(&cf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_placement),
		cmocka_unit_test(test_symlinks_stay_inside),
		cmocka_unit_test(test_changed_after_hash),
	};
	log_set_quiet(true);
	return cmocka_run_group_tests(tests, setup, teardown);
}
