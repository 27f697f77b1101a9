// SPDX-License-Identifier: GPL-2.0-or-later
/* test-build-layer.c — overlay whiteouts become OCI whiteouts; the layer unpacks as the overlay saw it */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "build/context.h"
#include "build/layer.h"
#include "rootfs/unpack.h"
#include "util/log.h"
#include "util/util.h"

static void test_classify(void **state)
{
	assert_int_equal(layer_classify("f", S_IFREG | 0644, 0, false), LAYER_NORMAL);
	assert_int_equal(layer_classify("d", S_IFDIR | 0755, 0, false), LAYER_NORMAL);
	assert_int_equal(layer_classify("d", S_IFDIR | 0755, 0, true), LAYER_OPAQUE);
	assert_int_equal(layer_classify("l", S_IFLNK | 0777, 0, false), LAYER_NORMAL);
	assert_int_equal(layer_classify("p", S_IFIFO | 0644, 0, false), LAYER_NORMAL);
	assert_int_equal(layer_classify("gone", S_IFCHR, makedev(0, 0), false), LAYER_WHITEOUT);
	assert_int_equal(layer_classify("null", S_IFCHR | 0666, makedev(1, 3), false), LAYER_SKIP);
	assert_int_equal(layer_classify("sda", S_IFBLK | 0660, makedev(8, 0), false), LAYER_SKIP);
	assert_int_equal(layer_classify("s", S_IFSOCK | 0755, 0, false), LAYER_SKIP);
	assert_int_equal(layer_classify(".wh.x", S_IFREG | 0644, 0, false), LAYER_REFUSED);
	assert_int_equal(layer_classify(".wh..wh..opq", S_IFREG | 0644, 0, false), LAYER_REFUSED);
	assert_int_equal(layer_classify(".whx", S_IFREG | 0644, 0, false), LAYER_NORMAL);
	/* the opaque flag only matters for directories */
	assert_int_equal(layer_classify("f", S_IFREG | 0644, 0, true), LAYER_NORMAL);
}

static void test_whiteout_path(void **state)
{
	char *p = layer_whiteout_path("a/b/c");
	assert_string_equal(p, "a/b/.wh.c");
	free(p);
	p = layer_whiteout_path("top");
	assert_string_equal(p, ".wh.top");
	free(p);
}

static char base[] = "/tmp/aisb-test-layer-XXXXXX";

static int mk(const char *rel, const char *content, mode_t mode)
{
	_cleanup_free_ char *p = path_join(base, rel);
	char *slash = strrchr(p, '/');
	int r;

	*slash = 0;
	r = mkdir_p(p, 0755);
	*slash = '/';
	if (r < 0)
		return r;
	r = write_file_at(AT_FDCWD, p, content, strlen(content), mode);
	return r < 0 ? r : (chmod(p, mode) < 0 ? -errno : 0);
}

static int mkd(const char *rel)
{
	_cleanup_free_ char *p = path_join(base, rel);
	return mkdir_p(p, 0755);
}

/* Lists the layer: "path type" lines in archive order. */
static char *list_layer(const char *file)
{
	struct archive *a = archive_read_new();
	struct archive_entry *e;
	char *out = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);

	archive_read_support_format_tar(a);
	assert_int_equal(archive_read_open_filename(a, file, 16384), ARCHIVE_OK);
	while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
		char t = archive_entry_filetype(e) == AE_IFDIR ? 'd' : archive_entry_filetype(e) == AE_IFLNK ? 'l' :
			 archive_entry_filetype(e) == AE_IFIFO ? 'p' : 'f';
		assert_int_equal(archive_entry_uid(e), 0);
		assert_int_equal(archive_entry_gid(e), 0);
		fprintf(f, "%s %c%s%s\n", archive_entry_pathname(e), t, t == 'l' ? " " : "",
			t == 'l' ? archive_entry_symlink(e) : "");
	}
	archive_read_free(a);
	fclose(f);
	return out;
}

static void test_write_and_unpack(void **state)
{
	_cleanup_free_ char *upper = NULL, *lower = NULL, *lfile = NULL, *listing = NULL, *sock = NULL, *odir = NULL,
			    *wh1 = NULL, *wh2 = NULL, *buf = NULL;
	struct layer_result res;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int ufd, ofd, sfd, lfd;
	char hex[65];
	size_t len;

	assert_non_null(mkdtemp(base));
	upper = path_join(base, "upper");
	lower = path_join(base, "lower");
	lfile = path_join(base, "layer.tar");
	/* the upper as an overlay would leave it after:
	 *   echo > a; mkdir -p d && echo > d/f; ln -s a l; rm gone; rm -rf o && mkdir o && echo > o/new;
	 *   rm -rf sub/x (a dir); mkfifo p */
	assert_int_equal(mk("upper/a", "A\n", 0755), 0);
	assert_int_equal(mkd("upper/d"), 0);
	assert_int_equal(mk("upper/d/f", "F\n", 0600), 0);
	assert_int_equal(symlinkat("a", AT_FDCWD, (wh1 = path_join(base, "upper/l"))), 0);
	free(wh1);
	wh1 = path_join(base, "upper/gone");
	assert_int_equal(mknod(wh1, S_IFCHR | 0, makedev(0, 0)), 0); /* unprivileged since 5.8 */
	odir = path_join(base, "upper/o");
	assert_int_equal(mkdir(odir, 0755), 0);
	if (setxattr(odir, "user.overlay.opaque", "y", 1, 0) < 0)
		skip(); /* no user xattrs on this filesystem */
	assert_int_equal(mk("upper/o/new", "N\n", 0644), 0);
	assert_int_equal(mkd("upper/sub"), 0);
	wh2 = path_join(base, "upper/sub/x");
	assert_int_equal(mknod(wh2, S_IFCHR | 0, makedev(0, 0)), 0);
	free(wh2);
	wh2 = path_join(base, "upper/p");
	assert_int_equal(mkfifo(wh2, 0644), 0);
	sock = path_join(base, "upper/s");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	sfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(sfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(sfd);

	ufd = open(upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ofd = open(lfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_int_equal(layer_write(ufd, ofd, &res), 0);
	close(ofd);
	assert_int_equal(res.n_whiteouts, 2);
	assert_int_equal(res.n_opaque, 1);
	assert_int_equal(res.n_skipped, 1); /* the socket */

	listing = list_layer(lfile);
	assert_string_equal(listing,
			    "a f\n"
			    "d/ d\n"
			    "d/f f\n"
			    ".wh.gone f\n"
			    "l l a\n"
			    "o/ d\n"
			    "o/.wh..wh..opq f\n"
			    "o/new f\n"
			    "p p\n"
			    "sub/ d\n"
			    "sub/.wh.x f\n");
	/* the digest is the sha256 of the bytes written (uncompressed: digest = diff_id) */
	assert_int_equal(read_file_at(AT_FDCWD, lfile, 1 << 20, &buf, &len), 0);
	assert_int_equal(len, res.size);
	assert_int_equal(build_sha256_hex(buf, len, hex), 0);
	assert_string_equal(res.digest + 7, hex);

	/* writing again gives the same bytes */
	{
		struct layer_result res2;
		_cleanup_free_ char *l2 = path_join(base, "layer2.tar");
		ofd = open(l2, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		assert_int_equal(layer_write(ufd, ofd, &res2), 0);
		close(ofd);
		assert_string_equal(res2.digest, res.digest);
	}

	/* round trip through the store's unpacker onto the lower the overlay had */
	assert_int_equal(mk("lower/gone", "old\n", 0644), 0);
	assert_int_equal(mk("lower/keep", "K\n", 0644), 0);
	assert_int_equal(mk("lower/o/old", "O\n", 0644), 0);
	assert_int_equal(mk("lower/sub/x/deep", "X\n", 0644), 0);
	assert_int_equal(mk("lower/sub/y", "Y\n", 0644), 0);
	{
		struct unpack_limits lim;
		struct unpack_stats st = { 0 };
		int rootfd = open(lower, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		struct stat sb;

		unpack_limits_default(&lim);
		lfd = open(lfile, O_RDONLY | O_CLOEXEC);
		assert_int_equal(unpack_layer(rootfd, lfd, "test layer", &lim, &st), 0);
		close(lfd);
		assert_int_equal(fstatat(rootfd, "gone", &sb, AT_SYMLINK_NOFOLLOW), -1);
		assert_int_equal(fstatat(rootfd, "keep", &sb, 0), 0);
		assert_int_equal(fstatat(rootfd, "o/old", &sb, 0), -1); /* opaque: lower content hidden */
		assert_int_equal(fstatat(rootfd, "o/new", &sb, 0), 0);
		assert_int_equal(fstatat(rootfd, "sub/x", &sb, AT_SYMLINK_NOFOLLOW), -1);
		assert_int_equal(fstatat(rootfd, "sub/y", &sb, 0), 0);
		assert_int_equal(fstatat(rootfd, "d/f", &sb, 0), 0);
		assert_int_equal(sb.st_mode & 07777, 0600);
		assert_int_equal(fstatat(rootfd, "a", &sb, 0), 0);
		assert_int_equal(sb.st_mode & 07777, 0755);
		assert_int_equal(fstatat(rootfd, "l", &sb, AT_SYMLINK_NOFOLLOW), 0);
		assert_true(S_ISLNK(sb.st_mode));
		close(rootfd);
	}

	/* a RUN that created ".wh.something" is refused */
	assert_int_equal(mk("upper/d/.wh.evil", "", 0644), 0);
	ofd = open(lfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_int_equal(layer_write(ufd, ofd, &res), -EINVAL);
	close(ofd);
	close(ufd);
	rm_rf(base);
}

/* An empty directory in the upper (an empty RUN mkdir, or an empty upper): walk() has no names,
 * and qsort(NULL, 0, ...) is undefined (glibc declares the base nonnull; UBSan aborts on it, and
 * the compiler may drop the `names &&` test after it). */
static void test_empty_dirs(void **state)
{
	char edir[] = "/tmp/aisb-test-layer-empty-XXXXXX";
	_cleanup_free_ char *up = NULL, *lf = NULL, *listing = NULL;
	struct layer_result res;
	int ufd, ofd;

	assert_non_null(mkdtemp(edir));
	up = path_join(edir, "upper");
	lf = path_join(edir, "layer.tar");
	assert_int_equal(mkdir(up, 0755), 0);
	ufd = open(up, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ofd = open(lf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_int_equal(layer_write(ufd, ofd, &res), 0); /* an empty upper */
	close(ofd);
	listing = list_layer(lf);
	assert_string_equal(listing ? listing : "", "");
	free(listing);
	/* control: an empty directory below is written as one entry */
	assert_int_equal(mkdirat(ufd, "e", 0755), 0);
	ofd = open(lf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_int_equal(layer_write(ufd, ofd, &res), 0);
	close(ofd);
	listing = list_layer(lf);
	assert_string_equal(listing, "e/ d\n");
	close(ufd);
	rm_rf(edir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_whiteout_path),
		cmocka_unit_test(test_write_and_unpack),
		cmocka_unit_test(test_empty_dirs),
	};
	log_set_quiet(true);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
