/* SPDX-License-Identifier: GPL-2.0-or-later */
/* native.h — the native builder's steps (docs/design.md §9), executed by the sandbox's core.
 *
 * native_apply_steps() applies WORKDIR (mkdir -p) and COPY (copy_step) in recipe order in a
 * child with its own user namespace (ns/userns.h: inside 0 = the caller, one id) and mount
 * namespace, on the build's overlay (lower: the base image's unpacked rootfs, read-only; upper
 * and work: in the build dir; `userxattr`) as a detached mount made by the mount applier
 * (mount_overlay_detached()). Each RUN runs as PID 1 of its own user, mount, pid, net, ipc and
 * uts namespaces (a root caller's as USERNS_ROOT_RUN_ID, run_uid below), rooted by the same
 * applier as `aisb run` (mount_plan_build_step(): the overlay, the /proc and /dev of `aisb run`,
 * with the gate its resolver file; pivot_root, old
 * root detached), then the same /proc stage (procfs_stage()) and the same hardening sequence
 * (harden_before_exec(): fds, capabilities — the fakeroot set for a root step, none for a USER
 * step — no_new_privs, the one seccomp table with the fakeroot rules for a root step). Network:
 * init's network stage (netplan_netns_stage(): loopback only, or with an allowlist the verified
 * nft ruleset and the gate's listeners in the step's netns) and, with an allowlist, the gate of
 * `aisb run` (netplan_gate_new()), forked by this process at the step's first connection. At the end
 * /etc/aisb/manifest.txt is written from the package database. The parent never mounts
 * anything (see docs/build.md).
 */
#ifndef AISB_BUILD_NATIVE_H
#define AISB_BUILD_NATIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "build/containerfile.h"
#include "build/context.h"

struct net_plan;

#define NATIVE_MANIFEST_PATH "/etc/aisb/manifest.txt"

struct native_build {
	const char *base_rootfs;           /* the overlay's lower */
	const char *upper, *work;          /* in the build dir, empty, owned by the caller */
	int ctx_fd;                        /* the context directory (only with COPY steps) */
	const struct build_context *ctx;
	bool *const *copies;               /* per COPY step, from context_select() */
	const struct cf_recipe *rc;
	int log_fd;                        /* the build transcript, or -1 */
	const struct net_plan *net;        /* the build's allowlist, or NULL: no network */
	int egress_fd;                     /* the build's egress log (with @net), or -1 */
	/* the host ids RUN steps run as: the caller's, or a root caller's USERNS_ROOT_RUN_ID
	 * (ns/userns.h; issue 22), for which the step's overlay layers are idmapped clones (the
	 * lower read-only, the build dir read-write: ns/mounts.h, mount_remap_plan()), so that what
	 * a step writes is stored as root's, as at kernel uid 0, and the layer is the same */
	uid_t run_uid;
	gid_t run_gid;
};

/* Whether the native builder can run here: a child creates a user namespace (one id) and a
 * mount namespace and mounts an overlay with `userxattr` on a detached tmpfs, as a build does.
 * Return: 0, or -errno with what failed in @why. Does not log. */
int native_probe(char *why, size_t n);

/* The first RUN step of @rc, or NULL. Pure. */
const struct cf_step *native_first_run(const struct cf_recipe *rc);

/* Applies the recipe's steps as described above. Return: 0, -ECHILD when a step failed (said
 * with its line and exit code), -EPERM when a step's network policy could not be enforced
 * (exit 77), -errno. Logs on failure. */
int native_apply_steps(const struct native_build *nb);

/* The ids a RUN step runs as, from its USER (design 9; Docker's rules). */
struct native_user {
	uid_t uid;
	gid_t gid;
	char home[256]; /* the passwd entry's home, or "/" */
};

#define NATIVE_PASSWD_MAX (4u << 20)

/* Resolves USER @spec ("name", "uid", "name:group", "uid:gid", names and numbers mixed) against
 * the image's passwd and group text (either may be NULL: absent). A name must be in the file; a
 * number need not be (then gid 0 and home "/", as in Docker); no group given means the passwd
 * entry's group. Pure. Return: 0, -ENOENT (a name that is not there), -EINVAL (a malformed
 * spec or id). */
int native_user_lookup(const char *spec, const char *passwd, size_t plen, const char *group, size_t glen,
		       struct native_user *out);

/* Makes @dir (an overlay work dir, whose work/ the kernel creates with mode 0) removable by its
 * owner. Does not log. */
void native_work_dir_release(const char *dir);

#endif
