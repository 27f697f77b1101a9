/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sha256.h — the one SHA-256 helper: incremental, one-shot, raw and hex.
 *
 * Digests are image, layer and build identities: every SHA-256 in aisb goes through here, so a
 * fix (or a change of library) happens once — rootfs/ (registry, store, unpack, push), build/
 * (context, copy, layer, recompress) and cli/, none left over (issue 25). The one other
 * libcrypto use, base64 in rootfs/registry.c (EVP_DecodeBlock), is not a digest and calls
 * dl-crypto.c directly.
 * libcrypto is reached through dl-crypto.c (dlopen): when it cannot be loaded, dl_load() logs
 * its one error naming the package (the first time only); nothing else here logs.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SHA256_RAW_SIZE 32
#define SHA256_HEX_SIZE 65 /* 64 digits and a NUL */

struct sha256 {
	void *md; /* EVP_MD_CTX, NULL when init failed */
};

/**
 * sha256_init() - start an incremental digest
 * @c: the context; sha256_done() releases it whatever happened
 *
 * Return: 0, or -ENOMEM / -ELIBACC (libcrypto missing: dl_load() has said so) / -EIO.
 */
int sha256_init(struct sha256 *c);
/* Add @len bytes. Return: 0 or -EIO. Does not log. */
int sha256_update(struct sha256 *c, const void *data, size_t len);
/* Finish into @raw (32 bytes). The context may be re-initialised. Return: 0 or -EIO. Does not log. */
int sha256_final(struct sha256 *c, unsigned char raw[SHA256_RAW_SIZE]);
/* Finish into 64 lower-case hex digits and a NUL. Return: 0 or -EIO. Does not log. */
int sha256_final_hex(struct sha256 *c, char hex[SHA256_HEX_SIZE]);
/* Release the context; accepts one that was never initialised (zeroed). Does not log. */
void sha256_done(struct sha256 *c);

/**
 * sha256_fd() - add what is left to read from a file to a digest
 * @c: a context sha256_init() started; sha256_final*() finishes it
 * @fd: read to its end (EINTR is retried)
 * @max: -EFBIG once more than this many bytes were read (UINT64_MAX: no bound)
 * @copy_fd: every byte is also written here (after it was hashed), or -1
 * @size: the bytes read, or NULL; set on failure too
 *
 * Return: 0, or read()'s / write()'s -errno, -EFBIG, -EIO (the digest). Does not log.
 */
int sha256_fd(struct sha256 *c, int fd, uint64_t max, int copy_fd, uint64_t *size);

/* One-shot digests of @len bytes. Return: 0, or -ELIBACC (dl_load() has said so) / -EIO. */
int sha256_raw(const void *data, size_t len, unsigned char raw[SHA256_RAW_SIZE]);
int sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_SIZE]);
