/* SPDX-License-Identifier: GPL-2.0-or-later */
/* push.h — `aisb push`: an image of the store to any registry (distribution API v2).
 *
 * The pinned platform manifest is sent as the bytes the store holds, so the registry names it
 * with the same digest. Each blob (layers, then config) is first asked for with HEAD and sent
 * only when the registry lacks it; when the source image came from another repository of the
 * same registry, a cross-repository mount (POST ?mount=DIGEST&from=REPO) is tried before an
 * upload. Uploads are monolithic (POST, then one PUT ?digest=) from the store's verified blob.
 * Auth is the pull client's (registry-internal.h): token scope "pull,push" on the destination
 * (and "pull" on the mount source), or basic credentials, from the same auth files; an upload
 * Location on another origin is refused, so credentials only ever go to the registry's origin.
 */
#ifndef AISB_ROOTFS_PUSH_H
#define AISB_ROOTFS_PUSH_H

#include <stdint.h>

#include "rootfs/ref.h"
#include "rootfs/registry.h"
#include "rootfs/store.h"

struct push_stats {
	unsigned sent;      /* blobs uploaded */
	unsigned present;   /* already on the registry (HEAD 200) */
	unsigned mounted;   /* mounted from another repository */
	uint64_t bytes;     /* bytes uploaded */
	unsigned requests;  /* HTTP requests made */
	char digest[72];    /* the manifest's digest as pushed ("sha256:...") */
};

/* Pushes the image @pin names to @dest (a registry reference with a tag). @mount_from is a
 * repository on @dest's registry that already has the blobs, or NULL. @manifest (@manifest_len
 * bytes) replaces the pin's manifest (its blobs in the store: build/recompress.h), or NULL.
 * Return: 0, -EACCES (auth), -ECONNREFUSED, -ENOENT (a blob missing from the store), other
 * -errno. Logs on failure. */
int push_image(struct store *s, const struct store_ref *pin, const struct oci_ref *dest, const char *mount_from,
	       const char *manifest, size_t manifest_len, const struct registry_opts *o, struct push_stats *st);

#endif
