/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hostenv.h — the one place aisb reads its own environment.
 *
 * Everything else receives an env_getter, so tests can substitute a table and nothing reads the
 * ambient environment by accident.
 */
#ifndef AISB_UTIL_HOSTENV_H
#define AISB_UTIL_HOSTENV_H

/* secure_getenv(): NULL when unset, or when running with elevated privileges. Does not log. */
const char *hostenv_get(const char *name);

/* Path of the user config file ($XDG_CONFIG_HOME/aisb/config); caller frees; NULL if no home. */
char *hostenv_config_path(void);

#endif
