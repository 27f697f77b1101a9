// SPDX-License-Identifier: GPL-2.0-or-later
/* recompress.c — compress an image's uncompressed layers into new blobs for a push */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "build/layer.h"
#include "build/recompress.h"
#include "rootfs/oci.h"
#include "util/log.h"
#include "util/sha256.h"
#include "util/util.h"

#define DOCKER_MT_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define DOCKER_MT_LAYER "application/vnd.docker.image.rootfs.diff.tar"
#define DOCKER_MT_LAYER_GZIP "application/vnd.docker.image.rootfs.diff.tar.gzip"

#define RECOMPRESS_CHUNK (1 << 20) /* the store blob is read in 1 MiB chunks */

/* the compressed bytes into the store's blob writer, counted */
struct sink {
	struct store_blob_writer *w;
	uint64_t size;
};

static int to_blob(void *ud, const void *buf, size_t len)
{
	struct sink *k = ud;

	k->size += len;
	return store_blob_write(k->w, buf, len);
}

/* Reads @fd to its end into @h and @z. Logs on failure. */
static int pump(int fd, struct sha256 *h, struct layer_compressor *z, const char *digest, enum layer_compression comp)
{
	_cleanup_free_ char *buf = malloc(RECOMPRESS_CHUNK);
	int r;

	if (!buf)
		return log_error_errno(-ENOMEM, "Out of memory");
	for (;;) {
		ssize_t n = read(fd, buf, RECOMPRESS_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return log_error_errno(-errno, "Failed to read the layer %s: %m", digest);
		if (n == 0)
			return 0;
		if ((r = sha256_update(h, buf, (size_t)n)) < 0 || (r = layer_compressor_write(z, buf, (size_t)n)) < 0)
			return log_error_errno(r, "Failed to compress the layer %s (%s): %m", digest,
					       layer_compression_name(comp));
	}
}

/* Compresses the store blob @digest (@size bytes, a tar) into a new blob: *out_digest and
 * *out_size. The tar is hashed as it is read and must be @digest. Logs on failure. */
static int compress_blob(struct store *s, const char *digest, int64_t size, enum layer_compression comp, int level,
			 char **out_digest, uint64_t *out_size)
{
	struct oci_descriptor d = { .digest = (char *)digest, .size = size };
	struct layer_compressor *z = NULL;
	struct sink k = { 0 };
	struct sha256 h = { 0 };
	char hex[SHA256_HEX_SIZE] = "";
	_cleanup_close_ int fd = store_blob_open_desc(s, &d);
	int r;

	if (fd < 0)
		return fd;
	if ((r = sha256_init(&h)) < 0)
		return log_error_errno(r, "Failed to hash the layer %s: %m", digest);
	if ((r = store_blob_begin(s, NULL, -1, &k.w)) < 0) {
		sha256_done(&h);
		return r;
	}
	r = layer_compressor_new(comp, level, to_blob, &k, &z);
	if (r >= 0)
		r = pump(fd, &h, z, digest, comp);
	if (r >= 0) {
		r = layer_compressor_finish(z);
		z = NULL;
		if (r < 0)
			log_error_errno(r, "Failed to compress the layer %s (%s): %m", digest, layer_compression_name(comp));
	}
	if (r >= 0 && (r = sha256_final_hex(&h, hex)) < 0)
		log_error_errno(r, "Failed to hash the layer %s: %m", digest);
	if (r >= 0 && (strncmp(digest, "sha256:", 7) != 0 || !streq(digest + 7, hex)))
		r = log_error_errno(-EBADMSG, "The stored layer %s does not hash to its digest (sha256:%s): the store "
				    "is damaged; pull or build the image again", digest, hex);
	sha256_done(&h);
	if (r < 0) {
		layer_compressor_free(z);
		store_blob_abort(k.w);
		return r;
	}
	*out_size = k.size;
	return store_blob_commit(k.w, out_digest);
}

static const char *str_of(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v)
		       : NULL;
}

int layer_recompress_manifest(struct store *s, const char *man, size_t len, enum layer_compression comp, int level,
			      char **out, size_t *out_len, unsigned *n_done)
{
	struct json_tokener *tok;
	struct json_object *o = NULL, *layers;
	const char *mt, *new_mt;
	bool docker;
	int r = 0;

	*out = NULL;
	*out_len = 0;
	*n_done = 0;
	if (comp != LAYER_COMP_GZIP && comp != LAYER_COMP_ZSTD)
		return log_error("internal: push compresses with gzip or zstd"), -EINVAL;
	if (len > OCI_JSON_MAX || !(tok = json_tokener_new()))
		return log_error_errno(-ENOMEM, "Out of memory");
	o = json_tokener_parse_ex(tok, man, (int)len);
	json_tokener_free(tok);
	if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, "layers", &layers) ||
	    !json_object_is_type(layers, json_type_array)) {
		json_object_put(o);
		return log_error("the image's manifest has no layer list: it cannot be compressed"), -EINVAL;
	}
	mt = str_of(o, "mediaType");
	docker = mt && streq(mt, DOCKER_MT_MANIFEST);
	if (docker && comp == LAYER_COMP_ZSTD) {
		json_object_put(o);
		return log_error("--compression-format zstd: the image has a Docker schema 2 manifest, which has no "
				 "zstd layer type; use gzip (or build the image with aisb, whose manifests are OCI)"),
		       -EINVAL;
	}
	new_mt = docker ? DOCKER_MT_LAYER_GZIP : layer_compression_media_type(comp);
	for (size_t i = 0; i < json_object_array_length(layers) && r >= 0; i++) {
		struct json_object *l = json_object_array_get_idx(layers, i), *sz;
		const char *lmt = json_object_is_type(l, json_type_object) ? str_of(l, "mediaType") : NULL;
		const char *dg = lmt ? str_of(l, "digest") : NULL;
		_cleanup_free_ char *nd = NULL;
		uint64_t nsize = 0;

		/* the plain tar types only: compressed ones stay, and so do foreign and
		 * non-distributable ones (not the image's to hand out in another form) */
		if (!lmt || (!streq(lmt, LAYER_MEDIA_TYPE) && !streq(lmt, DOCKER_MT_LAYER)))
			continue;
		if (!dg || !json_object_object_get_ex(l, "size", &sz) || !json_object_is_type(sz, json_type_int)) {
			r = (log_error("layer %zu of the manifest has no digest or size", i), -EINVAL);
			break;
		}
		r = compress_blob(s, dg, json_object_get_int64(sz), comp, level, &nd, &nsize);
		if (r < 0)
			break;
		log_debug("layer %s (%" PRId64 " bytes) compressed with %s: %s (%" PRIu64 " bytes)", dg,
			  json_object_get_int64(sz), layer_compression_name(comp), nd, nsize);
		if (json_object_object_add(l, "mediaType", json_object_new_string(new_mt)) < 0 ||
		    json_object_object_add(l, "digest", json_object_new_string(nd)) < 0 ||
		    json_object_object_add(l, "size", json_object_new_int64((int64_t)nsize)) < 0)
			r = log_error_errno(-ENOMEM, "Out of memory");
		else
			(*n_done)++;
	}
	if (r >= 0 && *n_done) {
		const char *txt = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
		if (!txt || !(*out = strdup(txt)))
			r = log_error_errno(-ENOMEM, "Out of memory");
		else
			*out_len = strlen(*out);
	}
	json_object_put(o);
	return r < 0 ? r : 0;
}
