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
#include <stddef.h>

typedef const char *(*homedir_getter)(const char *name);

enum homedir_kind { HOMEDIR_STATE, HOMEDIR_CACHE, HOMEDIR_CONFIG, HOMEDIR_KIND_MAX };

/* The caller's home directory by the rule above; *@fell_back (may be NULL) is set when $HOME was
 * set but not usable and the passwd home was taken instead. Caller frees; NULL when no home is
 * known at all. Does not log. */
char *homedir_home(homedir_getter get, bool *fell_back);

/* aisb's directory of @kind: "$XDG_STATE_HOME/aisb" or "HOME/.local/state/aisb" (cache:
 * ".cache", config: ".config"). Caller frees; NULL when neither is known. Does not log. */
char *homedir_aisb(homedir_getter get, enum homedir_kind kind);

/* aisb's directory of @kind by the rule above, checked to be usable: it is a directory the
 * caller can write and enter, or does not exist yet and its nearest existing ancestor is one
 * (mkdir -p will make it). A read-only root (EROFS), HOME=/ for a uid with no passwd entry, or
 * no home at all fail here, the same way for every command, with one message that names the
 * variable to set (XDG_STATE_HOME, XDG_CACHE_HOME or XDG_CONFIG_HOME, or HOME). Stores the
 * path in *@out (caller frees). Return: 0, or -errno. Logs on failure. */
int homedir_aisb_usable(homedir_getter get, enum homedir_kind kind, char **out);

/* homedir_aisb_usable() for doctor, which reports instead of refusing: on failure @why gets the
 * cause and @fix the variable to set. Return: 0, or -errno. Does not log. */
int homedir_aisb_check(homedir_getter get, enum homedir_kind kind, char **out, char *why, size_t why_size,
		       char *fix, size_t fix_size);

/* Collapses repeated '/' in @path in place ("//x//y" -> "/x/y"). Does not log. */
void homedir_normalize(char *path);

#endif
