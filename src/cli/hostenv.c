// SPDX-License-Identifier: GPL-2.0-or-later
/* hostenv.c — the one place aisb reads its own environment */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli/hostenv.h"
#include "util/util.h"

const char *hostenv_get(const char *name)
{
	return secure_getenv(name);
}

char *hostenv_config_path(void)
{
	const char *x = hostenv_get("XDG_CONFIG_HOME");
	const char *h = hostenv_get("HOME");
	char *r = NULL;

	if (x && path_is_absolute(x))
		return path_join(x, "aisb/config");
	if (!h || !path_is_absolute(h)) {
		struct passwd *pw = getpwuid(getuid());
		h = pw ? pw->pw_dir : NULL;
	}
	if (h && asprintf(&r, "%s/.config/aisb/config", h) < 0)
		r = NULL;
	return r;
}
