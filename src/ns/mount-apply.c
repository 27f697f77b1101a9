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

#include "agents/bridge.h"
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

/* Opens a host source once, refusing a symlink anywhere in the path (the plan holds canonical
 * paths, so a symlink means something changed under us). */
static int open_source(const char *path)
{
	return openat_nofollow(AT_FDCWD, path, O_PATH, 0);
}

/* Opens (creating as needed) the target @dst below @rootfd, one component at a time, never
 * following a symlink: a link planted in the persistent home cannot redirect a mount. */
static int open_target(int rootfd, const char *dst, bool want_dir, bool allow_link)
{
	_cleanup_free_ char *copy = strdup(dst);
	_cleanup_close_ int cur = -1;
	char *comp, *next;
	struct stat st;

	if (!copy)
		return -ENOMEM;
	cur = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
	if (cur < 0)
		return -errno;
	for (comp = copy; *comp == '/'; comp++)
		;
	if (!*comp)
		return TAKE_FD(cur);
	for (; comp; comp = next) {
		bool last;
		int fd;

		next = strchr(comp, '/');
		if (next) {
			*next++ = 0;
			while (*next == '/')
				next++;
			if (!*next)
				next = NULL;
		}
		last = !next;
		fd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT) {
			if (!last || want_dir) {
				if (mkdirat(cur, comp, 0755) < 0 && errno != EEXIST)
					return -errno;
			} else {
				int c = openat(cur, comp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
				if (c < 0)
					return -errno;
				close(c);
			}
			fd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		}
		if (fd < 0)
			return -errno;
		if (fstat(fd, &st) < 0) {
			close(fd);
			return -errno;
		}
		if (S_ISLNK(st.st_mode) && !(last && allow_link)) {
			close(fd);
			return -ELOOP;
		}
		if ((!last || want_dir) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) {
			close(fd);
			return -ENOTDIR;
		}
		if (last && !want_dir && S_ISDIR(st.st_mode)) {
			close(fd);
			return -EISDIR;
		}
		close(cur);
		cur = fd;
	}
	return TAKE_FD(cur);
}

static int parent_and_name(int rootfd, const char *dst, const char **name)
{
	_cleanup_free_ char *parent = strdup(dst);
	char *slash;
	if (!parent)
		return -ENOMEM;
	slash = strrchr(parent, '/');
	if (!slash || !slash[1])
		return -EINVAL;
	*name = dst + (slash - parent) + 1;
	*slash = 0;
	return open_target(rootfd, *parent ? parent : "/", true, false);
}

/* fsopen + fsconfig + fsmount + move_mount onto @tfd. */
static int mount_fs(const char *type, const char *data, unsigned attrs, int tfd)
{
	_cleanup_close_ int fs = fsopen(type, FSOPEN_CLOEXEC);
	_cleanup_close_ int mnt = -1;
	_cleanup_free_ char *opts = data ? strdup(data) : NULL;
	char *o, *next;

	if (fs < 0)
		return -errno;
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
	if (mnt < 0)
		return -errno;
	if (move_mount(mnt, "", tfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return -errno;
	return 0;
}

/* The image root as a detached overlay mount (attached on /tmp in stage 3). Every directory is
 * opened first and named to the kernel as /proc/self/fd/N, so nothing is re-resolved by name and
 * a tmpfs later mounted on /tmp cannot hide a store or session under /tmp. `userxattr` is
 * required in a user namespace (measured: without it, removing or renaming a lower directory
 * fails with EIO). Return: the mount fd, or -errno with @err filled. */
static int overlay_root_create(const struct mount_op *op, bool *unsupported, char *err, size_t errlen)
{
	_cleanup_free_ char *dirs = op->data ? strdup(op->data) : NULL;
	_cleanup_close_ int fs = -1, lower = -1, upper = -1, work = -1, scratch = -1;
	char lp[64], up[64], wp[64];
	int mnt;

	lower = open_source(op->src);
	if (lower < 0)
		return fail(err, errlen, lower, "cannot open the image rootfs '%s'", op->src);
	if (op->data) {
		char *nl;
		if (!dirs || !(nl = strchr(dirs, '\n')))
			return fail(err, errlen, -EINVAL, "overlay dirs");
		*nl = 0;
		upper = open_source(dirs);
		work = open_source(nl + 1);
	} else {
		/* --ephemeral: upper and work on a private tmpfs that only this overlay references */
		_cleanup_close_ int tfs = fsopen("tmpfs", FSOPEN_CLOEXEC);
		if (tfs < 0 || fsconfig(tfs, FSCONFIG_SET_STRING, "mode", "0755", 0) < 0 ||
		    fsconfig(tfs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 ||
		    (scratch = fsmount(tfs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)) < 0)
			return fail(err, errlen, -errno, "cannot create the tmpfs for the overlay upper");
		if (mkdirat(scratch, "upper", 0755) < 0 || mkdirat(scratch, "work", 0700) < 0)
			return fail(err, errlen, -errno, "cannot create the tmpfs overlay upper");
		upper = openat(scratch, "upper", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		work = openat(scratch, "work", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (upper < 0 || work < 0)
		return fail(err, errlen, upper < 0 ? upper : work, "cannot open the overlay upper/work dirs");
	snprintf(lp, sizeof(lp), "/proc/self/fd/%d", lower);
	snprintf(up, sizeof(up), "/proc/self/fd/%d", upper);
	snprintf(wp, sizeof(wp), "/proc/self/fd/%d", work);
	/* The kernel's refusals that mean "no unprivileged overlay with userxattr here" (no
	 * overlayfs: ENODEV; an unknown userxattr option: EINVAL; not mountable in a user
	 * namespace: EPERM) select the fallback; anything else is an error. */
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
	dfd = -1; /* owned by d */
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
	char msg[384], fix[384];

	if (read_file_at(AT_FDCWD, "/proc/self/mountinfo", 1 << 20, &mi, NULL) < 0)
		mi = NULL;
	container_proc_refusal(container_detect(NULL), e, mi ? container_proc_overmounts(mi, "/proc") : 0, msg,
			       sizeof(msg), fix, sizeof(fix));
	snprintf(err, errlen, "%s; fix: %s", msg, fix);
	return AISB_EXIT_ENFORCE;
}

int mount_plan_apply(const struct mount_plan *mp, bool *fell_back, char *err, size_t errlen)
{
	_cleanup_free_ int *trees = calloc(mp->n ? mp->n : 1, sizeof(int));
	_cleanup_close_ int rootfd = -1, overlay = -1, imagefd = -1;
	bool image = mp->n && mp->ops[0].kind == MOP_OVERLAY, fallback = false;
	int r = 0;

	*fell_back = false;
	if (!trees)
		return fail(err, errlen, -ENOMEM, "mount plan");
	for (size_t i = 0; i < mp->n; i++)
		trees[i] = -1;

	/* Stage 1: nothing we mount may propagate back to the host. */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return fail(err, errlen, -errno, "cannot make the mount tree private");

	/* Stage 2: open every source once, as a detached clone of its tree, with the attributes it
	 * must have (read-only, nosuid, nodev) set before it is attached anywhere. */
	for (size_t i = 0; i < mp->n; i++) {
		const struct mount_op *op = &mp->ops[i];
		struct mount_attr attr = { .attr_set = MOUNT_ATTR_NOSUID };
		_cleanup_close_ int src = -1;
		struct stat st;

		if (op->kind == MOP_MIRROR) {
			/* opened now: a tmpfs on /tmp (stage 3) could hide the store; absent is empty */
			_cleanup_close_ int p = open_source(op->src);
			if (p >= 0)
				trees[i] = openat(p, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if ((p < 0 && p != -ENOENT) || (p >= 0 && trees[i] < 0)) {
				r = fail(err, errlen, p < 0 ? p : -errno, "cannot open the image directory '%s'", op->src);
				goto out;
			}
			continue;
		}
		if (op->kind != MOP_BIND)
			continue;
		if (op->flags & MOP_F_PREPARED) {
			/* made and given its attributes by the supervisor; inherited through clone */
			unsigned long long v = 0;
			if (!op->data || parse_u64(op->data, &v) < 0 || v > INT32_MAX ||
			    (trees[i] = fcntl((int)v, F_DUPFD_CLOEXEC, 3)) < 0) {
				r = fail(err, errlen, -EBADF, "the prepared tree for '%s' is missing", op->dst);
				goto out;
			}
			continue;
		}
		src = open_source(op->src);
		if (src == -ENOENT && (op->flags & MOP_F_OPTIONAL))
			continue;
		if (src < 0) {
			r = fail(err, errlen, src, "cannot open mount source '%s'", op->src);
			goto out;
		}
		if (fstat(src, &st) < 0) {
			r = fail(err, errlen, -errno, "cannot stat mount source '%s'", op->src);
			goto out;
		}
		if ((op->flags & MOP_F_DEV) ? !S_ISCHR(st.st_mode)
		    : (op->flags & MOP_F_FILE) ? !S_ISREG(st.st_mode) : !S_ISDIR(st.st_mode)) {
			r = fail(err, errlen, -EINVAL, "mount source '%s' changed type since it was checked", op->src);
			goto out;
		}
		trees[i] = open_tree(src, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
		if (trees[i] < 0) {
			r = fail(err, errlen, -errno, "cannot clone mount '%s'", op->src);
			goto out;
		}
		if (op->flags & MOP_F_RO)
			attr.attr_set |= MOUNT_ATTR_RDONLY;
		if (op->flags & MOP_F_DEV)
			attr.attr_set |= MOUNT_ATTR_NOEXEC;
		else
			attr.attr_set |= MOUNT_ATTR_NODEV;
		if (mount_setattr(trees[i], "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0) {
			r = fail(err, errlen, -errno, "cannot set attributes on '%s'", op->src);
			goto out;
		}
	}

	if (image) {
		bool unsupported = false;
		if (mp->ops[0].flags & MOP_F_NO_OVERLAY)
			fallback = true;
		else if ((overlay = overlay_root_create(&mp->ops[0], &unsupported, err, errlen)) < 0) {
			if (!unsupported) {
				r = overlay;
				goto out;
			}
			fallback = true;
			err[0] = 0;
		}
		if (fallback) {
			_cleanup_close_ int p = open_source(mp->ops[0].src);
			if (p >= 0 && (imagefd = openat(p, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
				p = -errno;
			if (p < 0) {
				r = fail(err, errlen, p, "cannot open the image rootfs '%s'", mp->ops[0].src);
				goto out;
			}
		}
	}

	/* Stage 3: the new root, a tmpfs on the (now private) /tmp; every source is already open.
	 * With an image, an overlay goes on top of that tmpfs: its lower is the image, its upper the
	 * session's dir or a directory of the tmpfs below (--ephemeral). */
	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0) {
		r = fail(err, errlen, -errno, "cannot mount the root tmpfs");
		goto out;
	}
	if (overlay >= 0) {
		_cleanup_close_ int tfd = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (tfd < 0 || move_mount(overlay, "", tfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
			r = fail(err, errlen, -errno, "cannot attach the image overlay");
			goto out;
		}
	}
	rootfd = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (rootfd < 0) {
		r = fail(err, errlen, -errno, "cannot open the new root");
		goto out;
	}
	if (fallback) {
		r = mirror_dir(imagefd, rootfd, MOUNT_FALLBACK_ROOT_SKIP, err, errlen);
		if (r < 0)
			goto out;
	}

	/* Stage 4: the operations, in order. Targets are resolved below the new root without
	 * following symlinks. */
	for (size_t i = 0; i < mp->n; i++) {
		const struct mount_op *op = &mp->ops[i];
		_cleanup_close_ int tfd = -1;
		const char *name;

		if ((op->flags & MOP_F_FALLBACK) && !fallback)
			continue;
		switch (op->kind) {
		case MOP_BIND:
			if (trees[i] < 0)
				continue; /* optional and absent */
			tfd = open_target(rootfd, op->dst, !(op->flags & (MOP_F_FILE | MOP_F_DEV)),
					  op->flags & MOP_F_OVER_LINK);
			if (tfd < 0) {
				r = fail(err, errlen, tfd, "cannot prepare mount point '%s'", op->dst);
				goto out;
			}
			if (move_mount(trees[i], "", tfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
				r = fail(err, errlen, -errno, "cannot mount '%s' on '%s'", op->src, op->dst);
				goto out;
			}
			break;
		case MOP_TMPFS:
		case MOP_PROC:
		case MOP_DEVPTS: {
			static const char *const types[] = { [MOP_TMPFS] = "tmpfs", [MOP_PROC] = "proc",
							     [MOP_DEVPTS] = "devpts" };
			/* devpts must keep dev: its nodes are the ptys we open */
			unsigned attrs = MOUNT_ATTR_NOSUID | (op->kind == MOP_DEVPTS ? 0 : MOUNT_ATTR_NODEV);
			if (op->kind != MOP_TMPFS || streq(op->dst, "/dev") || streq(op->dst, "/dev/shm"))
				attrs |= MOUNT_ATTR_NOEXEC;
			if (op->flags & MOP_F_RO)
				attrs |= MOUNT_ATTR_RDONLY;
			tfd = open_target(rootfd, op->dst, true, false);
			if (tfd < 0) {
				r = fail(err, errlen, tfd, "cannot prepare mount point '%s'", op->dst);
				goto out;
			}
			r = mount_fs(types[op->kind], op->data, attrs, tfd);
			if (r < 0 && op->kind == MOP_PROC)
				/* hidepid needs 5.8; the pid namespace is what hides the host anyway */
				r = mount_fs("proc", NULL, attrs, tfd);
			if (r == -EPERM && op->kind == MOP_PROC) {
				r = proc_refused(-r, err, errlen);
				goto out;
			}
			if (r < 0) {
				r = fail(err, errlen, r, "cannot mount %s on '%s'", types[op->kind], op->dst);
				goto out;
			}
			break;
		}
		case MOP_SYMLINK:
			tfd = parent_and_name(rootfd, op->dst, &name);
			if (tfd < 0 || symlinkat(op->src, tfd, name) < 0) {
				r = fail(err, errlen, tfd < 0 ? tfd : -errno, "cannot create symlink '%s'", op->dst);
				goto out;
			}
			break;
		case MOP_OVERLAY:
			break; /* mounted in stage 3 */
		case MOP_MIRROR: {
			_cleanup_close_ int mfd = -1;
			tfd = open_target(rootfd, op->dst, true, false);
			if (tfd < 0 || (r = mount_fs("tmpfs", "mode=0755", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, tfd)) < 0) {
				r = fail(err, errlen, tfd < 0 ? tfd : r, "cannot mount the tmpfs for '%s'", op->dst);
				goto out;
			}
			mfd = open_target(rootfd, op->dst, true, false);
			if (mfd < 0) {
				r = fail(err, errlen, mfd, "cannot open '%s'", op->dst);
				goto out;
			}
			if (trees[i] >= 0 && (r = mirror_dir(trees[i], mfd, op->data, err, errlen)) < 0)
				goto out;
			break;
		}
		case MOP_MKDIR:
			tfd = open_target(rootfd, op->dst, true, false);
			if (tfd < 0) {
				r = fail(err, errlen, tfd, "cannot create directory '%s'", op->dst);
				goto out;
			}
			break;
		default:
			r = fail(err, errlen, -EINVAL, "unknown mount operation");
			goto out;
		}
	}

	/* The fallback's mirrors are complete: nothing more may be created in them. */
	for (size_t i = 0; fallback && i < mp->n; i++) {
		struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };
		_cleanup_close_ int tfd = -1;
		if (mp->ops[i].kind != MOP_MIRROR)
			continue;
		tfd = open_target(rootfd, mp->ops[i].dst, true, false);
		if (tfd < 0 || mount_setattr(tfd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0) {
			r = fail(err, errlen, tfd < 0 ? tfd : -errno, "cannot make '%s' read-only", mp->ops[i].dst);
			goto out;
		}
	}

	/* Stage 5: pivot into the new root and detach the old one; then make / itself read-only. */
	if (fchdir(rootfd) < 0 || syscall(SYS_pivot_root, ".", ".") < 0) {
		r = fail(err, errlen, -errno, "cannot pivot_root into the new root");
		goto out;
	}
	if (umount2(".", MNT_DETACH) < 0 || chdir("/") < 0) {
		r = fail(err, errlen, -errno, "cannot detach the old root");
		goto out;
	}
	{
		/* an image root on overlay stays writable: writes land in the upper */
		struct mount_attr attr = { .attr_set = (image && !fallback ? 0 : MOUNT_ATTR_RDONLY) | MOUNT_ATTR_NOSUID |
						       MOUNT_ATTR_NODEV };
		if (mount_setattr(AT_FDCWD, "/", 0, &attr, sizeof(attr)) < 0) {
			r = fail(err, errlen, -errno, "cannot make the root read-only");
			goto out;
		}
	}
out:
	for (size_t i = 0; i < mp->n; i++)
		if (trees[i] >= 0)
			close(trees[i]);
	if (r == 0)
		*fell_back = fallback;
	return r;
}
