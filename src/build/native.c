// SPDX-License-Identifier: GPL-2.0-or-later
/* native.c — the native builder: WORKDIR/COPY on the build overlay, RUN steps through the core (native.h) */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include "ns/caps.h"
#include "ns/cgroup.h"
#include "ns/harden.h"
#include "ns/limits.h"
#include "ns/mounts.h"
#include "ns/procfs.h"
#include "ns/seccomp.h"
#include "ns/userns.h"
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

/* Enters a new user namespace (inside @in_uid/@in_gid = @uid/@gid, one id each; this process
 * keeps every capability in it until it executes a program as a non-zero uid) and mount
 * namespace, plus @more (CLONE_NEWPID...). Logs on failure. */
static int enter_build_ns(uid_t uid, gid_t gid, uid_t in_uid, gid_t in_gid, int more)
{
	const struct userns_map m = { .inside_uid = in_uid, .host_uid = uid, .inside_gid = in_gid, .host_gid = gid };
	const char *failed;
	int r = userns_enter(&m, CLONE_NEWNS | more, &failed);

	if (r < 0)
		return log_error_errno(r, "build: cannot create the build's %s: %m (run 'aisb doctor')", failed);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return log_error_errno(-errno, "build: cannot make the mounts private: %m");
	return 0;
}

/* The build overlay as a detached mount, made by the mount applier (ns/mount-apply.c) as for a
 * RUN step's root: opened only now, in this mount namespace (overlayfs clones the upper's mount,
 * which must belong to it; measured: an fd opened before unshare gives "failed to clone
 * upperpath", EINVAL), with `userxattr` (opaque dirs become user.overlay.opaque for layer.c).
 * Logs on failure. */
static int mount_overlay(const struct native_build *nb)
{
	char err[512] = "";
	int root = mount_overlay_detached(nb->base_rootfs, nb->upper, nb->work, err, sizeof(err));

	if (root < 0)
		log_error("build: %s", err);
	return root;
}

/* Stage: a filesystem child's root. Should: enter a one-id user namespace (inside 0 = the caller)
 * and a mount namespace, make the overlay as a detached mount (reached only through its fd), then
 * keep no capability beyond the fakeroot set: what follows parses the image (its passwd and
 * group files, its package database) and writes files as the one mapped id. Mustn't: attach the
 * overlay anywhere. Return: the overlay's fd, or -1 after logging. */
static int fs_root(const struct native_build *nb, uid_t uid, gid_t gid)
{
	int root, r;

	if (enter_build_ns(uid, gid, 0, 0, 0) < 0 || (root = mount_overlay(nb)) < 0)
		return -1;
	r = caps_limit(CAPS_FAKEROOT);
	if (r < 0) {
		close(root);
		return log_error_errno(r, "build: cannot limit the capabilities to the fakeroot set: %m"), -1;
	}
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

	root = fs_root(nb, uid, gid);
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
	char opt[3][64];
	static const char *const dirs[] = { "l", "u", "w" };
	const struct userns_map m = userns_map_root();
	const char *failed;
	int r = userns_enter(&m, CLONE_NEWNS, &failed);

	if (r < 0) {
		if (streq(failed, "user namespace"))
			snprintf(why, n, "cannot create a user namespace: %s", strerror(-r));
		else if (streq(failed, "namespaces"))
			snprintf(why, n, "cannot create a mount namespace: %s", strerror(-r));
		else
			snprintf(why, n, "cannot write a user namespace's %s: %s", failed, strerror(-r));
		return -r;
	}
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
	    /* NOLINTNEXTLINE(clang-analyzer-deadcode.DeadStores): root is closed by its _cleanup_close_, which clang-analyzer does not model */
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
	const char *resolv; /* with the gate: the host file bound over /etc/resolv.conf */
	const struct mount_plan *mp; /* the step's tree (step_plan()), for PID 1 */
};

/* Removes from the upper the empty mount points the mount applier made for a step of an image
 * without them (open_target() creates what is missing): /proc, /dev, and /etc/resolv.conf with
 * the gate (then /etc too, when the image had none). So they never reach the layer. Does not
 * log. */
static void prune_mountpoints(const struct native_build *nb)
{
	static const char *const names[] = { "proc", "dev" };

	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		_cleanup_free_ char *lo = path_join(nb->base_rootfs, names[i]), *up = path_join(nb->upper, names[i]);
		struct stat st;

		if (lo && up && lstat(lo, &st) < 0 && errno == ENOENT)
			(void)rmdir(up); /* fails, as it should, when a RUN put something there */
	}
	/* the empty mount point of the gate's resolver file for an image without /etc/resolv.conf */
	{
		_cleanup_free_ char *lo = path_join(nb->base_rootfs, "etc/resolv.conf"),
				    *up = path_join(nb->upper, "etc/resolv.conf"),
				    *loetc = path_join(nb->base_rootfs, "etc"), *upetc = path_join(nb->upper, "etc");
		struct stat st;

		if (nb->net && lo && up && lstat(lo, &st) < 0 && errno == ENOENT && lstat(up, &st) == 0 &&
		    S_ISREG(st.st_mode) && st.st_size == 0)
			(void)unlink(up);
		if (nb->net && loetc && upetc && lstat(loetc, &st) < 0 && errno == ENOENT)
			(void)rmdir(upetc); /* fails when a RUN put something there */
	}
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

/* With the gate: the proxy variables of `aisb run` added to the step's environment (not to the
 * image's), unless the recipe set them; the resolver file is bound by the step's mount plan.
 * Return: 0 or -ENOMEM. Does not log. */
static int gate_env(char ***env)
{
	static const char *const proxy[] = { "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY" };
	char url[64], *v;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", GATE_PROXY_PORT);
	for (size_t i = 0; i < ELEMENTSOF(proxy); i++) {
		if (env_has(*env, proxy[i]))
			continue;
		if (asprintf(&v, "%s=%s", proxy[i], url) < 0 || strv_push_take(env, v) < 0)
			return -ENOMEM;
	}
	if (!env_has(*env, "no_proxy") && strv_push(env, "no_proxy=localhost,127.0.0.1") < 0)
		return -ENOMEM;
	return 0;
}

/* Stage: the step's tree, planned by the holder before it leaves the host's namespaces: the
 * build's overlay, with the /proc and /dev of `aisb run`, MOUNT_STEP_DIR and, with the gate,
 * its resolver file over /etc/resolv.conf; for a step off the caller's ids (a root caller's,
 * USERNS_ROOT_RUN_ID) its sources as idmapped trees, which only real root can make
 * (mount_remap_plan()). Logs on failure; returns an exit code. */
static int step_plan(const struct run_args *a, struct mount_plan *mp)
{
	const struct mount_step ms = { .lower = a->nb->base_rootfs, .upper = a->nb->upper, .work = a->nb->work,
				       .resolv = a->resolv };
	char err[PATH_MAX + 128] = "";
	int r = mount_plan_build_step(&ms, mp);

	if (r < 0)
		return log_error_errno(r, "build: %m"), AISB_EXIT_FAILED;
	if (a->uid != getuid() && mount_remap_plan(mp, a->uid, err, sizeof(err)) < 0)
		return log_error("build: the step's tree cannot be idmapped for uid %u: %s", (unsigned)a->uid, err),
		       AISB_EXIT_FAILED;
	return 0;
}

/* Stage: mounts, by the applier of `aisb run` (ns/mount-apply.c). Should: root the step in the
 * tree step_plan() made; pivot and detach the old root. Mustn't: fall back to a read-only root,
 * follow a symlink of the image, or leave a path to the host. Logs on failure; returns an exit
 * code. */
static int step_mounts(const struct run_args *a)
{
	char err[512] = "";
	bool fell_back;
	int r = mount_plan_apply(a->mp, &fell_back, err, sizeof(err));

	if (r != 0)
		return log_error("build: %s", err), r > 0 ? r : AISB_EXIT_FAILED;
	return 0;
}

/* Stage: the step's own files and environment. Should: write apt's configuration to
 * MOUNT_STEP_DIR (outside the layer) and name it by APT_CONFIG: apt checks that its privilege
 * drop worked, which the fakeroot rules only fake, so it must not drop (measured: otherwise
 * "Could not switch group"); add the gate's proxy variables and a USER's HOME. Mustn't: write
 * into the image. Logs on failure; returns an exit code. */
static int step_env(const struct run_args *a, char ***env)
{
	static const char apt_conf[] = "APT::Sandbox::User \"root\";\n";

	if (write_file_at(AT_FDCWD, MOUNT_STEP_DIR "/apt.conf", apt_conf, sizeof(apt_conf) - 1, 0644) < 0)
		return log_error_errno(-errno, "build: cannot write " MOUNT_STEP_DIR "/apt.conf: %m"), AISB_EXIT_FAILED;
	if (strv_push(env, "APT_CONFIG=" MOUNT_STEP_DIR "/apt.conf") < 0 || (a->nb->net && gate_env(env) < 0))
		return log_error_errno(-ENOMEM, "%m"), AISB_EXIT_FAILED;
	if (a->user && !env_has(*env, "HOME")) {
		char *h;
		if (asprintf(&h, "HOME=%s", a->user->home) < 0 || strv_push_take(env, h) < 0)
			return log_error_errno(-ENOMEM, "%m"), AISB_EXIT_FAILED;
	}
	return 0;
}

/* PID 1 of the step's pid namespace: build the root, then exec the RUN command.
 * Should: see only the overlay, a /proc of its own pid namespace with the covers of `aisb run`
 * (ns/procfs.h) and a small /dev; run as inside root with the one seccomp table (fakeroot rules
 * on for a root step). Mustn't: keep a path to the host (the old root is detached), reach any
 * network but through the gate (its own netns: loopback, and with an allowlist the gate's
 * listeners and the verified nft ruleset), gain privileges (no_new_privs), keep a capability
 * beyond the fakeroot set (ns/caps.h; none for a USER step), or create user namespaces (deny
 * list, user.max_user_namespaces=0). */
static int run_pid1(const struct run_args *a)
{
	const struct cf_step *st = a->st;
	/* a USER step gets no fakeroot: its chown fails as it would in Docker */
	const struct seccomp_options so = { .allow_ptrace = false, .fakeroot = !a->user };
	const uint64_t keep = a->user ? 0 : CAPS_FAKEROOT;
	_cleanup_strv_free_ char **env = strv_copy(st->env);
	struct seccomp_prog prog = { 0 };
	enum harden_step step;
	const char *failed;
	int devnull, r;

	if (!env)
		return log_error_errno(-ENOMEM, "%m"), AISB_EXIT_FAILED;
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	if ((r = step_mounts(a)) != 0)
		return r;
	/* a root caller's step is kuid 0, which its RLIMIT_NPROC (run_entry()) does not bind: the
	 * step's pid namespace's pid_max is its bound where the kernel has one (Linux 6.14+,
	 * issue 22), written before the /proc stage makes /proc/sys read-only */
	if (a->uid == 0 && limits_pidns_supported() && (r = limits_write_pid_max(CGROUP_PIDS_DEFAULT)) < 0)
		return log_error_errno(r, "build: cannot bound the step's processes with its pid namespace's "
				       "pid_max: %m"),
		       AISB_EXIT_ENFORCE;
	/* the /proc stage of `aisb run` (ns/procfs.h): a root caller's step is kuid 0 */
	r = procfs_stage(a->uid == 0, false, false, &failed);
	if (r < 0)
		return log_error_errno(r, "build: cannot cover '%s' in the step's /proc: %m", failed), AISB_EXIT_ENFORCE;
	if ((r = step_env(a, &env)) != 0)
		return r;
	if (chdir(st->workdir) < 0)
		return log_error_errno(-errno, "line %u: the working directory '%s' does not exist: %m", st->line,
				       st->workdir),
		       AISB_EXIT_FAILED;
	if (sethostname("aisb-build", 10) < 0)
		log_debug_errno(-errno, "build: sethostname: %m");
	/* no controlling terminal (so /dev/tty cannot reach the user's), stdin the step's /dev/null */
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0 || setsid() < 0 || dup2(devnull, STDIN_FILENO) < 0 || dup2(a->out_fd, STDOUT_FILENO) < 0 ||
	    dup2(a->out_fd, STDERR_FILENO) < 0)
		return AISB_EXIT_FAILED;
	/* the workload's hardening sequence (ns/harden.h): a root step keeps the fakeroot set of
	 * capabilities in its own user namespace, a USER step none */
	if (seccomp_policy_compile(&so, &prog) < 0)
		return AISB_EXIT_ENFORCE; /* said why */
	environ = env;
	r = harden_before_exec(&prog, keep, &step);
	seccomp_prog_free(&prog);
	if (r < 0)
		return log_error_errno(r, "build: %s: %m", harden_step_name(step, keep)), AISB_EXIT_ENFORCE;
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
	struct run_args b = *(const struct run_args *)p;
	const struct run_args *a = &b;
	struct mount_plan mp = { 0 };
	pid_t pid;
	int ex;

	if ((ex = step_plan(a, &mp)) != 0)
		return ex;
	b.mp = &mp;
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
	/* the network stage of `aisb run`'s init (net/netplan.h): lo up; with an allowlist the
	 * verified ruleset and the gate's listeners, sent to the parent's gate */
	{
		int fds[NETPLAN_GATE_FDS];
		char err[512] = "";
		int r = netplan_netns_stage(a->nb->net, fds, err, sizeof(err));

		if (r != 0) {
			log_error("build: %s", err);
			if (a->nb->net)
				(void)netplan_listeners_send(a->sync_fd, r, fds);
			return r;
		}
		if (a->nb->net && (r = netplan_listeners_send(a->sync_fd, 0, fds)) < 0)
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

/* In a child with the overlay mounted: USER @st->user resolved against the image's passwd and
 * group files as they are at this step; the result written to @fd. Returns an exit code. */
static int user_child(const struct native_build *nb, const struct cf_step *st, int fd)
{
	_cleanup_free_ char *pw = NULL, *gr = NULL;
	_cleanup_close_ int root = -1;
	size_t plen = 0, glen = 0;
	struct native_user u;
	int r;

	if ((root = fs_root(nb, getuid(), getgid())) < 0)
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

/* Stage: relay, the step running. Should: copy the step's output to stderr and the transcript
 * until it closes, with a heartbeat on a tty, and start the gate at the step's first connection
 * or DNS query (gate_wake_fd(), as `aisb run`'s run_loop() does). Mustn't: let the step wait on
 * listeners nobody serves: a gate that cannot start kills the holder @pid. Does not log but
 * the heartbeat (gate_start() logs its failure). */
static void step_relay(const struct native_build *nb, int out, const char *head, struct gate *gate, pid_t pid)
{
	bool tty = isatty(STDERR_FILENO), gate_idle = gate != NULL;
	time_t start = time(NULL);

	for (;;) {
		struct pollfd p[2] = { { .fd = out, .events = POLLIN }, { .fd = -1, .events = POLLIN } };
		char buf[16384];
		ssize_t n;
		int r;

		if (gate_idle)
			p[1].fd = gate_wake_fd(gate);
		r = poll(p, 2, 10000);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0) {
			if (tty)
				log_info("%s: still running (%lds)", head, (long)(time(NULL) - start));
			continue;
		}
		if (gate_idle && (p[1].revents & POLLIN)) {
			gate_idle = false;
			if (gate_start(gate) < 0)
				(void)kill(pid, SIGKILL);
		}
		if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = read(out, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		(void)write_full(STDERR_FILENO, buf, (size_t)n);
		if (nb->log_fd >= 0)
			(void)write_full(nb->log_fd, buf, (size_t)n);
	}
}

/* Stage: start. Should: make the step's output pipe and sync socket, the gate (allow mode, as
 * `aisb run`'s supervisor makes it: netplan_gate_new(), logging to the build's egress log) and
 * the holder (run_entry()), and hand the holder's listeners to the gate. Mustn't: leave a
 * holder running whose listeners nobody serves (it is killed: *@not_enforced when it could not
 * install the policy). Return: 0 with *@pid and *@out (the output's read end) set, or -errno.
 * Logs on failure. */
static int step_start(struct run_args *a, struct gate **gate, pid_t *pid, int *out, bool *not_enforced)
{
	int pfd[2], sfd[2], r;

	if (a->nb->net && (r = netplan_gate_new(a->nb->net, a->nb->egress_fd, NULL, NULL, gate)) < 0)
		return r;
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return log_error_errno(-errno, "pipe: %m");
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sfd) < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return log_error_errno(-errno, "socketpair: %m");
	}
	a->out_fd = pfd[1];
	a->sync_fd = sfd[1];
	r = run_in_child(pid, run_entry, a);
	close(pfd[1]);
	close(sfd[1]);
	if (r < 0) {
		close(pfd[0]);
		close(sfd[0]);
		return r;
	}
	if (*gate && (r = netplan_listeners_take(sfd[0], *gate)) < 0) {
		*not_enforced = r == -EPERM;
		(void)kill(*pid, SIGKILL); /* never a RUN whose listeners nobody serves */
	}
	close(sfd[0]);
	*out = pfd[0];
	return 0;
}

/* Runs RUN step @i: its output goes to stderr and the transcript; a heartbeat on a tty. */
static int run_step(const struct native_build *nb, size_t i, const char *resolv)
{
	const struct cf_step *st = &nb->rc->steps[i];
	struct run_args a = { .nb = nb, .st = st, .uid = nb->run_uid, .gid = nb->run_gid, .resolv = resolv };
	struct gate *gate = NULL;
	struct native_user user;
	bool is_user = false, not_enforced = false;
	char head[256];
	int out = -1, r;
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
	r = step_start(&a, &gate, &pid, &out, &not_enforced);
	if (r < 0) {
		gate_free(gate);
		return r;
	}
	step_relay(nb, out, head, gate, pid);
	close(out);
	r = wait_exit(pid);
	gate_stop(gate);
	gate_summary(gate, stderr);
	/* a gate that could not confine itself fails the step closed, as it stops `aisb run` (77) */
	not_enforced |= gate_refused(gate);
	gate_free(gate);
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

/* With the gate, the resolver file the RUN steps get over /etc/resolv.conf: next to the overlay
 * dirs in the build dir (removed with it), never in the upper. Return: 0 or -errno after
 * logging. */
static int write_resolv(const struct native_build *nb, char **path)
{
	static const char resolv[] = "nameserver " GATE_DNS_ADDR "\n";
	int r;

	*path = NULL;
	if (!nb->net || !native_first_run(nb->rc))
		return 0;
	if (asprintf(path, "%s.resolv.conf", nb->upper) < 0)
		return log_error_errno(-ENOMEM, "%m");
	r = write_file_at(AT_FDCWD, *path, resolv, sizeof(resolv) - 1, 0644);
	if (r < 0)
		return log_error_errno(r, "build: cannot write '%s': %m", *path);
	return 0;
}

int native_apply_steps(const struct native_build *nb)
{
	const struct cf_recipe *rc = nb->rc;
	_cleanup_free_ char *resolv = NULL;
	size_t i = 0, k = 0;
	pid_t pid = -1;
	int r;

	r = write_resolv(nb, &resolv);
	if (r < 0)
		return r;

	while (i <= rc->n_steps) {
		struct fs_args a = { .nb = nb, .uid = getuid(), .gid = getgid(), .from = i, .to = i, .k = k };

		if (i < rc->n_steps && rc->steps[i].kind == CF_RUN) {
			r = run_step(nb, i, resolv);
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
