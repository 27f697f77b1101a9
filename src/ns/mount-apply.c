// SPDX-License-Identifier: GPL-2.0-or-later
/* mount-apply.c — the one mount applier: runs a mount plan inside the new mount namespace (mounts.h) */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ns/mounts.h"
#include "ns/mounts-internal.h"
#include "ns/userns.h"
#include "util/container.h"
#include "util/log.h"
#include "util/util.h"

/* ---- apply (inside the namespaces) ------------------------------------------------------- */

static int fail(char *err, size_t errlen, int r, const char *fmt, ...) _printf_(4, 5);
static int fail(char *err, size_t errlen, int r, const char *fmt, ...)
{
	va_list ap;
	size_t n;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	n = strlen(err);
	snprintf(err + n, errlen - n, ": %s", strerror(-r));
	return r;
}

/* A copy of @fd (O_CLOEXEC, above the standard streams). Return: the fd or -errno. */
static int dup_fd(int fd)
{
	int r = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	return r < 0 ? -errno : r;
}

/* Opens a host source once, refusing a symlink anywhere in the path (the plan holds canonical
 * paths, so a symlink means something changed under us). */
static int open_source(const char *path)
{
	return openat_nofollow(AT_FDCWD, path, O_PATH, 0);
}

/* The checks every component of a target passes, on its O_PATH fd @fd: not a symlink (the last
 * one may be, with @allow_link: covered, not followed), a directory on the way and for
 * @want_dir, not a directory for a file target. Return: 0 or -errno. */
static int check_component(int fd, bool last, bool want_dir, bool allow_link)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode) && !(last && allow_link))
		return -ELOOP;
	if ((!last || want_dir) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode))
		return -ENOTDIR;
	if (last && !want_dir && S_ISDIR(st.st_mode))
		return -EISDIR;
	return 0;
}

/* Fast path of open_target(): the whole of @rel exists below @rootfd. One openat2 that refuses a
 * symlink at every component and stays below the root (the last component, O_PATH|O_NOFOLLOW, is
 * opened itself when it is a link), then the checks of the last component: instead of an openat,
 * fstat and close per component (a bind over a file of an already bound tree, the /proc masks).
 * Return: the fd, or -errno (any error: the caller walks, which creates what is missing and
 * gives the authoritative error). */
static int open_target_existing(int rootfd, const char *rel, bool want_dir, bool allow_link)
{
	struct open_how how = { .flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
				.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH };
	int fd = (int)syscall(SYS_openat2, rootfd, rel, &how, sizeof(how)), r;

	if (fd < 0)
		return -errno;
	r = check_component(fd, true, want_dir, allow_link);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* Opens (creating as needed) the target @dst below @rootfd, one component at a time, never
 * following a symlink: a link planted in the persistent home cannot redirect a mount. */
static int open_target(int rootfd, const char *dst, bool want_dir, bool allow_link)
{
	_cleanup_free_ char *copy = NULL;
	_cleanup_close_ int cur = -1; /* -1: still at @rootfd, which is the caller's */
	char *comp, *next;
	const char *rel = dst;
	int fd;

	while (*rel == '/')
		rel++;
	if (!*rel) {
		fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
		return fd < 0 ? -errno : fd;
	}
	fd = open_target_existing(rootfd, rel, want_dir, allow_link);
	if (fd >= 0)
		return fd;
	if (!(copy = strdup(rel)))
		return -ENOMEM;
	for (comp = copy; comp; comp = next) {
		int at = cur >= 0 ? cur : rootfd, r;
		bool last;

		next = strchr(comp, '/');
		if (next) {
			*next++ = 0;
			while (*next == '/')
				next++;
			if (!*next)
				next = NULL;
		}
		last = !next;
		fd = openat(at, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT) {
			if (!last || want_dir) {
				if (mkdirat(at, comp, 0755) < 0 && errno != EEXIST)
					return -errno;
			} else {
				int c = openat(at, comp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
				if (c < 0)
					return -errno;
				close(c);
			}
			fd = openat(at, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		}
		if (fd < 0)
			return -errno;
		r = check_component(fd, last, want_dir, allow_link);
		if (r < 0) {
			close(fd);
			return r;
		}
		if (cur >= 0)
			close(cur);
		cur = fd;
	}
	return TAKE_FD(cur);
}

/* The directory that holds @dst (opened below @rootfd as open_target() does) and, in *@name,
 * @dst's last component. */
static int parent_and_name(int rootfd, const char *dst, const char **name)
{
	const char *slash = strrchr(dst, '/');
	_cleanup_free_ char *parent = NULL;

	if (!slash || !slash[1])
		return -EINVAL;
	*name = slash + 1;
	parent = strndup(dst, (size_t)(slash - dst));
	if (!parent)
		return -ENOMEM;
	return open_target(rootfd, *parent ? parent : "/", true, false);
}

/* fsopen + fsconfig of the comma-separated options @data + fsmount: a detached mount of a fresh
 * @type filesystem. Return: the mount fd or -errno. */
static int fs_detached(const char *type, const char *data, unsigned attrs)
{
	_cleanup_close_ int fs = fsopen(type, FSOPEN_CLOEXEC);
	_cleanup_free_ char *opts = data ? strdup(data) : NULL;
	char *o, *next;
	int mnt;

	if (fs < 0)
		return -errno;
	if (data && !opts)
		return -ENOMEM;
	for (o = opts; o && *o; o = next) {
		char *eq;
		next = strchr(o, ',');
		if (next)
			*next++ = 0;
		eq = strchr(o, '=');
		if (eq) {
			*eq = 0;
			if (fsconfig(fs, FSCONFIG_SET_STRING, o, eq + 1, 0) < 0)
				return -errno;
		} else if (fsconfig(fs, FSCONFIG_SET_FLAG, o, NULL, 0) < 0)
			return -errno;
	}
	if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return -errno;
	mnt = fsmount(fs, FSMOUNT_CLOEXEC, attrs);
	return mnt < 0 ? -errno : mnt;
}

/* A fresh @type filesystem (options @data) attached onto @tfd. */
static int mount_fs(const char *type, const char *data, unsigned attrs, int tfd)
{
	_cleanup_close_ int mnt = fs_detached(type, data, attrs);

	if (mnt < 0)
		return mnt;
	if (move_mount(mnt, "", tfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return -errno;
	return 0;
}

/* The image root as a detached overlay mount (attached on /tmp in stage 3). Every directory is
 * opened first and named to the kernel as /proc/self/fd/N, so nothing is re-resolved by name and
 * a tmpfs later mounted on /tmp cannot hide a store or session under /tmp. `userxattr` is
 * required in a user namespace (measured: without it, removing or renaming a lower directory
 * fails with EIO). @layers: the lower and the dir of the upper and work already attached
 * (stage_layers(), a remapped root caller's), each -1 when opened here by name. Return: the
 * mount fd, or -errno with @err filled. */
static int overlay_root_create(const struct mount_op *op, const int layers[2], bool *unsupported, char *err,
			       size_t errlen)
{
	_cleanup_free_ char *dirs = op->data ? strdup(op->data) : NULL;
	_cleanup_close_ int fs = -1, lower = -1, upper = -1, work = -1, scratch = -1;
	char lp[64], up[64], wp[64];
	int mnt;

	lower = layers[0] >= 0 ? dup_fd(layers[0]) : open_source(op->src);
	if (lower < 0)
		return fail(err, errlen, lower, "cannot open the image rootfs '%s'", op->src);
	if (op->flags & MOP_F_TMPFS_UPPER) {
		/* A session that is not kept, or --ephemeral: upper and work on a private, bounded
		 * tmpfs that only this overlay references (attached only on this namespace's /tmp,
		 * below), so the run creates and removes nothing on the state dir's disk; a full
		 * upper is ENOSPC. */
		scratch = fs_detached("tmpfs", op->data, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
		if (scratch < 0)
			return fail(err, errlen, scratch, "cannot create the tmpfs for the overlay upper (%s)",
				    op->data ? op->data : "");
		/* Attached, on this (private) namespace's /tmp: overlayfs of Linux 6.1 refuses an
		 * upper in a detached mount (measured in the tests/vm guest: the run fell back to
		 * read-only; 6.18 accepts it). The lower is open already; the root tmpfs of
		 * stage_new_root() goes over it, the pivot's detach of the old root takes it away,
		 * and the overlay keeps its own private clone of it. */
		if (move_mount(scratch, "", AT_FDCWD, "/tmp", MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return fail(err, errlen, -errno, "cannot attach the tmpfs for the overlay upper");
		if (mkdirat(scratch, "upper", 0755) < 0 || mkdirat(scratch, "work", 0700) < 0)
			return fail(err, errlen, -errno, "cannot create the tmpfs overlay upper");
		upper = openat(scratch, "upper", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		work = openat(scratch, "work", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	} else {
		char *nl;
		if (!dirs || !(nl = strchr(dirs, '\n')))
			return fail(err, errlen, -EINVAL, "overlay dirs");
		*nl = 0;
		if (layers[1] >= 0) {
			/* siblings in the attached tree of their parent (mount_remap_plan()) */
			const char *us = strrchr(dirs, '/'), *ws = strrchr(nl + 1, '/');
			upper = us ? openat_nofollow(layers[1], us + 1, O_PATH | O_DIRECTORY, 0) : -EINVAL;
			work = ws ? openat_nofollow(layers[1], ws + 1, O_PATH | O_DIRECTORY, 0) : -EINVAL;
		} else {
			upper = open_source(dirs);
			work = open_source(nl + 1);
		}
	}
	if (upper < 0 || work < 0)
		return fail(err, errlen, upper < 0 ? upper : work, "cannot open the overlay upper/work dirs");
	snprintf(lp, sizeof(lp), "/proc/self/fd/%d", lower);
	snprintf(up, sizeof(up), "/proc/self/fd/%d", upper);
	snprintf(wp, sizeof(wp), "/proc/self/fd/%d", work);
	/* The kernel's refusals that mean "no unprivileged overlay with userxattr here" (no
	 * overlayfs: ENODEV; an unknown userxattr option: EINVAL; not mountable in a user
	 * namespace: EPERM) select the fallback; anything else is an error. */
	if (op->flags & MOP_F_NO_OVERLAY) { /* the test hook: the kernel's refusal, at the point it comes */
		*unsupported = true;
		return fail(err, errlen, -EOPNOTSUPP, "overlayfs refused (AISB_TEST_NO_OVERLAY)");
	}
	fs = fsopen("overlay", FSOPEN_CLOEXEC);
	if (fs < 0) {
		*unsupported = errno == ENODEV || errno == EINVAL || errno == EPERM;
		return fail(err, errlen, -errno, "overlayfs is not available");
	}
	if (fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir", lp, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "upperdir", up, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "workdir", wp, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		*unsupported = errno == ENODEV || errno == EINVAL || errno == EPERM;
		return fail(err, errlen, -errno, "cannot mount the image '%s' as an overlay (userxattr)", op->src);
	}
	mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (mnt < 0) {
		*unsupported = errno == EINVAL || errno == EPERM;
		return fail(err, errlen, -errno, "cannot mount the image overlay");
	}
	return mnt;
}

int mount_overlay_detached(const char *lower, const char *upper, const char *work, char *err, size_t errlen)
{
	_cleanup_free_ char *dirs = NULL;
	struct mount_op op = { .kind = MOP_OVERLAY, .src = (char *)lower, .dst = (char *)"/", .lower_tree = -1,
			       .dirs_tree = -1 };
	const int layers[2] = { -1, -1 };
	bool unsupported;

	if (asprintf(&dirs, "%s\n%s", upper, work) < 0)
		return fail(err, errlen, -ENOMEM, "overlay dirs");
	op.data = dirs;
	return overlay_root_create(&op, layers, &unsupported, err, errlen);
}

static bool name_in_list(const char *name, const char *list)
{
	size_t n = strlen(name);
	for (const char *p = list; p && *p;) {
		const char *c = strchr(p, ',');
		size_t l = c ? (size_t)(c - p) : strlen(p);
		if (l == n && strncmp(p, name, n) == 0)
			return true;
		p = c ? c + 1 : NULL;
	}
	return false;
}

/* The fallback's mirror: for every entry of the directory @srcfd (except the names in @skip),
 * a read-only, nosuid, nodev bind of it below @dstfd (a fresh tmpfs), or the same symlink. Other
 * file types are left out. Nothing is written below @srcfd. Return: 0 or -errno with @err. */
static int mirror_dir(int srcfd, int dstfd, const char *skip, char *err, size_t errlen)
{
	_cleanup_close_ int dfd = openat(srcfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (dfd < 0 || !(d = fdopendir(dfd)))
		return fail(err, errlen, -errno, "cannot list the image directory");
	dfd = -1; /* owned by d; NOLINT(clang-analyzer-deadcode.DeadStores): read by its _cleanup_close_, which clang-analyzer does not model */
	while ((errno = 0, de = readdir(d))) {
		struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV };
		_cleanup_close_ int tree = -1, tfd = -1;
		struct stat st;
		char target[4096];
		ssize_t n;

		if (streq(de->d_name, ".") || streq(de->d_name, "..") || name_in_list(de->d_name, skip))
			continue;
		if (fstatat(srcfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone meanwhile */
		if (S_ISLNK(st.st_mode)) {
			n = readlinkat(srcfd, de->d_name, target, sizeof(target) - 1);
			if (n < 0) {
				r = fail(err, errlen, -errno, "cannot read the image symlink '%s'", de->d_name);
				break;
			}
			target[n] = 0;
			if (symlinkat(target, dstfd, de->d_name) < 0) {
				r = fail(err, errlen, -errno, "cannot recreate the image symlink '%s'", de->d_name);
				break;
			}
			continue;
		}
		if (S_ISDIR(st.st_mode))
			r = mkdirat(dstfd, de->d_name, 0755) < 0 ? -errno : 0;
		else if (S_ISREG(st.st_mode)) {
			int c = openat(dstfd, de->d_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
			r = c < 0 ? -errno : (close(c), 0);
		} else
			continue;
		if (r < 0) {
			r = fail(err, errlen, r, "cannot create the mount point for '%s'", de->d_name);
			break;
		}
		tree = open_tree(srcfd, de->d_name, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW);
		tfd = openat(dstfd, de->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (tree < 0 || tfd < 0 ||
		    mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0 ||
		    move_mount(tree, "", tfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
			r = fail(err, errlen, -errno, "cannot bind the image's '%s' read-only", de->d_name);
			break;
		}
	}
	if (r == 0 && errno != 0)
		r = fail(err, errlen, -errno, "cannot list the image directory");
	closedir(d);
	return r;
}

/* A fresh proc refused (EPERM): a masked /proc, as container engines leave it. There is no
 * fallback: binding the container's /proc would show the sandbox every process of the
 * container and its writable /proc/sys paths, so the run refuses (77) with the engine's option,
 * the same text as doctor's proc check. Runs before the pivot, so the container's /run and /
 * still name the engine. Return: AISB_EXIT_ENFORCE. */
static int proc_refused(int e, char *err, size_t errlen)
{
	_cleanup_free_ char *mi = NULL;
	char msg[512], fix[512];

	if (read_file_at(AT_FDCWD, "/proc/self/mountinfo", 1 << 20, &mi, NULL) < 0)
		mi = NULL;
	container_proc_refusal(container_detect(NULL), e, mi ? container_proc_overmounts(mi, "/proc") : 0, msg,
			       sizeof(msg), fix, sizeof(fix));
	snprintf(err, errlen, "%s; fix: %s", msg, fix);
	return AISB_EXIT_ENFORCE;
}

/* The applier's state: one detached tree (or directory fd) per op, the new root and, for an
 * image, its overlay or the fallback's image directory, and a remapped root's attached layers
 * (the lower, the dir of the upper and work; -1: none). */
struct apply {
	const struct mount_plan *mp;
	int *trees;
	int rootfd, overlay, imagefd, layers[2];
	bool image, fallback;
	char *err;
	size_t errlen;
};

/* One MOP_BIND source opened as a detached clone of its tree into *@tree (-1 when optional and
 * absent), with its attributes set. Return: 0 or -errno with the error text. */
static int open_bind_source(const struct mount_op *op, int *tree, char *err, size_t errlen)
{
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_NOSUID };
	_cleanup_close_ int src = -1;
	struct stat st;

	if (op->flags & MOP_F_PREPARED) {
		/* made and given its attributes by the supervisor; inherited through clone */
		unsigned long long v = 0;
		if (!op->data || parse_u64(op->data, &v) < 0 || v > INT32_MAX ||
		    (*tree = fcntl((int)v, F_DUPFD_CLOEXEC, 3)) < 0)
			return fail(err, errlen, -EBADF, "the prepared tree for '%s' is missing", op->dst);
		return 0;
	}
	src = open_source(op->src);
	if (src == -ENOENT && (op->flags & MOP_F_OPTIONAL))
		return 0;
	if (src < 0)
		return fail(err, errlen, src, "cannot open mount source '%s'", op->src);
	if (fstat(src, &st) < 0)
		return fail(err, errlen, -errno, "cannot stat mount source '%s'", op->src);
	if ((op->flags & MOP_F_DEV) ? !S_ISCHR(st.st_mode)
	    : (op->flags & MOP_F_FILE) ? !S_ISREG(st.st_mode) : !S_ISDIR(st.st_mode))
		return fail(err, errlen, -EINVAL, "mount source '%s' changed type since it was checked", op->src);
	*tree = open_tree(src, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
	if (*tree < 0)
		return fail(err, errlen, -errno, "cannot clone mount '%s'", op->src);
	if (op->flags & MOP_F_RO)
		attr.attr_set |= MOUNT_ATTR_RDONLY;
	if (op->flags & MOP_F_DEV)
		attr.attr_set |= MOUNT_ATTR_NOEXEC;
	else
		attr.attr_set |= MOUNT_ATTR_NODEV;
	if (mount_setattr(*tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0)
		return fail(err, errlen, -errno, "cannot set attributes on '%s'", op->src);
	return 0;
}

/* @path relative to @dir when it is below it ("." for @dir itself), or NULL. Pure. */
static const char *below(const char *path, const char *dir)
{
	if (!dir || !path_startswith(path, dir))
		return NULL;
	path += strlen(dir);
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

/* Stage: sources. Should: open every source once, as a detached clone of its tree, with the
 * attributes it must have (read-only, nosuid, nodev) set before it is attached anywhere; a
 * mirror's directory is opened now, before a tmpfs on /tmp could hide the store. Mustn't:
 * follow a symlink in a source path, or accept a source whose type changed since the plan. */
static int stage_sources(struct apply *a)
{
	for (size_t i = 0; i < a->mp->n; i++) {
		const struct mount_op *op = &a->mp->ops[i];
		int r;

		if (op->kind == MOP_MIRROR) {
			/* absent is empty; a remapped root's image directories are read in its
			 * attached lower, which is where the store's tree is readable */
			const char *rel = a->layers[0] >= 0 ? below(op->src, a->mp->ops[0].src) : NULL;
			_cleanup_close_ int p = rel ? openat_nofollow(a->layers[0], rel, O_PATH, 0) : open_source(op->src);
			if (p >= 0)
				a->trees[i] = openat(p, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if ((p < 0 && p != -ENOENT) || (p >= 0 && a->trees[i] < 0))
				return fail(a->err, a->errlen, p < 0 ? p : -errno, "cannot open the image directory '%s'",
					    op->src);
			continue;
		}
		if (op->kind != MOP_BIND)
			continue;
		r = open_bind_source(op, &a->trees[i], a->err, a->errlen);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Stage: layers. Should: for a root whose layers the supervisor made (a remapped root caller's,
 * MOP_F_PREPARED on MOP_OVERLAY: idmapped clones, see mount_remap_plan()), attach them on the
 * directories of a small tmpfs of this namespace on /tmp, because overlayfs clones each layer's
 * mount and refuses a detached one made outside this user namespace (EPERM, measured on 6.18)
 * while it accepts it attached here; the root tmpfs of stage_new_root() covers them and the
 * pivot's detach takes them away (the overlay keeps its private clones). Mustn't: open a layer
 * by name (the store and the session dir are root's, not traversable by this id). */
static int stage_layers(struct apply *a)
{
	const struct mount_op *op0 = &a->mp->ops[0];
	static const char *const names[2] = { "lower", "dirs" };
	const int trees[2] = { op0->lower_tree, op0->dirs_tree };
	_cleanup_close_ int anchor = -1;

	if (!(op0->flags & MOP_F_PREPARED))
		return 0;
	anchor = fs_detached("tmpfs", "mode=0700,size=65536", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	if (anchor < 0)
		return fail(a->err, a->errlen, anchor, "cannot create the tmpfs for the image's layers");
	if (move_mount(anchor, "", AT_FDCWD, "/tmp", MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return fail(a->err, a->errlen, -errno, "cannot attach the tmpfs for the image's layers");
	for (size_t i = 0; i < ELEMENTSOF(trees); i++) {
		if (trees[i] < 0)
			continue;
		if (mkdirat(anchor, names[i], 0700) < 0 ||
		    move_mount(trees[i], "", anchor, names[i], MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return fail(a->err, a->errlen, -errno, "cannot attach the image's %s layer", names[i]);
		/* the fd now names the attached mount */
		if ((a->layers[i] = dup_fd(trees[i])) < 0)
			return fail(a->err, a->errlen, a->layers[i], "cannot keep the image's %s layer", names[i]);
	}
	return 0;
}

/* Stage: image root. Should: make the image's overlay as a detached mount; where the kernel
 * refuses an unprivileged overlay (or MOP_F_NO_OVERLAY says it did), use the image for the
 * read-only fallback instead (opened before the overlay is tried), unless MOP_F_NO_FALLBACK makes that refusal an error (a build
 * step writes into its upper or not at all). Mustn't: take the fallback for any other error. */
static int stage_image_root(struct apply *a)
{
	const struct mount_op *op0 = &a->mp->ops[0];
	bool unsupported = false, may_fall_back = !(op0->flags & MOP_F_NO_FALLBACK);
	/* opened before the overlay is tried: a tmpfs upper is attached on /tmp on the way
	 * (overlay_root_create()), and would hide an image under /tmp from a second open by name */
	_cleanup_close_ int p = !may_fall_back ? -ENOENT : a->layers[0] >= 0 ? dup_fd(a->layers[0]) : open_source(op0->src);

	if (may_fall_back && p < 0)
		return fail(a->err, a->errlen, p, "cannot open the image rootfs '%s'", op0->src);
	if ((a->overlay = overlay_root_create(op0, a->layers, &unsupported, a->err, a->errlen)) < 0) {
		if (!unsupported || !may_fall_back)
			return a->overlay;
		a->fallback = true;
		a->err[0] = 0;
		if ((a->imagefd = openat(p, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			return fail(a->err, a->errlen, -errno, "cannot open the image rootfs '%s'", op0->src);
	}
	return 0;
}

/* Stage: new root. Should: mount a tmpfs on the (now private) /tmp as the new root, with an
 * image's overlay on top of it (its upper the kept session's dir, the build's, or a directory of
 * a bounded tmpfs of its own) or the fallback's mirror of the image in it. Mustn't: open a
 * source by name after this (the tmpfs hides whatever was under /tmp). */
static int stage_new_root(struct apply *a)
{
	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
		return fail(a->err, a->errlen, -errno, "cannot mount the root tmpfs");
	if (a->overlay >= 0) {
		_cleanup_close_ int tfd = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (tfd < 0 || move_mount(a->overlay, "", tfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
			return fail(a->err, a->errlen, -errno, "cannot attach the image overlay");
	}
	a->rootfd = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (a->rootfd < 0)
		return fail(a->err, a->errlen, -errno, "cannot open the new root");
	if (a->fallback)
		return mirror_dir(a->imagefd, a->rootfd, MOUNT_FALLBACK_ROOT_SKIP, a->err, a->errlen);
	return 0;
}

int mount_container_proc_detached(void)
{
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC };
	_cleanup_close_ int tree = open_tree(AT_FDCWD, "/proc", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);

	if (tree < 0 || mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0)
		return -errno;
	return TAKE_FD(tree);
}

/* --container-proc, chosen (plan.h): the fresh proc was refused next to the container's masks,
 * so the caller's /proc (the container's, with its masks, recursively) is bound at @tfd, nosuid,
 * nodev, noexec; procfs_stage() then covers it as it covers a fresh one. Said on stderr with
 * what it exposes. Runs before the pivot. */
static int bind_container_proc(const struct apply *a, int tfd)
{
	_cleanup_close_ int tree = mount_container_proc_detached();

	if (tree < 0)
		return fail(a->err, a->errlen, tree, "cannot bind the container's /proc (--container-proc)");
	if (move_mount(tree, "", tfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return fail(a->err, a->errlen, -errno, "cannot bind the container's /proc (--container-proc)");
	log_warn("a fresh /proc cannot be mounted here (masked): the sandbox uses the container's /proc "
		 "(--container-proc): " CONTAINER_PROC_EXPOSURE);
	return 0;
}

/* A fresh tmpfs, proc or devpts at @op->dst. */
static int apply_fs(const struct apply *a, const struct mount_op *op)
{
	static const char *const types[] = { [MOP_TMPFS] = "tmpfs", [MOP_PROC] = "proc", [MOP_DEVPTS] = "devpts" };
	/* devpts must keep dev: its nodes are the ptys we open */
	unsigned attrs = MOUNT_ATTR_NOSUID | (op->kind == MOP_DEVPTS ? 0 : MOUNT_ATTR_NODEV);
	_cleanup_close_ int tfd = -1;
	int r;

	if (op->kind != MOP_TMPFS || streq(op->dst, "/dev") || streq(op->dst, "/dev/shm"))
		attrs |= MOUNT_ATTR_NOEXEC;
	if (op->flags & MOP_F_RO)
		attrs |= MOUNT_ATTR_RDONLY;
	tfd = open_target(a->rootfd, op->dst, true, false);
	if (tfd < 0)
		return fail(a->err, a->errlen, tfd, "cannot prepare mount point '%s'", op->dst);
	r = mount_fs(types[op->kind], op->data, attrs, tfd);
	if (r < 0 && op->kind == MOP_PROC)
		/* hidepid needs 5.8; the pid namespace is what hides the host anyway */
		r = mount_fs("proc", NULL, attrs, tfd);
	if (r == -EPERM && op->kind == MOP_PROC && (op->flags & MOP_F_CONTAINER_PROC))
		return bind_container_proc(a, tfd);
	if (r == -EPERM && op->kind == MOP_PROC)
		return proc_refused(-r, a->err, a->errlen);
	if (r < 0)
		return fail(a->err, a->errlen, r, "cannot mount %s on '%s'", types[op->kind], op->dst);
	return 0;
}

/* The fallback's tmpfs at @op->dst holding read-only binds of the image directory @tree's
 * entries. */
static int apply_mirror(const struct apply *a, const struct mount_op *op, int tree)
{
	_cleanup_close_ int tfd = -1, mfd = -1;
	int r = 0;

	tfd = open_target(a->rootfd, op->dst, true, false);
	if (tfd < 0 || (r = mount_fs("tmpfs", "mode=0755", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, tfd)) < 0)
		return fail(a->err, a->errlen, tfd < 0 ? tfd : r, "cannot mount the tmpfs for '%s'", op->dst);
	mfd = open_target(a->rootfd, op->dst, true, false);
	if (mfd < 0)
		return fail(a->err, a->errlen, mfd, "cannot open '%s'", op->dst);
	return tree >= 0 ? mirror_dir(tree, mfd, op->data, a->err, a->errlen) : 0;
}

/* Operation @i of the plan, below the new root. */
static int apply_op(const struct apply *a, size_t i)
{
	const struct mount_op *op = &a->mp->ops[i];
	_cleanup_close_ int tfd = -1;
	const char *name;

	switch (op->kind) {
	case MOP_BIND:
		if (a->trees[i] < 0)
			return 0; /* optional and absent */
		tfd = open_target(a->rootfd, op->dst, !(op->flags & (MOP_F_FILE | MOP_F_DEV)), op->flags & MOP_F_OVER_LINK);
		if (tfd < 0)
			return fail(a->err, a->errlen, tfd, "cannot prepare mount point '%s'", op->dst);
		if (move_mount(a->trees[i], "", tfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
			return fail(a->err, a->errlen, -errno, "cannot mount '%s' on '%s'", op->src, op->dst);
		return 0;
	case MOP_TMPFS:
	case MOP_PROC:
	case MOP_DEVPTS:
		return apply_fs(a, op);
	case MOP_SYMLINK:
		tfd = parent_and_name(a->rootfd, op->dst, &name);
		if (tfd < 0 || symlinkat(op->src, tfd, name) < 0)
			return fail(a->err, a->errlen, tfd < 0 ? tfd : -errno, "cannot create symlink '%s'", op->dst);
		return 0;
	case MOP_OVERLAY:
		return 0; /* mounted by stage_new_root() */
	case MOP_MIRROR:
		return apply_mirror(a, op, a->trees[i]);
	case MOP_MKDIR:
		tfd = open_target(a->rootfd, op->dst, true, false);
		if (tfd < 0)
			return fail(a->err, a->errlen, tfd, "cannot create directory '%s'", op->dst);
		return 0;
	case MOP_KIND_MAX:
		break;
	}
	return fail(a->err, a->errlen, -EINVAL, "unknown mount operation");
}

/* Stage: operations. Should: apply the plan's operations in order, every target resolved below
 * the new root one component at a time without following a symlink (except a final one a
 * MOP_F_OVER_LINK op covers), then make the fallback's mirrors read-only. Mustn't: apply a
 * MOP_F_FALLBACK op when the overlay was mounted. */
static int stage_ops(struct apply *a)
{
	int r;

	for (size_t i = 0; i < a->mp->n; i++) {
		if ((a->mp->ops[i].flags & MOP_F_FALLBACK) && !a->fallback)
			continue;
		r = apply_op(a, i);
		if (r != 0)
			return r;
	}
	/* The fallback's mirrors are complete: nothing more may be created in them. */
	for (size_t i = 0; a->fallback && i < a->mp->n; i++) {
		struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };
		_cleanup_close_ int tfd = -1;
		if (a->mp->ops[i].kind != MOP_MIRROR)
			continue;
		tfd = open_target(a->rootfd, a->mp->ops[i].dst, true, false);
		if (tfd < 0 || mount_setattr(tfd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
			return fail(a->err, a->errlen, tfd < 0 ? tfd : -errno, "cannot make '%s' read-only",
				    a->mp->ops[i].dst);
	}
	return 0;
}

/* Stage: pivot. Should: pivot_root into the new root, detach the old one lazily and make /
 * itself read-only, nosuid and nodev (an image root on overlay stays writable: writes land in
 * the upper). Mustn't: leave any path to the old root. */
static int stage_pivot(const struct apply *a)
{
	struct mount_attr attr = { .attr_set = (a->image && !a->fallback ? 0 : MOUNT_ATTR_RDONLY) | MOUNT_ATTR_NOSUID |
					       MOUNT_ATTR_NODEV };

	if (fchdir(a->rootfd) < 0 || syscall(SYS_pivot_root, ".", ".") < 0)
		return fail(a->err, a->errlen, -errno, "cannot pivot_root into the new root");
	if (umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		return fail(a->err, a->errlen, -errno, "cannot detach the old root");
	if (mount_setattr(AT_FDCWD, "/", 0, &attr, sizeof(attr)) < 0)
		return fail(a->err, a->errlen, -errno, "cannot make the root read-only");
	return 0;
}

int mount_plan_apply(const struct mount_plan *mp, bool *fell_back, char *err, size_t errlen)
{
	_cleanup_free_ int *trees = calloc(mp->n ? mp->n : 1, sizeof(int));
	struct apply a = { .mp = mp, .trees = trees, .rootfd = -1, .overlay = -1, .imagefd = -1, .layers = { -1, -1 },
			   .image = mp->n && mp->ops[0].kind == MOP_OVERLAY, .err = err, .errlen = errlen };
	int r;

	*fell_back = false;
	if (!trees)
		return fail(err, errlen, -ENOMEM, "mount plan");
	for (size_t i = 0; i < mp->n; i++)
		trees[i] = -1;

	/* Stage: propagation. Nothing we mount may propagate back to the host. */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return fail(err, errlen, -errno, "cannot make the mount tree private");
	r = a.image ? stage_layers(&a) : 0;
	if (r == 0)
		r = stage_sources(&a);
	if (r == 0 && a.image)
		r = stage_image_root(&a);
	if (r == 0)
		r = stage_new_root(&a);
	if (r == 0)
		r = stage_ops(&a);
	if (r == 0)
		r = stage_pivot(&a);

	for (size_t i = 0; i < mp->n; i++)
		if (trees[i] >= 0)
			close(trees[i]);
	if (a.rootfd >= 0)
		close(a.rootfd);
	if (a.overlay >= 0)
		close(a.overlay);
	if (a.imagefd >= 0)
		close(a.imagefd);
	for (size_t i = 0; i < ELEMENTSOF(a.layers); i++)
		if (a.layers[i] >= 0)
			close(a.layers[i]);
	if (r == 0)
		*fell_back = a.fallback;
	return r;
}
