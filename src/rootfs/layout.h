/* SPDX-License-Identifier: GPL-2.0-or-later */
/* layout.h — `aisb save`: an image of the store as an OCI archive.
 *
 * The archive is an oci-layout (image-layout spec 1.0) in a tar: "oci-layout", "index.json"
 * naming the one platform manifest, and blobs/sha256/<hex> for the manifest, config and layers,
 * copied byte for byte from the store, so a load (here, or skopeo/podman's oci-archive:) finds
 * the same digests. index.json records the pin's name as "io.containerd.image.name" (and the tag
 * as "org.opencontainers.image.ref.name", which skopeo reads as the tag); `aisb load`
 * (image_load_archive(), rootfs/image.h) pins the image under that name when it is a registry
 * reference, else as oci-archive:FILE.
 */
#ifndef AISB_ROOTFS_LAYOUT_H
#define AISB_ROOTFS_LAYOUT_H

#include "rootfs/image.h"
#include "rootfs/store.h"

/* Reads and parses the platform manifest @pin names (an index is refused). *buf holds its bytes.
 * Return: 0 or -errno. Logs on failure. */
int layout_pin_manifest(struct store *s, const struct store_ref *pin, char **buf, size_t *len,
			struct oci_manifest *m);

/* Writes the image @pin names to @file (through a temporary file in its directory, renamed
 * at the end: a failure leaves no partial archive). Return: 0 or -errno. Logs on failure. */
int layout_save(struct store *s, const struct store_ref *pin, const char *file);

#endif
