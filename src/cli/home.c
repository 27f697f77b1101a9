// SPDX-License-Identifier: GPL-2.0-or-later
/* home.c — the sandbox home's name */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build/context.h"
#include "cli/home.h"
#include "util/log.h"
#include "util/util.h"

char *home_project_name(const char *project_real)
{
	const char *base = strrchr(project_real, '/');
	char hex[65], clean[33];
	size_t n = 0;
	char *out;

	/* The hash of the real path keeps two checkouts named alike apart; sha256 rather than a
	 * short checksum, so no project can be made to land in another project's home. */
	if (build_sha256_hex(project_real, strlen(project_real), hex) < 0)
		return NULL;
	base = base ? base + 1 : project_real;
	for (; *base && n < sizeof(clean) - 1; base++)
		if (isalnum((unsigned char)*base) || *base == '.' || *base == '_' || *base == '-')
			clean[n++] = *base;
	clean[n] = 0;
	if (asprintf(&out, "project-%s%s%.12s", clean, n ? "-" : "", hex) < 0)
		return NULL;
	return out;
}

int home_resolve_name(const char *setting, const char *project_real, char **name)
{
	if (!setting || streq(setting, "default")) {
		*name = strdup("default");
		return *name ? 0 : -ENOMEM;
	}
	if (streq(setting, "project")) {
		if (!project_real)
			return log_error("--home project needs a project directory: drop --no-cwd, or name the "
					 "home (--home NAME)"), -EINVAL;
		*name = home_project_name(project_real);
		return *name ? 0 : -ENOMEM;
	}
	*name = strdup(setting);
	return *name ? 0 : -ENOMEM;
}
