// SPDX-License-Identifier: GPL-2.0-or-later
/* sha256.c — the one SHA-256 helper over libcrypto's EVP interface (see sha256.h) */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "util/dl.h"
#include "util/sha256.h"
#include "util/util.h"

int sha256_init(struct sha256 *c)
{
	if (!c->md) {
		if (dl_load(&dl_libcrypto) < 0)
			return -ELIBACC;
		c->md = EVP_MD_CTX_new();
		if (!c->md)
			return -ENOMEM;
	}
	if (EVP_DigestInit_ex(c->md, EVP_sha256(), NULL) != 1)
		return -EIO;
	return 0;
}

int sha256_update(struct sha256 *c, const void *data, size_t len)
{
	if (!c->md || EVP_DigestUpdate(c->md, data, len) != 1)
		return -EIO;
	return 0;
}

int sha256_final(struct sha256 *c, unsigned char raw[SHA256_RAW_SIZE])
{
	unsigned int n = 0;

	if (!c->md || EVP_DigestFinal_ex(c->md, raw, &n) != 1 || n != SHA256_RAW_SIZE)
		return -EIO;
	return 0;
}

int sha256_final_hex(struct sha256 *c, char hex[SHA256_HEX_SIZE])
{
	unsigned char raw[SHA256_RAW_SIZE];
	int r = sha256_final(c, raw);

	if (r < 0)
		return r;
	hex_encode(raw, sizeof(raw), hex);
	return 0;
}

int sha256_fd(struct sha256 *c, int fd, uint64_t max, int copy_fd, uint64_t *size)
{
	unsigned char buf[65536];
	uint64_t total = 0;
	int r = 0;

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : 0;
			break;
		}
		total += (uint64_t)n;
		if (total > max) {
			r = -EFBIG;
			break;
		}
		r = sha256_update(c, buf, (size_t)n);
		if (r < 0)
			break;
		if (copy_fd >= 0 && (r = write_full(copy_fd, buf, (size_t)n)) < 0)
			break;
	}
	if (size)
		*size = total;
	return r;
}

void sha256_done(struct sha256 *c)
{
	if (c->md)
		EVP_MD_CTX_free(c->md);
	c->md = NULL;
}

int sha256_raw(const void *data, size_t len, unsigned char raw[SHA256_RAW_SIZE])
{
	unsigned int n = 0;

	if (dl_load(&dl_libcrypto) < 0)
		return -ELIBACC;
	if (EVP_Digest(data, len, raw, &n, EVP_sha256(), NULL) != 1 || n != SHA256_RAW_SIZE)
		return -EIO;
	return 0;
}

int sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_SIZE])
{
	unsigned char raw[SHA256_RAW_SIZE];
	int r = sha256_raw(data, len, raw);

	if (r < 0)
		return r;
	hex_encode(raw, sizeof(raw), hex);
	return 0;
}
