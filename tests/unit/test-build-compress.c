// SPDX-License-Identifier: GPL-2.0-or-later
/* test-build-compress.c — build/compress.h: stable bytes, the gzip header, round trips;
 * build/recompress.h: a manifest's plain layers compressed into the store */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <cmocka.h>

#include "build/compress.h"
#include "build/recompress.h"
#include "rootfs/store.h"
#include "util/dl.h"
#include "util/util.h"

struct buf {
	char *p;
	size_t len;
};

static int sink(void *ud, const void *data, size_t len)
{
	struct buf *b = ud;
	char *n = realloc(b->p, b->len + len);
	if (!n)
		return -ENOMEM;
	memcpy(n + b->len, data, len);
	b->p = n;
	b->len += len;
	return 0;
}

/* @in compressed with @c at its default level, written in pieces of 1000 bytes */
static struct buf compress(enum layer_compression c, const char *in, size_t len)
{
	struct buf b = { 0 };
	struct layer_compressor *z;

	assert_int_equal(layer_compressor_new(c, layer_compression_level(c, -1), sink, &b, &z), 0);
	for (size_t off = 0; off < len; off += 1000)
		assert_int_equal(layer_compressor_write(z, in + off, len - off < 1000 ? len - off : 1000), 0);
	assert_int_equal(layer_compressor_finish(z), 0);
	return b;
}

static la_ssize_t mem_read(struct archive *a, void *ud, const void **out)
{
	struct buf *b = ud;
	la_ssize_t n = (la_ssize_t)b->len;

	(void)a;
	*out = b->p;
	b->len = 0;
	return n;
}

/* what libarchive's readers make of @b (the unpacker's filters, its calls) */
static struct buf decompress(const struct buf *b)
{
	struct archive *a = archive_read_new();
	struct archive_entry *e;
	struct buf in = *b, out = { 0 };
	const void *blk;
	size_t n;
	la_int64_t off;
	int k;

	archive_read_support_filter_gzip(a);
	archive_read_support_filter_zstd(a);
	archive_read_support_filter_none(a);
	archive_read_support_format_raw(a);
	assert_int_equal(archive_read_open(a, &in, NULL, mem_read, NULL), ARCHIVE_OK);
	assert_int_equal(archive_read_next_header(a, &e), ARCHIVE_OK);
	while ((k = archive_read_data_block(a, &blk, &n, &off)) == ARCHIVE_OK)
		assert_int_equal(sink(&out, blk, n), 0);
	assert_int_equal(k, ARCHIVE_EOF);
	archive_read_free(a);
	return out;
}

static void test_round_trip_and_stable(void **state)
{
	size_t len = 300000;
	char *in = malloc(len);

	(void)state;
	assert_int_equal(dl_load(&dl_libarchive), 0);
	for (size_t i = 0; i < len; i++)
		in[i] = (char)("layer bytes "[i % 12] + (i / 4096) % 3);
	for (int c = 0; c < LAYER_COMP_MAX; c++) {
		struct buf a = compress((enum layer_compression)c, in, len);
		struct buf b = compress((enum layer_compression)c, in, len);
		struct buf d = decompress(&a);
		/* the same input gives the same bytes: a stable digest */
		assert_int_equal(a.len, b.len);
		assert_memory_equal(a.p, b.p, a.len);
		assert_int_equal(d.len, len);
		assert_memory_equal(d.p, in, len);
		if (c == LAYER_COMP_GZIP) {
			/* magic, deflate, no flags, mtime 0 (no name, no time) */
			static const unsigned char hdr[] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0 };
			assert_memory_equal(a.p, hdr, sizeof(hdr));
			assert_true(a.len < len / 4);
		} else if (c == LAYER_COMP_ZSTD) {
			static const unsigned char magic[] = { 0x28, 0xb5, 0x2f, 0xfd };
			assert_memory_equal(a.p, magic, sizeof(magic));
			assert_true(a.len < len / 4);
		} else {
			assert_int_equal(a.len, len);
		}
		free(a.p);
		free(b.p);
		free(d.p);
	}
	free(in);
}

static void test_words_and_levels(void **state)
{
	enum layer_compression c;

	(void)state;
	assert_int_equal(layer_compression_parse("gzip", &c), 0);
	assert_int_equal(c, LAYER_COMP_GZIP);
	assert_int_equal(layer_compression_parse("zstd", &c), 0);
	assert_int_equal(c, LAYER_COMP_ZSTD);
	assert_int_equal(layer_compression_parse("none", &c), 0);
	assert_int_equal(layer_compression_parse("zstd:chunked", &c), -EINVAL);
	assert_int_equal(layer_compression_parse(NULL, &c), -EINVAL);
	assert_int_equal(layer_compression_level(LAYER_COMP_GZIP, -1), 6);
	assert_int_equal(layer_compression_level(LAYER_COMP_GZIP, 9), 9);
	assert_int_equal(layer_compression_level(LAYER_COMP_GZIP, 10), -EINVAL);
	assert_int_equal(layer_compression_level(LAYER_COMP_ZSTD, -1), 3);
	assert_int_equal(layer_compression_level(LAYER_COMP_ZSTD, 19), 19);
	assert_int_equal(layer_compression_level(LAYER_COMP_ZSTD, 20), -EINVAL);
	assert_int_equal(layer_compression_level(LAYER_COMP_NONE, -1), 0);
	assert_int_equal(layer_compression_level(LAYER_COMP_NONE, 3), -EINVAL);
	/* the --compression-level words build and push share */
	assert_int_equal(layer_compression_level_parse("1"), 1);
	assert_int_equal(layer_compression_level_parse("19"), 19);
	assert_int_equal(layer_compression_level_parse("0"), -EINVAL);
	assert_int_equal(layer_compression_level_parse("20"), -EINVAL);
	assert_int_equal(layer_compression_level_parse(""), -EINVAL);
	assert_int_equal(layer_compression_level_parse("-3"), -EINVAL);
	assert_int_equal(layer_compression_level_parse(" 3"), -EINVAL);
	assert_int_equal(layer_compression_level_parse("3x"), -EINVAL);
	assert_int_equal(layer_compression_level_parse("99999999999999999999"), -EINVAL);
	assert_int_equal(layer_compression_level_parse(NULL), -EINVAL);
	assert_string_equal(layer_compression_media_type(LAYER_COMP_GZIP), "application/vnd.oci.image.layer.v1.tar+gzip");
	assert_string_equal(layer_compression_media_type(LAYER_COMP_ZSTD), "application/vnd.oci.image.layer.v1.tar+zstd");
	assert_string_equal(layer_compression_media_type(LAYER_COMP_NONE), "application/vnd.oci.image.layer.v1.tar");
}

/* A manifest with a plain layer, a gzip one and a foreign one: only the plain one is compressed
 * (into a blob of the store that decompresses to it), the rest and the config stay byte for
 * byte; the same input gives the same manifest; a stored tar that does not hash to its name is
 * refused, as is zstd for a Docker manifest. */
static void test_recompress_manifest(void **state)
{
	static const char tar[] = "a tar, as far as this test cares";
	static const char fake[] = "sha256:2222222222222222222222222222222222222222222222222222222222222222";
	char dir[] = "/tmp/aisb-test-recompress-XXXXXX", *digest = NULL, *man = NULL, *out = NULL,
	     *out2 = NULL, *blob = NULL, *p;
	struct store *s = NULL;
	size_t n, n2, blen;
	unsigned done;

	(void)state;
	assert_int_equal(dl_load(&dl_libarchive), 0);
	assert_non_null(mkdtemp(dir));
	assert_int_equal(store_open(dir, &s), 0);
	assert_int_equal(store_blob_put(s, tar, sizeof(tar) - 1, &digest), 0);
	assert_true(asprintf(&man,
			     "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
			     "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"%s\",\"size\":9},"
			     "\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"%s\",\"size\":5},"
			     "{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"%s\",\"size\":%zu,"
			     "\"annotations\":{\"k\":\"v\"}},"
			     "{\"mediaType\":\"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip\",\"digest\":\"%s\",\"size\":7,"
			     "\"urls\":[\"https://example.com/x\"]}]}",
			     fake, fake, digest, sizeof(tar) - 1, fake) > 0);
	assert_int_equal(layer_recompress_manifest(s, man, strlen(man), LAYER_COMP_GZIP, 6, &out, &n, &done), 0);
	assert_int_equal(done, 1);
	assert_non_null(out);
	assert_int_equal(n, strlen(out));
	/* the plain layer now: gzip, its blob in the store; annotations kept; the others as they were */
	p = strstr(out, "\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"sha256:");
	assert_non_null(p = strstr(p + 1, "\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\""));
	p += strlen("\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"");
	{
		char d[72] = { 0 };
		memcpy(d, p, 71);
		assert_true(store_has_blob(s, d));
		assert_int_equal(store_blob_read(s, d, 1 << 20, &blob, &blen), 0);
		struct buf in = { .p = blob, .len = blen }, dec = decompress(&in);
		assert_int_equal(dec.len, sizeof(tar) - 1);
		assert_memory_equal(dec.p, tar, dec.len);
		free(dec.p);
	}
	assert_non_null(strstr(out, "\"annotations\":{\"k\":\"v\"}"));
	assert_non_null(strstr(out, "\"urls\":[\"https://example.com/x\"]"));
	assert_null(strstr(out, digest));
	/* the same again: the same manifest */
	assert_int_equal(layer_recompress_manifest(s, man, strlen(man), LAYER_COMP_GZIP, 6, &out2, &n2, &done), 0);
	assert_int_equal(n, n2);
	assert_memory_equal(out, out2, n);
	free(out2);
	out2 = NULL;
	/* nothing plain: no manifest */
	assert_int_equal(layer_recompress_manifest(s, out, n, LAYER_COMP_ZSTD, 3, &out2, &n2, &done), 0);
	assert_null(out2);
	assert_int_equal(done, 0);
	/* a Docker manifest has no zstd layer type */
	{
		char *dm = strdup(man);
		char *mt = strstr(dm, "application/vnd.oci.image.manifest.v1+json");
		static const char dmt[] = "application/vnd.docker.distribution.manifest.v2+json";
		char *dm2 = NULL;
		*mt = 0;
		assert_true(asprintf(&dm2, "%s%s%s", dm, dmt, mt + strlen("application/vnd.oci.image.manifest.v1+json")) > 0);
		assert_int_equal(layer_recompress_manifest(s, dm2, strlen(dm2), LAYER_COMP_ZSTD, 3, &out2, &n2, &done),
				 -EINVAL);
		free(dm);
		free(dm2);
	}
	/* a stored tar that is not what its name says */
	{
		char path[512];
		_cleanup_free_ char *m2 = NULL;
		char *hex = strdup("sha256:3333333333333333333333333333333333333333333333333333333333333333");
		snprintf(path, sizeof(path), "%s/blobs/sha256/%s", dir, hex + 7);
		assert_int_equal(write_file_at(AT_FDCWD, path, tar, sizeof(tar) - 1, 0644), 0);
		assert_true(asprintf(&m2, "{\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"%s\","
				     "\"size\":%zu}]}", hex, sizeof(tar) - 1) > 0);
		assert_int_equal(layer_recompress_manifest(s, m2, strlen(m2), LAYER_COMP_GZIP, 6, &out2, &n2, &done),
				 -EBADMSG);
		free(hex);
	}
	free(blob);
	free(out);
	free(man);
	free(digest);
	store_free(s);
	rm_rf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_and_stable),
		cmocka_unit_test(test_words_and_levels),
		cmocka_unit_test(test_recompress_manifest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
