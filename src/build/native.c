// SPDX-License-Identifier: GPL-2.0-or-later
/* native.c — WORKDIR and COPY applied to the build's overlay in a private user+mount namespace */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "build/copy.h"
#include "build/native.h"
#include "util/log.h"
#include "util/util.h"

const struct cf_step *native_first_run(const struct cf_recipe *rc)
{
	for (size_t i = 0; i < rc->n_steps; i++)
		if (rc->steps[i].kind == CF_RUN)
			return &rc->steps[i];
	return NULL;
}

/* One paragraph field: the value of "Name: value" in [p, end), or NULL. */
static const char *field(const char *p, const char *end, const char *name, size_t *vlen)
{
	size_t n = strlen(name);

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		if ((size_t)(le - p) > n && strncmp(p, name, n) == 0 && p[n] == ':') {
			const char *v = p + n + 1;
			while (v < le && (*v == ' ' || *v == '\t'))
				v++;
			*vlen = (size_t)(le - v);
			return v;
		}
		p = nl ? nl + 1 : end;
	}
	return NULL;
}

int native_dpkg_manifest(const char *status, size_t len, char **out)
{
	char *buf = NULL;
	size_t blen = 0;
	FILE *f = open_memstream(&buf, &blen);
	const char *p = status, *end = status + len;

	if (!f)
		return -ENOMEM;
	while (p < end) {
		/* a paragraph ends at an empty line */
		const char *q = p, *pe = end, *name, *ver, *st;
		size_t nl = 0, vl = 0, sl = 0;

		while (q < end) {
			const char *e = memchr(q, '\n', (size_t)(end - q));
			if (!e)
				break;
			if (e + 1 < end && e[1] == '\n') {
				pe = e + 1;
				break;
			}
			q = e + 1;
		}
		name = field(p, pe, "Package", &nl);
		ver = field(p, pe, "Version", &vl);
		st = field(p, pe, "Status", &sl);
		if (name && ver && st && sl >= 9 && strncmp(st + sl - 9, "installed", 9) == 0 &&
		    !(sl >= 13 && strncmp(st + sl - 13, "not-installed", 13) == 0))
			fprintf(f, "%.*s %.*s\n", (int)nl, name, (int)vl, ver);
		p = pe < end ? pe + 1 : end;
	}
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	*out = buf;
	return 0;
}

void native_work_dir_release(const char *dir)
{
	_cleanup_free_ char *w = path_join(dir, "work");
	if (w)
		(void)chmod(w, 0700);
}

static int write_map(const char *file, const char *s)
{
	_cleanup_close_ int fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return write_full(fd, s, strlen(s));
}

/* The child: namespaces, overlay, steps. Returns its exit code. Should: touch only the overlay.
 * Mustn't: mount anything into a namespace another process uses, or follow a path of the image
 * outside it (copy.c resolves inside the root). */
static int child(const struct native_build *nb, uid_t uid, gid_t gid)
{
	char map[64], lp[64], up[64], wp[64];
	_cleanup_close_ int fs = -1, root = -1, lower = -1, upper = -1, work = -1;
	size_t k = 0;
	int r;

	if (unshare(CLONE_NEWUSER) < 0)
		return log_error_errno(-errno, "build: cannot create a user namespace: %m (run 'aisb doctor')"), 1;
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)uid);
	if (write_map("/proc/self/setgroups", "deny") < 0 || write_map("/proc/self/uid_map", map) < 0)
		return log_error_errno(-errno, "build: cannot write the uid map: %m"), 1;
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)gid);
	if (write_map("/proc/self/gid_map", map) < 0)
		return log_error_errno(-errno, "build: cannot write the gid map: %m"), 1;
	if (unshare(CLONE_NEWNS) < 0)
		return log_error_errno(-errno, "build: cannot create a mount namespace: %m"), 1;
	/* opened only now: overlayfs clones the upper's mount, which must be one of this mount
	 * namespace (measured: an fd from before unshare gives "failed to clone upperpath", EINVAL) */
	lower = open(nb->base_rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	upper = open(nb->upper, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	work = open(nb->work, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (lower < 0 || upper < 0 || work < 0)
		return log_error_errno(-errno, "build: cannot open the overlay directories: %m"), 1;
	snprintf(lp, sizeof(lp), "/proc/self/fd/%d", lower);
	snprintf(up, sizeof(up), "/proc/self/fd/%d", upper);
	snprintf(wp, sizeof(wp), "/proc/self/fd/%d", work);
	/* userxattr: required in a user namespace (machine-facts.md: without it removing a lower
	 * directory fails with EIO), and it makes opaque dirs user.overlay.opaque for layer.c */
	fs = fsopen("overlay", FSOPEN_CLOEXEC);
	if (fs < 0 || fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir", lp, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "upperdir", up, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "workdir", wp, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 ||
	    (root = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)) < 0)
		return log_error_errno(-errno, "build: cannot mount the build overlay on '%s': %m", nb->base_rootfs), 1;

	for (size_t i = 0; i < nb->rc->n_steps; i++) {
		const struct cf_step *st = &nb->rc->steps[i];

		log_info("step %zu/%zu line %u %s", i + 1, nb->rc->n_steps, st->line, cf_kind_name(st->kind));
		if (st->kind == CF_WORKDIR) {
			r = copy_mkdir(root, st->workdir, 0755);
			if (r < 0)
				return 1;
			close(r);
		} else if (st->kind == CF_COPY) {
			r = copy_step(nb->ctx_fd, nb->ctx, nb->copies[k++], st, root);
			if (r < 0)
				return log_error("line %u: COPY failed", st->line), 1;
		} else {
			return log_error("line %u: internal: %s reached the filesystem steps", st->line,
					 cf_kind_name(st->kind)),
			       1;
		}
	}

	/* /etc/aisb/manifest.txt: the resolved package versions, when there is a package manager */
	{
		_cleanup_free_ char *status = NULL, *man = NULL;
		size_t len = 0;

		r = copy_read_file(root, "/var/lib/dpkg/status", NATIVE_DPKG_STATUS_MAX, &status, &len);
		if (r >= 0) {
			if (native_dpkg_manifest(status, len, &man) < 0 ||
			    copy_write_file(root, NATIVE_MANIFEST_PATH, man, strlen(man), 0644) < 0)
				return 1;
		} else if (r != -ENOENT) {
			return log_error_errno(r, "build: cannot read the package database: %m"), 1;
		}
	}
	return 0;
}

int native_apply_steps(const struct native_build *nb)
{
	const struct cf_step *run = native_first_run(nb->rc);
	uid_t uid = getuid();
	gid_t gid = getgid();
	pid_t pid;
	int status;

	if (run)
		return log_error_errno(-EOPNOTSUPP, "line %u: RUN needs the build sandbox (the aisb sandbox in "
				       "build mode with the network gate, issue 3), which is not in this aisb yet; "
				       "nothing was built (--builder podman runs RUN)", run->line);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return log_error_errno(-errno, "fork: %m");
	if (pid == 0)
		_exit(child(nb, uid, gid));
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return log_error_errno(-errno, "waitpid: %m");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -ECHILD; /* the child said why */
	return 0;
}
