/* SPDX-License-Identifier: GPL-2.0-or-later */
/* manifest.h — /etc/aisb/manifest.txt: the package versions a build resolved (design 9).
 *
 * After the last step, the native builder lists what the image's package managers installed:
 * dpkg (/var/lib/dpkg/status: "NAME VERSION"), apk (/lib/apk/db/installed: "NAME VERSION") and
 * npm's global packages (package.json under /usr/local/lib/node_modules and
 * /usr/lib/node_modules, scoped ones too: "npm:NAME VERSION"). dpkg and apk keep their
 * database's order (each writes it sorted), npm is sorted, so the same installation gives the
 * same bytes (the layer's digest depends on them). Everything is
 * read inside the build's root (openat2 RESOLVE_IN_ROOT); all of it is the recipe's data, so
 * sizes are bounded and names and versions with blanks or control characters are left out.
 */
#ifndef AISB_BUILD_MANIFEST_H
#define AISB_BUILD_MANIFEST_H

#include <stddef.h>

#define MANIFEST_DB_MAX (64u << 20)     /* a package database */
#define MANIFEST_PKG_JSON_MAX (1u << 20) /* one package.json */
#define MANIFEST_NPM_MAX 4096            /* global npm packages listed */

/* "NAME VERSION\n" for each installed package of a dpkg status file, in file order. Pure.
 * Return: 0, -ENOMEM. Caller frees *out (empty when nothing is installed). */
int manifest_dpkg(const char *status, size_t len, char **out);

/* The same for an apk database ("P:" and "V:" lines, blank-line separated). Pure. */
int manifest_apk(const char *db, size_t len, char **out);

/* "npm:NAME VERSION\n" from one package.json, or "" when it has no plain string name and version.
 * Pure. Return: 0, -ENOMEM. Caller frees *out. */
int manifest_npm_package(const char *json, size_t len, char **out);

/* The whole manifest of the tree at @root_fd: the sections above that exist, each sorted. Return:
 * 0 (*out is NULL when no package manager left anything), -errno. Logs on failure. */
int manifest_collect(int root_fd, char **out);

#endif
