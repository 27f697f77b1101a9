// SPDX-License-Identifier: GPL-2.0-or-later
/* homedir.c — the one rule for where aisb keeps its files (state, cache, config) */
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/homedir.h"
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
	static const char *const vars[HOMEDIR_KIND_MAX] = { "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME" };
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
