/* SPDX-License-Identifier: GPL-2.0-or-later */
/* image.h — pulling images into the store and handing a rootfs to the run path.
 *
 * Ties ref, registry, oci, store and unpack together: resolve a reference (through its pin while
 * the pin is fresh), fetch what the store lacks, unpack once, record the pin. Registry tags are
 * re-resolved every AISB_BASE_TTL_DAYS (default 7; 0 every time; -1 never) with one manifest
 * read (`aisb pull` re-resolves at once: force); a tag that moved moves its pin, said on stderr;
 * when the registry cannot be reached the pinned digest is used and said so. Offline sources
 * (oci:, oci-archive:, docker-archive:) are local and read again on every pull; an archive's
 * image is pinned under that name and under the names the archive records.
 */
#ifndef AISB_ROOTFS_IMAGE_H
#define AISB_ROOTFS_IMAGE_H

#include <stdbool.h>

#include "rootfs/oci.h"
#include "rootfs/ref.h"
#include "rootfs/registry.h"
#include "rootfs/store.h"
#include "rootfs/unpack.h"

typedef const char *(*image_env_getter)(const char *name);

struct image_opts {
	char *store_root;        /* $XDG_CACHE_HOME/aisb */
	struct registry_opts reg;
	long ttl_days;
	struct unpack_limits lim;
	bool quiet;              /* no progress, no info lines */
};

/* Fills @o from the environment (AISB_STORE: the store's directory, absolute; else
 * XDG_CACHE_HOME, HOME, AISB_BASE_TTL_DAYS, REGISTRY_AUTH_FILE,
 * XDG_RUNTIME_DIR, HTTPS_PROXY) with TLS verification on. A malformed AISB_BASE_TTL_DAYS is
 * -EINVAL (exit 78). Logs on failure. */
int image_opts_init(struct image_opts *o, image_env_getter get);
void image_opts_done(struct image_opts *o);

/* Makes @ref's image present and unpacked; fills @pin (the recorded pin). @force re-resolves a
 * tag even when its pin is fresh. Return: 0 or -errno. Logs on failure. */
int image_pull(struct store *s, const struct oci_ref *ref, const struct image_opts *o, bool force,
	       struct store_ref *pin);

/* `aisb load`: scans the OCI or docker archive @file into the store (every member hashed as it
 * streams in) and pins each of its images under every name the archive records for it: an OCI
 * archive's index.json names (oci_descriptor_image_name(): podman save --format oci-archive,
 * aisb save, docker save), a docker archive's every RepoTags entry (podman save -m: several
 * images, several tags). A name that is not a registry reference of the image is skipped, said;
 * an image with no usable name is pinned as oci-archive:FILE (docker-archive:FILE), said unless
 * @o->quiet. Fills *@pins (*@n_pins, one per name; free each with store_ref_done(), then the
 * array). Return: 0; -EINVAL (not an archive, malformed: exit 78); other -errno. Logs on
 * failure. */
int image_load_archive(struct store *s, const char *file, const struct image_opts *o, struct store_ref **pins,
		       size_t *n_pins);

/* One manifest read: the digest @ref's tag resolves to upstream now (platform manifest).
 * Changes nothing. Logs on failure. */
int image_resolve_upstream(const struct oci_ref *ref, const struct image_opts *o, char **digest);

/* Reads and parses the config of pinned image @pin. Logs on failure. */
int image_load_config(struct store *s, const struct store_ref *pin, struct oci_image_config *cfg);

/* The registry name of local builds (`aisb build -t NAME` pins localhost/NAME:TAG). Its pins
 * are never resolved against a registry; a short name NAME finds localhost/NAME first. */
#define IMAGE_LOCAL_REGISTRY "localhost"

/* Finds the pin for a user-typed reference (parsed and normalised; a short name that a local
 * build answers to finds that build). -ENOENT when not pulled,
 * -EINVAL when not a reference. Does not log. */
int image_find_pin(struct store *s, const char *refstr, struct store_ref *pin);

/* The run path: resolves @refstr through its pin (pulling when absent or stale), returns the
 * unpacked rootfs directory (to be used read-only, e.g. as an overlay lowerdir), the image config,
 * and *lock_fd: a shared lock on that rootfs that keeps `aisb rmi`/gc away while the caller holds
 * it open (keep it for the session's lifetime). Return: 0; -EINVAL for a bad reference (exit 78);
 * other -errno (exit 125). Logs on failure. */
int image_prepare_rootfs(const char *refstr, const struct image_opts *o, char **rootfs_dir,
			 struct oci_image_config *cfg, int *lock_fd);

#endif
