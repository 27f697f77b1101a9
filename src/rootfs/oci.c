// SPDX-License-Identifier: GPL-2.0-or-later
/* oci.c — OCI/Docker manifest, index and config parsing, platform choice */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include <json-c/json.h>

#include "rootfs/oci.h"
#include "rootfs/ref.h"
#include "util/util.h"

static void json_putp(json_object **o)
{
	if (*o)
		json_object_put(*o);
}
#define _cleanup_json_ _cleanup_(json_putp)

/* Parses @buf with a depth bound; NULL on malformed input or trailing garbage. */
static json_object *json_parse_bounded(const char *buf, size_t len)
{
	struct json_tokener *tok;
	json_object *o;

	if (len > OCI_JSON_MAX || len > INT32_MAX)
		return NULL;
	tok = json_tokener_new_ex(32);
	if (!tok)
		return NULL;
	o = json_tokener_parse_ex(tok, buf, (int)len);
	if (o && json_tokener_get_error(tok) != json_tokener_success) {
		json_object_put(o);
		o = NULL;
	}
	/* Anything but whitespace after the value is garbage. */
	if (o) {
		for (size_t i = json_tokener_get_parse_end(tok); i < len; i++)
			if (buf[i] != ' ' && buf[i] != '\n' && buf[i] != '\r' && buf[i] != '\t') {
				json_object_put(o);
				o = NULL;
				break;
			}
	}
	json_tokener_free(tok);
	return o;
}

static const char *get_str(json_object *o, const char *key)
{
	json_object *v;
	if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static int dup_opt(char **dst, const char *s)
{
	if (!s)
		return 0;
	*dst = strdup(s);
	return *dst ? 0 : -ENOMEM;
}

static void descriptor_done(struct oci_descriptor *d)
{
	free(d->media_type);
	free(d->digest);
	free(d->os);
	free(d->arch);
	free(d->variant);
	free(d->ref_name);
	free(d->image_name);
	free(d->diff_id);
	memset(d, 0, sizeof(*d));
}

static int descriptor_parse(json_object *o, struct oci_descriptor *d, bool platform)
{
	json_object *v;
	const char *digest = get_str(o, "digest");
	int r;

	if (!digest || !oci_digest_is_valid(digest))
		return -EINVAL;
	if (!json_object_object_get_ex(o, "size", &v) || !json_object_is_type(v, json_type_int))
		return -EINVAL;
	d->size = json_object_get_int64(v);
	if (d->size < 0)
		return -EINVAL;
	if ((r = dup_opt(&d->digest, digest)) < 0 || (r = dup_opt(&d->media_type, get_str(o, "mediaType"))) < 0)
		return r;
	if (platform && json_object_object_get_ex(o, "platform", &v)) {
		if ((r = dup_opt(&d->os, get_str(v, "os"))) < 0 ||
		    (r = dup_opt(&d->arch, get_str(v, "architecture"))) < 0 ||
		    (r = dup_opt(&d->variant, get_str(v, "variant"))) < 0)
			return r;
	}
	d->has_urls = json_object_object_get_ex(o, "urls", &v) && json_object_is_type(v, json_type_array) &&
		      json_object_array_length(v) > 0;
	if (json_object_object_get_ex(o, "annotations", &v))
		if ((r = dup_opt(&d->ref_name, get_str(v, "org.opencontainers.image.ref.name"))) < 0 ||
		    (r = dup_opt(&d->image_name, get_str(v, "io.containerd.image.name"))) < 0)
			return r;
	return 0;
}

static int descriptor_array_parse(json_object *arr, size_t max, bool platform, struct oci_descriptor **out,
				  size_t *n_out)
{
	size_t n;
	struct oci_descriptor *d;

	if (!arr || !json_object_is_type(arr, json_type_array))
		return -EINVAL;
	n = json_object_array_length(arr);
	if (n > max)
		return -E2BIG;
	d = calloc(n ? n : 1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int r = descriptor_parse(json_object_array_get_idx(arr, i), &d[i], platform);
		if (r < 0) {
			for (size_t j = 0; j <= i; j++)
				descriptor_done(&d[j]);
			free(d);
			return r;
		}
	}
	*out = d;
	*n_out = n;
	return 0;
}

void oci_manifest_done(struct oci_manifest *m)
{
	if (!m)
		return;
	free(m->media_type);
	descriptor_done(&m->config);
	for (size_t i = 0; i < m->n_layers; i++)
		descriptor_done(&m->layers[i]);
	free(m->layers);
	for (size_t i = 0; i < m->n_manifests; i++)
		descriptor_done(&m->manifests[i]);
	free(m->manifests);
	memset(m, 0, sizeof(*m));
}

int oci_manifest_set_diff_ids(struct oci_manifest *m, const struct oci_image_config *c)
{
	size_t n = strv_length(c->diff_ids);

	if (n != m->n_layers)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!oci_digest_is_valid(c->diff_ids[i]))
			return -EINVAL;
		free(m->layers[i].diff_id);
		if (!(m->layers[i].diff_id = strdup(c->diff_ids[i])))
			return -ENOMEM;
	}
	return 0;
}

bool oci_layer_media_type_is_supported(const char *mt)
{
	static const char *const ok[] = {
		"application/vnd.oci.image.layer.v1.tar",
		"application/vnd.oci.image.layer.v1.tar+gzip",
		"application/vnd.oci.image.layer.v1.tar+zstd",
		"application/vnd.oci.image.layer.nondistributable.v1.tar",
		"application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
		"application/vnd.oci.image.layer.nondistributable.v1.tar+zstd",
		"application/vnd.docker.image.rootfs.diff.tar", /* podman push --format v2s2 of an uncompressed layer */
		"application/vnd.docker.image.rootfs.diff.tar.gzip",
		"application/vnd.docker.image.rootfs.diff.tar.zstd",
		"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
		"application/x-tar", /* synthesized for docker-archive layers */
	};
	/* The compression is read from the bytes (unpack.c: libarchive's gzip, zstd and none
	 * filters), so a type only has to say "a tar, maybe compressed"; the diff_id check
	 * (oci_manifest_set_diff_ids()) covers a type that lies about it. */
	if (!mt)
		return false;
	for (size_t i = 0; i < ELEMENTSOF(ok); i++)
		if (streq(mt, ok[i]))
			return true;
	return false;
}

int oci_manifest_parse(const char *buf, size_t len, const char *media_type, struct oci_manifest *m,
		       const char **why)
{
	_cleanup_json_ json_object *o = NULL;
	json_object *v;
	const char *mt, *dummy;
	int r;

	memset(m, 0, sizeof(*m));
	if (!why)
		why = &dummy;
	*why = "malformed JSON";
	if (len > OCI_JSON_MAX) {
		*why = "manifest larger than 4 MiB";
		return -E2BIG;
	}
	o = json_parse_bounded(buf, len);
	if (!o || !json_object_is_type(o, json_type_object))
		return -EINVAL;
	if (json_object_object_get_ex(o, "schemaVersion", &v) && json_object_get_int(v) == 1) {
		*why = "Docker schema 1 manifests are not supported";
		return -EINVAL;
	}
	mt = get_str(o, "mediaType");
	if (!mt && media_type)
		mt = media_type;
	if (!mt) /* OCI allows omitting mediaType: decide by shape */
		mt = json_object_object_get_ex(o, "manifests", &v) ? OCI_MT_INDEX : OCI_MT_MANIFEST;

	if (streq(mt, OCI_MT_INDEX) || streq(mt, DOCKER_MT_LIST)) {
		m->is_index = true;
		json_object_object_get_ex(o, "manifests", &v);
		r = descriptor_array_parse(v, OCI_INDEX_MAX, true, &m->manifests, &m->n_manifests);
		if (r < 0) {
			*why = r == -E2BIG ? "index has too many members" : "index 'manifests' malformed";
			goto fail;
		}
	} else if (streq(mt, OCI_MT_MANIFEST) || streq(mt, DOCKER_MT_MANIFEST)) {
		const char *cmt;
		if (!json_object_object_get_ex(o, "config", &v) || descriptor_parse(v, &m->config, false) < 0) {
			*why = "manifest 'config' malformed";
			r = -EINVAL;
			goto fail;
		}
		cmt = m->config.media_type;
		if (cmt && !streq(cmt, OCI_MT_CONFIG) && !streq(cmt, DOCKER_MT_CONFIG)) {
			*why = "not a container image (config media type is an artifact's)";
			r = -EINVAL;
			goto fail;
		}
		json_object_object_get_ex(o, "layers", &v);
		r = descriptor_array_parse(v, OCI_LAYERS_MAX, false, &m->layers, &m->n_layers);
		if (r < 0) {
			*why = r == -E2BIG ? "manifest has more than 256 layers" : "manifest 'layers' malformed";
			goto fail;
		}
		for (size_t i = 0; i < m->n_layers; i++)
			if (!oci_layer_media_type_is_supported(m->layers[i].media_type)) {
				*why = "a layer has an unsupported media type";
				r = -EINVAL;
				goto fail;
			}
	} else {
		*why = "unsupported manifest media type";
		return -EINVAL;
	}
	if ((r = dup_opt(&m->media_type, mt)) < 0)
		goto fail;
	*why = NULL;
	return 0;
fail:
	oci_manifest_done(m);
	return r;
}

void oci_host_platform(const char **os, const char **arch, const char **variant)
{
	static const struct {
		const char *machine, *arch, *variant;
	} map[] = {
		{ "x86_64", "amd64", NULL },   { "aarch64", "arm64", "v8" }, { "armv7l", "arm", "v7" },
		{ "armv6l", "arm", "v6" },     { "i686", "386", NULL },      { "i386", "386", NULL },
		{ "ppc64le", "ppc64le", NULL }, { "s390x", "s390x", NULL },  { "riscv64", "riscv64", NULL },
	};
	static struct utsname u;
	*os = "linux";
	*arch = "amd64";
	*variant = NULL;
	if (uname(&u) < 0)
		return;
	for (size_t i = 0; i < ELEMENTSOF(map); i++)
		if (streq(u.machine, map[i].machine)) {
			*arch = map[i].arch;
			*variant = map[i].variant;
			return;
		}
	*arch = u.machine;
}

static bool variant_matches(const char *arch, const char *want, const char *have)
{
	if (!want || !have)
		return true;
	/* a missing variant on either side matches (arm64 images often carry none for v8) */
	return streq(want, have);
}

int oci_index_choose(const struct oci_manifest *m, const char *os, const char *arch, const char *variant,
		     const char *ref_name)
{
	int fallback = -ENOENT;

	for (size_t i = 0; i < m->n_manifests; i++) {
		const struct oci_descriptor *d = &m->manifests[i];
		if (ref_name && (!d->ref_name || !streq(d->ref_name, ref_name)))
			continue;
		if (!d->os && !d->arch) {
			/* oci-layout index.json members usually have no platform: one such is the image */
			if (fallback == -ENOENT)
				fallback = (int)i;
			continue;
		}
		if (!d->os || !d->arch || !streq(d->os, os) || !streq(d->arch, arch))
			continue;
		if (!variant_matches(arch, variant, d->variant))
			continue;
		return (int)i;
	}
	return fallback;
}

static int strv_from_json(json_object *arr, size_t max, char ***out)
{
	_cleanup_strv_free_ char **v = NULL;
	size_t n;

	if (!arr || json_object_is_type(arr, json_type_null))
		return 0;
	if (!json_object_is_type(arr, json_type_array))
		return -EINVAL;
	n = json_object_array_length(arr);
	if (n > max)
		return -E2BIG;
	v = calloc(1, sizeof(char *));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(arr, i);
		int r;
		if (!json_object_is_type(e, json_type_string))
			return -EINVAL;
		if ((r = strv_push(&v, json_object_get_string(e))) < 0)
			return r;
	}
	*out = TAKE_PTR(v);
	return 0;
}

void oci_config_done(struct oci_image_config *c)
{
	if (!c)
		return;
	free(c->os);
	free(c->arch);
	free(c->variant);
	strv_free(c->env);
	free(c->working_dir);
	free(c->user);
	strv_free(c->entrypoint);
	strv_free(c->cmd);
	strv_free(c->labels);
	strv_free(c->diff_ids);
	memset(c, 0, sizeof(*c));
}

int oci_config_parse(const char *buf, size_t len, struct oci_image_config *c)
{
	_cleanup_json_ json_object *o = NULL;
	json_object *cfg = NULL, *v;
	int r;

	memset(c, 0, sizeof(*c));
	if (len > OCI_JSON_MAX)
		return -E2BIG;
	o = json_parse_bounded(buf, len);
	if (!o || !json_object_is_type(o, json_type_object))
		return -EINVAL;
	if ((r = dup_opt(&c->os, get_str(o, "os"))) < 0 || (r = dup_opt(&c->arch, get_str(o, "architecture"))) < 0 ||
	    (r = dup_opt(&c->variant, get_str(o, "variant"))) < 0)
		goto fail;
	if (json_object_object_get_ex(o, "config", &cfg) && json_object_is_type(cfg, json_type_object)) {
		if (json_object_object_get_ex(cfg, "Env", &v) && (r = strv_from_json(v, 4096, &c->env)) < 0)
			goto fail;
		if (json_object_object_get_ex(cfg, "Entrypoint", &v) &&
		    (r = strv_from_json(v, 4096, &c->entrypoint)) < 0)
			goto fail;
		if (json_object_object_get_ex(cfg, "Cmd", &v) && (r = strv_from_json(v, 4096, &c->cmd)) < 0)
			goto fail;
		if ((r = dup_opt(&c->working_dir, get_str(cfg, "WorkingDir"))) < 0 ||
		    (r = dup_opt(&c->user, get_str(cfg, "User"))) < 0)
			goto fail;
		if (json_object_object_get_ex(cfg, "Labels", &v) && json_object_is_type(v, json_type_object)) {
			c->labels = calloc(1, sizeof(char *));
			if (!c->labels) {
				r = -ENOMEM;
				goto fail;
			}
			json_object_object_foreach(v, key, val) {
				char *kv;
				if (!json_object_is_type(val, json_type_string))
					continue;
				if (strv_length(c->labels) >= 4096) {
					r = -E2BIG;
					goto fail;
				}
				if (asprintf(&kv, "%s=%s", key, json_object_get_string(val)) < 0) {
					r = -ENOMEM;
					goto fail;
				}
				if ((r = strv_push_take(&c->labels, kv)) < 0)
					goto fail;
			}
		}
		/* Empty strings mean "unset" in Docker's configs. */
		if (c->working_dir && !*c->working_dir) {
			free(c->working_dir);
			c->working_dir = NULL;
		}
		if (c->user && !*c->user) {
			free(c->user);
			c->user = NULL;
		}
	}
	if (json_object_object_get_ex(o, "rootfs", &v) && json_object_object_get_ex(v, "diff_ids", &v) &&
	    (r = strv_from_json(v, OCI_LAYERS_MAX, &c->diff_ids)) < 0)
		goto fail;
	return 0;
fail:
	oci_config_done(c);
	return r;
}

const char *oci_descriptor_image_name(const struct oci_descriptor *d)
{
	if (d->image_name && *d->image_name)
		return d->image_name;
	/* a tag has neither '/' nor ':' (distribution spec: [A-Za-z0-9_][A-Za-z0-9._-]*) */
	if (d->ref_name && strpbrk(d->ref_name, "/:@"))
		return d->ref_name;
	return NULL;
}

void oci_docker_archive_done(struct oci_docker_image *imgs, size_t n)
{
	if (!imgs)
		return;
	for (size_t i = 0; i < n; i++) {
		free(imgs[i].config_path);
		strv_free(imgs[i].layer_paths);
		strv_free(imgs[i].repo_tags);
	}
	free(imgs);
}

static int docker_entry_parse(json_object *e, struct oci_docker_image *img)
{
	json_object *v;
	int r;

	if (!json_object_is_type(e, json_type_object) || !get_str(e, "Config"))
		return -EINVAL;
	if (!(img->config_path = strdup(get_str(e, "Config"))))
		return -ENOMEM;
	if (!json_object_object_get_ex(e, "Layers", &v))
		return -EINVAL;
	if ((r = strv_from_json(v, OCI_LAYERS_MAX, &img->layer_paths)) < 0)
		return r;
	if (!img->layer_paths)
		return -EINVAL;
	/* RepoTags is null or absent for an image saved by its id */
	if (json_object_object_get_ex(e, "RepoTags", &v) &&
	    (r = strv_from_json(v, OCI_REPO_TAGS_MAX, &img->repo_tags)) < 0)
		return r;
	if (!img->repo_tags && !(img->repo_tags = calloc(1, sizeof(char *))))
		return -ENOMEM;
	return 0;
}

int oci_docker_archive_parse(const char *buf, size_t len, struct oci_docker_image **imgs, size_t *n)
{
	_cleanup_json_ json_object *o = NULL;
	struct oci_docker_image *v;
	size_t k;

	*imgs = NULL;
	*n = 0;
	o = json_parse_bounded(buf, len);
	if (!o || !json_object_is_type(o, json_type_array))
		return -EINVAL;
	k = json_object_array_length(o);
	if (k == 0)
		return -EINVAL;
	if (k > OCI_INDEX_MAX)
		return -E2BIG;
	v = calloc(k, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < k; i++) {
		int r = docker_entry_parse(json_object_array_get_idx(o, i), &v[i]);
		if (r < 0) {
			oci_docker_archive_done(v, k);
			return r;
		}
	}
	*imgs = v;
	*n = k;
	return 0;
}
