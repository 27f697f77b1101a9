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
#include <sys/ioctl.h>
#include <linux/fs.h>
#include <dirent.h>
#include <unistd.h>

#include "build/context.h"
#include "build/layer.h"
#include "rootfs/unpack.h"
#include "util/log.h"
#include "util/util.h"

/* The mtime rules of docs/images.md "Reproducible builds", as a table. */
static void test_mtime(void **state)
{
	/* the build started at 1000.5 s */
	static const struct layer_times def = { .epoch = 0, .since_ns = 1000500000000 },
					 sde = { .epoch = 500, .since_ns = 1000500000000, .clamp = true },
					 late = { .epoch = 2000, .since_ns = 1000500000000, .clamp = true },
					 all = { .epoch = 7, .since_ns = 1000500000000, .all = true };
	static const struct {
		const struct layer_times *t;
		int64_t sec, nsec, out;
	} rows[] = {
		{ NULL, 1234, 9, 1234 },          /* no rules: as the upper has it, whole seconds */
		{ &def, 999, 0, 999 },            /* the context's file keeps its time */
		{ &def, 1000, 499999999, 1000 },  /* ... saved in the second the build started */
		{ &def, 1000, 500000000, 0 },     /* what the build wrote gets the epoch */
		{ &def, 5000, 0, 0 },
		{ &sde, 400, 0, 400 },            /* older than SOURCE_DATE_EPOCH: kept */
		{ &sde, 500, 999999999, 500 },
		{ &sde, 501, 0, 500 },            /* newer: clamped */
		{ &sde, 1000, 0, 500 },
		{ &late, 999, 0, 999 },           /* SOURCE_DATE_EPOCH after the build started: */
		{ &late, 1500, 0, 2000 },         /* what the build wrote still gets it, not its clock */
		{ &all, 0, 0, 7 },                /* --timestamp: every one */
		{ &all, 999, 0, 7 },
		{ &all, 5000, 0, 7 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct timespec m = { .tv_sec = (time_t)rows[i].sec, .tv_nsec = (long)rows[i].nsec };
		assert_int_equal(layer_mtime(rows[i].t, &m), rows[i].out);
	}
}

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
		assert_int_equal(unpack_layer(rootfd, lfd, "test layer", NULL, &lim, &st), 0);
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


/* ---- the tree made from the upper is the tree unpacked from the layer ---- */

static int fd_sink(void *ud, const void *buf, size_t len)
{
	return write_full(*(int *)ud, buf, len);
}

struct listing {
	char **paths; /* sorted relative paths */
	size_t n;
};

static void collect(int dfd, const char *rel, struct listing *l)
{
	DIR *d = fdopendir(openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	struct dirent *de;

	assert_non_null(d);
	while ((de = readdir(d))) {
		char *p;
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		assert_true(asprintf(&p, "%s%s%s", rel, *rel ? "/" : "", de->d_name) > 0);
		l->paths = realloc(l->paths, (l->n + 1) * sizeof(char *));
		l->paths[l->n++] = p;
		if (de->d_type == DT_DIR) {
			int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			assert_true(sub >= 0);
			collect(sub, p, l);
			close(sub);
		}
	}
	closedir(d);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Everything of the tree under @root that the layer can say: per path its type, mode, owner,
 * size, content hash or link target, a regular file's mtime, its xattrs, and which other path
 * of the same tree it shares an inode with (directory and symlink times are the unpack's own). */
static char *describe_tree(const char *root)
{
	struct listing l = { 0 };
	int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char *out = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);
	struct stat *sts;

	assert_true(rfd >= 0);
	collect(rfd, "", &l);
	qsort(l.paths, l.n, sizeof(char *), cmp_str);
	sts = calloc(l.n + 1, sizeof(*sts));
	for (size_t i = 0; i < l.n; i++)
		assert_int_equal(fstatat(rfd, l.paths[i], &sts[i], AT_SYMLINK_NOFOLLOW), 0);
	for (size_t i = 0; i < l.n; i++) {
		struct stat *st = &sts[i];
		char hex[65] = "-", xat[1024];
		const char *first = "-";
		ssize_t xn = 0;

		if (S_ISREG(st->st_mode)) {
			_cleanup_free_ char *buf = NULL;
			size_t len;
			assert_int_equal(read_file_at(rfd, l.paths[i], 1 << 24, &buf, &len), 0);
			assert_int_equal(build_sha256_hex(buf, len, hex), 0);
			for (size_t j = 0; j < i; j++)
				if (sts[j].st_ino == st->st_ino && sts[j].st_dev == st->st_dev) {
					first = l.paths[j];
					break;
				}
		} else if (S_ISLNK(st->st_mode)) {
			ssize_t k = readlinkat(rfd, l.paths[i], hex, sizeof(hex) - 1);
			assert_true(k >= 0);
			hex[k] = 0;
		}
		if (!S_ISLNK(st->st_mode)) {
			_cleanup_free_ char *abs = path_join(root, l.paths[i]);
			xn = llistxattr(abs, xat, sizeof(xat));
			assert_true(xn >= 0);
			for (ssize_t k = 0; k < xn; k++)
				if (!xat[k])
					xat[k] = ',';
		}
		fprintf(f, "%s %07o %u:%u %lld %s %lld [%.*s] %s\n", l.paths[i], (unsigned)st->st_mode, st->st_uid,
			st->st_gid, S_ISDIR(st->st_mode) ? 0LL : (long long)st->st_size, hex,
			S_ISREG(st->st_mode) ? (long long)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec : 0LL,
			(int)xn, xat, first);
	}
	fclose(f);
	for (size_t i = 0; i < l.n; i++)
		free(l.paths[i]);
	free(l.paths);
	free(sts);
	close(rfd);
	return out;
}

/* @rel with @content in the tree @lower (below base). */
static void mkl(const char *lower, const char *rel, const char *content, mode_t mode)
{
	_cleanup_free_ char *p = path_join(lower, rel);
	struct timespec ts[2] = { { .tv_sec = 1600000000 }, { .tv_sec = 1600000000 } };

	assert_int_equal(mk(p + strlen(base) + 1, content, mode), 0);
	assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0); /* the same in both trees */
}

static void test_tree_is_the_unpacked_layer(void **state)
{
	_cleanup_free_ char *upper = NULL, *lfile = NULL, *ta = NULL, *tb = NULL, *da = NULL, *db = NULL, *p = NULL;
	struct unpack_limits lim;
	struct layer_result res;
	struct stat su, sa;
	int ufd, ofd, afd, bfd, lfd;
	bool root = geteuid() == 0, nodump = false, trusted = false;

	strcpy(base, "/tmp/aisb-test-layer-XXXXXX");
	assert_non_null(mkdtemp(base));
	upper = path_join(base, "upper");
	lfile = path_join(base, "layer.tar");
	ta = path_join(base, "a");
	tb = path_join(base, "b");
	for (int i = 0; i < 2; i++) {
		const char *t = i ? tb : ta;
		mkl(t, "keep", "K\n", 0644);
		mkl(t, "gone", "G\n", 0644);
		mkl(t, "o/old", "O\n", 0644);
		mkl(t, "o/sub/older", "OO\n", 0644);
		mkl(t, "sub/x/deep", "X\n", 0644);
		mkl(t, "sub/y", "Y\n", 0644);
		mkl(t, "ftod", "file, then a dir\n", 0644);
		mkl(t, "dtof/inner", "I\n", 0644);
		mkl(t, "mod", "old\n", 0644);
		mkl(t, "usr/lib/liba", "L\n", 0644);
		free(p);
		p = path_join(t, "lib");
		assert_int_equal(symlink("usr/lib", p), 0);
		free(p);
		p = path_join(t, "ln");
		assert_int_equal(symlink("keep", p), 0);
	}
	/* the upper an overlay leaves for: rm gone; rm -rf o && mkdir o && echo > o/new; rm -r
	 * sub/x; rm ftod && mkdir ftod; rm -r dtof && echo > dtof; rm lib && mkdir lib (opaque, over
	 * a symlink); echo >> mod (a copy-up: overlay's origin xattr); ln h1 h2 and ln h1 d/h3; new
	 * files with setuid, sticky and private modes, a nanosecond mtime; a fifo, a socket, a
	 * symlink; a 01777 directory */
	assert_int_equal(mk("upper/a", "A\n", 0755), 0);
	assert_int_equal(mk("upper/suid", "S\n", 04755), 0);
	assert_int_equal(mk("upper/sticky", "T\n", 01644), 0);
	assert_int_equal(mk("upper/d/f", "F\n", 0600), 0);
	assert_int_equal(mk("upper/h1", "hardlinked\n", 0640), 0);
	assert_int_equal(mk("upper/mod", "old\nnew\n", 0644), 0);
	assert_int_equal(mk("upper/o/new", "N\n", 0644), 0);
	assert_int_equal(mk("upper/ftod/in", "in\n", 0644), 0);
	assert_int_equal(mk("upper/dtof", "now a file\n", 0644), 0);
	assert_int_equal(mk("upper/lib/own", "own\n", 0644), 0);
	assert_int_equal(mk("upper/t/x", "x\n", 0644), 0);
	free(p);
	p = path_join(base, "upper");
	ufd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(ufd >= 0);
	assert_int_equal(fchmodat(ufd, "d", 0750, 0), 0);
	assert_int_equal(fchmodat(ufd, "t", 01777, 0), 0);
	{
		struct timespec ts[2] = { { .tv_sec = 1700000000, .tv_nsec = 123456789 },
					  { .tv_sec = 1700000000, .tv_nsec = 987654321 } };
		assert_int_equal(utimensat(ufd, "a", ts, 0), 0);
	}
	{
		/* a file bigger than one read of the walk */
		_cleanup_free_ char *big = malloc(300000);
		for (size_t i = 0; i < 300000; i++)
			big[i] = (char)(i * 7);
		assert_int_equal(write_file_at(ufd, "big", big, 300000, 0644), 0);
	}
	assert_int_equal(linkat(ufd, "h1", ufd, "h2", 0), 0);
	assert_int_equal(linkat(ufd, "h1", ufd, "d/h3", 0), 0);
	assert_int_equal(symlinkat("a", ufd, "l"), 0);
	assert_int_equal(mkfifoat(ufd, "p", 0640), 0);
	assert_int_equal(mknodat(ufd, "gone", S_IFCHR, makedev(0, 0)), 0);
	assert_int_equal(mkdirat(ufd, "sub", 0755), 0);
	assert_int_equal(mknodat(ufd, "sub/x", S_IFCHR, makedev(0, 0)), 0);
	{
		int fd = openat(ufd, "mod", O_RDONLY | O_CLOEXEC);
		if (fsetxattr(fd, "user.overlay.origin", "", 0, 0) < 0 || fsetxattr(fd, "user.mine", "v", 1, 0) < 0) {
			close(fd);
			skip(); /* no user xattrs on this filesystem */
		}
		close(fd);
	}
	for (const char *o = "o\0lib\0"; *o; o += strlen(o) + 1) {
		int fd = openat(ufd, o, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		assert_int_equal(fsetxattr(fd, "user.overlay.opaque", "y", 1, 0), 0);
		close(fd);
	}
	{
		/* an inode flag the unpacker would not give (the owner may set nodump): copied */
		int fd;
		assert_int_equal(write_file_at(ufd, "nodump", "nd\n", 3, 0644), 0);
		fd = openat(ufd, "nodump", O_RDONLY | O_CLOEXEC);
		unsigned long fl = 0;
		if (ioctl(fd, FS_IOC_GETFLAGS, &fl) == 0) {
			fl |= FS_NODUMP_FL;
			nodump = ioctl(fd, FS_IOC_SETFLAGS, &fl) == 0;
		}
		close(fd);
	}
	if (root) {
		/* an xattr that is not the user's (as a RUN's setcap would leave): copied, not kept */
		int fd;
		assert_int_equal(write_file_at(ufd, "trusted", "tr\n", 3, 0644), 0);
		fd = openat(ufd, "trusted", O_RDONLY | O_CLOEXEC);
		trusted = fsetxattr(fd, "trusted.aisb-test", "v", 1, 0) == 0;
		close(fd);
	}
	{
		struct sockaddr_un sa_un = { .sun_family = AF_UNIX };
		int sfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		snprintf(sa_un.sun_path, sizeof(sa_un.sun_path), "%s/upper/s", base);
		assert_int_equal(bind(sfd, (struct sockaddr *)&sa_un, sizeof(sa_un)), 0);
		close(sfd);
	}
	assert_int_equal(fstatat(ufd, "a", &su, 0), 0);

	/* tree a: the upper applied while the layer is written; tree b: the layer unpacked */
	unpack_limits_default(&lim);
	afd = open(ta, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	bfd = open(tb, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ofd = open(lfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	{
		struct layer_out out = { .write = fd_sink, .ud = &ofd, .digest = true, .tree_fd = afd, .lim = &lim };
		assert_int_equal(layer_write_out(ufd, &out, &res), 0);
	}
	close(ofd);
	assert_true(res.tree_done);
	assert_true(unpack_summary_fits(&res.sum, &lim));
	assert_int_equal(res.sum.hardlinks, 2);
	assert_int_equal(res.n_whiteouts, 2);
	assert_int_equal(res.n_opaque, 2);
	{
		struct unpack_stats st = { 0 };
		lfd = open(lfile, O_RDONLY | O_CLOEXEC);
		assert_int_equal(unpack_layer(bfd, lfd, "test layer", NULL, &lim, &st), 0);
		close(lfd);
		assert_int_equal(st.hardlinks, 2);
		/* what the unpacker counted is what the layer's summary says */
		assert_int_equal(st.bytes, res.sum.file_bytes);
		assert_int_equal(st.entries, res.sum.entries);
	}
	da = describe_tree(ta);
	db = describe_tree(tb);
	assert_string_equal(da, db);
	/* and what that listing holds: the unpacker's rules, seen in tree a */
	assert_non_null(strstr(da, "\nsuid 0100755 "));         /* setuid cleared */
	assert_non_null(strstr(da, "\nsticky 0101644 "));       /* sticky kept */
	assert_non_null(strstr(da, "\nd 0040750 "));
	assert_non_null(strstr(da, "\nt 0041777 "));
	assert_non_null(strstr(da, " 1700000000000000000 [] -\n")); /* a's mtime, whole seconds */
	assert_non_null(strstr(da, "\nmod 0100644 "));
	assert_null(strstr(da, "user."));                       /* no xattr survives */
	assert_null(strstr(da, "trusted."));
	assert_non_null(strstr(da, "\nh2 0100640 ")); /* h2 and d/h3 share h1's inode */
	assert_non_null(strstr(da, " [] d/h3\n"));
	assert_null(strstr(da, "\ngone "));
	assert_null(strstr(da, "\no/old "));
	assert_null(strstr(da, "\nsub/x"));
	assert_non_null(strstr(da, "\nsub/y "));
	assert_non_null(strstr(da, "\nlib 0040755 "));
	assert_null(strstr(da, "\nlib/liba "));
	assert_non_null(strstr(da, "\nftod/in "));
	assert_null(strstr(da, "\ns "));
	/* the files are the upper's inodes, not copies; one with a flag or a foreign xattr is a copy */
	assert_int_equal(fstatat(afd, "a", &sa, 0), 0);
	assert_int_equal(sa.st_ino, su.st_ino);
	if (nodump) {
		assert_int_equal(fstatat(ufd, "nodump", &su, 0), 0);
		assert_int_equal(fstatat(afd, "nodump", &sa, 0), 0);
		assert_int_not_equal(sa.st_ino, su.st_ino);
	}
	if (trusted) {
		assert_int_equal(fstatat(ufd, "trusted", &su, 0), 0);
		assert_int_equal(fstatat(afd, "trusted", &sa, 0), 0);
		assert_int_not_equal(sa.st_ino, su.st_ino);
	}
	/* control: the comparison sees a difference of one mode bit */
	assert_int_equal(fchmodat(afd, "keep", 0600, 0), 0);
	free(da);
	da = describe_tree(ta);
	assert_string_not_equal(da, db);

	close(afd);
	close(bfd);
	close(ufd);
	rm_rf(base);
}

/* Deeper than the unpacker goes: the layer is written, the tree is not taken, and the summary
 * says the unpacker would refuse it (so the build unpacks the blob and gets its refusal). */
static void test_tree_beyond_unpack_limits(void **state)
{
	_cleanup_free_ char *upper = NULL, *tree = NULL, *lfile = NULL;
	struct unpack_limits lim;
	struct layer_result res;
	int ufd, tfd, ofd;

	strcpy(base, "/tmp/aisb-test-layer-XXXXXX");
	assert_non_null(mkdtemp(base));
	assert_int_equal(mk("upper/a/b/c/d/f", "deep\n", 0644), 0);
	assert_int_equal(mk("tree/keep", "k\n", 0644), 0);
	upper = path_join(base, "upper");
	tree = path_join(base, "tree");
	lfile = path_join(base, "layer.tar");
	ufd = open(upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	tfd = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	unpack_limits_default(&lim);
	for (int i = 0; i < 2; i++) {
		struct layer_out out = { .write = fd_sink, .ud = &ofd, .digest = true, .tree_fd = tfd, .lim = &lim };
		lim.max_depth = i ? 3 : 8; /* control first: within the limit */
		ofd = open(lfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		assert_int_equal(layer_write_out(ufd, &out, &res), 0);
		close(ofd);
		assert_int_equal(res.sum.max_depth, 5);
		assert_int_equal(res.tree_done, i == 0);
		assert_int_equal(unpack_summary_fits(&res.sum, &lim), i == 0);
	}
	close(ufd);
	close(tfd);
	rm_rf(base);
}

/* The layer's bytes do not depend on whether the tree is made: making it clears setuid on the
 * upper's inode, which a file's second name shares; its hardlink entry keeps the mode the recipe
 * made (control: the same upper without a tree first, then with one: one digest). */
static void test_layer_same_with_tree(void **state)
{
	_cleanup_free_ char *upper = NULL, *tree = NULL, *lfile = NULL, *a = NULL, *b = NULL;
	struct unpack_limits lim;
	struct layer_result r1, r2;
	int ufd, tfd, ofd;
	struct stat st;

	strcpy(base, "/tmp/aisb-test-layer-XXXXXX");
	assert_non_null(mkdtemp(base));
	assert_int_equal(mk("upper/su", "x\n", 04755), 0);
	assert_int_equal(mk("tree/keep", "k\n", 0644), 0);
	upper = path_join(base, "upper");
	tree = path_join(base, "tree");
	lfile = path_join(base, "layer.tar");
	a = path_join(upper, "su");
	b = path_join(upper, "tu");
	assert_int_equal(chmod(a, 04755), 0);
	assert_int_equal(link(a, b), 0);
	ufd = open(upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	tfd = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	unpack_limits_default(&lim);
	for (int i = 0; i < 2; i++) {
		struct layer_out out = { .write = fd_sink, .ud = &ofd, .digest = true, .tree_fd = i ? tfd : -1, .lim = &lim };
		ofd = open(lfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		assert_int_equal(layer_write_out(ufd, &out, i ? &r2 : &r1), 0);
		close(ofd);
	}
	assert_true(r2.tree_done);
	assert_int_equal(stat(a, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755); /* the tree took the inode, without setuid */
	assert_string_equal(r1.digest, r2.digest);
	close(ufd);
	close(tfd);
	rm_rf(base);
}

/* A path longer than the unpacker takes (UNPACK_PATH_MAX) is refused while the layer is
 * written, before its name is held anywhere; control: one level less is a layer. */
static void test_path_too_long(void **state)
{
	_cleanup_free_ char *upper = NULL, *lfile = NULL;
	char name[251];
	struct layer_result res;
	int ufd, ofd, dfd;

	strcpy(base, "/tmp/aisb-test-layer-XXXXXX");
	assert_non_null(mkdtemp(base));
	upper = path_join(base, "upper");
	lfile = path_join(base, "layer.tar");
	assert_int_equal(mkdir(upper, 0755), 0);
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	dfd = open(upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* 16 levels of 250 bytes and their slashes: 4015 bytes, within the bound */
	for (int i = 0; i < 16; i++) {
		int nfd;
		assert_int_equal(mkdirat(dfd, name, 0755), 0);
		nfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(dfd);
		dfd = nfd;
	}
	ufd = open(upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ofd = open(lfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_int_equal(layer_write(ufd, ofd, &res), 0);
	close(ofd);
	/* a 17th level: 4266 bytes */
	assert_int_equal(mkdirat(dfd, name, 0755), 0);
	ofd = open(lfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_int_equal(layer_write(ufd, ofd, &res), -EFBIG);
	close(ofd);
	close(dfd);
	close(ufd);
	rm_rf(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mtime),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_whiteout_path),
		cmocka_unit_test(test_write_and_unpack),
		cmocka_unit_test(test_empty_dirs),
		cmocka_unit_test(test_tree_is_the_unpacked_layer),
		cmocka_unit_test(test_tree_beyond_unpack_limits),
		cmocka_unit_test(test_layer_same_with_tree),
		cmocka_unit_test(test_path_too_long),
	};
	log_set_quiet(true);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
