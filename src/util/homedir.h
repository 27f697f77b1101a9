/* SPDX-License-Identifier: GPL-2.0-or-later */
/* homedir.h — the one rule for where aisb keeps its files (state, cache, config).
 *
 * Every command (run, doctor, images, pull, build, ps, logs, clean) asks here, so they all use
 * the same directories: $XDG_{STATE,CACHE,CONFIG}_HOME/aisb when that variable is an absolute
 * path; otherwise below the home directory, which is $HOME when it names a directory the caller
 * can write, else the passwd entry's home when that one is (CI containers often run a user with
 * HOME unset, HOME=/ or HOME=/nonexistent), else $HOME or the passwd home as given, so that the
 * error a command prints names the directory it could not use. Paths come out without "//".
 */
#ifndef AISB_UTIL_HOMEDIR_H
#define AISB_UTIL_HOMEDIR_H

#include <stdbool.h>

typedef const char *(*homedir_getter)(const char *name);

enum homedir_kind { HOMEDIR_STATE, HOMEDIR_CACHE, HOMEDIR_CONFIG, HOMEDIR_KIND_MAX };

/* The caller's home directory by the rule above; *@fell_back (may be NULL) is set when $HOME was
 * set but not usable and the passwd home was taken instead. Caller frees; NULL when no home is
 * known at all. Does not log. */
char *homedir_home(homedir_getter get, bool *fell_back);

/* aisb's directory of @kind: "$XDG_STATE_HOME/aisb" or "HOME/.local/state/aisb" (cache:
 * ".cache", config: ".config"). Caller frees; NULL when neither is known. Does not log. */
char *homedir_aisb(homedir_getter get, enum homedir_kind kind);

/* Collapses repeated '/' in @path in place ("//x//y" -> "/x/y"). Does not log. */
void homedir_normalize(char *path);

#endif
