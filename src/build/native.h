/* SPDX-License-Identifier: GPL-2.0-or-later */
/* native.h — the native builder's filesystem steps (design section 9).
 *
 * native_apply_steps() mounts the build's overlay (lower: the base image's unpacked rootfs, read
 * only; upper and work: in the build dir; `userxattr`) as a detached mount in a child process
 * that has its own user namespace (inside 0 = the caller, one id) and mount namespace, and there
 * applies WORKDIR (mkdir -p) and COPY (copy_step) in recipe order, then writes
 * /etc/aisb/manifest.txt from the package database it finds. The parent never mounts anything
 * and the child touches nothing but the overlay. RUN steps need the build sandbox (the aisb
 * sandbox in build mode, with the network gate): until it exists they are refused before
 * anything is done, naming their line (see docs/build.md).
 */
#ifndef AISB_BUILD_NATIVE_H
#define AISB_BUILD_NATIVE_H

#include <stdbool.h>
#include <stddef.h>

#include "build/containerfile.h"
#include "build/context.h"

#define NATIVE_MANIFEST_PATH "/etc/aisb/manifest.txt"
#define NATIVE_DPKG_STATUS_MAX (64u << 20)

struct native_build {
	const char *base_rootfs;           /* the overlay's lower */
	const char *upper, *work;          /* in the build dir, empty, owned by the caller */
	int ctx_fd;                        /* the context directory (only with COPY steps) */
	const struct build_context *ctx;
	bool *const *copies;               /* per COPY step, from context_select() */
	const struct cf_recipe *rc;
};

/* The first RUN step of @rc, or NULL. Pure. */
const struct cf_step *native_first_run(const struct cf_recipe *rc);

/* Applies the recipe's WORKDIR and COPY steps as described above. Return: 0, -EOPNOTSUPP when
 * the recipe has a RUN step, -errno. Logs on failure. */
int native_apply_steps(const struct native_build *nb);

/* "NAME VERSION" lines of the installed packages in a dpkg status file. Pure. Return: 0, -ENOMEM.
 * Caller frees *out (an empty string when nothing is installed). */
int native_dpkg_manifest(const char *status, size_t len, char **out);

/* Makes @dir (an overlay work dir, whose work/ the kernel creates with mode 0) removable by its
 * owner. Does not log. */
void native_work_dir_release(const char *dir);

#endif
