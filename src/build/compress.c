// SPDX-License-Identifier: GPL-2.0-or-later
/* compress.c — gzip/zstd for build layers through libarchive's raw writer */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <archive.h>
#include <archive_entry.h>

#include "build/compress.h"
#include "build/layer.h"
#include "util/dl.h"
#include "util/log.h"
#include "util/util.h"

static const char *const names[LAYER_COMP_MAX] = { "gzip", "zstd", "none" };
static const char *const media_types[LAYER_COMP_MAX] = {
	"application/vnd.oci.image.layer.v1.tar+gzip",
	"application/vnd.oci.image.layer.v1.tar+zstd",
	LAYER_MEDIA_TYPE,
};

int layer_compression_parse(const char *s, enum layer_compression *out)
{
	for (int i = 0; i < LAYER_COMP_MAX; i++)
		if (s && streq(s, names[i])) {
			*out = (enum layer_compression)i;
			return 0;
		}
	return -EINVAL;
}

int layer_compression_level_parse(const char *s)
{
	char *end;
	long v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	return errno || *end || v < 1 || v > 19 ? -EINVAL : (int)v;
}

int layer_compression_level(enum layer_compression c, int level)
{
	switch (c) {
	case LAYER_COMP_GZIP:
		return level < 0 ? LAYER_GZIP_LEVEL : level >= 1 && level <= 9 ? level : -EINVAL;
	case LAYER_COMP_ZSTD:
		return level < 0 ? LAYER_ZSTD_LEVEL : level >= 1 && level <= 19 ? level : -EINVAL;
	case LAYER_COMP_NONE:
		return level < 0 ? 0 : -EINVAL;
	default:
		return -EINVAL;
	}
}

const char *layer_compression_media_type(enum layer_compression c)
{
	return c < LAYER_COMP_MAX ? media_types[c] : NULL;
}

const char *layer_compression_name(enum layer_compression c)
{
	return c < LAYER_COMP_MAX ? names[c] : NULL;
}

struct layer_compressor {
	struct archive *a; /* NULL for none: the bytes go to the sink as they are */
	int (*sink)(void *ud, const void *buf, size_t len);
	void *ud;
	int err;           /* the sink's first error */
};

static la_ssize_t write_cb(struct archive *a, void *ud, const void *buf, size_t len)
{
	struct layer_compressor *z = ud;
	int r;

	(void)a;
	if (z->err)
		return -1;
	r = z->sink(z->ud, buf, len);
	if (r < 0) {
		z->err = r;
		return -1;
	}
	return (la_ssize_t)len;
}

void layer_compressor_free(struct layer_compressor *z)
{
	if (!z)
		return;
	if (z->a)
		archive_write_free(z->a);
	free(z);
}

int layer_compressor_new(enum layer_compression c, int level, int (*sink)(void *ud, const void *buf, size_t len),
			 void *ud, struct layer_compressor **out)
{
	struct layer_compressor *z = calloc(1, sizeof(*z));
	struct archive_entry *e = NULL;
	char lv[16];
	int k;

	if (!z)
		return log_error_errno(-ENOMEM, "Out of memory");
	z->sink = sink;
	z->ud = ud;
	if (c == LAYER_COMP_NONE) {
		*out = z;
		return 0;
	}
	if (dl_load(&dl_libarchive) < 0) {
		free(z);
		return -ELIBACC; /* dl_load() said which library and package */
	}
	snprintf(lv, sizeof(lv), "%d", level);
	z->a = archive_write_new();
	if (!z->a) {
		free(z);
		return log_error_errno(-ENOMEM, "Out of memory");
	}
	k = archive_write_set_format_raw(z->a);
	if (k == ARCHIVE_OK)
		k = c == LAYER_COMP_GZIP ? archive_write_add_filter_gzip(z->a) : archive_write_add_filter_zstd(z->a);
	if (k == ARCHIVE_OK)
		k = archive_write_set_filter_option(z->a, NULL, "compression-level", lv);
	/* gzip: no mtime (the header's would be now) and no name: the bytes are the tar's alone */
	if (k == ARCHIVE_OK && c == LAYER_COMP_GZIP)
		k = archive_write_set_filter_option(z->a, "gzip", "timestamp", NULL);
	if (k == ARCHIVE_OK)
		k = archive_write_set_bytes_per_block(z->a, 1 << 20);
	if (k == ARCHIVE_OK)
		k = archive_write_set_bytes_in_last_block(z->a, 1);
	if (k == ARCHIVE_OK)
		k = archive_write_open2(z->a, z, NULL, write_cb, NULL, NULL);
	if (k == ARCHIVE_OK && !(e = archive_entry_new()))
		k = ARCHIVE_FATAL;
	if (k == ARCHIVE_OK) {
		/* the raw format writes one entry's data and nothing of the entry itself */
		archive_entry_set_pathname(e, "layer.tar");
		archive_entry_set_filetype(e, AE_IFREG);
		k = archive_write_header(z->a, e);
		archive_entry_free(e);
	}
	if (k != ARCHIVE_OK) {
		log_error("cannot start the layer's %s compression (level %d): %s", names[c], level,
			  archive_error_string(z->a));
		layer_compressor_free(z);
		return -EINVAL;
	}
	*out = z;
	return 0;
}

int layer_compressor_write(struct layer_compressor *z, const void *buf, size_t len)
{
	if (!z->a)
		return z->sink(z->ud, buf, len);
	while (len) {
		la_ssize_t n = archive_write_data(z->a, buf, len);
		if (n <= 0)
			return z->err ? z->err : -EIO;
		buf = (const char *)buf + n;
		len -= (size_t)n;
	}
	return 0;
}

int layer_compressor_finish(struct layer_compressor *z)
{
	int r = 0;

	if (z->a && archive_write_close(z->a) != ARCHIVE_OK)
		r = z->err ? z->err : -EIO;
	layer_compressor_free(z);
	return r;
}
