// SPDX-License-Identifier: GPL-2.0-or-later
/* mount-plan.c — the pure mount planner: a resolved plan and host facts to ordered operations (mounts.h) */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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

#include "ns/cgroup.h"
#include "ns/mounts.h"
#include "ns/mounts-internal.h"
#include "ns/userns.h"
#include "util/container.h"
#include "util/log.h"
#include "util/util.h"

static const char *const lib_names[6] = MOUNT_LIB_NAMES;
static const char *const dev_nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };

/* ---- pure builder ------------------------------------------------------------------------ */

static int add(struct mount_plan *mp, enum mount_op_kind k, const char *src, const char *dst,
	       const char *data, unsigned flags)
{
	struct mount_op *n = realloc(mp->ops, (mp->n + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	mp->ops = n;
	n[mp->n] = (struct mount_op){ .kind = k, .src = src ? strdup(src) : NULL, .dst = strdup(dst),
				      .data = data ? strdup(data) : NULL, .flags = flags, .lower_tree = -1,
				      .dirs_tree = -1 };
	if ((src && !n[mp->n].src) || !n[mp->n].dst || (data && !n[mp->n].data)) {
		mp->n++;
		return -ENOMEM;
	}
	mp->n++;
	return 0;
}

static int addf(struct mount_plan *mp, enum mount_op_kind k, unsigned flags, const char *data,
		const char *src_fmt, const char *src_arg, const char *dst_fmt, const char *dst_arg)
{
	_cleanup_free_ char *src = NULL, *dst = NULL;
	if (src_fmt && asprintf(&src, src_fmt, src_arg) < 0)
		return -ENOMEM;
	if (asprintf(&dst, dst_fmt, dst_arg) < 0)
		return -ENOMEM;
	return add(mp, k, src, dst, data, flags);
}

/* A bind of <project>/.git/@rel onto itself. */
static int add_git(struct mount_plan *mp, const struct aisb_plan *p, const struct mount_host_facts *f,
		   const char *rel, unsigned flags)
{
	_cleanup_free_ char *src = NULL, *dst = NULL;
	if (asprintf(&src, "%s/.git/%s", f->project_src, rel) < 0 || asprintf(&dst, "%s/.git/%s", p->project_dst, rel) < 0)
		return -ENOMEM;
	return add(mp, MOP_BIND, src, dst, NULL, flags);
}

uint64_t mount_upper_size(uint64_t memory_max, uint64_t ram_bytes, uint64_t test_max)
{
	/* Half the limit, not all of it: the tmpfs's pages count against memory.max, so an upper
	 * as large as the limit is never full before the cgroup is, and filling it ended in the
	 * OOM killer (measured in tests/vm: --memory 64M, a 100M write: dd killed, 137) instead
	 * of ENOSPC to the writer. */
	uint64_t n = memory_max / 2;

	if (ram_bytes && (!n || n > ram_bytes / 2))
		n = ram_bytes / 2;
	if (!n)
		n = CGROUP_MEMORY_DEFAULT / 2;
	if (test_max && test_max < n)
		n = test_max;
	return n;
}

/* The image as the root: its unpacked tree read-only below an overlay whose upper is the
 * session's (--keep) or a bounded tmpfs, so nothing written inside reaches the store. Without
 * overlay: the root, /etc and /var become tmpfs mirrors of the image (read-only binds of their
 * entries), so that mount points can be made without writing to the store; /var/tmp is a tmpfs
 * (/tmp, /run and the home are below, as always). Pure. */
static int plan_image_root(struct mount_plan *mp, const struct aisb_plan *p, const struct mount_host_facts *f)
{
	_cleanup_free_ char *data = NULL, *etc = path_join(p->image_rootfs, "etc"),
			    *var = path_join(p->image_rootfs, "var");
	unsigned flags = p->image_no_overlay ? MOP_F_NO_OVERLAY : 0;
	int r;

	if (!etc || !var)
		return -ENOMEM;
	if (f->overlay_upper)
		r = asprintf(&data, "%s\n%s", f->overlay_upper, f->overlay_work);
	else {
		/* A tmpfs's pages are charged to the memory cgroup of the process that writes them,
		 * so where the limit is enforced the upper counts against it; the size bounds it
		 * where it is not. */
		r = asprintf(&data, "mode=0755,size=%" PRIu64,
			     mount_upper_size(p->limits.memory_max, f->ram_bytes, p->image_upper_max));
		flags |= MOP_F_TMPFS_UPPER;
	}
	if (r < 0)
		return -ENOMEM;
	if ((r = add(mp, MOP_OVERLAY, p->image_rootfs, "/", data, flags)) < 0 ||
	    (r = add(mp, MOP_MIRROR, etc, "/etc", NULL, MOP_F_FALLBACK)) < 0 ||
	    (r = add(mp, MOP_MIRROR, var, "/var", "tmp", MOP_F_FALLBACK)) < 0)
		return r;
	return add(mp, MOP_TMPFS, NULL, "/var/tmp", "mode=1777", MOP_F_FALLBACK);
}

/* System directories of the host, read-only; merged-/usr symlinks recreated as links; a root
 * caller's /etc and /opt idmapped (mount-idmap.c) or their root-only entries masked. Pure. */
static int plan_host_system(struct mount_plan *mp, const struct mount_host_facts *f)
{
	char buf[64];
	int r;

#define TRY(x)                          \
	do {                            \
		if ((r = (x)) < 0)      \
			return r;       \
	} while (0)
	TRY(add(mp, MOP_BIND, "/usr", "/usr", NULL, MOP_F_RO | MOP_F_SYSTEM));
	for (size_t i = 0; i < ELEMENTSOF(lib_names); i++) {
		snprintf(buf, sizeof(buf), "/%s", lib_names[i]);
		if (f->lib_link[i])
			TRY(add(mp, MOP_SYMLINK, f->lib_link[i], buf, NULL, 0));
		else if (f->lib_dir[i])
			TRY(add(mp, MOP_BIND, buf, buf, NULL, MOP_F_RO | MOP_F_SYSTEM));
	}
	if (f->idmapped) {
		/* the supervisor's idmapped trees: every owner reads as nobody */
		snprintf(buf, sizeof(buf), "%d", f->etc_tree);
		TRY(add(mp, MOP_BIND, "/etc", "/etc", buf, MOP_F_RO | MOP_F_PREPARED | MOP_F_SYSTEM));
		if (f->has_opt && f->opt_tree >= 0) {
			snprintf(buf, sizeof(buf), "%d", f->opt_tree);
			TRY(add(mp, MOP_BIND, "/opt", "/opt", buf, MOP_F_RO | MOP_F_PREPARED | MOP_F_SYSTEM));
		}
	} else {
		TRY(add(mp, MOP_BIND, "/etc", "/etc", NULL, MOP_F_RO | MOP_F_SYSTEM));
		if (f->has_opt)
			TRY(add(mp, MOP_BIND, "/opt", "/opt", NULL, MOP_F_RO | MOP_F_SYSTEM));
	}
	for (size_t i = 0; f->masked_dirs && f->masked_dirs[i]; i++)
		TRY(add(mp, MOP_TMPFS, NULL, f->masked_dirs[i], "mode=0700,size=4k", MOP_F_RO));
	for (size_t i = 0; f->masked_files && f->masked_files[i]; i++)
		TRY(add(mp, MOP_BIND, "/dev/null", f->masked_files[i], NULL,
			MOP_F_RO | MOP_F_DEV | MOP_F_FILE | MOP_F_SYSTEM));
#undef TRY
	return 0;
}

/* Kernel filesystems, the same for `aisb run` and a build's RUN step: a fresh proc of the new
 * pid namespace (its covers come in the /proc stage, ns/procfs.h), no sysfs at all; a minimal
 * /dev: a handful of host nodes, our own devpts, no /dev/net/tun, no disks. Pure. */
/* The writable tmpfs mounts (/tmp, /dev/shm, /run) as "mode=M,size=N": each a share of the
 * memory limit (mount_tmpfs_size()), so that filling them is ENOSPC within the limit whether or
 * not cgroups enforce it (issue 22: each was half the RAM, 36 GiB together on a 23 GiB machine,
 * and a root caller on a host without delegation had no other bound). */
static int tmpfs_data(char **out, const char *mode, const struct aisb_plan *p, const struct mount_host_facts *f,
		      unsigned share)
{
	return asprintf(out, "mode=%s,size=%" PRIu64, mode, mount_tmpfs_size(p->limits.memory_max, f->ram_bytes, share)) < 0
		       ? -ENOMEM
		       : 0;
}

uint64_t mount_tmpfs_size(uint64_t memory_max, uint64_t ram_bytes, unsigned share)
{
	/* /tmp half, /dev/shm a quarter, /run an eighth: 7/8 of the limit together, so that they
	 * fill before the cgroup does (as the image upper, mount_upper_size()); never above half the
	 * RAM each, never below 1 MiB */
	uint64_t n = (memory_max ? memory_max : CGROUP_MEMORY_DEFAULT) / share;

	if (ram_bytes && n > ram_bytes / 2)
		n = ram_bytes / 2;
	return n < (1u << 20) ? (1u << 20) : n;
}

/* @shm: the /dev/shm tmpfs's data (tmpfs_data()); @proc_flags: MOP_F_CONTAINER_PROC or 0 */
static int plan_kernel_fs(struct mount_plan *mp, const char *shm, unsigned proc_flags)
{
	static const char *const fd_links[][2] = {
		{ "/proc/self/fd", "/dev/fd" },
		{ "/proc/self/fd/0", "/dev/stdin" },
		{ "/proc/self/fd/1", "/dev/stdout" },
		{ "/proc/self/fd/2", "/dev/stderr" },
	};
	int r;

	if ((r = add(mp, MOP_PROC, NULL, "/proc", "hidepid=invisible", proc_flags)) < 0 ||
	    (r = add(mp, MOP_TMPFS, NULL, "/dev", "mode=0755,size=64k", 0)) < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(dev_nodes); i++)
		if ((r = addf(mp, MOP_BIND, MOP_F_FILE | MOP_F_DEV, NULL, "/dev/%s", dev_nodes[i], "/dev/%s",
			      dev_nodes[i])) < 0)
			return r;
	if ((r = add(mp, MOP_DEVPTS, NULL, "/dev/pts", "newinstance,ptmxmode=0666,mode=0620", 0)) < 0 ||
	    (r = add(mp, MOP_SYMLINK, "pts/ptmx", "/dev/ptmx", NULL, 0)) < 0 ||
	    (r = add(mp, MOP_TMPFS, NULL, "/dev/shm", shm, 0)) < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(fd_links); i++)
		if ((r = add(mp, MOP_SYMLINK, fd_links[i][0], fd_links[i][1], NULL, 0)) < 0)
			return r;
	return 0;
}

/* Home: persistent under the state dir, or a tmpfs with the bridged harness config (@bb, the
 * directories under <session dir>/bridge-home: mount_plan_build()'s @home_binds); ~/.agents
 * read-only on top. Pure. */
static int plan_home(struct mount_plan *mp, const struct aisb_plan *p, const struct mount_host_facts *f,
		     const char *const *bb)
{
	char buf[64];
	int r;

	if ((r = add(mp, MOP_MKDIR, NULL, "/home", NULL, 0)) < 0)
		return r;
	if (p->home_src) {
		/* the session's canonical copy (core/session.h); a plan that wants a persistent
		 * home and got none from the session is refused, never run on a tmpfs */
		if (!f->home_src)
			return -EINVAL;
		r = add(mp, MOP_BIND, f->home_src, p->home, NULL, 0);
	} else {
		snprintf(buf, sizeof(buf), "mode=0700,uid=%u,gid=%u", (unsigned)p->uid, (unsigned)p->gid);
		r = add(mp, MOP_TMPFS, NULL, p->home, buf, 0);
		/* the bridged harness config (agents/bridge.h), written to the session dir */
		for (size_t i = 0; r >= 0 && bb && bb[i] && f->bridge_home; i++) {
			_cleanup_free_ char *bsrc = NULL, *bdst = NULL;
			if (asprintf(&bsrc, "%s/%s", f->bridge_home, bb[i]) < 0 ||
			    asprintf(&bdst, "%s/%s", p->home, bb[i]) < 0)
				return -ENOMEM;
			r = add(mp, MOP_BIND, bsrc, bdst, NULL, 0);
		}
	}
	if (r >= 0 && p->agents_src)
		r = addf(mp, MOP_BIND, MOP_F_RO, NULL, "%s", p->agents_src, "%s/.agents", p->home);
	return r;
}

/* The project, and the git files that run code on the host later. Binding .git onto itself
 * makes it a mount point, so it cannot be renamed aside (EBUSY) and replaced. Pure. */
static int plan_project(struct mount_plan *mp, const struct aisb_plan *p, const struct mount_host_facts *f)
{
	unsigned ro = p->project_ro ? MOP_F_RO : 0;
	int r;

	if (!f->project_src)
		return 0;
	r = add(mp, MOP_BIND, f->project_src, p->project_dst, NULL, ro);
	if (r < 0 || p->writable_git)
		return r;
	if (f->git == GIT_FILE)
		return addf(mp, MOP_BIND, MOP_F_RO | MOP_F_FILE, NULL, "%s/.git", f->project_src, "%s/.git",
			    p->project_dst);
	if (f->git != GIT_DIR)
		return 0;
	r = addf(mp, MOP_BIND, ro, NULL, "%s/.git", f->project_src, "%s/.git", p->project_dst);
	if (r >= 0 && f->git_hooks)
		r = addf(mp, MOP_BIND, MOP_F_RO, NULL, "%s/.git/hooks", f->project_src, "%s/.git/hooks",
			 p->project_dst);
	if (r >= 0 && f->git_config)
		r = addf(mp, MOP_BIND, MOP_F_RO | MOP_F_FILE, NULL, "%s/.git/config", f->project_src,
			 "%s/.git/config", p->project_dst);
	if (r >= 0 && f->git_modules)
		r = addf(mp, MOP_BIND, MOP_F_RO, NULL, "%s/.git/modules", f->project_src, "%s/.git/modules",
			 p->project_dst);
	for (size_t i = 0; r >= 0 && f->git_pin_dirs && f->git_pin_dirs[i]; i++)
		r = add_git(mp, p, f, f->git_pin_dirs[i], ro);
	for (size_t i = 0; r >= 0 && f->git_pin_files && f->git_pin_files[i]; i++)
		r = add_git(mp, p, f, f->git_pin_files[i], MOP_F_RO | MOP_F_FILE);
	return r;
}

/* Generated identity and name files over the host's /etc. Pure. */
static int plan_etc_files(struct mount_plan *mp, const struct aisb_plan *p, const struct mount_host_facts *f)
{
	static const char *const etc_files[] = { "passwd", "group", "hosts", "resolv.conf" };
	char buf[64];
	int r = 0;

	for (size_t i = 0; f->session_etc && r >= 0 && i < ELEMENTSOF(etc_files); i++) {
		_cleanup_free_ char *src = path_join(f->session_etc, etc_files[i]);
		unsigned fl = MOP_F_RO | MOP_F_FILE;

		if (streq(etc_files[i], "resolv.conf") && (f->resolv_is_link || p->rootfs == ROOTFS_IMAGE))
			fl |= MOP_F_OVER_LINK;
		snprintf(buf, sizeof(buf), "/etc/%s", etc_files[i]);
		if (!src)
			return -ENOMEM;
		r = add(mp, MOP_BIND, src, buf, NULL, fl);
	}
	/* --key-via-gate's https:// endpoints: the session CA (a certificate, no key) and the
	 * bundle, which run/session.c wrote next to the generated files */
	if (r >= 0 && p->tls_ca && f->session_etc)
		r = addf(mp, MOP_BIND, MOP_F_RO | MOP_F_FILE, NULL, "%s/" PLAN_TLS_CA_NAME, f->session_etc,
			 "%s", PLAN_TLS_CA);
	if (r >= 0 && p->tls_ca && f->session_etc)
		r = addf(mp, MOP_BIND, MOP_F_RO | MOP_F_FILE, NULL, "%s/" PLAN_TLS_BUNDLE_NAME, f->session_etc,
			 "%s", PLAN_TLS_BUNDLE);
	return r;
}

int mount_plan_build(const struct aisb_plan *p, const struct mount_host_facts *f,
		     const char *const *home_binds, struct mount_plan *out)
{
	_cleanup_free_ char *shm = NULL, *tmp = NULL, *run = NULL;
	struct mount_plan mp = { 0 };
	int r;

	if (tmpfs_data(&shm, "1777", p, f, 4) < 0 || tmpfs_data(&tmp, "1777", p, f, 2) < 0 ||
	    tmpfs_data(&run, "0755", p, f, 8) < 0)
		return -ENOMEM;
	r = p->rootfs == ROOTFS_IMAGE ? plan_image_root(&mp, p, f) : plan_host_system(&mp, f);
	if (r >= 0)
		r = plan_kernel_fs(&mp, shm, p->container_proc ? MOP_F_CONTAINER_PROC : 0);
	if (r >= 0 && (r = add(&mp, MOP_TMPFS, NULL, "/tmp", tmp, 0)) >= 0)
		r = add(&mp, MOP_TMPFS, NULL, "/run", run, 0);
	if (r >= 0)
		r = plan_home(&mp, p, f, home_binds);
	if (r >= 0)
		r = plan_project(&mp, p, f);
	for (size_t i = 0; r >= 0 && i < p->n_mounts; i++)
		r = add(&mp, MOP_BIND, p->mounts[i].src, p->mounts[i].dst, NULL,
			(p->mounts[i].ro ? MOP_F_RO : 0) | (p->mounts[i].is_dir ? 0 : MOP_F_FILE));
	if (r >= 0)
		r = plan_etc_files(&mp, p, f);
	if (r < 0) {
		mount_plan_free(&mp);
		return r;
	}
	*out = mp;
	return 0;
}

int mount_plan_build_step(const struct mount_step *s, struct mount_plan *out)
{
	_cleanup_free_ char *dirs = NULL;
	struct mount_plan mp = { 0 };
	int r;

	if (asprintf(&dirs, "%s\n%s", s->upper, s->work) < 0)
		return -ENOMEM;
	/* the build's overlay or nothing: a step never writes into a read-only fallback */
	r = add(&mp, MOP_OVERLAY, s->lower, "/", dirs, MOP_F_NO_FALLBACK);
	/* a build step's /dev/shm: the default limit's quarter (its writes are the layer's, not here) */
	if (r >= 0)
		r = plan_kernel_fs(&mp, "mode=1777,size=1073741824", 0);
	/* the step's own files outside the layer (APT_CONFIG's apt.conf) */
	if (r >= 0)
		r = add(&mp, MOP_MKDIR, NULL, MOUNT_STEP_DIR, NULL, 0);
	/* the gate's DNS stub over the image's resolver file, never written into the upper; a
	 * symlink there is covered, not followed */
	if (r >= 0 && s->resolv)
		r = add(&mp, MOP_BIND, s->resolv, "/etc/resolv.conf", NULL, MOP_F_RO | MOP_F_FILE | MOP_F_OVER_LINK);
	if (r < 0) {
		mount_plan_free(&mp);
		return r;
	}
	*out = mp;
	return 0;
}

void mount_plan_free(struct mount_plan *mp)
{
	for (size_t i = 0; i < mp->n; i++) {
		unsigned long long fd;
		if ((mp->ops[i].flags & MOP_F_REMAPPED) && mp->ops[i].data && parse_u64(mp->ops[i].data, &fd) == 0 &&
		    fd <= INT32_MAX)
			close((int)fd);
		if (mp->ops[i].lower_tree >= 0)
			close(mp->ops[i].lower_tree);
		if (mp->ops[i].dirs_tree >= 0)
			close(mp->ops[i].dirs_tree);
		free(mp->ops[i].src);
		free(mp->ops[i].dst);
		free(mp->ops[i].data);
	}
	free(mp->ops);
	mp->ops = NULL;
	mp->n = 0;
}

const struct mount_op *mount_plan_find(const struct mount_plan *mp, const char *dst)
{
	for (size_t i = 0; i < mp->n; i++)
		if (streq(mp->ops[i].dst, dst))
			return &mp->ops[i];
	return NULL;
}

