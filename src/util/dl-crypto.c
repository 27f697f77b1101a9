// SPDX-License-Identifier: GPL-2.0-or-later
/* dl-crypto.c — libcrypto (SHA-256 and base64 only) through dlopen(), like dl-archive.c
 *
 * aisb uses OpenSSL for hashing blobs, layers and build contexts and for one base64 decode in
 * the registry client; `aisb run` on the host rootfs uses none of it, and linking libcrypto cost
 * 7.5 ms on every start (see dl.h). When the library is missing, every function returns
 * OpenSSL's own failure value (NULL, 0, or -1 for EVP_DecodeBlock) after one log line.
 */
#include <openssl/evp.h>

#include "util/dl.h"

#define CRYPTO_FUNCTIONS(F, V)                                                                     \
	F(const EVP_MD *, EVP_sha256, (void), (), NULL)                                            \
	F(EVP_MD_CTX *, EVP_MD_CTX_new, (void), (), NULL)                                          \
	V(EVP_MD_CTX_free, (EVP_MD_CTX *ctx), (ctx))                                               \
	F(int, EVP_DigestInit_ex, (EVP_MD_CTX *ctx, const EVP_MD *type, ENGINE *impl),             \
	  (ctx, type, impl), 0)                                                                    \
	F(int, EVP_DigestUpdate, (EVP_MD_CTX *ctx, const void *d, size_t n), (ctx, d, n), 0)       \
	F(int, EVP_DigestFinal_ex, (EVP_MD_CTX *ctx, unsigned char *md, unsigned int *s),          \
	  (ctx, md, s), 0)                                                                         \
	F(int, EVP_Digest,                                                                         \
	  (const void *data, size_t n, unsigned char *md, unsigned int *s, const EVP_MD *type,     \
	   ENGINE *impl),                                                                          \
	  (data, n, md, s, type, impl), 0)                                                         \
	F(int, EVP_DecodeBlock, (unsigned char *t, const unsigned char *f, int n), (t, f, n), -1)

DL_DEFINE_STUBS(CRYPTO_FUNCTIONS, dl_libcrypto, "libcrypto.so.3", "libssl3",
		"to hash image blobs and build layers", true, "crypto", "required")
