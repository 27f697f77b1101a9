// SPDX-License-Identifier: GPL-2.0-or-later
/* ovl-idmap.c — what overlayfs accepts from a root caller's idmapped trees (issue 22, docs/measurements.md).
 *
 *   ovl-idmap DIR [INSIDE_ID]    (as real root; DIR on the filesystem to test, made afresh)
 *
 * Makes DIR/lower (a 0600 file, two dirs, root's) and DIR/ov/{upper,work}, idmapped clones of
 * DIR/lower (read-only) and DIR/ov (read-write) through a user namespace mapping 0 <-> 1879048192,
 * then, in a child in a new user namespace mapping INSIDE_ID (default 1000; 0 for a build step)
 * to 1879048192 and its mount namespace, tries an overlay with userxattr from: V1 the detached
 * lower and a tmpfs upper made inside; V2 the lower attached inside; V3 lower and upper attached
 * inside; V4 both detached; V5 (real root) an overlay made plainly, then idmapped itself. For each
 * that mounts: the owner inside of a root file, a read of it, a create, a copy-up, a mkdir and an
 * rmdir of a lower dir; after V3 the owners on disk. Build: cc -o ovl-idmap bench/ovl-idmap.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define X 1879048192u
static int open_tree_(int d, const char *p, unsigned f) { return syscall(SYS_open_tree, d, p, f); }
static int setattr_(int d, const char *p, unsigned f, struct mount_attr *a) { return syscall(SYS_mount_setattr, d, p, f, a, sizeof(*a)); }
static int move_(int fd, const char *fp, int td, const char *tp, unsigned f) { return syscall(SYS_move_mount, fd, fp, td, tp, f); }
static int fsopen_(const char *n, unsigned f) { return syscall(SYS_fsopen, n, f); }
static int fsconfig_(int fd, unsigned c, const char *k, const void *v, int a) { return syscall(SYS_fsconfig, fd, c, k, v, a); }
static int fsmount_(int fd, unsigned f, unsigned a) { return syscall(SYS_fsmount, fd, f, a); }

static void wr(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	if (fd < 0 || write(fd, s, strlen(s)) < 0)
		fprintf(stderr, "write %s: %m\n", path);
	close(fd);
}

static void maps(pid_t pid, unsigned in, unsigned host)
{
	char p[64], s[64];
	snprintf(s, sizeof s, "%u %u 1\n", in, host);
	snprintf(p, sizeof p, "/proc/%d/uid_map", pid); wr(p, s);
	snprintf(p, sizeof p, "/proc/%d/gid_map", pid); wr(p, s);
}

static int idmap_ns(void)
{
	int sp[2]; char c;
	pipe(sp);
	fflush(stdout);
	pid_t pid = fork();
	if (!pid) { unshare(CLONE_NEWUSER); write(sp[1], "x", 1); pause(); _exit(0); }
	read(sp[0], &c, 1);
	maps(pid, 0, X);
	char p[64]; snprintf(p, sizeof p, "/proc/%d/ns/user", pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	kill(pid, 9); waitpid(pid, 0, 0);
	return fd;
}

static int tree(const char *path, int ns, int ro)
{
	struct mount_attr a = { .attr_set = MOUNT_ATTR_IDMAP | (ro ? MOUNT_ATTR_RDONLY : 0), .userns_fd = ns };
	int t = open_tree_(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (t < 0) { perror("open_tree"); exit(1); }
	if (ns >= 0 && setattr_(t, "", AT_EMPTY_PATH | AT_RECURSIVE, &a) < 0) { perror("setattr idmap"); exit(1); }
	return t;
}

static int overlay(const char *l, const char *u, const char *w)
{
	int fs = fsopen_("overlay", FSOPEN_CLOEXEC);
	if (fsconfig_(fs, FSCONFIG_SET_STRING, "lowerdir", l, 0) < 0) return fprintf(stderr, "  lowerdir: %m\n"), -1;
	if (fsconfig_(fs, FSCONFIG_SET_STRING, "upperdir", u, 0) < 0) return fprintf(stderr, "  upperdir: %m\n"), -1;
	if (fsconfig_(fs, FSCONFIG_SET_STRING, "workdir", w, 0) < 0) return fprintf(stderr, "  workdir: %m\n"), -1;
	if (fsconfig_(fs, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) < 0) return fprintf(stderr, "  userxattr: %m\n"), -1;
	if (fsconfig_(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		char buf[512]; ssize_t n;
		int e = errno;
		while ((n = read(fs, buf, sizeof buf - 1)) > 0) { buf[n] = 0; fprintf(stderr, "  kernel: %s\n", buf); }
		errno = e;
		return fprintf(stderr, "  create: %m\n"), -1;
	}
	int m = fsmount_(fs, FSMOUNT_CLOEXEC, 0);
	if (m < 0) return fprintf(stderr, "  fsmount: %m\n"), -1;
	return m;
}

static void look(int m, const char *what)
{
	struct stat st;
	char b[64];
	printf("  [%s] ", what);
	if (fstatat(m, "f0600", &st, 0) == 0) printf("f0600 %u:%u ", st.st_uid, st.st_gid); else printf("stat: %m ");
	int fd = openat(m, "f0600", O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, b, sizeof b - 1) : -1;
	printf("read %s ", n > 0 ? "ok" : strerror(errno));
	if (fd >= 0) close(fd);
	fd = openat(m, "new", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	printf("create %s ", fd >= 0 ? "ok" : strerror(errno));
	if (fd >= 0) { close(fd); fstatat(m, "new", &st, 0); printf("new %u:%u ", st.st_uid, st.st_gid); }
	fd = openat(m, "f0600", O_WRONLY | O_APPEND);
	printf("copyup-append %s ", fd >= 0 && write(fd, "y\n", 2) == 2 ? "ok" : strerror(errno));
	if (fd >= 0) close(fd);
	printf("mkdir %s ", mkdirat(m, "dir/sub", 0755) == 0 ? "ok" : strerror(errno));
	printf("rmdir-lower %s ", unlinkat(m, "dir2", AT_REMOVEDIR) == 0 ? "ok" : strerror(errno));
	printf("\n");
}

static const char *base;

static int rm_one(const char *p, const struct stat *st, int type, struct FTW *f)
{
	(void)st; (void)type; (void)f;
	return remove(p) < 0 && errno != ENOENT ? -1 : 0;
}

static void mk(const char *rel, mode_t mode)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", base, rel);
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		fprintf(stderr, "mkdir %s: %m\n", p);
	chmod(p, mode);
}

static void reset(void)
{
	char p[512];
	int fd;
	nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mk("", 0755); mk("lower", 0755); mk("lower/dir", 0755); mk("lower/dir2", 0755);
	mk("ov", 0755); mk("ov/upper", 0755); mk("ov/work", 0700);
	snprintf(p, sizeof p, "%s/lower/f0600", base);
	fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	if (fd < 0 || write(fd, "secret\n", 7) != 7)
		fprintf(stderr, "%s: %m\n", p);
	close(fd);
}

static void owners_on_disk(void)
{
	static const char *const rel[] = { "ov/upper/new", "ov/upper/f0600", "ov/upper/dir/sub" };
	for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
		char p[512];
		struct stat st;
		snprintf(p, sizeof p, "%s/%s", base, rel[i]);
		if (stat(p, &st) == 0)
			printf("    on disk: %s %u:%u\n", rel[i], st.st_uid, st.st_gid);
	}
}

int main(int argc, char **argv)
{
	char lower[512], ov[512], up[512], wk[512];
	unsigned in = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 1000;
	int ns;

	if (argc < 2)
		return fprintf(stderr, "usage: ovl-idmap DIR [INSIDE_ID]\n"), 2;
	base = argv[1];
	snprintf(lower, sizeof lower, "%s/lower", base);
	snprintf(ov, sizeof ov, "%s/ov", base);
	snprintf(up, sizeof up, "%s/ov/upper", base);
	snprintf(wk, sizeof wk, "%s/ov/work", base);
	ns = idmap_ns();
	printf("inside id %u <-> host %u\n", in, X);
	for (int v = 1; v <= 4; v++) {
		reset();
		int lt = tree(lower, ns, 1), ut = tree(ov, ns, 0);
		int sp[2]; char c;
		pipe(sp);
		fflush(stdout);
		pid_t pid = syscall(SYS_clone, CLONE_NEWUSER | CLONE_NEWNS | SIGCHLD, NULL, NULL, NULL, NULL);
		if (pid == 0) {
			char l[64], u[64], w[64];
			read(sp[0], &c, 1);
			setresgid(in, in, in); if (setresuid(in, in, in) < 0) perror("setresuid");
			mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
			if (v == 1) {
				printf("V1: detached idmapped lower, tmpfs upper made inside\n");
				int t = fsopen_("tmpfs", 0); fsconfig_(t, FSCONFIG_CMD_CREATE, 0, 0, 0); int tm = fsmount_(t, 0, 0);
				move_(tm, "", AT_FDCWD, "/mnt", MOVE_MOUNT_F_EMPTY_PATH);
				mkdir("/mnt/u", 0755); mkdir("/mnt/w", 0755);
				snprintf(l, sizeof l, "/proc/self/fd/%d", lt);
				int m = overlay(l, "/mnt/u", "/mnt/w");
				if (m >= 0) look(m, "v1");
			} else if (v == 2) {
				printf("V2: idmapped lower attached on /media, tmpfs upper made inside\n");
				if (move_(lt, "", AT_FDCWD, "/media", MOVE_MOUNT_F_EMPTY_PATH) < 0) perror("attach lower");
				int t = fsopen_("tmpfs", 0); fsconfig_(t, FSCONFIG_CMD_CREATE, 0, 0, 0); int tm = fsmount_(t, 0, 0);
				move_(tm, "", AT_FDCWD, "/mnt", MOVE_MOUNT_F_EMPTY_PATH);
				mkdir("/mnt/u", 0755); mkdir("/mnt/w", 0755);
				int m = overlay("/media", "/mnt/u", "/mnt/w");
				if (m >= 0) look(m, "v2");
			} else if (v == 3) {
				printf("V3: idmapped lower on /media, idmapped ext4 upper on /mnt\n");
				if (move_(lt, "", AT_FDCWD, "/media", MOVE_MOUNT_F_EMPTY_PATH) < 0) perror("attach lower");
				if (move_(ut, "", AT_FDCWD, "/mnt", MOVE_MOUNT_F_EMPTY_PATH) < 0) perror("attach upper");
				int m = overlay("/media", "/mnt/upper", "/mnt/work");
				if (m >= 0) look(m, "v3");
			} else if (v == 4) {
				printf("V4: idmapped lower and upper detached\n");
				snprintf(l, sizeof l, "/proc/self/fd/%d", lt);
				snprintf(u, sizeof u, "/proc/self/fd/%d/upper", ut);
				snprintf(w, sizeof w, "/proc/self/fd/%d/work", ut);
				int m = overlay(l, u, w);
				if (m >= 0) look(m, "v4");
			}
			fflush(stdout);
			_exit(0);
		}
		maps(pid, in, X);
		write(sp[1], "g", 1);
		waitpid(pid, 0, 0);
		close(lt); close(ut);
		owners_on_disk();
	}
	/* V5: idmap the overlay mount itself (made by real root) */
	reset();
	{
		printf("V5: overlay made by root, then idmapped (mount_setattr on the overlay)\n");
		int m = overlay(lower, up, wk);
		struct mount_attr a = { .attr_set = MOUNT_ATTR_IDMAP, .userns_fd = ns };
		if (m >= 0)
			printf("  setattr idmap on detached overlay: %s\n", setattr_(m, "", AT_EMPTY_PATH, &a) == 0 ? "ok" : strerror(errno));
		int t = open_tree_(m, "", OPEN_TREE_CLONE | AT_EMPTY_PATH);
		printf("  clone of it: %s; ", t >= 0 ? "ok" : strerror(errno));
		if (t >= 0) printf("setattr idmap: %s\n", setattr_(t, "", AT_EMPTY_PATH, &a) == 0 ? "ok" : strerror(errno));
	}
	return 0;
}
