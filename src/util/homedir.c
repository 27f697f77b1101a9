// SPDX-License-Identifier: GPL-2.0-or-later
/* homedir.c — the one rule for where aisb keeps its files (state, cache, config) */
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/homedir.h"
#include "util/log.h"
#include "util/util.h"

void homedir_normalize(char *path)
{
	char *w = path;

	if (!path)
		return;
	for (const char *r = path; *r; r++)
		if (!(*r == '/' && w > path && w[-1] == '/'))
			*w++ = *r;
	*w = 0;
}

/* The variable that names each kind's base directory. */
static const char *const vars[HOMEDIR_KIND_MAX] = { "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME" };

/* An absolute directory the caller can write and enter. */
static bool usable(const char *dir)
{
	struct stat st;

	return dir && path_is_absolute(dir) && stat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
	       access(dir, W_OK | X_OK) == 0;
}

char *homedir_home(homedir_getter get, bool *fell_back)
{
	const char *env = get("HOME");
	const char *pwhome = NULL, *pick;
	struct passwd *pw;
	char *r;

	if (env && !path_is_absolute(env))
		env = NULL;
	if (fell_back)
		*fell_back = false;
	if (usable(env))
		pick = env; /* no passwd lookup: NSS (nscd, nsswitch.conf, passwd) cost every start */
	else {
		pw = getpwuid(getuid());
		pwhome = pw && pw->pw_dir && path_is_absolute(pw->pw_dir) ? pw->pw_dir : NULL;
		if (usable(pwhome)) {
			pick = pwhome;
			if (fell_back)
				*fell_back = env != NULL;
		} else
			pick = env ? env : pwhome;
	}
	if (!pick || !(r = strdup(pick)))
		return NULL;
	homedir_normalize(r);
	return r;
}

char *homedir_aisb(homedir_getter get, enum homedir_kind kind)
{
	static const char *const below[HOMEDIR_KIND_MAX] = { ".local/state/aisb", ".cache/aisb", ".config/aisb" };
	_cleanup_free_ char *home = NULL;
	const char *x;
	char *r;

	if (kind >= HOMEDIR_KIND_MAX)
		return NULL;
	x = get(vars[kind]);
	if (x && path_is_absolute(x))
		r = path_join(x, "aisb");
	else {
		home = homedir_home(get, NULL);
		r = home ? path_join(home, below[kind]) : NULL;
	}
	homedir_normalize(r);
	return r;
}

/* The nearest existing ancestor of @path (itself included) is a directory the caller can write
 * and enter: 0, or the -errno that stops it (EROFS on a read-only root, EACCES, ENOTDIR). */
static int creatable(const char *path)
{
	char buf[PATH_MAX];
	struct stat st;
	size_t n = strlen(path);

	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (;;) {
		if (stat(buf, &st) == 0) {
			if (!S_ISDIR(st.st_mode))
				return -ENOTDIR;
			return access(buf, W_OK | X_OK) < 0 ? -errno : 0;
		}
		if (errno != ENOENT)
			return -errno;
		char *slash = strrchr(buf, '/');
		if (!slash || slash == buf) {
			buf[1] = 0; /* "/" */
			if (stat(buf, &st) < 0)
				return -errno;
			return access(buf, W_OK | X_OK) < 0 ? -errno : 0;
		}
		*slash = 0;
	}
}

int homedir_aisb_check(homedir_getter get, enum homedir_kind kind, char **out, char *why, size_t why_size,
		       char *fix, size_t fix_size)
{
	static const char *const what[HOMEDIR_KIND_MAX] = { "state", "image cache", "config" };
	_cleanup_free_ char *dir = NULL;
	const char *x;
	int r;

	*out = NULL;
	if (kind >= HOMEDIR_KIND_MAX)
		return -EINVAL;
	x = get(vars[kind]);
	dir = homedir_aisb(get, kind);
	if (!dir) {
		const char *h = get("HOME");
		snprintf(why, why_size, "no directory for aisb's %s: %s and uid %u has no passwd entry", what[kind],
			 h ? "HOME is not an absolute path" : "HOME is unset", (unsigned)getuid());
		snprintf(fix, fix_size, "set %s (or HOME) to a writable directory", vars[kind]);
		return -ENOENT;
	}
	r = creatable(dir);
	if (r < 0) {
		bool from_var = x && path_is_absolute(x);
		snprintf(why, why_size, "cannot use '%s' for aisb's %s (%s): %s", dir, what[kind],
			 from_var ? vars[kind] : "below the home directory", strerror(-r));
		snprintf(fix, fix_size, "set %s%s to a writable directory", vars[kind], from_var ? "" : " (or HOME)");
		return r;
	}
	*out = TAKE_PTR(dir);
	return 0;
}

int homedir_aisb_usable(homedir_getter get, enum homedir_kind kind, char **out)
{
	char why[PATH_MAX + 128], fix[96];
	int r = homedir_aisb_check(get, kind, out, why, sizeof(why), fix, sizeof(fix));

	if (r < 0)
		return log_error("%s: %s", why, fix), r;
	return 0;
}
