/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ref.h — image references: parse and normalise what a user types after `aisb pull`.
 *
 * Registry references follow podman's normalisation: a first component with a '.' or ':' or
 * "localhost" names a registry, anything else is on docker.io, and a single-component docker.io
 * name lives under "library/" (`ubuntu:24.04` → docker.io/library/ubuntu:24.04). No tag and no
 * digest means ":latest". Offline sources are `oci:DIR[:TAG]`, `oci-archive:FILE` and
 * `docker-archive:FILE`; their DIR/FILE is made absolute against the current directory so the
 * canonical name is stable. The parser is pure apart from that getcwd and does not log.
 */
#ifndef AISB_ROOTFS_REF_H
#define AISB_ROOTFS_REF_H

#include <stdbool.h>

enum oci_transport {
	OCI_TRANSPORT_REGISTRY,
	OCI_TRANSPORT_OCI_DIR,
	OCI_TRANSPORT_OCI_ARCHIVE,
	OCI_TRANSPORT_DOCKER_ARCHIVE,
	OCI_TRANSPORT_MAX
};

struct oci_ref {
	enum oci_transport transport;
	char *registry;   /* "docker.io", "127.0.0.1:5000" (registry only) */
	char *repository; /* "library/ubuntu" (registry only) */
	char *tag;        /* "24.04", or NULL when only a digest was given; oci: tag or NULL */
	char *digest;     /* "sha256:<64 hex>" or NULL */
	char *path;       /* absolute DIR or FILE (offline transports) */
	char *name;       /* canonical name: "docker.io/library/ubuntu:24.04", "oci:/abs/dir:tag" */
	bool short_name;  /* registry only: no registry was typed (docker.io by default) */
};

/* Parses @s into @ref (zeroed first). Return: 0, -EINVAL for a malformed reference, -ENOMEM.
 * Does not log. */
int oci_ref_parse(const char *s, struct oci_ref *ref);

/* Frees the members of @ref (accepts a zeroed ref). */
void oci_ref_done(struct oci_ref *ref);

/* Is @d a well-formed "sha256:<64 lower-case hex>"? */
bool oci_digest_is_valid(const char *d);

/* The registry host to talk to: "registry-1.docker.io" for docker.io, else @registry. */
const char *oci_ref_api_host(const struct oci_ref *ref);

#endif
