// SPDX-License-Identifier: GPL-2.0-or-later
/* procfs.c — the /proc covers of every sandbox */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "ns/procfs.h"
#include "util/macro.h"
#include "util/util.h"

/* What is covered, and why (docs/threat-model.md, "Root callers and /proc"). Read-only: the
 * trees whose files change the whole machine and check only the mode: bubblewrap's four (sys,
 * sysrq-trigger, irq: IRQ affinity; bus: PCI config space), the OCI runtimes' readonlyPaths
 * (also fs: xfs/ext4/nfsd tunables and counters) and the directories they mask (acpi: wakeup
 * toggles; scsi: scsi_add_single_device writes; asound: buffer preallocation). Hidden: global
 * state that leaks the host whatever the caller (keys lists the keys the reader may view,
 * timer_list names host tasks, sched_debug and timer_stats likewise on the kernels that have
 * them, latency_stats is also writable by kuid 0, kcore is the kernel's memory). Each cover is
 * a mount (about 10 us measured here), so the list is what the models cover and what was
 * measured readable, not more. */
static const struct procfs_cover covers[] = {
	{ "sys", PROCFS_RO },
	{ "sysrq-trigger", PROCFS_RO },
	{ "irq", PROCFS_RO },
	{ "bus", PROCFS_RO },
	{ "fs", PROCFS_RO },
	{ "acpi", PROCFS_RO },
	{ "scsi", PROCFS_RO },
	{ "asound", PROCFS_RO },
	{ "kcore", PROCFS_HIDE },
	{ "keys", PROCFS_HIDE },
	{ "timer_list", PROCFS_HIDE },
	{ "timer_stats", PROCFS_HIDE },
	{ "sched_debug", PROCFS_HIDE },
	{ "latency_stats", PROCFS_HIDE },
	/* Mode 0400, so only kuid 0 (a root caller's sandbox) passes the check, and it did read
	 * all of them before this stage existed (measured on 6.18): physical page flags and
	 * counts (kpage*: page-level side channels), the slab and vmalloc layout (slabinfo,
	 * vmallocinfo: heap grooming for kernel exploits), free-page lists (pagetypeinfo, which
	 * also holds the zone lock while read), and a Firecracker guest's program_cpu (every host
	 * program's name and CPU time). kmsg is 0400 too but needs CAP_SYSLOG in the initial
	 * namespace (measured: refused). A fixed list: a scan of every top-level entry's mode cost
	 * 130 us per start here (proc allocates an inode per lookup). */
	{ "kpagecount", PROCFS_HIDE_KUID0 },
	{ "kpageflags", PROCFS_HIDE_KUID0 },
	{ "kpagecgroup", PROCFS_HIDE_KUID0 },
	{ "slabinfo", PROCFS_HIDE_KUID0 },
	{ "vmallocinfo", PROCFS_HIDE_KUID0 },
	{ "pagetypeinfo", PROCFS_HIDE_KUID0 },
	{ "program_cpu", PROCFS_HIDE_KUID0 },
};

const struct procfs_cover *procfs_covers(size_t *n)
{
	*n = ELEMENTSOF(covers);
	return covers;
}

#define COVER_ATTRS (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)

/* A read-only bind of @name onto itself; an absent entry is nothing to cover. */
static int cover_ro(int proc_fd, const char *name)
{
	struct mount_attr attr = { .attr_set = COVER_ATTRS };
	_cleanup_close_ int tree = open_tree(proc_fd, name,
					     OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW);

	if (tree < 0)
		return errno == ENOENT ? 0 : -errno;
	if (mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0 ||
	    move_mount(tree, "", proc_fd, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return -errno;
	return 0;
}

/* @name hidden: a file under a bind of /dev/null (reads are empty, writes vanish, as the OCI
 * runtimes do), a directory under an empty read-only tmpfs. Unless @always, an entry that gives
 * "other" no read permission is left alone: only kuid 0 passes that mode check. */
static int cover_hide(int proc_fd, int null_fd, const char *name, bool always)
{
	_cleanup_close_ int tree = -1;
	struct stat st;

	if (fstatat(proc_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!always && !(st.st_mode & S_IROTH))
		return 0;
	if (S_ISDIR(st.st_mode)) {
		_cleanup_close_ int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
		if (fs < 0 || fsconfig(fs, FSCONFIG_SET_STRING, "size", "4k", 0) < 0 ||
		    fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0555", 0) < 0 ||
		    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 ||
		    (tree = fsmount(fs, FSMOUNT_CLOEXEC, COVER_ATTRS)) < 0)
			return -errno;
	} else {
		/* the clone keeps /dev/null's own attributes (nosuid; a device needs dev) */
		tree = open_tree(null_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
		if (tree < 0)
			return -errno;
	}
	if (move_mount(tree, "", proc_fd, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return -errno;
	return 0;
}

int procfs_harden(int proc_fd, int null_fd, bool kuid0, bool writable, bool container_proc, const char **failed)
{
	struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY };
	_cleanup_close_ int fd = -1;
	struct statfs sf;
	bool skipped = false;
	int r;

	*failed = "/proc";
	if (fstatfs(proc_fd, &sf) < 0)
		return -errno;
	if (sf.f_type != PROC_SUPER_MAGIC)
		return -EINVAL;
	/* Stage: no more user namespaces, first: the file is under sys, read-only afterwards. The
	 * value is this user namespace's (docs/machine-facts.md: the host's is unchanged). */
	*failed = "sys/user/max_user_namespaces";
	fd = openat(proc_fd, "sys/user/max_user_namespaces", O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == EROFS && container_proc)
		skipped = true; /* the container's read-only /proc/sys (the flag's stated trade) */
	else if (fd < 0)
		return -errno;
	else {
		r = write_full(fd, "0\n", 2);
		if (r < 0)
			return r;
		/* an fd open for writing keeps the mount from turning read-only (EBUSY) */
		closep(&fd);
		fd = -1;
	}
	/* Stage: the whole /proc read-only, unless the caller asked for a writable one. A read-only
	 * mount refuses every write-open of a regular file under it (EROFS, checked on the mount by
	 * the VFS before procfs sees the open), which covers every host-global entry at once, the
	 * ones no list names included, and also other processes' /proc/PID/mem, which nothing else
	 * here can deny: same uid and dumpable pass the ptrace check, and there is no Yama or other
	 * LSM (docs/threat-model.md, "Other processes' memory"). One mount_setattr instead of the
	 * eight read-only binds of the list (24 mount calls; measured: start-up, issue 10). */
	*failed = "/proc (read-only)";
	if (!writable && mount_setattr(proc_fd, "", AT_EMPTY_PATH, &ro, sizeof(ro)) < 0)
		return -errno;
	/* Stage: covers. Mustn't: leave one out silently; an absent entry is the only skip. */
	for (size_t i = 0; i < ELEMENTSOF(covers); i++) {
		const struct procfs_cover *c = &covers[i];

		*failed = c->name;
		if ((c->kind == PROCFS_HIDE_KUID0 && !kuid0) || (c->kind == PROCFS_RO && !writable))
			continue;
		r = c->kind == PROCFS_RO ? cover_ro(proc_fd, c->name) : cover_hide(proc_fd, null_fd, c->name, kuid0);
		if (r < 0)
			return r;
	}
	*failed = NULL;
	return skipped ? 1 : 0;
}

int procfs_stage(bool kuid0, bool writable, bool container_proc, const char **failed)
{
	_cleanup_close_ int proc = open("/proc", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int null = open("/dev/null", O_PATH | O_NOFOLLOW | O_CLOEXEC);

	*failed = proc < 0 ? "/proc" : "/dev/null";
	if (proc < 0 || null < 0)
		return -errno;
	return procfs_harden(proc, null, kuid0, writable, container_proc, failed);
}
