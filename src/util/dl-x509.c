// SPDX-License-Identifier: GPL-2.0-or-later
/* dl-x509.c — the part of libcrypto that the tlsgate needs besides dl-crypto.c's hashing: keys,
 * certificates, BIOs, errors (net/tlsgate-tls.c, tlsgate-relay.c), through dlopen() like
 * dl-ssl.c and only in the tlsgate's process. EVP_sha256 is dl-crypto.c's.
 */
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "util/dl.h"

#define X509_FUNCTIONS(F, V)                                                                       \
	F(long, BIO_ctrl, (BIO *b, int cmd, long l, void *p), (b, cmd, l, p), 0)                   \
	F(size_t, BIO_ctrl_pending, (BIO *b), (b), 0)                                               \
	F(int, BIO_free, (BIO *b), (b), 0)                                                          \
	F(BIO *, BIO_new, (const BIO_METHOD *m), (m), NULL)                                         \
	F(int, BIO_new_bio_pair, (BIO **a, size_t na, BIO **b, size_t nb), (a, na, b, nb), 0)       \
	F(int, BIO_read, (BIO *b, void *d, int n), (b, d, n), -1)                                   \
	F(const BIO_METHOD *, BIO_s_mem, (void), (), NULL)                                          \
	F(int, BIO_write, (BIO *b, const void *d, int n), (b, d, n), -1)                            \
	F(BIGNUM *, BN_bin2bn, (const unsigned char *s, int n, BIGNUM *r), (s, n, r), NULL)         \
	V(BN_free, (BIGNUM *a), (a))                                                                \
	F(ASN1_INTEGER *, BN_to_ASN1_INTEGER, (const BIGNUM *bn, ASN1_INTEGER *ai), (bn, ai), NULL) \
	V(ERR_clear_error, (void), ())                                                              \
	V(ERR_error_string_n, (unsigned long e, char *b, size_t n), (e, b, n))                      \
	F(unsigned long, ERR_peek_last_error, (void), (), 0)                                        \
	F(const char *, ERR_reason_error_string, (unsigned long e), (e), NULL)                      \
	V(EVP_PKEY_CTX_free, (EVP_PKEY_CTX *c), (c))                                                \
	F(EVP_PKEY_CTX *, EVP_PKEY_CTX_new_from_name, (OSSL_LIB_CTX *l, const char *n, const char *p), \
	  (l, n, p), NULL)                                                                         \
	F(int, EVP_PKEY_CTX_set_group_name, (EVP_PKEY_CTX *c, const char *n), (c, n), 0)            \
	V(EVP_PKEY_free, (EVP_PKEY *k), (k))                                                        \
	F(int, EVP_PKEY_generate, (EVP_PKEY_CTX *c, EVP_PKEY **k), (c, k), 0)                       \
	F(int, EVP_PKEY_keygen_init, (EVP_PKEY_CTX *c), (c), 0)                                     \
	F(OSSL_PROVIDER *, OSSL_PROVIDER_load, (OSSL_LIB_CTX *l, const char *n), (l, n), NULL)      \
	F(int, PEM_write_bio_X509, (BIO *b, const X509 *x), (b, x), 0)                              \
	F(int, RAND_bytes, (unsigned char *b, int n), (b, n), 0)                                    \
	F(X509_EXTENSION *, X509V3_EXT_conf_nid, (LHASH_OF(CONF_VALUE) *c, X509V3_CTX *x, int nid,  \
	  const char *v), (c, x, nid, v), NULL)                                                    \
	V(X509V3_set_ctx, (X509V3_CTX *c, X509 *i, X509 *s, X509_REQ *r, X509_CRL *crl, int f),     \
	  (c, i, s, r, crl, f))                                                                    \
	V(X509_EXTENSION_free, (X509_EXTENSION *e), (e))                                            \
	F(int, X509_NAME_add_entry_by_txt, (X509_NAME *n, const char *f, int t,                     \
	  const unsigned char *b, int l, int loc, int set), (n, f, t, b, l, loc, set), 0)          \
	F(int, X509_STORE_add_cert, (X509_STORE *s, X509 *x), (s, x), 0)                            \
	V(X509_STORE_free, (X509_STORE *s), (s))                                                    \
	F(int, X509_STORE_load_file, (X509_STORE *s, const char *f), (s, f), 0)                     \
	F(X509_STORE *, X509_STORE_new, (void), (), NULL)                                           \
	F(int, X509_add_ext, (X509 *x, X509_EXTENSION *e, int loc), (x, e, loc), 0)                 \
	V(X509_free, (X509 *x), (x))                                                                \
	F(const char *, X509_get_default_cert_dir_env, (void), (), "SSL_CERT_DIR")                  \
	F(const char *, X509_get_default_cert_file, (void), (), "")                                 \
	F(const char *, X509_get_default_cert_file_env, (void), (), "SSL_CERT_FILE")                \
	F(ASN1_INTEGER *, X509_get_serialNumber, (X509 *x), (x), NULL)                              \
	F(X509_NAME *, X509_get_subject_name, (const X509 *x), (x), NULL)                           \
	F(ASN1_TIME *, X509_getm_notAfter, (const X509 *x), (x), NULL)                              \
	F(ASN1_TIME *, X509_getm_notBefore, (const X509 *x), (x), NULL)                             \
	F(ASN1_TIME *, X509_gmtime_adj, (ASN1_TIME *s, long adj), (s, adj), NULL)                   \
	F(X509 *, X509_new, (void), (), NULL)                                                       \
	F(int, X509_set_issuer_name, (X509 *x, const X509_NAME *n), (x, n), 0)                      \
	F(int, X509_set_pubkey, (X509 *x, EVP_PKEY *k), (x, k), 0)                                  \
	F(int, X509_set_version, (X509 *x, long v), (x, v), 0)                                      \
	F(int, X509_sign, (X509 *x, EVP_PKEY *k, const EVP_MD *md), (x, k, md), 0)                  \
	F(const char *, X509_verify_cert_error_string, (long n), (n), "unknown")

DL_DEFINE_STUBS(X509_FUNCTIONS, dl_libx509, "libcrypto.so.3", "libssl3",
		"to make the session CA for --key-via-gate with an https endpoint", true, "x509",
		"recommended")
