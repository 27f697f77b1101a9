// SPDX-License-Identifier: GPL-2.0-or-later
/* dl-ssl.c — libssl, for the tlsgate only (net/tlsgate.h), through dlopen() like dl-crypto.c
 *
 * Only the tlsgate process loads it, after its fork and before it confines itself (the
 * supervisor and the gate never do): linking it would cost every `aisb run` its load time (see
 * dl.h). Missing: every function returns libssl's own failure value.
 */
#include <openssl/ssl.h>

#include "util/dl.h"

#define SSL_FUNCTIONS(F, V)                                                                        \
	F(int, OPENSSL_init_ssl, (uint64_t opts, const OPENSSL_INIT_SETTINGS *s), (opts, s), 0)     \
	F(const SSL_METHOD *, TLS_client_method, (void), (), NULL)                                  \
	F(const SSL_METHOD *, TLS_server_method, (void), (), NULL)                                  \
	F(SSL_CTX *, SSL_CTX_new, (const SSL_METHOD *m), (m), NULL)                                 \
	V(SSL_CTX_free, (SSL_CTX *c), (c))                                                          \
	F(long, SSL_CTX_ctrl, (SSL_CTX *c, int cmd, long l, void *p), (c, cmd, l, p), 0)           \
	F(long, SSL_CTX_callback_ctrl, (SSL_CTX *c, int cmd, void (*fp)(void)), (c, cmd, fp), 0)   \
	F(uint64_t, SSL_CTX_set_options, (SSL_CTX *c, uint64_t o), (c, o), 0)                      \
	F(int, SSL_CTX_set_num_tickets, (SSL_CTX *c, size_t n), (c, n), 0)                          \
	F(int, SSL_CTX_set_alpn_protos, (SSL_CTX *c, const unsigned char *p, unsigned int n),       \
	  (c, p, n), 1)                                                                            \
	V(SSL_CTX_set_alpn_select_cb, (SSL_CTX *c, SSL_CTX_alpn_select_cb_func cb, void *arg),      \
	  (c, cb, arg))                                                                            \
	V(SSL_CTX_set_cert_store, (SSL_CTX *c, X509_STORE *st), (c, st))                            \
	V(SSL_CTX_set_verify, (SSL_CTX *c, int mode, SSL_verify_cb cb), (c, mode, cb))              \
	F(SSL *, SSL_new, (SSL_CTX *c), (c), NULL)                                                  \
	V(SSL_free, (SSL *s), (s))                                                                  \
	F(long, SSL_ctrl, (SSL *s, int cmd, long l, void *p), (s, cmd, l, p), 0)                   \
	F(int, SSL_do_handshake, (SSL *s), (s), -1)                                                 \
	F(int, SSL_get_error, (const SSL *s, int ret), (s, ret), SSL_ERROR_SSL)                     \
	F(void *, SSL_get_ex_data, (const SSL *s, int i), (s, i), NULL)                             \
	F(int, SSL_set_ex_data, (SSL *s, int i, void *d), (s, i, d), 0)                             \
	F(const char *, SSL_get_servername, (const SSL *s, const int type), (s, type), NULL)        \
	F(long, SSL_get_verify_result, (const SSL *s), (s), X509_V_ERR_UNSPECIFIED)                 \
	F(int, SSL_read, (SSL *s, void *b, int n), (s, b, n), -1)                                   \
	F(int, SSL_write, (SSL *s, const void *b, int n), (s, b, n), -1)                            \
	F(int, SSL_shutdown, (SSL *s), (s), -1)                                                     \
	F(int, SSL_set1_host, (SSL *s, const char *h), (s, h), 0)                                   \
	V(SSL_set_hostflags, (SSL *s, unsigned int f), (s, f))                                      \
	V(SSL_set_accept_state, (SSL *s), (s))                                                      \
	V(SSL_set_connect_state, (SSL *s), (s))                                                     \
	V(SSL_set_bio, (SSL *s, BIO *r, BIO *w), (s, r, w))                                         \
	F(int, SSL_use_PrivateKey, (SSL *s, EVP_PKEY *k), (s, k), 0)                                \
	F(int, SSL_use_certificate, (SSL *s, X509 *x), (s, x), 0)

DL_DEFINE_STUBS(SSL_FUNCTIONS, dl_libssl, "libssl.so.3", "libssl3",
		"to terminate TLS for --key-via-gate with an https endpoint", true, "ssl", "recommended")
