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
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "build/copy.h"
#include "build/manifest.h"
#include "build/native.h"
#include "net/gate.h"
#include "net/netplan.h"
#include "ns/cgroup.h"
#include "ns/procfs.h"
#include "ns/seccomp.h"
#include "util/fdpass.h"
#include "util/log.h"
#include "util/util.h"

extern char **environ;

const struct cf_step *native_first_run(const struct cf_recipe *rc)
{
	for (size_t i = 0; i < rc->n_steps; i++)
		if (rc->steps[i].kind == CF_RUN)
			return &rc->steps[i];
	return NULL;
}

/* A decimal id below 2^32-1 (which is (uid_t)-1, "no change"). Pure. */
static bool parse_id(const char *s, size_t n, uint32_t *out)
{
	uint64_t v = 0;

	if (n == 0 || n > 10)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v >= UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* Field @k (0-based) of the colon-separated line [p, e); false when there are fewer. */
static bool line_field(const char *p, const char *e, unsigned k, const char **f, size_t *fl)
{
	for (unsigned i = 0; i < k; i++) {
		const char *c = memchr(p, ':', (size_t)(e - p));
		if (!c)
			return false;
		p = c + 1;
	}
	const char *c = memchr(p, ':', (size_t)(e - p));
	*f = p;
	*fl = (size_t)((c ? c : e) - p);
	return true;
}

/* The line of a passwd/group file whose name (field 0) is [name, name+nl), or, with @by_id,
 * whose id (field 2) is @id. Pure. */
static bool find_entry(const char *text, size_t len, const char *name, size_t nl, bool by_id, uint32_t id,
		       const char **ls, const char **le)
{
	const char *p = text, *end = text ? text + len : NULL; /* NULL + 0 is undefined in C */

	while (text && p < end) {
		const char *nlp = memchr(p, '\n', (size_t)(end - p)), *e = nlp ? nlp : end, *f;
		size_t fl;
		uint32_t v;

		if (by_id ? line_field(p, e, 2, &f, &fl) && parse_id(f, fl, &v) && v == id
			  /* cppcheck-suppress nullPointer ; name is NULL only with by_id, which never reads it */
			  : line_field(p, e, 0, &f, &fl) && fl == nl && memcmp(f, name, nl) == 0) {
			*ls = p;
			*le = e;
			return true;
		}
		p = e + 1;
	}
	return false;
}

int native_user_lookup(const char *spec, const char *passwd, size_t plen, const char *group, size_t glen,
		       struct native_user *out)
{
	const char *colon = strchr(spec, ':'), *gs = colon ? colon + 1 : NULL, *ls, *le, *f;
	size_t ul = colon ? (size_t)(colon - spec) : strlen(spec), fl;
	uint32_t id;
	bool have_pw;

	memset(out, 0, sizeof(*out));
	if (ul == 0 || memchr(spec, '\n', strlen(spec)) || (gs && (!*gs || strchr(gs, ':'))))
		return -EINVAL;
	if (parse_id(spec, ul, &id)) {
		out->uid = id;
		have_pw = find_entry(passwd, plen, NULL, 0, true, id, &ls, &le);
	} else {
		have_pw = find_entry(passwd, plen, spec, ul, false, 0, &ls, &le);
		if (!have_pw)
			return -ENOENT;
		if (!line_field(ls, le, 2, &f, &fl) || !parse_id(f, fl, &id))
			return -EINVAL;
		out->uid = id;
	}
	snprintf(out->home, sizeof(out->home), "/");
	if (have_pw) {
		if (line_field(ls, le, 5, &f, &fl) && fl > 0 && fl < sizeof(out->home) && f[0] == '/')
			snprintf(out->home, sizeof(out->home), "%.*s", (int)fl, f);
		if (!gs) {
			if (!line_field(ls, le, 3, &f, &fl) || !parse_id(f, fl, &id))
				return -EINVAL;
			out->gid = id;
		}
	}
	if (gs) {
		size_t gl = strlen(gs);

		if (parse_id(gs, gl, &id)) {
			out->gid = id;
		} else {
			if (!find_entry(group, glen, gs, gl, false, 0, &ls, &le))
				return -ENOENT;
			if (!line_field(ls, le, 2, &f, &fl) || !parse_id(f, fl, &id))
				return -EINVAL;
			out->gid = id;
		}
	}
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

/* Enters a new user namespace (inside @in_uid/@in_gid = @uid/@gid, one id each; this process
 * keeps every capability in it until it executes a program as a non-zero uid) and mount
 * namespace, plus @more (CLONE_NEWPID...). Logs on failure. */
static int enter_build_ns(uid_t uid, gid_t gid, uid_t in_uid, gid_t in_gid, int more)
{
	char map[64];

	if (unshare(CLONE_NEWUSER) < 0)
		return log_error_errno(-errno, "build: cannot create a user namespace: %m (run 'aisb doctor')");
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)in_uid, (unsigned)uid);
	if (write_map("/proc/self/setgroups", "deny") < 0 || write_map("/proc/self/uid_map", map) < 0)
		return log_error_errno(-errno, "build: cannot write the uid map: %m");
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)in_gid, (unsigned)gid);
	if (write_map("/proc/self/gid_map", map) < 0)
		return log_error_errno(-errno, "build: cannot write the gid map: %m");
	if (unshare(CLONE_NEWNS | more) < 0)
		return log_error_errno(-errno, "build: cannot create the build's namespaces: %m");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return log_error_errno(-errno, "build: cannot make the mounts private: %m");
	return 0;
}

/* The build overlay as a detached mount. The directories are opened only now: overlayfs clones
 * the upper's mount, which must belong to this mount namespace (measured: an fd opened before
 * unshare gives "failed to clone upperpath", EINVAL). `userxattr` is required in a user
 * namespace (machine-facts.md) and makes opaque dirs user.overlay.opaque for layer.c. Logs. */
static int mount_overlay(const struct native_build *nb)
{
	_cleanup_close_ int fs = -1, lower = -1, upper = -1, work = -1;
	char lp[64], up[64], wp[64];
	int root;

	lower = open(nb->base_rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	upper = open(nb->upper, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	work = open(nb->work, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (lower < 0 || upper < 0 || work < 0)
		return log_error_errno(-errno, "build: cannot open the overlay directories: %m");
	snprintf(lp, sizeof(lp), "/proc/self/fd/%d", lower);
	snprintf(up, sizeof(up), "/proc/self/fd/%d", upper);
	snprintf(wp, sizeof(wp), "/proc/self/fd/%d", work);
	fs = fsopen("overlay", FSOPEN_CLOEXEC);
	if (fs < 0 || fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir", lp, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "upperdir", up, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "workdir", wp, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 ||
	    (root = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)) < 0)
		return log_error_errno(-errno, "build: cannot mount the build overlay on '%s': %m", nb->base_rootfs);
	return root;
}

/* Filesystem steps [@from, @to) (WORKDIR, COPY; COPY steps numbered from *@k), then with
 * @manifest the package manifest. Runs in a child; returns its exit code. Should: touch only the
 * overlay. Mustn't: follow a path of the image outside it (copy.c resolves inside the root). */
static int fs_child(const struct native_build *nb, uid_t uid, gid_t gid, size_t from, size_t to, size_t k,
		    bool manifest)
{
	_cleanup_close_ int root = -1;
	int r;

	if (enter_build_ns(uid, gid, 0, 0, 0) < 0)
		return 1;
	root = mount_overlay(nb);
	if (root < 0)
		return 1;
	for (size_t i = from; i < to; i++) {
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
	if (manifest) {
		/* /etc/aisb/manifest.txt: the resolved package versions, when there is a package manager */
		_cleanup_free_ char *man = NULL;

		if (manifest_collect(root, &man) < 0 ||
		    (man && copy_write_file(root, NATIVE_MANIFEST_PATH, man, strlen(man), 0644) < 0))
			return 1;
	}
	return 0;
}

/* native_probe()'s child: returns 0, or a positive errno with the failed step in @why. */
static int probe_child(char *why, size_t n)
{
	_cleanup_close_ int fs = -1, tmp = -1, ofs = -1, root = -1;
	char map[64], gmap[64], opt[3][64];
	static const char *const dirs[] = { "l", "u", "w" };

	/* both ids now: inside the new namespace they read as the overflow id until mapped */
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)getuid());
	snprintf(gmap, sizeof(gmap), "0 %u 1\n", (unsigned)getgid());
	if (unshare(CLONE_NEWUSER) < 0)
		return snprintf(why, n, "cannot create a user namespace: %s", strerror(errno)), errno;
	if (write_map("/proc/self/setgroups", "deny") < 0 || write_map("/proc/self/uid_map", map) < 0)
		return snprintf(why, n, "cannot write a user namespace's uid map: %s", strerror(errno)), errno;
	if (write_map("/proc/self/gid_map", gmap) < 0)
		return snprintf(why, n, "cannot write a user namespace's gid map: %s", strerror(errno)), errno;
	if (unshare(CLONE_NEWNS) < 0)
		return snprintf(why, n, "cannot create a mount namespace: %s", strerror(errno)), errno;
	fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
	if (fs < 0 || fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 ||
	    (tmp = fsmount(fs, FSMOUNT_CLOEXEC, 0)) < 0)
		return snprintf(why, n, "cannot mount a tmpfs in a user namespace: %s", strerror(errno)), errno;
	for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
		if (mkdirat(tmp, dirs[i], 0755) < 0)
			return snprintf(why, n, "tmpfs: %s", strerror(errno)), errno;
		snprintf(opt[i], sizeof(opt[i]), "/proc/self/fd/%d/%s", tmp, dirs[i]);
	}
	ofs = fsopen("overlay", FSOPEN_CLOEXEC);
	if (ofs < 0 || fsconfig(ofs, FSCONFIG_SET_STRING, "lowerdir", opt[0], 0) < 0 ||
	    fsconfig(ofs, FSCONFIG_SET_STRING, "upperdir", opt[1], 0) < 0 ||
	    fsconfig(ofs, FSCONFIG_SET_STRING, "workdir", opt[2], 0) < 0 ||
	    fsconfig(ofs, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) < 0 ||
	    fsconfig(ofs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 || (root = fsmount(ofs, FSMOUNT_CLOEXEC, 0)) < 0)
		return snprintf(why, n, "cannot mount an overlay (userxattr) in a user namespace: %s", strerror(errno)),
		       errno;
	return 0;
}

int native_probe(char *why, size_t n)
{
	char buf[256] = "";
	int pfd[2], status;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return snprintf(why, n, "pipe: %s", strerror(errno)), -errno;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		int e = errno;
		close(pfd[0]);
		close(pfd[1]);
		return snprintf(why, n, "fork: %s", strerror(e)), -e;
	}
	if (pid == 0) {
		int e = probe_child(buf, sizeof(buf));
		close(pfd[0]);
		(void)write_full(pfd[1], buf, strlen(buf));
		_exit(e > 0 && e < 126 ? e : e ? 125 : 0);
	}
	close(pfd[1]);
	ssize_t k = read_full(pfd[0], buf, sizeof(buf) - 1);
	close(pfd[0]);
	buf[k > 0 ? k : 0] = '\0';
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return snprintf(why, n, "waitpid: %s", strerror(errno)), -errno;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	snprintf(why, n, "%s", buf[0] ? buf : "the probe failed");
	return WIFEXITED(status) ? -WEXITSTATUS(status) : -ECHILD;
}

static int run_in_child(pid_t *pid_out, int (*fn)(void *), void *arg);
static int run_in_child(pid_t *pid_out, int (*fn)(void *), void *arg)
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return log_error_errno(-errno, "fork: %m");
	if (pid == 0)
		_exit(fn(arg));
	*pid_out = pid;
	return 0;
}

static int wait_exit(pid_t pid);

/* ---- RUN ---- */

struct run_args {
	const struct native_build *nb;
	const struct cf_step *st;
	uid_t uid;
	gid_t gid;
	int out_fd;  /* the step's stdout and stderr */
	int sync_fd; /* with a gate: the listeners go to the parent over it */
	const struct native_user *user; /* USER in force, not uid 0; NULL: fakeroot root */
};

#define NATIVE_GATE_MAGIC 0x61697362u  /* "aisb": the listeners follow */
#define NATIVE_GATE_FAILED 0x6661696cu /* "fail": the policy could not be enforced (said) */

/* A file node of the host's /dev bound into the tmpfs /dev (mknod is not possible in a user
 * namespace: machine-facts.md). */
static int bind_dev(const char *name)
{
	char src[64], dst[64];
	int fd;

	snprintf(src, sizeof(src), "/dev/%s", name);
	snprintf(dst, sizeof(dst), "dev/%s", name);
	fd = open(dst, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0)
		return -errno;
	close(fd);
	return mount(src, dst, NULL, MS_BIND, NULL) < 0 ? -errno : 0;
}

/* A mount point that the image lacks is created (in the upper) and removed again after the
 * step by prune_mountpoints(), so it never reaches the layer. A symlink is never used. */
static bool ensure_mountpoint(const char *name)
{
	struct stat st;

	if (lstat(name, &st) < 0 && errno == ENOENT)
		(void)mkdir(name, 0755);
	return lstat(name, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Removes from the upper the empty /proc and /dev that ensure_mountpoint() made for an image
 * without them. Does not log. */
static void prune_mountpoints(const struct native_build *nb)
{
	static const char *const names[] = { "proc", "dev" };

	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		_cleanup_free_ char *lo = path_join(nb->base_rootfs, names[i]), *up = path_join(nb->upper, names[i]);
		struct stat st;

		if (lo && up && lstat(lo, &st) < 0 && errno == ENOENT)
			(void)rmdir(up); /* fails, as it should, when a RUN put something there */
	}
	/* the empty mount point gate_resolver() made for an image without /etc/resolv.conf */
	{
		_cleanup_free_ char *lo = path_join(nb->base_rootfs, "etc/resolv.conf"),
				    *up = path_join(nb->upper, "etc/resolv.conf");
		struct stat st;

		if (nb->net && lo && up && lstat(lo, &st) < 0 && errno == ENOENT && lstat(up, &st) == 0 &&
		    S_ISREG(st.st_mode) && st.st_size == 0)
			(void)unlink(up);
	}
}

static void loopback_up(void)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		(void)ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	close(fd);
}

/* Whether @env (NAME=VALUE strings) sets @name. Pure. */
static bool env_has(char *const *env, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; env && env[i]; i++)
		if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
			return true;
	return false;
}

/* With the gate: the image's /etc/resolv.conf is covered (a bind in the step's mount namespace,
 * never in the upper) by one naming the gate's DNS stub, and the proxy variables of `aisb run`
 * are added to the step's environment (not to the image's). An image without the file gets an
 * empty one in the upper as the mount point, removed after the step (prune_mountpoints); a
 * symlinked one is refused rather than followed. Runs in the build root before pivot_root.
 * Return: 0 or an exit code. Logs on failure. */
static int gate_resolver(bool have_dev, const char *text, size_t len, char ***env)
{
	static const char *const proxy[] = { "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY" };
	char url[64], *v;
	struct stat st;
	int fd;

	if (!have_dev)
		return log_error("build: the image's /dev is not a directory; the gate's resolver cannot be "
				 "set up"),
		       AISB_EXIT_FAILED;
	if (fstatat(AT_FDCWD, "etc", &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
		return log_error("build: the image has no /etc directory for resolv.conf"), AISB_EXIT_FAILED;
	if (fstatat(AT_FDCWD, "etc/resolv.conf", &st, AT_SYMLINK_NOFOLLOW) < 0) {
		fd = open("etc/resolv.conf", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0)
			return log_error_errno(-errno, "build: cannot create /etc/resolv.conf: %m"), AISB_EXIT_FAILED;
		close(fd);
	} else if (!S_ISREG(st.st_mode)) {
		return log_error("build: the image's /etc/resolv.conf is not a regular file (a symlink?): the "
				 "gate's DNS stub cannot be put in its place; replace it with a file in the base image"),
		       AISB_EXIT_POLICY;
	}
	if (write_file_at(AT_FDCWD, "dev/.aisb-build/resolv.conf", text, len, 0644) < 0 ||
	    mount("dev/.aisb-build/resolv.conf", "etc/resolv.conf", NULL, MS_BIND, NULL) < 0 ||
	    mount(NULL, "etc/resolv.conf", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
		return log_error_errno(-errno, "build: cannot put the gate's resolv.conf in place: %m"), AISB_EXIT_FAILED;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", GATE_PROXY_PORT);
	for (size_t i = 0; i < ELEMENTSOF(proxy); i++) {
		if (env_has(*env, proxy[i]))
			continue;
		if (asprintf(&v, "%s=%s", proxy[i], url) < 0 || strv_push_take(env, v) < 0)
			return AISB_EXIT_FAILED;
	}
	if (!env_has(*env, "no_proxy") && strv_push(env, "no_proxy=localhost,127.0.0.1") < 0)
		return AISB_EXIT_FAILED;
	return 0;
}

/* PID 1 of the step's pid namespace: build the root, then exec the RUN command.
 * Should: see only the overlay, a /proc of its own pid namespace with the covers of `aisb run`
 * (ns/procfs.h) and a small /dev; run as inside root with the one seccomp table (fakeroot rules
 * on for a root step). Mustn't: keep a path to the host (the old root is detached), reach any
 * network but through the gate (its own netns: loopback, and with an allowlist the gate's
 * listeners and the verified nft ruleset), gain privileges (no_new_privs), or create user
 * namespaces (deny list, user.max_user_namespaces=0). */
static int run_pid1(const struct run_args *a)
{
	static const char *const nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };
	static const char apt_conf[] = "APT::Sandbox::User \"root\";\n";
	static const char resolv[] = "nameserver " GATE_DNS_ADDR "\n";
	const struct cf_step *st = a->st;
	/* a USER step gets no fakeroot: its chown fails as it would in Docker */
	struct seccomp_options so = { .allow_ptrace = false, .fakeroot = !a->user };
	_cleanup_strv_free_ char **env = strv_copy(st->env);
	int root, devnull, r;
	bool have_dev;

	if (!env)
		return log_error_errno(-ENOMEM, "%m"), AISB_EXIT_FAILED;
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	root = mount_overlay(a->nb);
	if (root < 0 || devnull < 0)
		return AISB_EXIT_FAILED;
	if (move_mount(root, "", AT_FDCWD, "/tmp", MOVE_MOUNT_F_EMPTY_PATH) < 0 || chdir("/tmp") < 0)
		return log_error_errno(-errno, "build: cannot attach the build root: %m"), AISB_EXIT_FAILED;
	if (ensure_mountpoint("proc")) {
		_cleanup_close_ int proc = -1;
		const char *failed;

		if (mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ||
		    (proc = open("proc", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
			return log_error_errno(-errno, "build: cannot mount /proc: %m"), AISB_EXIT_FAILED;
		/* the /proc stage of `aisb run` (ns/procfs.h): a root caller's step is kuid 0 */
		r = procfs_harden(proc, devnull, a->uid == 0, false, &failed);
		if (r < 0)
			return log_error_errno(r, "build: cannot cover '%s' in the step's /proc: %m", failed),
			       AISB_EXIT_ENFORCE;
	}
	have_dev = ensure_mountpoint("dev");
	if (have_dev) {
		if (mount("tmpfs", "dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=256k") < 0)
			return log_error_errno(-errno, "build: cannot mount /dev: %m"), AISB_EXIT_FAILED;
		for (size_t i = 0; i < ELEMENTSOF(nodes); i++)
			if ((r = bind_dev(nodes[i])) < 0)
				return log_error_errno(r, "build: cannot bind /dev/%s: %m", nodes[i]), AISB_EXIT_FAILED;
		/* our own pty instance (apt's dpkg log wants one) and a /dev/shm, as `aisb run` has */
		if (mkdir("dev/pts", 0755) < 0 ||
		    mount("devpts", "dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") < 0 ||
		    symlink("pts/ptmx", "dev/ptmx") < 0 || mkdir("dev/shm", 01777) < 0 ||
		    mount("tmpfs", "dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0)
			return log_error_errno(-errno, "build: cannot mount /dev/pts or /dev/shm: %m"), AISB_EXIT_FAILED;
		if (symlink("/proc/self/fd", "dev/fd") < 0 || symlink("/proc/self/fd/0", "dev/stdin") < 0 ||
		    symlink("/proc/self/fd/1", "dev/stdout") < 0 || symlink("/proc/self/fd/2", "dev/stderr") < 0 ||
		    mkdir("dev/.aisb-build", 0755) < 0 ||
		    write_file_at(AT_FDCWD, "dev/.aisb-build/apt.conf", apt_conf, sizeof(apt_conf) - 1, 0644) < 0)
			return log_error_errno(-errno, "build: cannot populate /dev: %m"), AISB_EXIT_FAILED;
		/* apt checks that its privilege drop worked, which the fakeroot rules only fake: tell
		 * it not to drop (measured: otherwise "Could not switch group"). Outside the layer. */
		if (strv_push(&env, "APT_CONFIG=/dev/.aisb-build/apt.conf") < 0)
			return AISB_EXIT_FAILED;
	}
	if (a->nb->net && (r = gate_resolver(have_dev, resolv, sizeof(resolv) - 1, &env)) != 0)
		return r;
	if (syscall(SYS_pivot_root, ".", ".") < 0 || umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		return log_error_errno(-errno, "build: cannot switch to the build root: %m"), AISB_EXIT_FAILED;
	if (chdir(st->workdir) < 0)
		return log_error_errno(-errno, "line %u: the working directory '%s' does not exist: %m", st->line,
				       st->workdir),
		       AISB_EXIT_FAILED;
	if (sethostname("aisb-build", 10) < 0)
		log_debug_errno(-errno, "build: sethostname: %m");
	/* no controlling terminal (so /dev/tty cannot reach the user's), no inherited fds */
	if (setsid() < 0 || dup2(devnull, STDIN_FILENO) < 0 || dup2(a->out_fd, STDOUT_FILENO) < 0 ||
	    dup2(a->out_fd, STDERR_FILENO) < 0 || close_range(3, ~0U, 0) < 0)
		return AISB_EXIT_FAILED;
	if (a->user && !env_has(env, "HOME")) {
		char *h;
		if (asprintf(&h, "HOME=%s", a->user->home) < 0 || strv_push_take(&env, h) < 0)
			return AISB_EXIT_FAILED;
	}
	if (seccomp_policy_apply(&so) < 0)
		return AISB_EXIT_ENFORCE; /* said why */
	environ = env;
	execvp(st->argv[0], st->argv);
	r = errno;
	log_error_errno(-r, "line %u: cannot execute '%s': %m", st->line, st->argv[0]);
	return r == ENOENT ? AISB_EXIT_NOTFOUND : AISB_EXIT_NOEXEC;
}

/* The step's namespace holder: new user, mount, pid, net, ipc and uts namespaces; with an
 * allowlist, the nft ruleset installed and verified and the gate's listeners opened in the new
 * netns and sent to the parent (as init does for `aisb run`) before anything of the recipe runs;
 * PID 1 in a child; its exit code is the step's. */
static int run_entry(void *p)
{
	const struct run_args *a = p;
	uint32_t magic = NATIVE_GATE_MAGIC;
	pid_t pid;

	if (enter_build_ns(a->uid, a->gid, a->user ? a->user->uid : 0, a->user ? a->user->gid : 0,
			   CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) < 0)
		return AISB_EXIT_FAILED;
	/* aisb run's degraded limit (no cgroup for builds): RLIMIT_NPROC, counted per user
	 * namespace, bounds the step's processes (it does not bind a root caller: see limits.md) */
	{
		const struct cgroup_limits l = { .pids_max = CGROUP_PIDS_DEFAULT };
		int r = cgroup_apply_rlimits(&l);
		if (r < 0)
			return log_error_errno(r, "build: cannot set the process limit: %m"), AISB_EXIT_ENFORCE;
	}
	loopback_up();
	if (a->nb->net) {
		int fds[NETPLAN_GATE_FDS];
		char err[512] = "";
		int r = netplan_init_apply(a->nb->net, fds, err, sizeof(err));

		if (r != 0) {
			log_error("build: %s", err);
			magic = NATIVE_GATE_FAILED;
			(void)fdpass_send(a->sync_fd, &magic, sizeof(magic), NULL, 0);
			return r;
		}
		r = fdpass_send(a->sync_fd, &magic, sizeof(magic), fds, NETPLAN_GATE_FDS);
		for (int i = 0; i < NETPLAN_GATE_FDS; i++)
			close(fds[i]);
		if (r < 0)
			return log_error_errno(r, "build: cannot pass the gate's sockets: %m"), AISB_EXIT_FAILED;
	}
	close(a->sync_fd);
	pid = fork();
	if (pid < 0)
		return AISB_EXIT_FAILED;
	if (pid == 0)
		_exit(run_pid1(a));
	return wait_exit(pid);
}

/* The step's gate over the listeners run_entry() sends on @sock into @fds (which the gate
 * takes over: they are -1 on return), logging to the build's egress log.
 * Return: the running gate, or NULL: the child failed before sending (it said why and exits;
 * *@not_enforced when it could not install the policy), or the gate could not start (said
 * here). Logs on failure. */
static struct gate *start_step_gate(const struct native_build *nb, int sock, int fds[NETPLAN_GATE_FDS],
				    bool *not_enforced)
{
	uint32_t magic = 0;
	size_t n = 0;
	struct gate *g = NULL;
	ssize_t k;
	int r;

	k = fdpass_recv(sock, &magic, sizeof(magic), fds, NETPLAN_GATE_FDS, &n);
	*not_enforced = k == (ssize_t)sizeof(magic) && magic == NATIVE_GATE_FAILED;
	if (k != (ssize_t)sizeof(magic) || magic != NATIVE_GATE_MAGIC || n != NETPLAN_GATE_FDS)
		return NULL;
	struct gate_config c = { .proxy_fd = fds[0], .transparent_fd = fds[1], .dns_udp_fd = fds[2],
				 .dns_tcp_fd = fds[3], .policy = &nb->net->policy, .upstream = nb->net->upstream,
				 .log_fd = nb->egress_fd };
	r = gate_new(&c, &g);
	for (size_t i = 0; i < NETPLAN_GATE_FDS; i++)
		fds[i] = -1; /* the gate's now */
	if (r >= 0 && (r = gate_start(g)) < 0) {
		gate_free(g);
		g = NULL;
	}
	if (!g)
		log_error_errno(r, "build: cannot start the network gate: %m");
	return g;
}

/* In a child with the overlay mounted: USER @st->user resolved against the image's passwd and
 * group files as they are at this step; the result written to @fd. Returns an exit code. */
static int user_child(const struct native_build *nb, const struct cf_step *st, int fd)
{
	_cleanup_free_ char *pw = NULL, *gr = NULL;
	_cleanup_close_ int root = -1;
	size_t plen = 0, glen = 0;
	struct native_user u;
	int r;

	if (enter_build_ns(getuid(), getgid(), 0, 0, 0) < 0 || (root = mount_overlay(nb)) < 0)
		return AISB_EXIT_FAILED;
	r = copy_read_file(root, "/etc/passwd", NATIVE_PASSWD_MAX, &pw, &plen);
	if (r < 0 && r != -ENOENT)
		return log_error_errno(r, "line %u: cannot read the image's /etc/passwd: %m", st->line), AISB_EXIT_FAILED;
	r = copy_read_file(root, "/etc/group", NATIVE_PASSWD_MAX, &gr, &glen);
	if (r < 0 && r != -ENOENT)
		return log_error_errno(r, "line %u: cannot read the image's /etc/group: %m", st->line), AISB_EXIT_FAILED;
	r = native_user_lookup(st->user, pw, plen, gr, glen, &u);
	if (r == -ENOENT)
		return log_error("line %u: USER '%s': no such user or group in the image's /etc/passwd or /etc/group "
				 "(create it in an earlier RUN, or give numeric ids)", st->line, st->user),
		       AISB_EXIT_POLICY;
	if (r < 0)
		return log_error("line %u: USER '%s' is not a user[:group] (names or numeric ids)", st->line, st->user),
		       AISB_EXIT_POLICY;
	return write_full(fd, &u, sizeof(u)) < 0 ? AISB_EXIT_FAILED : 0;
}

/* The ids RUN step @st runs as. *@is_user: false for root (no USER, or uid 0), which runs as
 * fakeroot. Return: 0, or -ECHILD (said). Logs on failure. */
static int step_user(const struct native_build *nb, const struct cf_step *st, struct native_user *u, bool *is_user)
{
	int pfd[2], r;
	pid_t pid;
	ssize_t n;

	*is_user = false;
	if (!st->user || streq(st->user, "root") || streq(st->user, "0"))
		return 0;
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return log_error_errno(-errno, "pipe: %m");
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return log_error_errno(-errno, "fork: %m");
	}
	if (pid == 0) {
		close(pfd[0]);
		_exit(user_child(nb, st, pfd[1]));
	}
	close(pfd[1]);
	n = read_full(pfd[0], u, sizeof(*u));
	close(pfd[0]);
	r = wait_exit(pid);
	if (r != 0 || n != (ssize_t)sizeof(*u)) {
		if (r >= 0)
			log_error("line %u: USER '%s' could not be resolved; nothing was stored", st->line, st->user);
		return -ECHILD;
	}
	u->home[sizeof(u->home) - 1] = '\0';
	*is_user = u->uid != 0;
	return 0;
}

/* Runs RUN step @i: its output goes to stderr and the transcript; a heartbeat on a tty. */
static int run_step(const struct native_build *nb, size_t i)
{
	const struct cf_step *st = &nb->rc->steps[i];
	struct run_args a = { .nb = nb, .st = st, .uid = getuid(), .gid = getgid() };
	bool tty = isatty(STDERR_FILENO);
	time_t start = time(NULL);
	struct gate *gate = NULL;
	struct native_user user;
	bool is_user = false, not_enforced = false;
	char head[256];
	int pfd[2], sfd[2], gfds[NETPLAN_GATE_FDS] = { -1, -1, -1, -1 }, r;
	pid_t pid = -1;

	snprintf(head, sizeof(head), "step %zu/%zu line %u RUN", i + 1, nb->rc->n_steps, st->line);
	if ((r = step_user(nb, st, &user, &is_user)) < 0)
		return r;
	if (is_user) {
		a.user = &user;
		log_info("%s as USER %s (uid %u, gid %u)", head, st->user, (unsigned)user.uid, (unsigned)user.gid);
	} else {
		log_info("%s", head);
	}
	if (nb->log_fd >= 0)
		dprintf(nb->log_fd, "== %s: %s\n", head, st->argv[st->argv[1] && st->argv[2] ? 2 : 0]);
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return log_error_errno(-errno, "pipe: %m");
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sfd) < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return log_error_errno(-errno, "socketpair: %m");
	}
	a.out_fd = pfd[1];
	a.sync_fd = sfd[1];
	r = run_in_child(&pid, run_entry, &a);
	close(pfd[1]);
	close(sfd[1]);
	if (r < 0) {
		close(pfd[0]);
		close(sfd[0]);
		return r;
	}
	if (nb->net && !(gate = start_step_gate(nb, sfd[0], gfds, &not_enforced)))
		(void)kill(pid, SIGKILL); /* never a RUN whose listeners nobody serves */
	close(sfd[0]);
	for (;;) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		char buf[16384];
		ssize_t n;

		r = poll(&p, 1, 10000);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0) {
			if (tty)
				log_info("%s: still running (%lds)", head, (long)(time(NULL) - start));
			continue;
		}
		n = read(pfd[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		(void)write_full(STDERR_FILENO, buf, (size_t)n);
		if (nb->log_fd >= 0)
			(void)write_full(nb->log_fd, buf, (size_t)n);
	}
	close(pfd[0]);
	r = wait_exit(pid);
	if (gate) {
		gate_stop(gate);
		gate_summary(gate, stderr);
		gate_free(gate);
	}
	for (int k = 0; k < NETPLAN_GATE_FDS; k++)
		if (gfds[k] >= 0)
			close(gfds[k]);
	if (r < 0)
		return r;
	if (not_enforced) {
		log_error("line %u: the build's network policy could not be enforced; RUN did not run and nothing "
			  "was stored", st->line);
		return -EPERM;
	}
	if (r != 0) {
		log_error("line %u: RUN exited %d; nothing was stored%s", st->line, r,
			  nb->net ? "" : " (RUN reaches no network without --allow)");
		if (nb->log_fd >= 0)
			dprintf(nb->log_fd, "== line %u: RUN exited %d\n", st->line, r);
		return -ECHILD;
	}
	return 0;
}

static int wait_exit(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return log_error_errno(-errno, "waitpid: %m");
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

struct fs_args {
	const struct native_build *nb;
	uid_t uid;
	gid_t gid;
	size_t from, to, k;
	bool manifest;
};

static int fs_entry(void *p)
{
	const struct fs_args *a = p;
	return fs_child(a->nb, a->uid, a->gid, a->from, a->to, a->k, a->manifest);
}

int native_apply_steps(const struct native_build *nb)
{
	const struct cf_recipe *rc = nb->rc;
	size_t i = 0, k = 0;
	pid_t pid = -1;
	int r;

	while (i <= rc->n_steps) {
		struct fs_args a = { .nb = nb, .uid = getuid(), .gid = getgid(), .from = i, .to = i, .k = k };

		if (i < rc->n_steps && rc->steps[i].kind == CF_RUN) {
			r = run_step(nb, i);
			prune_mountpoints(nb);
			if (r < 0)
				return r;
			i++;
			continue;
		}
		/* a run of filesystem steps in one child; the last child also writes the manifest */
		while (a.to < rc->n_steps && rc->steps[a.to].kind != CF_RUN) {
			k += rc->steps[a.to].kind == CF_COPY;
			a.to++;
		}
		a.manifest = a.to == rc->n_steps;
		r = run_in_child(&pid, fs_entry, &a);
		if (r < 0)
			return r;
		r = wait_exit(pid);
		if (r != 0)
			return r < 0 ? r : -ECHILD; /* the child said why */
		i = a.to + (a.manifest ? 1 : 0);
	}
	return 0;
}
