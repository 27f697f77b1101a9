/* SPDX-License-Identifier: GPL-2.0-or-later */
/* oci.h — OCI and Docker schema-2 JSON: manifests, indexes, image configs, platform choice.
 *
 * Pure parsers over bounded buffers (json-c). A manifest and an index share one struct so the
 * caller can parse whatever a registry or an oci-layout hands back and then look at ->is_index.
 * Docker schema 1 and non-image artifacts are refused. Nothing here logs; errors are -EINVAL
 * (malformed or unsupported), -E2BIG (over a bound) or -ENOMEM, and *why is set to a static
 * reason string where that helps a message.
 */
#ifndef AISB_ROOTFS_OCI_H
#define AISB_ROOTFS_OCI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OCI_MT_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define OCI_MT_INDEX "application/vnd.oci.image.index.v1+json"
#define DOCKER_MT_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define DOCKER_MT_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define OCI_MT_CONFIG "application/vnd.oci.image.config.v1+json"
#define DOCKER_MT_CONFIG "application/vnd.docker.container.image.v1+json"

#define OCI_JSON_MAX (4u << 20)  /* manifests, indexes and configs are read whole: 4 MiB cap */
#define OCI_LAYERS_MAX 256
#define OCI_INDEX_MAX 1024

struct oci_descriptor {
	char *media_type;
	char *digest;
	int64_t size;
	/* index members only */
	char *os, *arch, *variant;
	char *ref_name;  /* annotation org.opencontainers.image.ref.name (oci-layout index.json) */
	char *image_name; /* annotation io.containerd.image.name (aisb save, docker save) */
	/* manifest layers only: the config's rootfs.diff_ids entry (the sha256 of the uncompressed
	 * tar) once oci_manifest_set_diff_ids() ran; NULL: not checked */
	char *diff_id;
	/* "urls" (a foreign or non-distributable layer's other sources): never fetched from, only
	 * named when the registry lacks the blob */
	bool has_urls;
};

struct oci_manifest {
	bool is_index;
	char *media_type;
	struct oci_descriptor config;     /* manifests */
	struct oci_descriptor *layers;    /* manifests */
	size_t n_layers;
	struct oci_descriptor *manifests; /* indexes */
	size_t n_manifests;
};

struct oci_image_config {
	char *os, *arch, *variant;
	char **env;         /* NAME=VALUE, strv */
	char *working_dir;
	char *user;
	char **entrypoint;  /* strv or NULL */
	char **cmd;         /* strv or NULL */
	char **labels;      /* KEY=VALUE, strv */
	char **diff_ids;
};

/* Parses a manifest or index; @media_type (Content-Type, may be NULL) is used when the document
 * has no mediaType field. Return: 0 or -errno. Does not log. */
int oci_manifest_parse(const char *buf, size_t len, const char *media_type, struct oci_manifest *m,
		       const char **why);
void oci_manifest_done(struct oci_manifest *m);

/* Is @mt a layer type aisb can unpack (tar, tar+gzip, tar+zstd; OCI or Docker)? */
bool oci_layer_media_type_is_supported(const char *mt);

/* Copies @c's rootfs.diff_ids onto @m's layers (their diff_id). Return: 0; -EINVAL when the
 * counts differ or one is not "sha256:<64 hex>"; -ENOMEM. Does not log. */
int oci_manifest_set_diff_ids(struct oci_manifest *m, const struct oci_image_config *c);

/* The host platform in OCI terms (linux, amd64/arm64/..., variant or NULL). Does not log. */
void oci_host_platform(const char **os, const char **arch, const char **variant);

/* Picks the member of index @m for @os/@arch/@variant (variant ignored when either side has
 * none; "arm64" without variant matches v8). When @ref_name is non-NULL only members with that
 * ref.name annotation count. Return: index >= 0, or -ENOENT when none matches. Does not log. */
int oci_index_choose(const struct oci_manifest *m, const char *os, const char *arch, const char *variant,
		     const char *ref_name);

/* Parses an image config. Return: 0 or -errno. Does not log. */
int oci_config_parse(const char *buf, size_t len, struct oci_image_config *c);
void oci_config_done(struct oci_image_config *c);

/* The image name index.json member @d records, or NULL: io.containerd.image.name (aisb save and
 * docker save write the whole name there, the tag in ref.name), else ref.name when it is a whole
 * reference — podman save --format oci-archive writes "example.com/team/bb:v1" there — and not
 * a bare tag ("v1", as skopeo and the image-layout spec's examples write it), which names no image.
 * Does not log. */
const char *oci_descriptor_image_name(const struct oci_descriptor *d);

#define OCI_REPO_TAGS_MAX 256 /* names one docker-archive entry may record */

/* One image of a `docker save` archive (manifest.json entry); paths are archive-relative. */
struct oci_docker_image {
	char *config_path;
	char **layer_paths; /* strv */
	char **repo_tags;   /* strv (empty: none recorded) */
};

/* Parses `docker save`'s manifest.json (also podman save's docker-archive, several images with
 * -m): every entry, at most OCI_INDEX_MAX. Return: 0 with *imgs and *n set, -EINVAL (malformed or
 * empty), -E2BIG, -ENOMEM. Does not log. */
int oci_docker_archive_parse(const char *buf, size_t len, struct oci_docker_image **imgs, size_t *n);
void oci_docker_archive_done(struct oci_docker_image *imgs, size_t n);

#endif
