// SPDX-License-Identifier: GPL-2.0-or-later
/* mounts.c — mount plan builder (pure) and its application inside the new mount namespace */
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
#include "util/container.h"
#include "util/log.h"
#include "util/util.h"

static const char *const lib_names[6] = { "bin", "sbin", "lib", "lib32", "lib64", "libx32" };
static const char *const dev_nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };

/* ---- facts ------------------------------------------------------------------------------- */

#define MASK_MAX 512
#define MASK_DEPTH 16
#define MASK_WALKERS 2

/* One directory waiting to be listed. */
struct mask_dir {
	int fd;
	char *path;
	int depth;
};

/* The walk is shared by MASK_WALKERS threads (this one and helpers): a stack of directories to
 * list, and the results, all under one lock. Measured on this host (/etc + /opt: 200 dirs, 750
 * entries stat'ed, 2.8 ms on one core), listing and statx are all kernel time that parallelises
 * across cores; the lock is taken once per directory and per masked entry, not per entry. */
struct mask_walk {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct mask_dir *stack;
	size_t n, cap;
	unsigned busy; /* walkers listing a directory right now */
	char **files, **dirs;
	size_t count;
	int err;
};

static void mask_fail(struct mask_walk *w, int err)
{
	if (w->err == 0)
		w->err = err;
	pthread_cond_broadcast(&w->cond);
}

/* Called with the lock held. Takes @fd and @path. */
static void mask_push_dir(struct mask_walk *w, int fd, char *path, int depth)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 64;
		struct mask_dir *s = reallocarray(w->stack, cap, sizeof(*s));
		if (!s) {
			close(fd);
			free(path);
			mask_fail(w, -ENOMEM);
			return;
		}
		w->stack = s;
		w->cap = cap;
	}
	w->stack[w->n++] = (struct mask_dir){ .fd = fd, .path = path, .depth = depth };
	pthread_cond_signal(&w->cond);
}

/* Called with the lock held. */
static void mask_add(struct mask_walk *w, const char *dir, const char *name, bool is_dir)
{
	char *p;

	if (++w->count > MASK_MAX) {
		mask_fail(w, -E2BIG);
		return;
	}
	p = path_join(dir, name);
	if (!p || strv_push_take(is_dir ? &w->dirs : &w->files, p) < 0)
		mask_fail(w, -ENOMEM);
}

/* Lists one directory (without the lock): getdents64 + statx of the mode only, symlinks
 * skipped by d_type (measured ~3x faster than nftw over this host's /etc: 6 ms vs 18 ms).
 * World-readable subdirectories are queued, root-only entries recorded. */
static void mask_list_dir(struct mask_walk *w, const struct mask_dir *d)
{
	char buf[16384];
	long k;

	while ((k = syscall(SYS_getdents64, d->fd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < k;) {
			struct dirent64 *e = (struct dirent64 *)(buf + off);
			struct statx sx;
			char *child;
			bool dir;
			int c;

			off += e->d_reclen;
			if (streq(e->d_name, ".") || streq(e->d_name, "..") || e->d_type == DT_LNK)
				continue;
			if (statx(d->fd, e->d_name, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_MODE,
				  &sx) < 0)
				continue;
			dir = S_ISDIR(sx.stx_mode);
			if (!dir && !S_ISREG(sx.stx_mode))
				continue;
			if (dir ? (sx.stx_mode & S_IXOTH) && (sx.stx_mode & S_IROTH) : (sx.stx_mode & S_IROTH)) {
				if (!dir || d->depth >= MASK_DEPTH)
					continue;
				c = openat(d->fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (c < 0)
					continue;
				child = path_join(d->path, e->d_name);
				pthread_mutex_lock(&w->lock);
				if (child)
					mask_push_dir(w, c, child, d->depth + 1);
				else {
					close(c);
					mask_fail(w, -ENOMEM);
				}
				pthread_mutex_unlock(&w->lock);
				continue;
			}
			pthread_mutex_lock(&w->lock);
			mask_add(w, d->path, e->d_name, dir);
			pthread_mutex_unlock(&w->lock);
		}
	}
}

/* A walker: takes directories off the stack until it is empty and nobody can add more. */
static void *mask_walker(void *arg)
{
	struct mask_walk *w = arg;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct mask_dir d;

		while (w->n == 0 && w->busy > 0 && w->err == 0)
			pthread_cond_wait(&w->cond, &w->lock);
		if (w->n == 0 || w->err != 0)
			break;
		d = w->stack[--w->n];
		w->busy++;
		pthread_mutex_unlock(&w->lock);
		mask_list_dir(w, &d);
		close(d.fd);
		free(d.path);
		pthread_mutex_lock(&w->lock);
		if (--w->busy == 0 && w->n == 0)
			pthread_cond_broadcast(&w->cond); /* the walk is over */
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* The one walk of a run: mount_masks_prefetch() may start it early, collect_masks() finishes it. */
static struct mask_walk walk = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
static pthread_t helpers[MASK_WALKERS - 1];
static size_t n_helpers;
static bool walk_started;

/* ---- root callers: /etc and /opt idmapped to nobody ------------------------------------------
 *
 * Inside 1000 maps to host 0 for a root caller, so the owner bits of root's files would apply.
 * Preferred: clones of /etc and /opt idmapped through a user namespace that maps only 0 ->
 * 65534, so every owner and group of those trees reads as nobody/nogroup and only the "other"
 * bits grant anything (measured on this kernel: /etc/shadow EACCES, passwd readable). Creating
 * an idmapped mount needs CAP_SYS_ADMIN over the filesystem's user namespace (real root) and
 * filesystems that support it, so this is tried once and the walk below is the fallback. */
static int idmap_etc = -1, idmap_opt = -1;
static bool prefetched, idmap_ready;

static int userns_holder(void *arg)
{
	const int *pfd = arg;
	char b;

	/* Raw calls: this child shares the parent's memory (CLONE_VM), errno included. It has its
	 * own copy of the fd table, so it closes its write end first: then a supervisor killed
	 * before it released the child is EOF here, not a child blocked forever in a pipe it holds
	 * both ends of (seen under load by lifecycle.bats' SIGKILL-during-startup test). */
	(void)syscall(SYS_close, pfd[1]);
	(void)syscall(SYS_read, pfd[0], &b, 1);
	return 0;
}

static int write_proc(pid_t pid, const char *file, const char *text)
{
	char path[64];
	int fd, r = 0;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* An fd of a new user namespace that maps only 0 -> 65534 (uid and gid). Does not log. */
static int nobody_userns(void)
{
	const size_t stack_size = 64 * 1024;
	int pfd[2], ufd = -1, r = 0;
	bool released = false;
	char path[64];
	void *stack;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED) {
		r = -errno;
		goto out;
	}
	/* the child only waits in the new namespace while its maps are written */
	pid = clone(userns_holder, (char *)stack + stack_size, CLONE_NEWUSER | CLONE_VM | SIGCHLD, pfd);
	if (pid < 0) {
		r = -errno;
		goto out;
	}
	if ((r = write_proc(pid, "uid_map", "0 65534 1\n")) == 0 && (r = write_proc(pid, "setgroups", "deny")) == 0 &&
	    (r = write_proc(pid, "gid_map", "0 65534 1\n")) == 0) {
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
		ufd = open(path, O_RDONLY | O_CLOEXEC);
		if (ufd < 0)
			r = -errno;
	}
	/* Release the child: EOF once our write end is closed (the child closed its copy). pfd
	 * itself stays as it is until the child is reaped: the child reads pfd[1] from this frame
	 * (shared memory), possibly only now, when it is first scheduled. */
	close(pfd[1]);
	released = true;
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
out:
	if (stack != MAP_FAILED && stack)
		munmap(stack, stack_size);
	close(pfd[0]);
	if (!released)
		close(pfd[1]);
	return r < 0 ? r : ufd;
}

/* A detached recursive clone of @path (no symlink followed), read-only, nosuid, nodev and
 * idmapped through @userns. Does not log. */
static int idmapped_tree(const char *path, int userns)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
					       MOUNT_ATTR_NODEV,
				   .userns_fd = (uint64_t)userns };
	int src, tree, r;

	src = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	if (src < 0)
		return -errno;
	tree = open_tree(src, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
	r = tree < 0 ? -errno : 0;
	close(src);
	if (r == 0 && mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0) {
		r = -errno;
		close(tree);
	}
	return r < 0 ? r : tree;
}

static bool prepare_idmap(void)
{
	struct stat st;
	int ns = nobody_userns();

	if (ns < 0)
		return false;
	idmap_etc = idmapped_tree("/etc", ns);
	if (idmap_etc >= 0 && lstat("/opt", &st) == 0 && S_ISDIR(st.st_mode)) {
		idmap_opt = idmapped_tree("/opt", ns);
		if (idmap_opt < 0) {
			close(idmap_etc);
			idmap_etc = -1;
		}
	}
	close(ns);
	return idmap_etc >= 0;
}

/* The fallback: hide what only root may read under the bound system dirs that are small enough
 * to walk at every start (/etc, /opt). /usr is not walked (100k+ entries here); see
 * docs/threat-model.md. */
static void start_walk(void)
{
	static const char *const roots[] = { "/etc", "/opt" };

	if (walk_started)
		return;
	walk_started = true;
	for (size_t i = 0; i < ELEMENTSOF(roots) && walk.err == 0; i++) {
		int fd = open(roots[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		char *path;

		if (fd < 0) {
			if (errno != ENOENT)
				walk.err = -errno;
			continue;
		}
		path = strdup(roots[i]);
		if (!path) {
			close(fd);
			walk.err = -ENOMEM;
			break;
		}
		mask_push_dir(&walk, fd, path, 0);
	}
	/* A helper that cannot start only makes the walk slower. */
	while (walk.err == 0 && n_helpers < ELEMENTSOF(helpers) &&
	       pthread_create(&helpers[n_helpers], NULL, mask_walker, &walk) == 0)
		n_helpers++;
}

void mount_masks_prefetch(bool try_idmap)
{
	if (prefetched)
		return;
	prefetched = true;
	idmap_ready = try_idmap && prepare_idmap();
	if (!idmap_ready)
		start_walk();
}

static int collect_masks(struct mount_host_facts *f)
{
	int r;

	start_walk(); /* unless it was started already */
	(void)mask_walker(&walk); /* this thread helps until the stack is empty */
	for (size_t i = 0; i < n_helpers; i++)
		pthread_join(helpers[i], NULL);
	for (size_t i = 0; i < walk.n; i++) { /* left over after a failure */
		close(walk.stack[i].fd);
		free(walk.stack[i].path);
	}
	free(walk.stack);
	/* walkers finish in any order: sort, so the plan is the same on every run */
	strv_sort(walk.files);
	strv_sort(walk.dirs);
	f->masked_files = walk.files;
	f->masked_dirs = walk.dirs;
	r = walk.err;
	walk = (struct mask_walk){ .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	n_helpers = 0;
	walk_started = false;
	if (r < 0)
		return log_error_errno(r, "cannot list the root-only files under /etc and /opt to hide "
				       "them: %m");
	return 0;
}

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
	wfd = -1;
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
				 "--writable-git", p->project_src);
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
			return log_error_errno(dfd, "cannot open '%s/.git': %m", p->project_src);
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
				 "read-only; fix it or pass --writable-git", p->project_src);
	if (!p->writable_git && !f->git_config)
		return log_error("'%s/.git/config' is not a regular file and cannot be made "
				 "read-only; fix it or pass --writable-git", p->project_src);
	return 0;
}

int mount_host_facts(const struct aisb_plan *p, struct mount_host_facts *f)
{
	struct stat st;
	int r;

	memset(f, 0, sizeof(*f));
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
	if (p->session_dir && !(f->session_etc = path_join(p->session_dir, "etc")))
		return -ENOMEM;
	if (p->rootfs == ROOTFS_IMAGE && p->session_dir && !p->image_ephemeral) {
		_cleanup_free_ char *ov = path_join(p->session_dir, "overlay");
		f->overlay_upper = path_join(p->session_dir, "overlay/upper");
		f->overlay_work = path_join(p->session_dir, "overlay/work");
		if (!ov || !f->overlay_upper || !f->overlay_work)
			return -ENOMEM;
		if ((mkdir(ov, 0700) < 0 && errno != EEXIST) || (mkdir(f->overlay_upper, 0755) < 0 && errno != EEXIST) ||
		    (mkdir(f->overlay_work, 0700) < 0 && errno != EEXIST))
			return log_error_errno(-errno, "cannot create the overlay dirs in '%s': %m", ov);
	}
	/* root-only /etc entries matter only when the host's /etc is what the sandbox sees */
	f->etc_tree = f->opt_tree = -1;
	if (p->host_uid == 0 && p->rootfs != ROOTFS_IMAGE) {
		mount_masks_prefetch(true); /* unless it was called already */
		if (idmap_ready) {
			f->idmapped = true;
			f->etc_tree = idmap_etc;
			f->opt_tree = f->has_opt ? idmap_opt : -1;
			if (!f->has_opt && idmap_opt >= 0)
				close(idmap_opt);
			idmap_etc = idmap_opt = -1;
			idmap_ready = prefetched = false;
		} else {
			prefetched = false;
			if (collect_masks(f) < 0)
				return -EPERM;
		}
	}

	if (p->project_src) {
		_cleanup_close_ int pfd = open(p->project_src, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (pfd < 0)
			return log_error_errno(-errno, "cannot open the project '%s': %m", p->project_src);
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

/* ---- pure builder ------------------------------------------------------------------------ */

static int add(struct mount_plan *mp, enum mount_op_kind k, const char *src, const char *dst,
	       const char *data, unsigned flags)
{
	struct mount_op *n = realloc(mp->ops, (mp->n + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	mp->ops = n;
	n[mp->n] = (struct mount_op){ k, src ? strdup(src) : NULL, strdup(dst), data ? strdup(data) : NULL, flags };
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
static int add_git(struct mount_plan *mp, const struct aisb_plan *p, const char *rel, unsigned flags)
{
	_cleanup_free_ char *src = NULL, *dst = NULL;
	if (asprintf(&src, "%s/.git/%s", p->project_src, rel) < 0 || asprintf(&dst, "%s/.git/%s", p->project_dst, rel) < 0)
		return -ENOMEM;
	return add(mp, MOP_BIND, src, dst, NULL, flags);
}

int mount_plan_build(const struct aisb_plan *p, const struct mount_host_facts *f, struct mount_plan *out)
{
	struct mount_plan mp = { 0 };
	char buf[64];
	int r = 0;

#define TRY(x)                                                                                     \
	do {                                                                                       \
		if ((r = (x)) < 0)                                                                 \
			goto fail;                                                                 \
	} while (0)

	if (p->rootfs == ROOTFS_IMAGE) {
		/* The image as the root: its unpacked tree read-only below an overlay whose upper is
		 * the session's (or a tmpfs), so nothing written inside reaches the store. */
		_cleanup_free_ char *dirs = NULL;
		if (f->overlay_upper && asprintf(&dirs, "%s\n%s", f->overlay_upper, f->overlay_work) < 0) {
			r = -ENOMEM;
			goto fail;
		}
		TRY(add(&mp, MOP_OVERLAY, p->image_rootfs, "/", dirs, p->image_no_overlay ? MOP_F_NO_OVERLAY : 0));
		/* Without overlay: the root, /etc and /var become tmpfs mirrors of the image (read-only
		 * binds of their entries), so that mount points can be made without writing to the
		 * store; /var/tmp is a tmpfs (/tmp, /run and the home are below, as always). */
		{
			_cleanup_free_ char *etc = path_join(p->image_rootfs, "etc");
			_cleanup_free_ char *var = path_join(p->image_rootfs, "var");
			if (!etc || !var) {
				r = -ENOMEM;
				goto fail;
			}
			TRY(add(&mp, MOP_MIRROR, etc, "/etc", NULL, MOP_F_FALLBACK));
			TRY(add(&mp, MOP_MIRROR, var, "/var", "tmp", MOP_F_FALLBACK));
			TRY(add(&mp, MOP_TMPFS, NULL, "/var/tmp", "mode=1777", MOP_F_FALLBACK));
		}
		goto kernel_fs;
	}

	/* System directories of the host, read-only; merged-/usr symlinks recreated as links. */
	TRY(add(&mp, MOP_BIND, "/usr", "/usr", NULL, MOP_F_RO));
	for (size_t i = 0; i < ELEMENTSOF(lib_names); i++) {
		snprintf(buf, sizeof(buf), "/%s", lib_names[i]);
		if (f->lib_link[i])
			TRY(add(&mp, MOP_SYMLINK, f->lib_link[i], buf, NULL, 0));
		else if (f->lib_dir[i])
			TRY(add(&mp, MOP_BIND, buf, buf, NULL, MOP_F_RO));
	}
	if (f->idmapped) {
		/* the supervisor's idmapped trees: every owner reads as nobody (see above) */
		snprintf(buf, sizeof(buf), "%d", f->etc_tree);
		TRY(add(&mp, MOP_BIND, "/etc", "/etc", buf, MOP_F_RO | MOP_F_PREPARED));
		if (f->has_opt && f->opt_tree >= 0) {
			snprintf(buf, sizeof(buf), "%d", f->opt_tree);
			TRY(add(&mp, MOP_BIND, "/opt", "/opt", buf, MOP_F_RO | MOP_F_PREPARED));
		}
	} else {
		TRY(add(&mp, MOP_BIND, "/etc", "/etc", NULL, MOP_F_RO));
		if (f->has_opt)
			TRY(add(&mp, MOP_BIND, "/opt", "/opt", NULL, MOP_F_RO));
	}
	for (size_t i = 0; f->masked_dirs && f->masked_dirs[i]; i++)
		TRY(add(&mp, MOP_TMPFS, NULL, f->masked_dirs[i], "mode=0700,size=4k", MOP_F_RO));
	for (size_t i = 0; f->masked_files && f->masked_files[i]; i++)
		TRY(add(&mp, MOP_BIND, "/dev/null", f->masked_files[i], NULL, MOP_F_RO | MOP_F_DEV | MOP_F_FILE));

kernel_fs:
	/* Kernel filesystems: a fresh proc of the new pid namespace; no sysfs at all. */
	TRY(add(&mp, MOP_PROC, NULL, "/proc", "hidepid=invisible", 0));

	/* A minimal /dev: a handful of host nodes, our own devpts, no /dev/net/tun, no disks. */
	TRY(add(&mp, MOP_TMPFS, NULL, "/dev", "mode=0755,size=64k", 0));
	for (size_t i = 0; i < ELEMENTSOF(dev_nodes); i++)
		TRY(addf(&mp, MOP_BIND, MOP_F_FILE | MOP_F_DEV, NULL, "/dev/%s", dev_nodes[i], "/dev/%s", dev_nodes[i]));
	TRY(add(&mp, MOP_DEVPTS, NULL, "/dev/pts", "newinstance,ptmxmode=0666,mode=0620", 0));
	TRY(add(&mp, MOP_SYMLINK, "pts/ptmx", "/dev/ptmx", NULL, 0));
	TRY(add(&mp, MOP_TMPFS, NULL, "/dev/shm", "mode=1777", 0));
	TRY(add(&mp, MOP_SYMLINK, "/proc/self/fd", "/dev/fd", NULL, 0));
	TRY(add(&mp, MOP_SYMLINK, "/proc/self/fd/0", "/dev/stdin", NULL, 0));
	TRY(add(&mp, MOP_SYMLINK, "/proc/self/fd/1", "/dev/stdout", NULL, 0));
	TRY(add(&mp, MOP_SYMLINK, "/proc/self/fd/2", "/dev/stderr", NULL, 0));

	TRY(add(&mp, MOP_TMPFS, NULL, "/tmp", "mode=1777", 0));
	TRY(add(&mp, MOP_TMPFS, NULL, "/run", "mode=0755", 0));

	/* Home: persistent under the state dir, or a tmpfs; ~/.agents read-only on top. */
	TRY(add(&mp, MOP_MKDIR, NULL, "/home", NULL, 0));
	if (p->home_src)
		TRY(add(&mp, MOP_BIND, p->home_src, p->home, NULL, 0));
	else {
		const char *const *bb = bridge_home_binds(p->bridge);
		snprintf(buf, sizeof(buf), "mode=0700,uid=%u,gid=%u", (unsigned)p->uid, (unsigned)p->gid);
		TRY(add(&mp, MOP_TMPFS, NULL, p->home, buf, 0));
		/* the bridged harness config (agents/bridge.h), written to the session dir */
		for (size_t i = 0; bb && bb[i]; i++) {
			_cleanup_free_ char *bsrc = NULL, *bdst = NULL;
			if (asprintf(&bsrc, "%s/bridge-home/%s", p->session_dir, bb[i]) < 0 ||
			    asprintf(&bdst, "%s/%s", p->home, bb[i]) < 0) {
				r = -ENOMEM;
				goto fail;
			}
			TRY(add(&mp, MOP_BIND, bsrc, bdst, NULL, 0));
		}
	}
	if (p->agents_src)
		TRY(addf(&mp, MOP_BIND, MOP_F_RO, NULL, "%s", p->agents_src, "%s/.agents", p->home));

	/* The project, and the git files that run code on the host later. Binding .git onto itself
	 * makes it a mount point, so it cannot be renamed aside (EBUSY) and replaced. */
	if (p->project_src) {
		TRY(add(&mp, MOP_BIND, p->project_src, p->project_dst, NULL, p->project_ro ? MOP_F_RO : 0));
		if (!p->writable_git && f->git == GIT_DIR) {
			TRY(addf(&mp, MOP_BIND, p->project_ro ? MOP_F_RO : 0, NULL, "%s/.git", p->project_src,
				 "%s/.git", p->project_dst));
			if (f->git_hooks)
				TRY(addf(&mp, MOP_BIND, MOP_F_RO, NULL, "%s/.git/hooks", p->project_src,
					 "%s/.git/hooks", p->project_dst));
			if (f->git_config)
				TRY(addf(&mp, MOP_BIND, MOP_F_RO | MOP_F_FILE, NULL, "%s/.git/config",
					 p->project_src, "%s/.git/config", p->project_dst));
			if (f->git_modules)
				TRY(addf(&mp, MOP_BIND, MOP_F_RO, NULL, "%s/.git/modules", p->project_src,
					 "%s/.git/modules", p->project_dst));
			for (size_t i = 0; f->git_pin_dirs && f->git_pin_dirs[i]; i++)
				TRY(add_git(&mp, p, f->git_pin_dirs[i], p->project_ro ? MOP_F_RO : 0));
			for (size_t i = 0; f->git_pin_files && f->git_pin_files[i]; i++)
				TRY(add_git(&mp, p, f->git_pin_files[i], MOP_F_RO | MOP_F_FILE));
		} else if (!p->writable_git && f->git == GIT_FILE)
			TRY(addf(&mp, MOP_BIND, MOP_F_RO | MOP_F_FILE, NULL, "%s/.git", p->project_src,
				 "%s/.git", p->project_dst));
	}

	for (size_t i = 0; i < p->n_mounts; i++)
		TRY(add(&mp, MOP_BIND, p->mounts[i].src, p->mounts[i].dst, NULL,
			(p->mounts[i].ro ? MOP_F_RO : 0) | (p->mounts[i].is_dir ? 0 : MOP_F_FILE)));

	/* Generated identity and name files over the host's /etc. */
	if (f->session_etc) {
		static const char *const etc_files[] = { "passwd", "group", "hosts", "resolv.conf" };
		for (size_t i = 0; i < ELEMENTSOF(etc_files); i++) {
			unsigned fl = MOP_F_RO | MOP_F_FILE;
			if (streq(etc_files[i], "resolv.conf") && (f->resolv_is_link || p->rootfs == ROOTFS_IMAGE))
				fl |= MOP_F_OVER_LINK;
			_cleanup_free_ char *src = path_join(f->session_etc, etc_files[i]);
			snprintf(buf, sizeof(buf), "/etc/%s", etc_files[i]);
			if (!src) {
				r = -ENOMEM;
				goto fail;
			}
			TRY(add(&mp, MOP_BIND, src, buf, NULL, fl));
		}
	}
#undef TRY
	*out = mp;
	return 0;
fail:
	mount_plan_free(&mp);
	return r;
}

void mount_plan_free(struct mount_plan *mp)
{
	for (size_t i = 0; i < mp->n; i++) {
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
