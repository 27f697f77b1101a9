// SPDX-License-Identifier: GPL-2.0-or-later
/* hostenv.c — the one place aisb reads its own environment */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/hostenv.h"
#include "util/homedir.h"
#include "util/util.h"

const char *hostenv_get(const char *name)
{
	return secure_getenv(name);
}

char *hostenv_config_path(void)
{
	_cleanup_free_ char *dir = homedir_aisb(hostenv_get, HOMEDIR_CONFIG);
	return dir ? path_join(dir, "config") : NULL;
}
