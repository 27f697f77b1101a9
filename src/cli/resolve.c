// SPDX-License-Identifier: GPL-2.0-or-later
/* resolve.c — settings to plan: paths, project placement, mounts, environment, command */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "agents/bridge.h"
#include "cli/harness.h"
#include "cli/home.h"
#include "cli/image-run.h"
#include "cli/resolve.h"
#include "ns/limits.h"
#include "ns/scrub.h"
#include "ns/mounts.h"
#include "ns/userns.h"
#include "net/gate.h"
#include "net/netplan.h"
#include "rootfs/image.h"
#include "rootfs/ref.h"
#include "run/session.h"
#include "util/container.h"
#include "util/homedir.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/util.h"
#include "workspace/workspace.h"

#define SANDBOX_UID 1000
#define SANDBOX_GID 1000
#define SANDBOX_HOME PLAN_SANDBOX_HOME
#define SANDBOX_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

bool plan_path_is_forbidden_source(const char *path, const char *xdg_runtime_dir)
{
	static const char *const forbidden[] = { "/proc", "/sys", "/dev", "/run", "/var/run", "/boot" };
	if (!path_is_absolute(path) || streq(path, "/"))
		return true;
	for (size_t i = 0; i < ELEMENTSOF(forbidden); i++)
		if (path_startswith(path, forbidden[i]))
			return true;
	if (xdg_runtime_dir && path_is_absolute(xdg_runtime_dir) && !streq(xdg_runtime_dir, "/") &&
	    (path_startswith(path, xdg_runtime_dir) || path_startswith(xdg_runtime_dir, path)))
		return true;
	return false;
}

int plan_parse_mount_spec(const char *spec, char **src, char **dst, bool *ro)
{
	_cleanup_free_ char *s = strdup(spec);
	char *field[4] = { NULL };
	const char *mode = NULL;
	size_t n = 0;

	if (!s)
		return -ENOMEM;
	/* SRC[:DST][:ro|:rw]: at most three ':'-separated fields; paths with ':' are not supported,
	 * so a typo such as ':rx' is an error rather than part of a destination. */
	for (char *p = s; p && n < 4; n++) {
		field[n] = p;
		p = strchr(p, ':');
		if (p)
			*p++ = 0;
	}
	if (n > 3 || (n == 4))
		return log_error("invalid --mount '%s': expected SRC[:DST][:ro|:rw]", spec);
	if (n == 3)
		mode = field[2];
	else if (n == 2 && !path_is_absolute(field[1]))
		mode = field[1], field[1] = NULL;
	*ro = true; /* rw only when asked */
	if (mode) {
		if (streq(mode, "rw"))
			*ro = false;
		else if (!streq(mode, "ro"))
			return log_error("invalid --mount '%s': unknown mode '%s' (use ro or rw)", spec, mode);
	}
	if (!*field[0])
		return log_error("invalid --mount '%s': empty source", spec);
	if (n == 3 && !path_is_absolute(field[1]))
		return log_error("invalid --mount '%s': destination must be an absolute path", spec);
	if (path_has_dotdot(field[0]) || (field[1] && path_has_dotdot(field[1])))
		return log_error("invalid --mount '%s': '..' is not allowed", spec);
	*src = strdup(field[0]);
	*dst = field[1] ? strdup(field[1]) : NULL;
	if (!*src || (field[1] && !*dst))
		return -ENOMEM;
	return 0;
}

/* The one rule for a host path aisb opens for the sandbox (--mount sources, --env-file): resolved
 * by path_resolve_trusted(), so a symlink that any sandbox of this user could have planted or
 * swapped (one in a directory the user can write: the project, the persistent home, a rw
 * --mount of any earlier run) is never followed (issue 10, escape 3). Logs on failure. */
int plan_resolve_source(const char *path, const char *what, char **out)
{
	_cleanup_free_ char *bad = NULL;
	int r = path_resolve_trusted(path, out, &bad);
	if (r == -ELOOP)
		return log_error("%s '%s': '%s' is a symlink in a directory you can write, so a sandbox "
				 "could have planted or swapped it; name the real path instead (aisb follows "
				 "no such symlink)", what, path, bad ? bad : path);
	if (r < 0)
		return log_error_errno(r, "%s '%s': %m", what, path);
	return 0;
}

/* Reads NAME=VALUE lines. Errors name the file and line, never the content. Logs on failure. */
static int env_file_load(struct aisb_plan *p, const char *path)
{
	_cleanup_free_ char *real = NULL;
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *text = NULL;
	struct stat st;
	char *line, *next;
	unsigned lineno = 0;
	int r;

	r = plan_resolve_source(path, "--env-file", &real);
	if (r < 0)
		return r;
	/* the canonical path has no symlink left: opened with none followed */
	fd = openat_nofollow(AT_FDCWD, real, O_RDONLY | O_NOCTTY, 0);
	if (fd < 0)
		errno = -fd;
	if (fd < 0)
		return log_error_errno(-errno, "cannot open --env-file '%s': %m", path);
	if (fstat(fd, &st) < 0)
		return log_error_errno(-errno, "cannot stat --env-file '%s': %m", path);
	if (!S_ISREG(st.st_mode))
		return log_error("--env-file '%s' is not a regular file", path);
	if (st.st_mode & 077) {
		_cleanup_free_ char *w = shell_word(path);
		return log_error("--env-file '%s' has mode %04o; it holds secrets, so it must be 0600 "
				 "(chmod 600 %s)", path, (unsigned)(st.st_mode & 07777), w ? w : "FILE");
	}
	if (st.st_uid != getuid())
		return log_error("--env-file '%s' is not owned by you (uid %u)", path, (unsigned)getuid());
	/* Read through the fd we checked, never by name again. */
	{
		char fdpath[64];
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
		r = read_file_at(AT_FDCWD, fdpath, 1 << 20, &text, NULL);
		if (r < 0)
			return log_error_errno(r, "cannot read --env-file '%s': %m", path);
	}
	for (line = text; line; line = next) {
		char *eq, *name, *val;
		size_t vl;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		lineno++;
		while (isspace((unsigned char)*line))
			line++;
		if (!*line || *line == '#')
			continue;
		if (strncmp(line, "export ", 7) == 0)
			line += 7;
		eq = strchr(line, '=');
		if (!eq)
			return log_error("--env-file '%s':%u: expected NAME=VALUE", path, lineno);
		*eq = 0;
		name = line;
		val = eq + 1;
		if (!plan_env_name_valid(name))
			return log_error("--env-file '%s':%u: invalid variable name", path, lineno);
		vl = strlen(val);
		if (vl && val[vl - 1] == '\r')
			val[--vl] = 0;
		if (vl >= 2 && (val[0] == '"' || val[0] == '\'') && val[vl - 1] == val[0]) {
			val[vl - 1] = 0;
			val++;
		}
		r = plan_set_env(p, name, val, true);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Allow mode: every proxy variable points at the gate; a value the user set with --env wins (it
 * cannot reach anything but the gate anyway). Does not log. */
static int plan_add_proxy_env(struct aisb_plan *p)
{
	static const char *const names[] = { "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
					     "http_proxy", "https_proxy", "all_proxy" };
	char url[64];
	int r;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", GATE_PROXY_PORT);
	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		bool set = false;

		for (size_t k = 0; k < p->n_env; k++)
			set |= streq(p->env[k].name, names[i]);
		if (!set && (r = plan_set_env(p, names[i], url, false)) < 0)
			return r;
	}
	if ((r = plan_set_env(p, "NO_PROXY", "localhost,127.0.0.1", false)) < 0 ||
	    (r = plan_set_env(p, "no_proxy", "localhost,127.0.0.1", false)) < 0)
		return r;
	return 0;
}

int plan_build_env(struct aisb_plan *p, const struct aisb_settings *s, env_getter get)
{
	static const char *const pass[] = { "TERM", "LANG", "LC_ALL", "LC_CTYPE", "TZ" };
	int r;

	for (size_t i = 0; i < ELEMENTSOF(pass); i++) {
		const char *v = get(pass[i]);
		if (v && (r = plan_set_env(p, pass[i], v, false)) < 0)
			return r;
	}
	if ((r = plan_set_env(p, "HOME", SANDBOX_HOME, false)) < 0 ||
	    (r = plan_set_env(p, "USER", "sandbox", false)) < 0 ||
	    (r = plan_set_env(p, "LOGNAME", "sandbox", false)) < 0 ||
	    (r = plan_set_env(p, "PATH", SANDBOX_PATH, false)) < 0 ||
	    (r = plan_set_env(p, "SHELL", access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh", false)) < 0 ||
	    (r = plan_set_env(p, "container", "aisb", false)) < 0)
		return r;

	for (size_t i = 0; s->envs && s->envs[i]; i++) {
		const char *spec = s->envs[i];
		const char *eq = strchr(spec, '=');
		_cleanup_free_ char *name = eq ? strndup(spec, (size_t)(eq - spec)) : strdup(spec);

		if (!name)
			return -ENOMEM;
		if (!plan_env_name_valid(name))
			return log_error("invalid --env name '%s'", name);
		if (eq) {
			r = plan_set_env(p, name, eq + 1, true);
		} else {
			const char *v = get(name);
			if (!v)
				return log_error("--env %s: the variable is not set on the host "
						 "(set it, or use --env-file)", name);
			r = plan_set_env(p, name, v, true);
		}
		if (r < 0)
			return r;
	}
	for (size_t i = 0; s->env_files && s->env_files[i]; i++)
		if ((r = env_file_load(p, s->env_files[i])) < 0)
			return r;
	return 0;
}

static int add_mount(struct aisb_plan *p, const char *spec, const char *xdg_runtime)
{
	_cleanup_free_ char *src = NULL, *dst = NULL, *real = NULL;
	struct plan_mount *m;
	struct stat st;
	bool ro;
	int r;

	r = plan_parse_mount_spec(spec, &src, &dst, &ro);
	if (r < 0)
		return r;
	r = plan_resolve_source(src, "--mount", &real);
	if (r < 0)
		return r;
	if (lstat(real, &st) < 0)
		return log_error_errno(-errno, "invalid --mount '%s': %m", spec);
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return log_error("invalid --mount '%s': only directories and regular files can be mounted", spec);
	if (plan_path_is_forbidden_source(real, xdg_runtime))
		return log_error("invalid --mount '%s': '%s' must never be exposed to the sandbox", spec, real);
	if (!dst) {
		dst = strdup(real);
		if (!dst)
			return -ENOMEM;
	}
	if (plan_path_is_reserved(dst))
		return log_error("invalid --mount '%s': the sandbox owns '%s'; pick another destination", spec, dst);
	if (p->project_dst && streq(dst, p->project_dst))
		return log_error("invalid --mount '%s': '%s' is where the project is mounted", spec, dst);
	for (size_t i = 0; i < p->n_mounts; i++)
		if (streq(p->mounts[i].dst, dst))
			return log_error("invalid --mount '%s': '%s' is already a mount destination", spec, dst);
	m = realloc(p->mounts, (p->n_mounts + 1) * sizeof(*m));
	if (!m)
		return -ENOMEM;
	p->mounts = m;
	m[p->n_mounts] = (struct plan_mount){ TAKE_PTR(real), TAKE_PTR(dst), ro, S_ISDIR(st.st_mode) };
	p->n_mounts++;
	return 0;
}

/* --harness-from DIR: DIR read-only and DIR/bin (or DIR) first on PATH. At its own path, so that
 * absolute paths and relative symlinks inside keep working; the host rootfs shows /usr and /opt
 * already; another path the sandbox owns (root's /root, /tmp) goes below HARNESS_RELOCATED.
 * Never the home, a dir above the state dir (every sandbox home, the trust records) or a private
 * tree (cli/harness.h). Logs on failure. */
static int add_harness_from(struct aisb_plan *p, const char *dir, const char *home, const char *xdg_runtime)
{
	_cleanup_free_ char *real = realpath(dir, NULL), *dst = NULL, *hbin = NULL, *spec = NULL, *path = NULL;
	bool visible, has_bin;
	struct stat st;

	if (!real || stat(real, &st) < 0 || !S_ISDIR(st.st_mode))
		return log_error("invalid --harness-from '%s': not a directory", dir), AISB_EXIT_POLICY;
	if (path_startswith(home, real) || path_startswith(p->state_dir, real) || harness_dir_is_private(real, home))
		return log_error("invalid --harness-from '%s': it holds your home, aisb's state or a private "
				 "tree (~/.local, ~/.config, ~/.cache); name the harness's own install dir (e.g. "
				 "~/.nvm/versions/node/VERSION, or ~/.local/bin and ~/.local/lib/node_modules)", dir),
		       AISB_EXIT_POLICY;
	visible = p->rootfs == ROOTFS_HOST && (path_startswith(real, "/usr") || path_startswith(real, "/opt"));
	dst = plan_path_is_reserved(real) && !visible ? path_join(HARNESS_RELOCATED, real) : strdup(real);
	hbin = path_join(real, "bin");
	if (!dst || !hbin)
		return AISB_EXIT_FAILED;
	has_bin = stat(hbin, &st) == 0 && S_ISDIR(st.st_mode);
	if (!visible) {
		bool dup = false;
		for (size_t i = 0; i < p->n_mounts; i++)
			dup |= streq(p->mounts[i].dst, dst);
		if (!dup && (asprintf(&spec, "%s:%s:ro", real, dst) < 0 || add_mount(p, spec, xdg_runtime) < 0))
			return AISB_EXIT_POLICY;
	}
	if (asprintf(&path, "%s%s%s%s", p->harness_path ? p->harness_path : "", p->harness_path ? ":" : "", dst,
		     has_bin ? "/bin" : "") < 0)
		return AISB_EXIT_FAILED;
	free(p->harness_path);
	p->harness_path = TAKE_PTR(path);
	return 0;
}

/* PATH = the --harness-from bins, then what PATH was (the sandbox's, or --env PATH). */
static int prepend_path(struct aisb_plan *p)
{
	for (size_t i = 0; i < p->n_env; i++)
		if (streq(p->env[i].name, "PATH")) {
			char *v;
			if (asprintf(&v, "%s:%s", p->harness_path, p->env[i].value) < 0)
				return -ENOMEM;
			free(p->env[i].value);
			p->env[i].value = v;
			return 0;
		}
	return plan_set_env(p, "PATH", p->harness_path, false);
}

static int resolve_command(struct aisb_plan *p, const struct aisb_settings *s)
{
	const char *shell = access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";

	if (s->command) {
		p->argv = strv_copy(s->command);
		return p->argv ? 0 : -ENOMEM;
	}
	p->argv = calloc(1, sizeof(char *));
	if (!p->argv)
		return -ENOMEM;
	if (s->shell || streq(s->harness, "shell")) {
		if (strv_push(&p->argv, shell) < 0)
			return -ENOMEM;
	} else if (strv_push(&p->argv, s->harness) < 0)
		return -ENOMEM;
	for (size_t i = 0; s->harness_args && s->harness_args[i]; i++)
		if (strv_push(&p->argv, s->harness_args[i]) < 0)
			return -ENOMEM;
	return 0;
}

bool plan_root_remap_wanted(env_getter get)
{
	const char *t = get("AISB_TEST_NO_IDMAP");

	return !(t && streq(t, "1")) && mount_remap_possible();
}

/* Takes USERNS_ROOT_RUN_ID when every source the sandbox will bind can be idmapped (for an
 * --image run also the image store, whose unpacked tree is the overlay's lower: ns/mounts.h,
 * mount_remap_plan()); else the sandbox stays kernel uid 0 (on the host rootfs with /etc and
 * /opt masked; its process bound the pid namespace's pid_max: ns/limits.h), said with -v.
 * Does not fail. */
static void root_remap_probe(struct aisb_plan *p, env_getter get)
{
	const char *paths[8 + 64];
	size_t k = 0;
	char why[PATH_MAX + 128];
	struct image_opts io = { 0 };

	if (p->rootfs == ROOTFS_IMAGE) {
		if (image_opts_init(&io, get) < 0) {
			image_opts_done(&io);
			return; /* said; the image cannot be attached either */
		}
		paths[k++] = io.store_root;
	}

	if (p->project_src)
		paths[k++] = p->project_src;
	if (p->agents_src)
		paths[k++] = p->agents_src;
	if (p->home_src)
		paths[k++] = p->home_src;
	if (p->state_dir)
		paths[k++] = p->state_dir;
	if (p->run_dir)
		paths[k++] = p->run_dir;
	for (size_t i = 0; i < p->n_mounts && k < ELEMENTSOF(paths) - 1; i++)
		paths[k++] = p->mounts[i].src;
	paths[k] = NULL;
	if (p->n_mounts > ELEMENTSOF(paths) - 7)
		log_debug("root caller: more mounts than the idmap probe takes: the sandbox stays uid 0");
	else if (mount_remap_probe(paths, USERNS_ROOT_RUN_ID, why, sizeof(why)) < 0)
		log_debug("root caller: the sandbox stays kernel uid 0: %s", why);
	else
		p->run_uid = p->run_gid = USERNS_ROOT_RUN_ID;
	image_opts_done(&io);
}

/* Stage: the fixed part, from the settings alone: who the sandbox is inside, and the switches
 * the plan copies. Mustn't: read the host beyond the caller's ids. */
static void identity_stage(struct aisb_plan *p, const struct aisb_settings *s)
{
	memset(p, 0, sizeof(*p));
	p->host_uid = getuid();
	p->host_gid = getgid();
	p->uid = SANDBOX_UID;
	p->gid = SANDBOX_GID;
	p->user = "sandbox";
	p->home = SANDBOX_HOME;
	p->allow_ptrace = s->allow_ptrace;
	p->keep = s->keep;
	p->tty_passthrough = s->tty_passthrough;
	p->writable_git = s->writable_git;
	p->container_proc = s->container_proc;
}

/* The test hooks (documented as such in docs/images.md), not user settings: force the
 * no-overlay fallback so that it is tested on kernels where overlay works; lower the tmpfs
 * upper's bound so that filling it is tested without writing gigabytes; lower the egress log's
 * bound (docs/networking.md), so that a flood reaches it fast. And aisb autophase's internal
 * verdict fd. Return: 0 or 78. Logs on failure. */
static int test_hooks_stage(struct aisb_plan *p, const struct aisb_settings *s, env_getter get)
{
	const char *t = get("AISB_TEST_NO_OVERLAY");

	p->image_no_overlay = s->image && t && streq(t, "1");
	/* internal, set by aisb autophase for its units (pipeline/autophase.c): where the git
	 * check's verdict goes; an fd that is not open is ignored, and then autophase, which
	 * reads no verdict, refuses to deliver */
	t = get("AISB_GUARD_VERDICT_FD");
	if (t) {
		unsigned long long fd;
		if (parse_u64(t, &fd) == 0 && fd > 2 && fd < 1024 && fcntl((int)fd, F_SETFD, FD_CLOEXEC) == 0)
			p->guard_verdict_fd = (int)fd;
	}
	t = get("AISB_TEST_UPPER_SIZE");
	if (s->image && t && cgroup_parse_size(t, &p->image_upper_max) < 0)
		return log_error("AISB_TEST_UPPER_SIZE '%s' is not a size", t), AISB_EXIT_POLICY;
	t = get("AISB_TEST_EGRESS_LOG_MAX");
	if (t && cgroup_parse_size(t, &p->netp->egress_log_max) < 0)
		return log_error("AISB_TEST_EGRESS_LOG_MAX '%s' is not a size", t), AISB_EXIT_POLICY;
	return 0;
}

/* Stage: network and rootfs. Should: check the --image reference's syntax (the store is
 * consulted, and the image pulled, by image_stage()), resolve the net part (net/netplan.h) and
 * choose where an image's upper goes. Mustn't: create anything. Return: 0 or an exit code.
 * Logs on failure. */
static int net_rootfs_stage(struct aisb_plan *p, const struct aisb_settings *s, env_getter get)
{
	int r;

	if (s->image) {
		struct oci_ref ref;
		if (oci_ref_parse(s->image, &ref) < 0)
			return log_error("--image '%s' is not an image reference (e.g. debian:12, "
					 "HOST:PORT/NAME:TAG, NAME@sha256:..., oci:DIR[:TAG])", s->image),
			       AISB_EXIT_POLICY;
		oci_ref_done(&ref);
	}
	r = netplan_resolve(s, &p->netp);
	if (r != 0)
		return r;
	p->rootfs = s->image ? ROOTFS_IMAGE : ROOTFS_HOST;
	/* Only a kept session's upper is on disk: one thrown away at exit is a bounded tmpfs in the
	 * sandbox's own mount namespace (mount_upper_size(); docs/images.md: its mkdir/rmdir on the
	 * state dir's journaled disk were most of a cached image run's extra start-up). */
	p->image_ephemeral = s->ephemeral || !s->keep;
	/* ... where tmpfs keeps the overlay's user.* xattrs (Linux 6.6+). Before that a tmpfs upper
	 * breaks the image (removing one of its directories is EIO), so a session that is not kept
	 * has its upper in its session dir on the disk again, removed at exit; an explicit
	 * --ephemeral keeps the tmpfs upper (docs/images.md). */
	if (s->image && !s->ephemeral && !s->keep && !mount_tmpfs_has_user_xattr())
		p->image_ephemeral = false;
	r = test_hooks_stage(p, s, get);
	if (r != 0)
		return r;
	if (s->image && !(p->image_ref = strdup(s->image)))
		return log_error("out of memory"), AISB_EXIT_FAILED;
	return 0;
}

/* Stage: the project. Should: take the current directory unless --no-cwd, refusing one that
 * is or holds the home or must never be exposed, place it inside, and with --workspace clone
 * plan the clone (workspace/workspace.h). Return: 0 or an exit code. Logs on failure. */
static int project_stage(struct aisb_plan *p, const struct aisb_settings *s, env_getter get, const char *home,
			 const char *xdg_runtime)
{
	_cleanup_free_ char *cwd = NULL;
	int r;

	if (!s->no_cwd) {
		cwd = getcwd(NULL, 0);
		if (!cwd)
			return log_error_errno(-errno, "cannot read the current directory: %m"), AISB_EXIT_FAILED;
		if (streq(cwd, "/") || path_startswith(home, cwd))
			return log_error("refusing to mount '%s' as the project: it is or contains your home "
					 "directory; cd into a project, or use --no-cwd", cwd), AISB_EXIT_POLICY;
		if (plan_path_is_forbidden_source(cwd, xdg_runtime))
			return log_error("refusing to mount '%s' as the project: it must never be exposed to "
					 "the sandbox; cd into a project, or use --no-cwd", cwd), AISB_EXIT_POLICY;
		r = plan_project_dst(cwd, s->workdir, &p->project_dst, &p->project_relocated);
		if (r < 0)
			return AISB_EXIT_POLICY;
		p->project_src = TAKE_PTR(cwd);
		p->project_ro = s->read_only;
		p->cwd = strdup(p->project_dst);
	} else {
		if (s->workdir && !streq(s->workdir, "auto"))
			return log_error("--workdir needs a project; it cannot be used with --no-cwd"), AISB_EXIT_POLICY;
		p->cwd = strdup(SANDBOX_HOME);
	}
	if (!p->cwd)
		return AISB_EXIT_FAILED;
	/* --workspace clone: the project becomes a clone made at run time (workspace/workspace.h);
	 * without a project (--no-cwd, `aisb --version`) there is nothing to clone */
	if (s->no_cwd)
		return 0;
	if (s->workspace && streq(s->workspace, "clone"))
		return workspace_resolve(p, s->untracked, s->target, s->import_uncommitted, s->review, get);
	if (s->untracked || s->target || s->import_uncommitted || s->review)
		return log_error("--untracked, --target, --import-uncommitted and --review need --workspace clone"),
		       AISB_EXIT_POLICY;
	return 0;
}

/* Stage: state, home and agents. Should: find the state dir and the run dir (the rule every
 * command shares, util/homedir.h; a dir the environment does not let aisb use is configuration,
 * 78, as for the image store, cli/sessions.h), name the persistent home, and take ~/.agents
 * (or --agents-dir) unless --no-agents. Mustn't: create any of them. Return: 0 or an exit code.
 * Logs on failure. */
static int state_stage(struct aisb_plan *p, const struct aisb_settings *s, env_getter get, const char *home,
		       const char *xdg_runtime)
{
	int r;

	if (homedir_aisb_usable(get, HOMEDIR_STATE, &p->state_dir) < 0)
		return AISB_EXIT_POLICY;
	/* the session's throw-away files (NULL: the session dir) */
	p->run_dir = session_run_dir(get);
	if (!s->ephemeral_home) {
		_cleanup_free_ char *rel = NULL;
		r = home_resolve_name(s->home, p->project_src, &p->home_name);
		if (r < 0)
			return r == -ENOMEM ? AISB_EXIT_FAILED : AISB_EXIT_POLICY;
		if (asprintf(&rel, "homes/%s", p->home_name) < 0 || !(p->home_src = path_join(p->state_dir, rel)))
			return AISB_EXIT_FAILED;
	}
	if (!s->no_agents) {
		_cleanup_free_ char *agents = s->agents_dir ? strdup(s->agents_dir) : path_join(home, ".agents");
		struct stat st;
		if (!agents)
			return AISB_EXIT_FAILED;
		if (stat(agents, &st) == 0 && S_ISDIR(st.st_mode)) {
			p->agents_src = realpath(agents, NULL);
			if (!p->agents_src)
				return log_error_errno(-errno, "cannot resolve agents dir '%s': %m", agents), AISB_EXIT_POLICY;
			if (plan_path_is_forbidden_source(p->agents_src, xdg_runtime))
				return log_error("--agents-dir '%s' must never be exposed", agents), AISB_EXIT_POLICY;
		} else if (s->agents_dir)
			return log_error("--agents-dir '%s' is not a directory", agents), AISB_EXIT_POLICY;
	}
	return 0;
}

/* Stage: mounts, identity and limits. Should: check every --mount and --harness-from; decide
 * the kernel ids (issue 22: the caller's, or for a root caller an unprivileged host id with its
 * bind sources idmapped, ns/mounts.h), before the limits, which depend on it; then the limits
 * (issue 5: enforce with cgroup v2, re-run in a systemd scope, refuse (78) or degrade the
 * defaults with one warning). Return: 0 or an exit code. Logs on failure. */
static int mounts_limits_stage(struct aisb_plan *p, const struct aisb_settings *s, env_getter get, const char *home,
			       const char *xdg_runtime)
{
	int r;

	for (size_t i = 0; s->mounts && s->mounts[i]; i++)
		if (add_mount(p, s->mounts[i], xdg_runtime) < 0)
			return AISB_EXIT_POLICY;
	for (size_t i = 0; s->harness_from && s->harness_from[i]; i++)
		if ((r = add_harness_from(p, s->harness_from[i], home, xdg_runtime)) != 0)
			return r;
	p->run_uid = p->host_uid;
	p->run_gid = p->host_gid;
	if (plan_root_remap_wanted(get))
		root_remap_probe(p, get);
	p->limits_quiet = s->accept_unenforced_limits;
	/* A preview shows the plan (limits_describe() says "NOT enforced" in it) and starts nothing:
	 * the run-time warning is for runs only (issue 12). */
	if (s->dry_run || s->print_policy || s->print_ruleset)
		p->limits_quiet = true;
	return limits_resolve(p, s->memory, s->pids, s->cpus, get, "");
}

/* Stage: environment and command. Should: build the environment (plan_build_env(), the gate's
 * proxy variables in allow mode, the --harness-from bins first on PATH) and the argv. Return: 0
 * or an exit code. Logs on failure. */
static int env_command_stage(struct aisb_plan *p, const struct aisb_settings *s, env_getter get)
{
	int r = plan_build_env(p, s, get);

	if (r == -ENOMEM)
		return AISB_EXIT_FAILED;
	if (r < 0)
		return AISB_EXIT_POLICY;
	if (netplan_has_gate(p->netp) && plan_add_proxy_env(p) < 0)
		return AISB_EXIT_FAILED;
	if (p->harness_path && prepend_path(p) < 0)
		return AISB_EXIT_FAILED;
	if (resolve_command(p, s) < 0)
		return AISB_EXIT_FAILED;
	return 0;
}

/* Is @s a preview (--dry-run, --print-policy, --print-ruleset), which starts and writes nothing? */
static bool is_preview(const struct aisb_settings *s)
{
	return s->dry_run || s->print_policy || s->print_ruleset;
}

int plan_resolve(struct aisb_plan *p, const struct aisb_settings *s, env_getter get, int *image_lock)
{
	_cleanup_free_ char *home = NULL;
	const char *xdg_runtime = get("XDG_RUNTIME_DIR");
	int r;

	if (image_lock)
		*image_lock = -1;
	identity_stage(p, s);
	r = net_rootfs_stage(p, s, get);
	if (r != 0)
		return r;
	home = homedir_home(get, NULL);
	if (!home)
		return log_error("cannot find your home directory (set HOME)"), AISB_EXIT_FAILED;
	if ((r = project_stage(p, s, get, home, xdg_runtime)) != 0 ||
	    (r = state_stage(p, s, get, home, xdg_runtime)) != 0 ||
	    (r = mounts_limits_stage(p, s, get, home, xdg_runtime)) != 0 || (r = env_command_stage(p, s, get)) != 0)
		return r;
	/* A harness under the user's home is invisible on the host rootfs: say where it is and how
	 * to run it, before anything starts (cli/harness.h). */
	r = harness_check(p, get, home, !(is_preview(s) || s->version || s->quiet));
	if (r != 0)
		return r;
	/* The image (cli/image-run.h): its rootfs, pulled unless this is a preview or nobody holds
	 * the lock, and its config, which may replace the command. */
	if (p->rootfs == ROOTFS_IMAGE && (r = image_attach(p, s, get, is_preview(s), image_lock)) != 0)
		return r;
	/* The harness's host config, rewritten for the sandbox home; refuses a harness whose model
	 * endpoint is not allowed (agents/bridge.h). After the image: its Cmd may replace the
	 * harness. `aisb --version` runs the harness without its config. */
	return s->version ? 0 : bridge_resolve(p, s, get, home);
}

static void print_argv(FILE *f, char *const *argv)
{
	for (size_t i = 0; argv && argv[i]; i++)
		fprintf(f, "%s'%s'", i ? " " : "", argv[i]);
	fputc('\n', f);
}

void plan_print(const struct aisb_plan *p, FILE *f)
{
	fprintf(f, "aisb plan (dry run: nothing was started or written)\n");
	fprintf(f, "command:    ");
	print_argv(f, p->argv);
	fprintf(f, "identity:   uid %u gid %u (%s) inside <-> uid %u gid %u outside", (unsigned)p->uid,
		(unsigned)p->gid, p->user, (unsigned)p->run_uid, (unsigned)p->run_gid);
	if (p->run_uid != p->host_uid)
		fprintf(f, " (not root: root's files idmapped to it)");
	fputc('\n', f);
	fprintf(f, "namespaces: user mount pid net ipc uts cgroup\n");
	if (p->rootfs == ROOTFS_IMAGE)
		fprintf(f, "rootfs:     image %s: %s as overlay lower (userxattr), upper %s; fresh /proc, "
			   "minimal /dev, tmpfs /tmp /run\n", p->image_ref,
			p->image_rootfs ? p->image_rootfs : "(not pulled yet: would be pulled)",
			!p->image_ephemeral ? (p->keep ? "in the session dir (kept)"
						       : "in the session dir (this kernel's tmpfs has no user xattrs; "
							 "removed at exit)")
			: p->keep ? "on a tmpfs of half the memory limit (--ephemeral)"
				  : "on a tmpfs of half the memory limit (thrown away at exit)");
	else
		fprintf(f, "rootfs:     host: /usr /bin /sbin /lib* /etc /opt read-only; fresh /proc, minimal /dev, "
			   "tmpfs /tmp /run\n");
	workspace_plan_print(p->workspace, f);
	if (p->project_src && p->workspace)
		fprintf(f, "project:    a clone of %s -> %s (read-write)\n", p->project_src, p->project_dst);
	else if (p->project_src)
		fprintf(f, "project:    %s -> %s (%s)%s%s\n", p->project_src, p->project_dst,
			p->project_ro ? "read-only" : "read-write",
			p->project_relocated ? " [its own path is sandbox-owned]" : "",
			p->writable_git ? " .git writable" : " .git/hooks,.git/config read-only");
	else
		fprintf(f, "project:    none (--no-cwd)\n");
	fprintf(f, "cwd:        %s\n", p->cwd);
	fprintf(f, "home:       %s -> %s%s%s%s\n", p->home_src ? p->home_src : "tmpfs (ephemeral)", p->home,
		p->home_name ? " (home '" : "", p->home_name ? p->home_name : "", p->home_name ? "')" : "");
	fprintf(f, "agents:     %s\n", p->agents_src ? p->agents_src : "none");
	bridge_print(p->bridge, f);
	for (size_t i = 0; i < p->n_mounts; i++)
		fprintf(f, "mount:      %s -> %s (%s)\n", p->mounts[i].src, p->mounts[i].dst,
			p->mounts[i].ro ? "read-only" : "read-write");
	netplan_print(p->netp, f);
	{
		char lim[512];
		limits_describe(p, lim, sizeof(lim));
		fprintf(f, "limits:     %s\n", lim);
	}
	fprintf(f, "hardening:  no capabilities, empty bounding set, no_new_privs, seccomp deny list%s\n",
		p->allow_ptrace ? " (ptrace allowed)" : "");
	for (size_t i = 0; i < p->n_env; i++)
		fprintf(f, "env:        %s=%s\n", p->env[i].name, p->env[i].secret ? "<redacted>" : p->env[i].value);
	{
		char scrub[768];
		scrub_describe(p, scrub, sizeof(scrub));
		if (*scrub)
			fprintf(f, "secrets:    %s\n", scrub);
	}
	if (session_fits_run_dir(p))
		fprintf(f, "state:      %s/sessions/<id> on tmpfs (else %s/sessions/<id>; removed at exit)\n", p->run_dir,
			p->state_dir);
	else
		fprintf(f, "state:      %s/sessions/<id> (%s at exit)\n", p->state_dir, p->keep ? "kept" : "removed");
}

void plan_print_policy(const struct aisb_plan *p, FILE *f)
{
	fprintf(f, "net=%s\n", net_mode_to_string(netplan_mode(p->netp)));
	netplan_print_policy(p->netp, f);
	if (p->rootfs == ROOTFS_IMAGE)
		fprintf(f, "rootfs=image\nimage=%s\n", p->image_ref);
	else
		fprintf(f, "rootfs=host\n");
	fprintf(f, "project=%s\n", p->project_src ? p->project_src : "");
	fprintf(f, "project_dst=%s\n", p->project_dst ? p->project_dst : "");
	fprintf(f, "project_ro=%s\n", p->project_ro ? "true" : "false");
	fprintf(f, "writable_git=%s\n", p->writable_git ? "true" : "false");
	fprintf(f, "container_proc=%s\n", p->container_proc ? "true" : "false");
	if (p->container_proc)
		fprintf(f, "container_proc_exposes=%s\n", CONTAINER_PROC_EXPOSURE);
	fprintf(f, "workspace=%s\n", p->workspace ? "clone" : "bind");
	fprintf(f, "home=%s\n", p->home_src ? p->home_src : "ephemeral");
	fprintf(f, "agents=%s\n", p->agents_src ? p->agents_src : "");
	bridge_print_policy(p->bridge, f);
	for (size_t i = 0; i < p->n_mounts; i++)
		fprintf(f, "mount=%s:%s:%s\n", p->mounts[i].src, p->mounts[i].dst, p->mounts[i].ro ? "ro" : "rw");
	for (size_t i = 0; i < p->n_env; i++)
		fprintf(f, "env=%s\n", p->env[i].name);
	fprintf(f, "uid=%u\ngid=%u\nhost_uid=%u\nhost_gid=%u\n", (unsigned)p->uid, (unsigned)p->gid,
		(unsigned)p->run_uid, (unsigned)p->run_gid);
	fprintf(f, "capabilities=none\nno_new_privs=true\nseccomp=default\nallow_ptrace=%s\n",
		p->allow_ptrace ? "true" : "false");
	fprintf(f, "max_user_namespaces=0\n");
	fprintf(f, "tty_filter=%s\n", p->tty_passthrough ? "off (--tty-passthrough)" : "on");
	fprintf(f, "memory_max=%llu\npids_max=%llu\ncpu_max=", (unsigned long long)p->limits.memory_max,
		(unsigned long long)p->limits.pids_max);
	if (p->limits.cpu_quota_us)
		fprintf(f, "%llu %llu\n", (unsigned long long)p->limits.cpu_quota_us, CGROUP_CPU_PERIOD_US);
	else
		fprintf(f, "max %llu\n", CGROUP_CPU_PERIOD_US);
	fprintf(f, "limits_enforced=%s\n", p->limits_mode == LIMITS_CGROUP || p->limits_mode == LIMITS_SCOPE ?
		"cgroup" : p->limits_mode == LIMITS_DEGRADED ? (p->limits_rlimit ? "rlimit-nproc-only" : p->limits_pidns ? "pidns-pid-max-only" : "no") : "none");
}

void plan_free(struct aisb_plan *p)
{
	netplan_free(p->netp);
	p->netp = NULL;
	bridge_plan_free(p->bridge);
	workspace_plan_free(p->workspace);
	free(p->image_ref);
	free(p->image_rootfs);
	free(p->project_src);
	free(p->project_dst);
	free(p->cwd);
	free(p->home_src);
	free(p->home_name);
	free(p->harness_path);
	free(p->agents_src);
	for (size_t i = 0; i < p->n_mounts; i++) {
		free(p->mounts[i].src);
		free(p->mounts[i].dst);
	}
	free(p->mounts);
	for (size_t i = 0; i < p->n_env; i++) {
		free(p->env[i].name);
		if (p->env[i].value)
			explicit_bzero(p->env[i].value, strlen(p->env[i].value));
		free(p->env[i].value);
	}
	free(p->env);
	strv_free(p->argv);
	free(p->state_dir);
	free(p->run_dir);
	memset(p, 0, sizeof(*p));
}
