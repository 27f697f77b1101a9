// SPDX-License-Identifier: GPL-2.0-or-later
/* mount-facts.c — the facts about the host the mount plan is built from (mounts.h) */
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
#include <sys/statfs.h>
#include <sys/sysinfo.h>
#include <sys/xattr.h>
#include <linux/magic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ns/mounts.h"
#include "ns/mounts-internal.h"
#include "ns/userns.h"
#include "util/container.h"
#include "util/log.h"
#include "util/util.h"

static const char *const lib_names[6] = MOUNT_LIB_NAMES;

/* Whether entry @name of @dirfd exists as a directory (want_dir) or regular file; never follows
 * a symlink. */
static bool git_has(int dirfd, const char *name, bool want_dir)
{
	struct stat st;
	_cleanup_close_ int fd = openat_nofollow(dirfd, name, O_PATH, 0);
	if (fd < 0 || fstat(fd, &st) < 0)
		return false;
	return want_dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode);
}

/* The files that move git's config and objects elsewhere, pinned read-only where they exist (an
 * absent one cannot be pinned without breaking git inside; gitguard judges it after the run):
 * commondir, config.worktree, objects/info/alternates, and in each linked worktree's
 * worktrees/<name>/ its commondir, gitdir and config.worktree. Each worktrees/<name> is bound
 * onto itself so it cannot be renamed aside and replaced. Not worktrees/ as a whole: `git gc`
 * inside writes the worktrees' HEAD reflogs there (measured: "cannot lock ref
 * 'worktrees/wt/HEAD'" with it read-only). Return: 0 or -ENOMEM. */
static int git_pins(int dfd, struct mount_host_facts *f)
{
	static const char *const files[] = { "commondir", "config.worktree", "objects/info/alternates" };
	static const char *const wt_files[] = { "commondir", "gitdir", "config.worktree" };
	_cleanup_close_ int wfd = openat_nofollow(dfd, "worktrees", O_RDONLY | O_DIRECTORY, 0);
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	for (size_t i = 0; i < ELEMENTSOF(files); i++)
		if (git_has(dfd, files[i], false) && strv_push(&f->git_pin_files, files[i]) < 0)
			return -ENOMEM;
	if (wfd < 0 || !(d = fdopendir(wfd)))
		return 0;
	wfd = -1; /* owned by d; NOLINT(clang-analyzer-deadcode.DeadStores): read by its _cleanup_close_, which clang-analyzer does not model */
	while ((de = readdir(d)) && n < 64) {
		_cleanup_free_ char *dir = NULL;
		if (de->d_name[0] == '.' || !git_has(dirfd(d), de->d_name, true))
			continue;
		if (asprintf(&dir, "worktrees/%s", de->d_name) < 0 || strv_push(&f->git_pin_dirs, dir) < 0)
			goto oom;
		n++;
		for (size_t i = 0; i < ELEMENTSOF(wt_files); i++) {
			_cleanup_free_ char *rel = NULL;
			if (asprintf(&rel, "%s/%s", de->d_name, wt_files[i]) < 0)
				goto oom;
			if (git_has(dirfd(d), rel, false)) {
				_cleanup_free_ char *full = path_join("worktrees", rel);
				if (!full || strv_push(&f->git_pin_files, full) < 0)
					goto oom;
			}
		}
	}
	closedir(d);
	return 0;
oom:
	closedir(d);
	return -ENOMEM;
}

/* What <project>/.git is, and which of the files that decide what git runs exist to be pinned.
 * Every path is opened below the project fd with openat2(RESOLVE_NO_SYMLINKS): a sandbox of
 * another session may swap .git or .git/hooks for a symlink at any moment, and a symlink at any
 * component must not lead the pins (or the hooks dir created here) somewhere else. The apply
 * step opens the same sources the same way, so a swap after this check fails the run. */
static int git_facts(const struct aisb_plan *p, int pfd, struct mount_host_facts *f)
{
	_cleanup_close_ int gfd = openat_nofollow(pfd, ".git", O_PATH, 0);
	struct stat st;

	if (gfd == -ELOOP) {
		if (p->writable_git)
			return 0;
		/* A link cannot be pinned: the sandbox could replace it with a .git of its own whose
		 * hooks run on the host later. */
		return log_error("'%s/.git' is a symlink, which the sandbox could replace with a "
				 "repository of its own; run from the real repository, or pass "
				 "--writable-git", f->project_src);
	}
	if (gfd < 0 || fstat(gfd, &st) < 0)
		return 0;
	if (S_ISREG(st.st_mode)) {
		f->git = GIT_FILE;
		return 0;
	}
	if (!S_ISDIR(st.st_mode))
		return 0;
	f->git = GIT_DIR;
	{
		_cleanup_close_ int dfd = openat_nofollow(pfd, ".git", O_RDONLY | O_DIRECTORY, 0);
		if (dfd < 0)
			return log_error_errno(dfd, "cannot open '%s/.git': %m", f->project_src);
		/* An absent hooks dir would let the sandbox create one: make the (empty) directory
		 * that the read-only bind will cover. */
		if (faccessat(dfd, "hooks", F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
			(void)mkdirat(dfd, "hooks", 0755);
		/* A missing config would let the sandbox create one: make it empty. */
		if (!p->writable_git && faccessat(dfd, "config", F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT) {
			int c = openat(dfd, "config", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
			if (c >= 0)
				close(c);
		}
		f->git_hooks = git_has(dfd, "hooks", true);
		f->git_config = git_has(dfd, "config", false);
		/* Submodules keep their own hooks and config under .git/modules. */
		f->git_modules = git_has(dfd, "modules", true);
		/* Where git takes config and objects from besides: pinned where they exist (an absent
		 * one cannot be pinned without breaking git inside; gitguard judges it after the run).
		 * worktrees/ also keeps `git gc` inside from pruning the worktrees it cannot see. */
		if (!p->writable_git && git_pins(dfd, f) < 0)
			return -ENOMEM;
	}
	if (!p->writable_git && !f->git_hooks)
		return log_error("'%s/.git/hooks' is not a directory and cannot be made "
				 "read-only; fix it or pass --writable-git", f->project_src);
	if (!p->writable_git && !f->git_config)
		return log_error("'%s/.git/config' is not a regular file and cannot be made "
				 "read-only; fix it or pass --writable-git", f->project_src);
	return 0;
}

/* Which of /bin /sbin /lib* are symlinks (merged /usr) or directories, whether /opt exists and
 * whether /etc/resolv.conf is a link: what the host rootfs's plan binds. Return: 0 or -ENOMEM. */
static int host_system_facts(struct mount_host_facts *f)
{
	struct stat st;

	for (size_t i = 0; i < ELEMENTSOF(lib_names); i++) {
		char path[32], target[4096];
		ssize_t n;

		snprintf(path, sizeof(path), "/%s", lib_names[i]);
		if (lstat(path, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			n = readlink(path, target, sizeof(target) - 1);
			if (n <= 0)
				continue;
			target[n] = 0;
			f->lib_link[i] = strdup(target);
			if (!f->lib_link[i])
				return -ENOMEM;
		} else if (S_ISDIR(st.st_mode))
			f->lib_dir[i] = true;
	}
	f->has_opt = lstat("/opt", &st) == 0 && S_ISDIR(st.st_mode);
	f->resolv_is_link = lstat("/etc/resolv.conf", &st) == 0 && S_ISLNK(st.st_mode);
	return 0;
}

bool mount_tmpfs_has_user_xattr(void)
{
	_cleanup_close_ int fd = open("/dev/shm", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	struct statfs sfs;

	return fd >= 0 && fstatfs(fd, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC &&
	       fsetxattr(fd, "user.aisb.probe", "1", 1, 0) == 0;
}

int mount_host_facts(const struct aisb_plan *p, const struct aisb_session *ss, struct mount_host_facts *f)
{
	int r;

	memset(f, 0, sizeof(*f));
	/* an image root shows none of the host's system directories (13 calls saved) */
	if (p->rootfs != ROOTFS_IMAGE && host_system_facts(f) < 0)
		return -ENOMEM;
	if (ss->etc_dir && !(f->session_etc = strdup(ss->etc_dir)))
		return -ENOMEM;
	if ((plan_project_src(p, ss) && !(f->project_src = strdup(plan_project_src(p, ss)))) ||
	    (ss->home_src && !(f->home_src = strdup(ss->home_src))) ||
	    (ss->dir && !(f->bridge_home = path_join(ss->dir, "bridge-home"))))
		return -ENOMEM;
	if (p->rootfs == ROOTFS_IMAGE && p->image_ephemeral) {
		struct sysinfo si;
		if (sysinfo(&si) == 0)
			f->ram_bytes = (uint64_t)si.totalram * (si.mem_unit ? si.mem_unit : 1);
	}
	if (p->rootfs == ROOTFS_IMAGE && ss->dir && !p->image_ephemeral) {
		_cleanup_free_ char *ov = path_join(ss->dir, "overlay");
		f->overlay_upper = path_join(ss->dir, "overlay/upper");
		f->overlay_work = path_join(ss->dir, "overlay/work");
		if (!ov || !f->overlay_upper || !f->overlay_work)
			return -ENOMEM;
		if ((mkdir(ov, 0700) < 0 && errno != EEXIST) || (mkdir(f->overlay_upper, 0755) < 0 && errno != EEXIST) ||
		    (mkdir(f->overlay_work, 0700) < 0 && errno != EEXIST))
			return log_error_errno(-errno, "cannot create the overlay dirs in '%s': %m", ov);
	}
	/* root-only /etc entries matter only when the host's /etc is what the sandbox sees */
	f->etc_tree = f->opt_tree = -1;
	if (p->run_uid == 0 && p->rootfs != ROOTFS_IMAGE && mount_root_masks(f) < 0)
		return -EPERM;

	if (f->project_src) {
		_cleanup_close_ int pfd = open(f->project_src, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (pfd < 0)
			return log_error_errno(-errno, "cannot open the project '%s': %m", f->project_src);
		r = git_facts(p, pfd, f);
		if (r < 0)
			return r;
	}
	return 0;
}

void mount_host_facts_free(struct mount_host_facts *f)
{
	for (size_t i = 0; i < ELEMENTSOF(f->lib_link); i++)
		free(f->lib_link[i]);
	free(f->session_etc);
	free(f->home_src);
	free(f->bridge_home);
	free(f->project_src);
	free(f->overlay_upper);
	free(f->overlay_work);
	strv_free(f->masked_files);
	strv_free(f->git_pin_files);
	strv_free(f->git_pin_dirs);
	strv_free(f->masked_dirs);
	if (f->idmapped) {
		if (f->etc_tree >= 0)
			close(f->etc_tree);
		if (f->opt_tree >= 0)
			close(f->opt_tree);
	}
	memset(f, 0, sizeof(*f));
}

