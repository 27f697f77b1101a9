/* SPDX-License-Identifier: GPL-2.0-or-later */
/* recipe.h — the built-in default recipe of `aisb build` with no -f (docs/design.md §9).
 *
 * ubuntu:24.04 with git, curl, jq, build-essential and python3; Node.js at a pinned version from
 * the official tarball, checked in the same RUN line against the release's SHASUMS256.txt (and,
 * when --build-arg NODE_SHA256=... is given, against that hash too); the pi CLI at a pinned
 * version through npm. `--install PKG` adds Ubuntu packages to the apt-get line; a package name
 * that is not a plain Debian package name (with an optional =version) is refused, because it is
 * pasted into a shell command.
 */
#ifndef AISB_BUILD_RECIPE_H
#define AISB_BUILD_RECIPE_H

#include <stdbool.h>

#define RECIPE_BASE "docker.io/library/ubuntu:24.04"
#define RECIPE_NODE_VERSION "22.12.0"
#define RECIPE_PI_PACKAGE "@mariozechner/pi-coding-agent"
#define RECIPE_PI_VERSION "0.73.1"
#define RECIPE_MAX_INSTALL 64u
/* What the recipe's RUN steps reach: Ubuntu's archive and security mirrors (apt, http), the
 * Node.js download server and the npm registry (https). aisb build allows nothing by default;
 * this is the hint it prints for the built-in recipe. */
#define RECIPE_ALLOW_HINT \
	"--allow archive.ubuntu.com --allow security.ubuntu.com --allow nodejs.org --allow registry.npmjs.org"

/* Is @s a Debian package name ("[a-z0-9][a-z0-9+.-]+"), optionally "=VERSION" with a Debian
 * version's characters? Pure. */
bool recipe_package_is_valid(const char *s);

/* The default recipe with the packages @install (may be NULL) added. Return: 0, -EINVAL for an
 * invalid package name (*bad points to it) or more than RECIPE_MAX_INSTALL, -ENOMEM. Caller
 * frees *text. Does not log. */
int recipe_default(char *const *install, char **text, const char **bad);

#endif
