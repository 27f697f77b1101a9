// SPDX-License-Identifier: GPL-2.0-or-later
/* layout.c — OCI archives (oci-layout tars) out of and into the store */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <json-c/json.h>

#include "rootfs/layout.h"
#include "util/dl.h"
#include "util/log.h"
#include "util/util.h"

#define ANNOT_NAME "io.containerd.image.name"
#define ANNOT_REF "org.opencontainers.image.ref.name"

static int add_entry(struct archive *a, const char *path, unsigned type, int64_t size)
{
	struct archive_entry *e = archive_entry_new();
	int k;

	if (!e)
		return -ENOMEM;
	archive_entry_set_pathname(e, path);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, type == AE_IFDIR ? 0755 : 0644);
	archive_entry_set_uid(e, 0);
	archive_entry_set_gid(e, 0);
	archive_entry_set_mtime(e, 0, 0); /* content-addressed: the same image makes the same tar */
	archive_entry_set_size(e, type == AE_IFDIR ? 0 : size);
	k = archive_write_header(a, e);
	archive_entry_free(e);
	return k == ARCHIVE_OK ? 0 : -EIO;
}

static int add_mem(struct archive *a, const char *path, const char *buf, size_t len)
{
	int k = add_entry(a, path, AE_IFREG, (int64_t)len);
	if (k < 0)
		return k;
	return archive_write_data(a, buf, len) == (la_ssize_t)len ? 0 : -EIO;
}

static int add_blob(struct archive *a, struct store *s, const struct oci_descriptor *d)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_close_ int fd = -1;
	char buf[1 << 16];
	uint64_t total = 0;
	int k;

	fd = store_blob_open_desc(s, d);
	if (fd < 0)
		return fd;
	if (asprintf(&path, "blobs/sha256/%s", d->digest + 7) < 0)
		return log_error_errno(-ENOMEM, "%m");
	if ((k = add_entry(a, path, AE_IFREG, d->size)) < 0)
		return log_error("cannot write %s: %s", path, archive_error_string(a)), k;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return log_error_errno(-errno, "reading blob %s: %m", d->digest);
		if (n == 0)
			break;
		total += (uint64_t)n;
		if (total > (uint64_t)d->size)
			break;
		if (archive_write_data(a, buf, (size_t)n) != n)
			return log_error("cannot write %s: %s", path, archive_error_string(a)), -EIO;
	}
	if (total != (uint64_t)d->size)
		return log_error("blob %s changed size while it was read", d->digest), -EBADMSG;
	return 0;
}

/* index.json for one manifest, with the pin's name when it is a registry reference. */
static char *index_json(const struct store_ref *pin, const char *media_type, size_t manifest_len)
{
	json_object *o = json_object_new_object(), *ms = json_object_new_array(), *d = json_object_new_object(),
		    *an = json_object_new_object();
	struct oci_ref ref;
	char *out = NULL;

	if (!o || !ms || !d || !an) {
		json_object_put(o);
		json_object_put(ms);
		json_object_put(d);
		json_object_put(an);
		return NULL;
	}
	json_object_object_add(o, "schemaVersion", json_object_new_int(2));
	json_object_object_add(o, "mediaType", json_object_new_string(OCI_MT_INDEX));
	json_object_object_add(d, "mediaType", json_object_new_string(media_type));
	json_object_object_add(d, "digest", json_object_new_string(pin->digest));
	json_object_object_add(d, "size", json_object_new_int64((int64_t)manifest_len));
	if (oci_ref_parse(pin->name, &ref) == 0) {
		if (ref.transport == OCI_TRANSPORT_REGISTRY) {
			json_object_object_add(an, ANNOT_NAME, json_object_new_string(ref.name));
			if (ref.tag)
				json_object_object_add(an, ANNOT_REF, json_object_new_string(ref.tag));
		}
		oci_ref_done(&ref);
	}
	json_object_object_add(d, "annotations", an);
	json_object_array_add(ms, d);
	json_object_object_add(o, "manifests", ms);
	out = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return out;
}

int layout_pin_manifest(struct store *s, const struct store_ref *pin, char **buf, size_t *len,
			struct oci_manifest *m)
{
	const char *why;
	int k;

	if ((k = store_blob_read(s, pin->digest, OCI_JSON_MAX, buf, len)) < 0)
		return log_error_errno(k, "%s: manifest %s is not in the store: %m", pin->name, pin->digest);
	if ((k = oci_manifest_parse(*buf, *len, NULL, m, &why)) < 0)
		return log_error("%s: manifest %s: %s", pin->name, pin->digest, why), k;
	if (m->is_index) {
		oci_manifest_done(m);
		return log_error("%s: %s is an index: refused", pin->name, pin->digest), -EINVAL;
	}
	return 0;
}

static void write_freep(struct archive **a)
{
	if (*a)
		archive_write_free(*a);
}

int layout_save(struct store *s, const struct store_ref *pin, const char *file)
{
	static const char oci_layout[] = "{\"imageLayoutVersion\":\"1.0.0\"}";
	_cleanup_(write_freep) struct archive *a = NULL;
	_cleanup_free_ char *buf = NULL, *idx = NULL, *tmp = NULL;
	struct oci_manifest m = { 0 };
	size_t len;
	int k;

	if ((k = layout_pin_manifest(s, pin, &buf, &len, &m)) < 0)
		return k;
	idx = index_json(pin, m.media_type ? m.media_type : OCI_MT_MANIFEST, len);
	if (!idx || asprintf(&tmp, "%s.aisb-tmp-%d", file, (int)getpid()) < 0) {
		tmp = NULL;
		oci_manifest_done(&m);
		return log_error_errno(-ENOMEM, "%m");
	}
	a = archive_write_new();
	if (!a) {
		oci_manifest_done(&m);
		return dl_load(&dl_libarchive) < 0 ? -ELIBACC : log_error_errno(-ENOMEM, "%m");
	}
	if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK || archive_write_open_filename(a, tmp) != ARCHIVE_OK) {
		k = (log_error("cannot write '%s': %s", tmp, archive_error_string(a)), -EIO);
		goto fail;
	}
	if ((k = add_mem(a, "oci-layout", oci_layout, sizeof(oci_layout) - 1)) < 0 ||
	    (k = add_mem(a, "index.json", idx, strlen(idx))) < 0 || (k = add_entry(a, "blobs/", AE_IFDIR, 0)) < 0 ||
	    (k = add_entry(a, "blobs/sha256/", AE_IFDIR, 0)) < 0) {
		log_error("cannot write '%s': %s", tmp, archive_error_string(a));
		goto fail;
	}
	{
		_cleanup_free_ char *mpath = NULL;
		if (asprintf(&mpath, "blobs/sha256/%s", pin->digest + 7) < 0 || add_mem(a, mpath, buf, len) < 0) {
			k = (log_error("cannot write '%s': %s", tmp, archive_error_string(a)), -EIO);
			goto fail;
		}
	}
	if ((k = add_blob(a, s, &m.config)) < 0)
		goto fail;
	for (size_t i = 0; i < m.n_layers; i++)
		if ((k = add_blob(a, s, &m.layers[i])) < 0)
			goto fail;
	if (archive_write_close(a) != ARCHIVE_OK) {
		k = (log_error("cannot write '%s': %s", tmp, archive_error_string(a)), -EIO);
		goto fail;
	}
	if (rename(tmp, file) < 0) {
		k = log_error_errno(-errno, "cannot rename '%s' to '%s': %m", tmp, file);
		goto fail;
	}
	oci_manifest_done(&m);
	return 0;
fail:
	(void)unlink(tmp);
	oci_manifest_done(&m);
	return k;
}
