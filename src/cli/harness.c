// SPDX-License-Identifier: GPL-2.0-or-later
/* harness.c — find the command where the sandbox will look, and on the host where it cannot */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agents/harness.h"
#include "cli/harness.h"
#include "util/log.h"
#include "util/util.h"

/* What the host rootfs binds read-only (design 5). */
static const char *const host_visible[] = { "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt" };

static char *dir_of(const char *path)
{
	const char *s = strrchr(path, '/');
	return s == path ? strdup("/") : s ? strndup(path, (size_t)(s - path)) : strdup(".");
}

static bool has_base(const char *path, const char *base)
{
	const char *s = strrchr(path, '/');
	return s && streq(s + 1, base);
}

/* @path rooted at @home/@sub (a component-wise prefix)? */
static bool under_home(const char *path, const char *home, const char *sub)
{
	_cleanup_free_ char *p = path_join(home, sub);
	return p && path_startswith(path, p);
}

bool harness_dir_is_private(const char *dir, const char *home)
{
	static const char *const private[] = { ".local", ".config", ".cache" };

	for (size_t i = 0; i < ELEMENTSOF(private); i++) {
		_cleanup_free_ char *p = path_join(home, private[i]);
		if (p && path_startswith(p, dir))
			return true;
	}
	return false;
}

/* Is @dir a safe whole directory to offer: not the home, not above it, not holding the state
 * dir (sandbox homes and the trust store live there), not a private tree. */
static bool safe_root(const char *dir, const char *home, const char *state_dir)
{
	return !path_startswith(home, dir) && !(state_dir && path_startswith(state_dir, dir)) &&
	       !harness_dir_is_private(dir, home);
}

int harness_suggest_dirs(const char *found_dir, const char *real, const char *home, const char *state_dir,
			 char *out[2])
{
	static const char *const roots[] = { ".npm-global", ".volta", ".bun" };
	_cleanup_free_ char *prefix = NULL;
	char buf[PATH_MAX];

	out[0] = out[1] = NULL;
	/* nvm: ~/.nvm/versions/node/VERSION/bin holds node itself next to the harness. */
	if (under_home(found_dir, home, ".nvm/versions/node") && has_base(found_dir, "bin"))
		return (out[0] = dir_of(found_dir)) ? 1 : -ENOMEM;
	for (size_t i = 0; i < ELEMENTSOF(roots); i++)
		if (under_home(found_dir, home, roots[i]))
			return (out[0] = path_join(home, roots[i])) ? 1 : -ENOMEM;
	prefix = has_base(found_dir, "bin") ? dir_of(found_dir) : strdup(found_dir);
	if (!prefix)
		return -ENOMEM;
	if (path_startswith(real, prefix) && safe_root(prefix, home, state_dir))
		return (out[0] = TAKE_PTR(prefix)) ? 1 : -ENOMEM;
	/* ~/.local and the like: too much to show whole. The bin dir, and what its entry points
	 * into: PREFIX/a/b (~/.local/lib/node_modules), or the real file's own dir. */
	if (!(out[0] = strdup(found_dir)))
		return -ENOMEM;
	if (path_startswith(real, found_dir))
		return 1;
	if (path_startswith(real, prefix) && !streq(real, prefix)) {
		const char *rest = real + strlen(prefix) + 1, *s1 = strchr(rest, '/');
		const char *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
		if (s2 && snprintf(buf, sizeof(buf), "%s/%.*s", prefix, (int)(s2 - rest), rest) < (int)sizeof(buf) &&
		    safe_root(buf, home, state_dir))
			return (out[1] = strdup(buf)) ? 2 : -ENOMEM;
	}
	return (out[1] = dir_of(real)) ? 2 : -ENOMEM;
}

/* The host path that the sandbox path @dir shows, or NULL when the sandbox does not see the
 * host there. Caller frees. */
static char *host_path_of(const struct aisb_plan *p, const char *dir)
{
	for (size_t i = 0; i < p->n_mounts; i++)
		if (p->mounts[i].is_dir && path_startswith(dir, p->mounts[i].dst))
			return path_join(p->mounts[i].src, dir + strlen(p->mounts[i].dst));
	if (p->project_src && path_startswith(dir, p->project_dst))
		return path_join(p->project_src, dir + strlen(p->project_dst));
	for (size_t i = 0; i < ELEMENTSOF(host_visible); i++)
		if (path_startswith(dir, host_visible[i]))
			return strdup(dir);
	return NULL;
}

static const char *plan_env_value(const struct aisb_plan *p, const char *name)
{
	for (size_t i = 0; i < p->n_env; i++)
		if (streq(p->env[i].name, name))
			return p->env[i].value;
	return NULL;
}

/* Is @cmd an executable in one of the ':'-separated @path dirs as the sandbox sees them? */
static bool visible_in_sandbox(const struct aisb_plan *p, const char *path, const char *cmd)
{
	_cleanup_free_ char *copy = path ? strdup(path) : NULL;

	for (char *d = copy, *next; d; d = next) {
		_cleanup_free_ char *host = NULL, *f = NULL;

		next = strchr(d, ':');
		if (next)
			*next++ = 0;
		if (!path_is_absolute(d) || !(host = host_path_of(p, d)) || !(f = path_join(host, cmd)))
			continue;
		if (access(f, X_OK) == 0)
			return true;
	}
	return false;
}

/* The first host dir holding an executable @cmd: the host's PATH, then the usual per-user
 * install dirs. Caller frees. */
static char *find_on_host(const char *cmd, env_getter get, const char *home)
{
	static const char *const user_dirs[] = { ".local/bin", ".npm-global/bin", ".volta/bin", ".bun/bin" };
	const char *hp = get("PATH");
	_cleanup_free_ char *copy = hp ? strdup(hp) : NULL, *pattern = NULL;
	glob_t g;

	for (char *d = copy, *next; d; d = next) {
		_cleanup_free_ char *f = NULL;

		next = strchr(d, ':');
		if (next)
			*next++ = 0;
		if (path_is_absolute(d) && (f = path_join(d, cmd)) && access(f, X_OK) == 0)
			return strdup(d);
	}
	for (size_t i = 0; i < ELEMENTSOF(user_dirs); i++) {
		_cleanup_free_ char *d = path_join(home, user_dirs[i]), *f = d ? path_join(d, cmd) : NULL;
		if (f && access(f, X_OK) == 0)
			return TAKE_PTR(d);
	}
	/* nvm: the newest version that has it (glob sorts, so the last match) */
	if (asprintf(&pattern, "%s/.nvm/versions/node/*/bin/%s", home, cmd) < 0)
		return NULL;
	if (glob(pattern, 0, NULL, &g) == 0) {
		char *r = NULL;
		for (size_t i = g.gl_pathc; i-- > 0 && !r;)
			if (access(g.gl_pathv[i], X_OK) == 0)
				r = dir_of(g.gl_pathv[i]);
		globfree(&g);
		return r;
	}
	return NULL;
}

/* Are the programs harness @h downloads when missing (its row's `fetches`) visible in the
 * sandbox? True for a harness that fetches nothing, or for a command that is no harness. */
static bool fetched_visible(const struct aisb_plan *p, const char *path, const struct harness *h)
{
	const char *w;

	if (!h || !h->fetches)
		return true;
	for (w = h->fetches; *w;) {
		size_t n = strcspn(w, " ");
		bool any = false;

		for (const char *a = w; a < w + n && !any;) {
			size_t k = strcspn(a, "| ");
			char name[64];

			if (k && k < sizeof(name)) {
				memcpy(name, a, k);
				name[k] = '\0';
				any = visible_in_sandbox(p, path, name);
			}
			a += k;
			if (*a == '|')
				a++;
		}
		if (!any)
			return false;
		w += n;
		w += strspn(w, " ");
	}
	return true;
}

bool harness_visible(const struct aisb_plan *p)
{
	const char *cmd = p->argv ? p->argv[0] : NULL;

	if (p->rootfs != ROOTFS_HOST || !cmd || !*cmd || strchr(cmd, '/'))
		return true;
	return visible_in_sandbox(p, plan_env_value(p, "PATH"), cmd);
}

int harness_check(const struct aisb_plan *p, env_getter get, const char *home, bool announce)
{
	const char *cmd = p->argv ? p->argv[0] : NULL, *path = plan_env_value(p, "PATH");
	_cleanup_free_ char *found = NULL, *file = NULL, *real = NULL;
	char *dirs[2] = { NULL, NULL };
	char flags[2 * PATH_MAX + 64];
	int n;

	if (p->rootfs != ROOTFS_HOST || !cmd || !*cmd || strchr(cmd, '/'))
		return 0;
	if (visible_in_sandbox(p, path, cmd)) {
		if (announce && !fetched_visible(p, path, harness_find(cmd)))
			log_info("%s", harness_find(cmd)->fetches_hint);
		return 0;
	}
	found = find_on_host(cmd, get, home);
	if (!found)
		return 0; /* nowhere: init's "command not found" (127) says what the sandbox's PATH is */
	file = path_join(found, cmd);
	if (!file) /* harness_suggest_dirs() must not see a NULL path */
		return log_error("out of memory"), AISB_EXIT_FAILED;
	real = realpath(file, NULL);
	n = harness_suggest_dirs(found, real ? real : file, home, p->state_dir, dirs);
	if (n < 0)
		return log_error("out of memory"), AISB_EXIT_FAILED;
	snprintf(flags, sizeof(flags), "--harness-from %s%s%s", dirs[0], n > 1 ? " --harness-from " : "",
		 n > 1 ? dirs[1] : "");
	log_error("'%s' is installed at %s/%s%s%s, which the sandbox cannot see (it sees only the host's "
		  "/usr, /bin, /sbin, /lib* and /opt, the project and what you mount): run it with "
		  "'aisb %s ...' (read-only; or 'harness_from = DIR' in your config), install it system-wide, "
		  "or use an image that has it (--image)", cmd, found, cmd, real && !streq(real, file) ? " -> " : "",
		  real && !streq(real, file) ? real : "", flags);
	free(dirs[0]);
	free(dirs[1]);
	return AISB_EXIT_NOTFOUND;
}
