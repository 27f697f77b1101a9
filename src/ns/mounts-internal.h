/* SPDX-License-Identifier: GPL-2.0-or-later */
/* mounts-internal.h — what the mount modules share and no one else needs.
 *
 * mounts.h is the interface; its code is split by concern: the host facts (mount-facts.c), the
 * root caller's /etc and /opt masks or idmapped trees (mount-idmap.c), the pure planner
 * (mount-plan.c) and the applier that runs inside the namespaces (mount-apply.c).
 */
#ifndef AISB_NS_MOUNTS_INTERNAL_H
#define AISB_NS_MOUNTS_INTERNAL_H

#include "ns/mounts.h"

/* The top-level directories that are symlinks on merged-/usr hosts: bin sbin lib lib32 lib64
 * libx32 (mount_host_facts.lib_link and lib_dir follow this order). */
#define MOUNT_LIB_NAMES { "bin", "sbin", "lib", "lib32", "lib64", "libx32" }

/* A root caller's /etc and /opt (mount-idmap.c): the idmapped trees when they could be made
 * (f->idmapped, etc_tree, opt_tree), else the root-only entries to mask. Return: 0, or -errno
 * after logging. */
int mount_root_masks(struct mount_host_facts *f);

#endif
