/* SPDX-License-Identifier: GPL-2.0-or-later */
/* mounts.h — the sandbox's mount tree: a pure plan of operations and the code that applies it.
 *
 * mount_plan_build() turns a resolved plan plus a few facts about the host (which /lib* exist and
 * which are symlinks, what .git is) into an ordered list of operations, without touching the
 * kernel, so the tree is unit-tested op by op. mount_plan_apply() runs inside the new mount
 * namespace: it opens every source once (no symlinks), builds the tree on a fresh tmpfs, pivots
 * into it and detaches the old root. It is the one mount applier: `aisb run`'s init and `aisb
 * build`'s RUN steps (mount_plan_build_step()) both go through it.
 *
 * Split by concern: host facts (mount-facts.c), a root caller's /etc and /opt (mount-idmap.c),
 * the pure planner (mount-plan.c), the applier (mount-apply.c); mounts-internal.h is theirs.
 */
#ifndef AISB_NS_MOUNTS_H
#define AISB_NS_MOUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/plan.h"

enum mount_op_kind {
	MOP_BIND,    /* bind src (host) at dst */
	MOP_TMPFS,   /* tmpfs at dst, options in data */
	MOP_PROC,    /* fresh proc at dst */
	MOP_DEVPTS,  /* devpts newinstance at dst */
	MOP_SYMLINK, /* symlink dst -> src */
	MOP_MKDIR,   /* directory dst */
	MOP_OVERLAY, /* the root itself (dst "/", first op only): overlay with lowerdir src, upper and
		      * work dirs in data ("UPPER\nWORK"), or, with MOP_F_TMPFS_UPPER, on a fresh
		      * tmpfs whose options (mode, size) data holds. When
		      * the overlay cannot be mounted, the fallback: the root is a tmpfs whose entries
		      * are read-only binds of src's (see MOP_MIRROR), and MOP_F_FALLBACK ops apply */
	MOP_MIRROR,  /* fallback only: a tmpfs at dst holding read-only binds of the entries of the
		      * directory src (host path; may be absent), symlinks recreated, names listed in
		      * data (comma-separated) left out; made read-only once the tree is built */
	MOP_KIND_MAX,
};

enum {
	MOP_F_RO = 1 << 0,        /* read-only (recursively for binds) */
	MOP_F_FILE = 1 << 1,      /* the bind source is a file, not a directory */
	MOP_F_DEV = 1 << 2,       /* a device node: keep dev, add noexec */
	MOP_F_OPTIONAL = 1 << 3,  /* skip silently when the source is missing */
	MOP_F_OVER_LINK = 1 << 4, /* the target may be a symlink (host /etc/resolv.conf) */
	MOP_F_FALLBACK = 1 << 5,  /* applied only when the image overlay could not be mounted */
	MOP_F_NO_OVERLAY = 1 << 6,/* on MOP_OVERLAY: do not try overlay, take the fallback (test hook) */
	MOP_F_PREPARED = 1 << 7,  /* on MOP_BIND: the tree is a detached mount the supervisor made
				   * (fd number in data, inherited through clone), attributes set;
				   * on MOP_OVERLAY: its layers are (lower_tree, dirs_tree) */
	MOP_F_NO_FALLBACK = 1 << 8,/* on MOP_OVERLAY: a kernel that refuses the overlay is an error,
				   * never the read-only fallback (a build step's root) */
	MOP_F_SYSTEM = 1 << 10,   /* on MOP_BIND: a host system dir (/usr, /lib*, /etc, /opt) */
	MOP_F_REMAPPED = 1 << 11, /* on MOP_BIND with MOP_F_PREPARED: the plan owns the tree's fd
				   * (mount_remap_plan(); closed by mount_plan_free()) */
	MOP_F_TMPFS_UPPER = 1 << 9,/* on MOP_OVERLAY: upper and work on a private tmpfs made in the
				   * sandbox's mount namespace (data: its options), never on disk */
	MOP_F_CONTAINER_PROC = 1 << 10,/* on MOP_PROC: a refused fresh proc binds the caller's /proc
				   * (--container-proc, plan.h) */
};

/* The names the image-root fallback leaves out of the root mirror: fresh mounts (proc dev tmp run
 * home) or mirrors of their own (etc var). */
#define MOUNT_FALLBACK_ROOT_SKIP "proc,dev,tmp,run,home,etc,var"
/* The message the fallback prints, once, on stderr. */
#define MOUNT_FALLBACK_NOTICE "overlayfs with userxattr cannot be mounted here: the image runs " \
	"read-only, with tmpfs on /tmp, /run, /var/tmp and the home (run 'aisb doctor')"

struct mount_op {
	enum mount_op_kind kind;
	char *src;        /* host path (BIND), link target (SYMLINK) */
	char *dst;        /* absolute path inside the sandbox */
	char *data;       /* tmpfs options */
	unsigned flags;
	/* MOP_OVERLAY with MOP_F_PREPARED (mount_remap_plan()): detached idmapped clones the
	 * supervisor made of src (read-only) and, without MOP_F_TMPFS_UPPER, of the directory
	 * holding the upper and work dirs data names (their common parent); -1 when not made.
	 * The plan owns them (closed by mount_plan_free()). */
	int lower_tree, dirs_tree;
};

struct mount_plan {
	struct mount_op *ops;
	size_t n;
};

enum git_kind { GIT_NONE, GIT_DIR, GIT_FILE, GIT_KIND_MAX };

/* Facts read from the host before the plan is built (mount_host_facts()). */
struct mount_host_facts {
	char *lib_link[6];         /* for bin sbin lib lib32 lib64 libx32: link target or NULL */
	bool lib_dir[6];           /* ... or a real directory */
	bool has_opt;
	enum git_kind git;         /* what <project>/.git is */
	bool git_hooks, git_config;/* present inside a .git directory */
	bool git_modules;          /* .git/modules (submodules' hooks and config) exists */
	/* .git-relative paths pinned where present (git_pins()): files read-only, dirs bound onto
	 * themselves. NULL-terminated, NULL when none. */
	char **git_pin_files, **git_pin_dirs;
	char *session_etc;         /* <session dir>/etc: generated passwd group hosts resolv.conf */
	/* the session's (core/session.h): the persistent home, canonical and created (NULL:
	 * ephemeral), and <session dir>/bridge-home, where an ephemeral home's bridged files are */
	char *home_src, *bridge_home;
	char *project_src;         /* the tree bound as the project: plan_project_src() (core/plan.h) */
	bool resolv_is_link;       /* host /etc/resolv.conf is a symlink */
	/* For a root caller (inside 1000 maps to host 0, so owner permission bits apply): entries
	 * under the host's /etc that are not world-readable (shadow, ssh host keys, ssl/private),
	 * masked with an empty file or tmpfs. NULL-terminated. */
	char **masked_files;
	char **masked_dirs;
	/* ... or, where the kernel allows it (mount_masks_prefetch()), detached clones of /etc and
	 * /opt idmapped so that every owner reads as nobody: then only "other" permission bits apply
	 * and nothing needs walking or masking. Valid when @idmapped; opt_tree -1 without /opt. */
	bool idmapped;
	int etc_tree, opt_tree;
	/* --image --keep: <session dir>/overlay/{upper,work}, created here; NULL when the upper is
	 * a tmpfs (a session that is not kept, or --ephemeral) */
	char *overlay_upper, *overlay_work;
	uint64_t ram_bytes;        /* the host's RAM (sysinfo), for the tmpfs upper's bound; 0 unknown */
};

/* Reads the facts for @p from the host and the session @ss made (its etc dir, home and overlay
 * dirs). Creates <project>/.git/hooks when .git is a directory without it, so that the
 * read-only bind has something to cover. Logs on failure. */
int mount_host_facts(const struct aisb_plan *p, const struct aisb_session *ss, struct mount_host_facts *f);

/* Whether this kernel's tmpfs keeps user.* xattrs (Linux 6.6+), which an overlay upper on tmpfs
 * needs with userxattr: without them the overlay mounts, but removing a directory of the image
 * fails with EIO (measured in the tests/vm guest, 6.1). Probed on an unnamed file in /dev/shm;
 * false when that cannot be told. Does not log. */
bool mount_tmpfs_has_user_xattr(void);

/**
 * mount_masks_prefetch() - prepare the hiding of root-only entries under /etc and /opt early
 * @try_idmap: whether the idmapped trees may be tried (false: the AISB_TEST_NO_IDMAP test hook)
 *
 * For root callers on the host rootfs: first tries to make /etc and /opt as detached read-only
 * trees idmapped through a user namespace that maps only 0 -> 65534 (needs real root and
 * filesystems that support idmapped mounts; ~0.5 ms). Where that fails, starts the walk of
 * /etc and /opt for entries that are not world-readable (2.3-4.5 ms measured here) on a helper
 * thread, which mount_host_facts() finishes. Called before the plan is resolved; calling it
 * when neither turns out to be needed only wastes the work. Not to be called from a child of
 * clone()/fork(). Does not log.
 */
void mount_masks_prefetch(bool try_idmap);
void mount_host_facts_free(struct mount_host_facts *f);

/*
 * A root caller's sandbox as an unprivileged host id (issue 22, docs/threat-model.md): inside
 * 1000 maps to USERNS_ROOT_RUN_ID instead of kernel uid 0, and every bind source of the caller
 * (the project and its .git pins, the home, the session's files, -v mounts, ~/.agents) is a
 * detached clone idmapped through a user namespace that maps only 0 -> that id: root's files
 * read as the sandbox's own, what it writes is stored as root's, and the system dirs are bound
 * plainly (only their "other" bits apply). Needs real root (CAP_SYS_ADMIN over the filesystems)
 * and filesystems that support idmapped mounts.
 */

/* Whether this process could make idmapped mounts at all: uid 0 of the initial user namespace
 * with CAP_SYS_ADMIN effective. Does not log. */
bool mount_remap_possible(void);

/* Tries an idmapped clone of each of @paths (NULL-terminated; a missing path is tried at its
 * nearest existing ancestor, which is where it will be made) for @id. Return: 0, or -errno with
 * @why naming the path and the reason. Does not log. */
int mount_remap_probe(const char *const *paths, uid_t id, char *why, size_t n);

/* Makes every MOP_BIND of @mp that is not MOP_F_SYSTEM or MOP_F_DEV (and not prepared already)
 * into such a tree for @id, with the bind's own attributes (read-only, nosuid, nodev): the op
 * becomes MOP_F_PREPARED | MOP_F_REMAPPED with the fd in data. An optional source that is
 * absent is left as it is. A MOP_OVERLAY root (an --image run's, a build step's) gets its
 * layers the same way (lower_tree read-only; dirs_tree, the parent of a disk upper and work,
 * read-write) and becomes MOP_F_PREPARED: the applier attaches them in the sandbox's mount
 * namespace before overlayfs takes them (overlayfs clones each layer's mount, which the
 * kernel allows only from one's own namespace or a detached mount one may administer: EPERM
 * for the supervisor's, measured on 6.18). Return: 0, or -errno with @err naming the source.
 * Does not log. */
int mount_remap_plan(struct mount_plan *mp, uid_t id, char *err, size_t n);

/**
 * mount_upper_size() - the size of an image run's tmpfs upper
 * @memory_max: the run's memory limit in bytes (0: none)
 * @ram_bytes: the host's RAM (0: unknown)
 * @test_max: the AISB_TEST_UPPER_SIZE bound (0: none); it can only lower the result
 *
 * The smaller of half the memory limit and half the RAM (tmpfs's own default), so a sandbox's
 * image writes end in ENOSPC before they fill the memory cgroup (whose OOM killer would pick a
 * process instead) or take the host's memory where no cgroup enforces the limit; with neither
 * known, half the default memory limit. Pure. Does not log.
 * Return: bytes, > 0.
 */
uint64_t mount_upper_size(uint64_t memory_max, uint64_t ram_bytes, uint64_t test_max);

/**
 * mount_tmpfs_size() - the size of the sandbox's /tmp (@share 2), /dev/shm (4) and /run (8)
 * @memory_max: the memory limit (0: the default), enforced or not
 * @ram_bytes: the machine's RAM (0: unknown)
 * @share: the divisor of the limit
 *
 * Pure. Return: @memory_max / @share, at most half the RAM, at least 1 MiB.
 */
uint64_t mount_tmpfs_size(uint64_t memory_max, uint64_t ram_bytes, unsigned share);

/* Builds the ordered operations for @p. @home_binds: the directories (relative to the home) the
 * harness bridge wrote under <session dir>/bridge-home for an ephemeral home, bound into the tmpfs
 * home; NULL-terminated, or NULL (the caller asks agents/bridge.h, a layer above this one).
 * Pure. Does not log. Return: 0 or -ENOMEM. */
int mount_plan_build(const struct aisb_plan *p, const struct mount_host_facts *f,
		     const char *const *home_binds, struct mount_plan *out);
void mount_plan_free(struct mount_plan *mp);

/* What a build's RUN step is rooted in (build/native.c). */
struct mount_step {
	const char *lower;        /* the base image's unpacked rootfs, read-only */
	const char *upper, *work; /* the build's overlay dirs: what the step writes, the layer */
	const char *resolv;       /* a host file bound read-only over /etc/resolv.conf, or NULL */
};

/* Where a step's own files live, outside the layer (a directory of the /dev tmpfs). */
#define MOUNT_STEP_DIR "/dev/.aisb-build"

/* Builds the tree of a build's RUN step, for mount_plan_apply(): the overlay as the root (never
 * the read-only fallback: MOP_F_NO_FALLBACK), the /proc and /dev of `aisb run`, MOUNT_STEP_DIR,
 * and @s->resolv over /etc/resolv.conf. Pure. Does not log. Return: 0 or -ENOMEM. */
int mount_plan_build_step(const struct mount_step *s, struct mount_plan *out);

/* Finds the op whose dst is @dst, or NULL (for tests and previews). */
const struct mount_op *mount_plan_find(const struct mount_plan *mp, const char *dst);

/* Applies @mp inside a new mount namespace and pivots into it. Must run as init with
 * CAP_SYS_ADMIN in the sandbox's user namespace. An image root is tried once as an overlay; when
 * the kernel refuses it (EINVAL, ENODEV, EPERM) or MOP_F_NO_OVERLAY is set, the read-only
 * fallback is applied and *@fell_back set (the caller announces it). On failure @err (size
 * @errlen) names the step. Does not log (the caller reports through the sync pipe).
 * Return: 0, -errno, or AISB_EXIT_ENFORCE when the kernel refuses a fresh proc (a /proc masked
 * by a container engine; @err then holds the engine's fix). */
int mount_plan_apply(const struct mount_plan *mp, bool *fell_back, char *err, size_t errlen);

/**
 * mount_overlay_detached() - the overlay of a MOP_OVERLAY root as a detached mount
 * @lower: read-only lower (an unpacked image)
 * @upper: upper directory
 * @work: work directory
 * @err: filled with what failed
 * @errlen: its size
 *
 * What mount_plan_apply() makes for an image root, for a build's filesystem steps, which reach
 * it only through fds (build/copy.c): every directory opened without following a symlink and
 * named to the kernel as /proc/self/fd/N, `userxattr`, nosuid, nodev. Must run in the mount
 * namespace that will use it. Return: the mount fd, or -errno. Does not log.
 */
int mount_overlay_detached(const char *lower, const char *upper, const char *work, char *err, size_t errlen);

/**
 * mount_container_proc_detached() - the caller's /proc, with the mounts below it, detached
 *
 * What --container-proc binds where a fresh proc is refused next to a container's masks (plan.h):
 * a recursive clone of /proc (the masks stay), nosuid, nodev, noexec. The one way to make it:
 * init's mount plan and doctor's probe of the same trade. Must run in the mount namespace that
 * will use it. Return: the mount fd, or -errno. Does not log.
 */
int mount_container_proc_detached(void);

#endif
