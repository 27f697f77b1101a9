// SPDX-License-Identifier: GPL-2.0-or-later
/* mount-remap.c — a root caller's sandbox as an unprivileged host id: idmapped bind sources (mounts.h) */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ns/mounts.h"
#include "ns/userns.h"
#include "util/macro.h"
#include "util/util.h"

bool mount_remap_possible(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { 0 };

	if (getuid() != 0 || geteuid() != 0)
		return false;
	if (syscall(SYS_capget, &hdr, data) < 0 || !(data[0].effective & (1u << CAP_SYS_ADMIN)))
		return false;
	return userns_is_initial();
}

/* The user namespace of the idmap: 0 <-> @id for uid and gid, made once per process (a fork
 * each: the probe at plan time and the plan share it). Return: an fd the caller does not
 * close, or -errno. */
static int remap_userns(uid_t id)
{
	static int fd = -1;
	static uid_t fd_id;
	const struct userns_map m = { .inside_uid = 0, .host_uid = id, .inside_gid = 0, .host_gid = id };

	if (fd >= 0 && fd_id == id)
		return fd;
	if (fd >= 0)
		close(fd);
	fd = userns_open(&m);
	fd_id = id;
	return fd;
}

/* A detached recursive clone of the tree at @src (an O_PATH fd), idmapped through @ns, nosuid,
 * nodev and (@ro) read-only. Return: the tree's fd or -errno. */
static int remap_tree(int src, int ns, bool ro)
{
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
				   .userns_fd = (uint64_t)ns };
	int tree = open_tree(src, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);

	if (tree < 0)
		return -errno;
	if (ro)
		attr.attr_set |= MOUNT_ATTR_RDONLY;
	if (mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0) {
		int e = -errno;
		close(tree);
		return e;
	}
	return tree;
}

int mount_remap_probe(const char *const *paths, uid_t id, char *why, size_t n)
{
	int ns = remap_userns(id);

	if (ns < 0) {
		snprintf(why, n, "cannot create the user namespace of the idmap: %s", strerror(-ns));
		return ns;
	}
	for (size_t i = 0; paths[i]; i++) {
		_cleanup_free_ char *p = strdup(paths[i]);
		_cleanup_close_ int src = -1;
		int tree;

		if (!p)
			return -ENOMEM;
		/* not made yet (the home, the session's dir): where it will be made */
		while ((src = open(p, O_PATH | O_CLOEXEC)) < 0 && errno == ENOENT && strrchr(p, '/') && !streq(p, "/")) {
			char *slash = strrchr(p, '/');
			if (slash == p)
				slash[1] = 0;
			else
				*slash = 0;
		}
		if (src < 0) {
			int e = -errno;
			snprintf(why, n, "cannot open '%s': %s", p, strerror(-e));
			return e;
		}
		tree = remap_tree(src, ns, true);
		if (tree < 0) {
			snprintf(why, n, "'%s' cannot be idmapped: %s", p, strerror(-tree));
			return tree;
		}
		close(tree);
	}
	return 0;
}

/* The idmapped tree of directory @path, as the applier opens it (mount-apply.c: no symlink
 * anywhere). Return: the tree's fd or -errno with @err filled. */
static int remap_dir(const char *path, int ns, bool ro, char *err, size_t n)
{
	_cleanup_close_ int src = openat_nofollow(AT_FDCWD, path, O_PATH | O_DIRECTORY, 0);
	int tree;

	if (src < 0) {
		snprintf(err, n, "cannot open '%s': %s", path, strerror(-src));
		return src;
	}
	tree = remap_tree(src, ns, ro);
	if (tree < 0)
		snprintf(err, n, "'%s' cannot be idmapped: %s", path, strerror(-tree));
	return tree;
}

/* An overlay root's layers (mounts.h, MOP_OVERLAY): the lower read-only and, for a disk upper
 * ("UPPER\nWORK" in data, siblings: overlayfs wants them on one mount), their parent
 * read-write, so that what the sandbox writes is stored as root's, as it was at kernel uid 0.
 * Return: 0 or -errno with @err filled. */
static int remap_overlay(struct mount_op *op, int ns, char *err, size_t n)
{
	_cleanup_free_ char *dirs = NULL;

	if ((op->lower_tree = remap_dir(op->src, ns, true, err, n)) < 0)
		return op->lower_tree;
	if (!(op->flags & MOP_F_TMPFS_UPPER)) {
		char *nl, *us, *ws;

		if (!op->data || !(dirs = strdup(op->data)) || !(nl = strchr(dirs, '\n')))
			return snprintf(err, n, "the overlay's upper and work dirs"), -EINVAL;
		*nl = 0;
		us = strrchr(dirs, '/');
		ws = strrchr(nl + 1, '/');
		if (!us || !ws || us == dirs || us - dirs != ws - (nl + 1) || strncmp(dirs, nl + 1, (size_t)(us - dirs)) != 0)
			return snprintf(err, n, "the overlay's upper and work dirs are not siblings"), -EINVAL;
		*us = 0;
		if ((op->dirs_tree = remap_dir(dirs, ns, false, err, n)) < 0)
			return op->dirs_tree;
	}
	op->flags |= MOP_F_PREPARED;
	return 0;
}

int mount_remap_plan(struct mount_plan *mp, uid_t id, char *err, size_t n)
{
	int ns = -1;

	for (size_t i = 0; i < mp->n; i++) {
		struct mount_op *op = &mp->ops[i];
		_cleanup_close_ int src = -1;
		struct stat st;
		char buf[24];
		int tree;

		if (op->kind == MOP_OVERLAY && !(op->flags & MOP_F_PREPARED)) {
			int r;

			if (ns < 0 && (ns = remap_userns(id)) < 0) {
				snprintf(err, n, "cannot create the user namespace of the idmap: %s", strerror(-ns));
				return ns;
			}
			if ((r = remap_overlay(op, ns, err, n)) < 0)
				return r;
			continue;
		}
		if (op->kind != MOP_BIND || (op->flags & (MOP_F_SYSTEM | MOP_F_DEV | MOP_F_PREPARED)) || !op->src)
			continue;
		if (ns < 0 && (ns = remap_userns(id)) < 0) {
			snprintf(err, n, "cannot create the user namespace of the idmap: %s", strerror(-ns));
			return ns;
		}
		/* as the applier opens it (mount-apply.c): no symlink anywhere, the planned type */
		src = openat_nofollow(AT_FDCWD, op->src, O_PATH, 0);
		if (src == -ENOENT && (op->flags & MOP_F_OPTIONAL))
			continue;
		if (src < 0 || fstat(src, &st) < 0) {
			int e = src < 0 ? src : -errno;
			snprintf(err, n, "cannot open mount source '%s': %s", op->src, strerror(-e));
			return e;
		}
		if ((op->flags & MOP_F_FILE) ? !S_ISREG(st.st_mode) : !S_ISDIR(st.st_mode)) {
			snprintf(err, n, "mount source '%s' changed type since it was checked", op->src);
			return -EINVAL;
		}
		tree = remap_tree(src, ns, op->flags & MOP_F_RO);
		if (tree < 0) {
			snprintf(err, n, "'%s' cannot be idmapped: %s", op->src, strerror(-tree));
			return tree;
		}
		snprintf(buf, sizeof(buf), "%d", tree);
		free(op->data);
		if (!(op->data = strdup(buf))) {
			close(tree);
			return -ENOMEM;
		}
		op->flags |= MOP_F_PREPARED | MOP_F_REMAPPED;
	}
	return 0;
}
