// SPDX-License-Identifier: GPL-2.0-or-later
/* dl-crypto.c — libcrypto (SHA-256, base64, the default trust file's name) through dlopen()
 *
 * aisb uses OpenSSL for hashing blobs, layers and build contexts, for one base64 decode in the
 * registry client, and for the name of OpenSSL's default trust file (what --key-via-gate's
 * tlsgate verifies an https:// endpoint against); `aisb run` on the host rootfs uses none of it,
 * and linking libcrypto cost 7.5 ms on every start (see dl.h). When the library is missing,
 * every function returns OpenSSL's own failure value (NULL, 0, or -1 for EVP_DecodeBlock) after
 * one log line.
 */
#include <openssl/evp.h>
#include <openssl/x509.h>

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
	F(int, EVP_DecodeBlock, (unsigned char *t, const unsigned char *f, int n), (t, f, n), -1) \
	F(const char *, X509_get_default_cert_file, (void), (), NULL)

DL_DEFINE_STUBS(CRYPTO_FUNCTIONS, dl_libcrypto, "libcrypto.so.3", "libssl3",
		"to hash image blobs and build layers", true, "crypto", "required")
