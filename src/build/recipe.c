// SPDX-License-Identifier: GPL-2.0-or-later
/* recipe.c — the built-in default recipe */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build/recipe.h"
#include "util/util.h"

bool recipe_package_is_valid(const char *s)
{
	const char *eq = strchr(s, '=');
	size_t n = eq ? (size_t)(eq - s) : strlen(s);

	/* Debian policy 5.6.1: lower case letters, digits, + - . ; at least two; starts alnum */
	if (n < 2 || n > 128 || !(islower((unsigned char)s[0]) || isdigit((unsigned char)s[0])))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && !strchr("+-.", s[i]))
			return false;
	if (!eq)
		return true;
	/* policy 5.6.12: [epoch:]upstream[-revision] from alnum . + - ~ : */
	if (!eq[1] || strlen(eq + 1) > 128 || !isdigit((unsigned char)eq[1]))
		return false;
	for (const char *p = eq + 1; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr(".+-~:", *p))
			return false;
	return true;
}

/* The RUN lines are plain POSIX sh with `set -eu`: any failing step fails the build. ARG values
 * reach RUN as environment variables, so the versions are pinned by the ARG defaults and can be
 * overridden with --build-arg (which changes the tag). */
static const char head[] =
	"# aisb default image (aisb build --print-containerfile)\n"
	"FROM " RECIPE_BASE "\n"
	"ARG NODE_VERSION=" RECIPE_NODE_VERSION "\n"
	"ARG NODE_SHA256=\n"
	"ARG PI_VERSION=" RECIPE_PI_VERSION "\n"
	"ARG DEBIAN_FRONTEND=noninteractive\n"
	"LABEL org.opencontainers.image.title=\"aisb default\"\n"
	"RUN set -eu; \\\n"
	"    apt-get update; \\\n"
	"    apt-get install -y --no-install-recommends \\\n"
	"        ca-certificates git curl jq build-essential python3 xz-utils fd-find ripgrep";

static const char tail[] =
	"; \\\n"
	"    rm -rf /var/lib/apt/lists/*; \\\n"
	/* pi fetches fd and rg from GitHub on every start when they are missing (pi 0.73
	 * tools-manager.js); Debian/Ubuntu name fd 'fdfind', which pi also finds, 'fd' is for people */
	"    ln -sf /usr/bin/fdfind /usr/local/bin/fd\n"
	"# Node.js from the official tarball, checked against the release's SHASUMS256.txt\n"
	"RUN set -eu; \\\n"
	"    case \"$(dpkg --print-architecture)\" in \\\n"
	"        amd64) arch=x64 ;; arm64) arch=arm64 ;; \\\n"
	"        *) echo \"no Node.js build for $(dpkg --print-architecture)\" >&2; exit 1 ;; \\\n"
	"    esac; \\\n"
	"    tarball=\"node-v${NODE_VERSION}-linux-${arch}.tar.xz\"; \\\n"
	"    cd /tmp; \\\n"
	"    curl -fsSLO \"https://nodejs.org/dist/v${NODE_VERSION}/${tarball}\"; \\\n"
	"    curl -fsSLO \"https://nodejs.org/dist/v${NODE_VERSION}/SHASUMS256.txt\"; \\\n"
	"    awk -v f=\"${tarball}\" '$2 == f' SHASUMS256.txt > node.sha256; \\\n"
	"    test \"$(wc -l < node.sha256)\" -eq 1; \\\n"
	"    if [ -n \"${NODE_SHA256}\" ]; then test \"$(cut -d' ' -f1 node.sha256)\" = \"${NODE_SHA256}\"; fi; \\\n"
	"    sha256sum -c node.sha256; \\\n"
	"    mkdir -p /opt/node; \\\n"
	"    tar -xJf \"${tarball}\" -C /opt/node --strip-components=1 --no-same-owner; \\\n"
	"    rm -f \"${tarball}\" SHASUMS256.txt node.sha256; \\\n"
	"    test \"$(/opt/node/bin/node --version)\" = \"v${NODE_VERSION}\"\n"
	"ENV PATH=/opt/node/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
	"# the pi CLI, pinned\n"
	"RUN set -eu; \\\n"
	"    npm install -g \"" RECIPE_PI_PACKAGE "@${PI_VERSION}\"; \\\n"
	"    npm cache clean --force; \\\n"
	"    command -v pi\n"
	"CMD [\"pi\"]\n";

int recipe_default(char *const *install, char **text, const char **bad)
{
	size_t n = strv_length(install), len = sizeof(head) + sizeof(tail);
	char *out, *p;

	*bad = NULL;
	if (n > RECIPE_MAX_INSTALL) {
		*bad = install[RECIPE_MAX_INSTALL];
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if (!recipe_package_is_valid(install[i])) {
			*bad = install[i];
			return -EINVAL;
		}
		len += strlen(install[i]) + 1;
	}
	out = malloc(len);
	if (!out)
		return -ENOMEM;
	p = stpcpy(out, head);
	for (size_t i = 0; i < n; i++) {
		*p++ = ' ';
		p = stpcpy(p, install[i]);
	}
	stpcpy(p, tail);
	*text = out;
	return 0;
}
