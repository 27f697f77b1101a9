// SPDX-License-Identifier: GPL-2.0-or-later
/* tlsgate-tls.c — the tlsgate's TLS state, made once before it confines itself: libssl and its
 * providers loaded, the host trust store read, the session CA and one leaf per endpoint name
 * signed, the CA key freed, and a throwaway handshake run so that nothing is loaded lazily later
 * (docs/threat-model.md, "The tlsgate's process"). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "net/tlsgate-internal.h"
#include "util/dl.h"
#include "util/hostenv.h"
#include "util/macro.h"

/* The session CA and its leaves are valid from a minute ago (clock skew between the tlsgate and
 * a client in the same kernel is nil, but a minute costs nothing) for 24 hours. */
#define CERT_BACKDATE_S 60
#define CERT_VALID_S (24L * 3600)
/* Files read from a caller's SSL_CERT_DIR, at most (Debian's /etc/ssl/certs holds ~290). */
#define CERT_DIR_FILES_MAX 4096

static const unsigned char alpn_http11[] = "\x08http/1.1";

static void why_ssl(char *why, size_t n, const char *what)
{
	unsigned long e = ERR_peek_last_error();
	char s[120];

	ERR_error_string_n(e, s, sizeof(s));
	snprintf(why, n, "%s: %s", what, e ? s : "failed");
	ERR_clear_error();
}

/* A host name as a certificate can carry it: letters, digits, '-' and '.', no wildcard. */
static bool is_dns_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 253 || s[0] == '.' || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '.'))
			return false;
	return true;
}

static EVP_PKEY *key_new(void)
{
	EVP_PKEY_CTX *kc = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
	EVP_PKEY *k = NULL;

	if (kc && EVP_PKEY_keygen_init(kc) > 0 && EVP_PKEY_CTX_set_group_name(kc, "P-256") > 0)
		(void)EVP_PKEY_generate(kc, &k);
	EVP_PKEY_CTX_free(kc);
	return k;
}

static bool cert_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX v;
	X509_EXTENSION *e;
	bool ok;

	X509V3_set_ctx_nodb(&v);
	X509V3_set_ctx(&v, issuer ? issuer : x, x, NULL, NULL, 0);
	e = X509V3_EXT_conf_nid(NULL, &v, nid, value);
	if (!e)
		return false;
	ok = X509_add_ext(x, e, -1) == 1;
	X509_EXTENSION_free(e);
	return ok;
}

/* A version 3 certificate for @cn with @pub, a random positive 127-bit serial, the validity
 * above, issued by @issuer (NULL: self-issued). Not signed yet. */
static X509 *cert_new(const char *cn, EVP_PKEY *pub, X509 *issuer)
{
	unsigned char serial[16];
	X509 *x = X509_new();
	BIGNUM *bn = NULL;
	bool ok;

	if (!x || RAND_bytes(serial, sizeof(serial)) != 1)
		goto fail;
	serial[0] = (unsigned char)((serial[0] & 0x7f) | 0x40);
	bn = BN_bin2bn(serial, sizeof(serial), NULL);
	ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) && X509_set_version(x, X509_VERSION_3) &&
	     X509_gmtime_adj(X509_getm_notBefore(x), -CERT_BACKDATE_S) &&
	     X509_gmtime_adj(X509_getm_notAfter(x), CERT_VALID_S) &&
	     X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_UTF8,
					(const unsigned char *)cn, -1, -1, 0) &&
	     X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : X509_get_subject_name(x)) &&
	     X509_set_pubkey(x, pub);
	BN_free(bn);
	if (ok)
		return x;
fail:
	X509_free(x);
	return NULL;
}

/* The session CA: CA:true with pathlen 0 (it signs leaves, never another CA), for signing
 * certificates only, and nameConstraints permitting the endpoint names only (RFC 5280 4.2.1.10:
 * a dNSName constraint also admits the name's subdomains; the CA key is freed before the sandbox
 * starts, so no such leaf can ever be made). */
static X509 *ca_new(const struct tlsgate_config *cfg, EVP_PKEY *key)
{
	char nc[TLSGATE_NAMES_MAX * (TLSGATE_NAME_MAX + 16) + 16] = "critical";
	size_t at = strlen(nc);
	X509 *x;

	for (size_t i = 0; i < cfg->n_names; i++)
		at += (size_t)snprintf(nc + at, sizeof(nc) - at, ",permitted;DNS:%s", cfg->names[i]);
	x = cert_new("aisb session CA", key, NULL);
	if (x && cert_ext(x, NULL, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") &&
	    cert_ext(x, NULL, NID_key_usage, "critical,keyCertSign,cRLSign") &&
	    cert_ext(x, NULL, NID_subject_key_identifier, "hash") &&
	    cert_ext(x, NULL, NID_name_constraints, nc) && X509_sign(x, key, EVP_sha256()) > 0)
		return x;
	X509_free(x);
	return NULL;
}

/* A leaf for @name: its own P-256 key, subjectAltName dNSName=@name, serverAuth only. */
static int leaf_new(struct tlsgate_leaf *l, const char *name, X509 *ca, EVP_PKEY *ca_key)
{
	char san[TLSGATE_NAME_MAX + 8];

	snprintf(l->name, sizeof(l->name), "%s", name);
	snprintf(san, sizeof(san), "DNS:%s", name);
	l->key = key_new();
	l->cert = l->key ? cert_new(name, l->key, ca) : NULL;
	if (l->cert && cert_ext(l->cert, ca, NID_basic_constraints, "critical,CA:FALSE") &&
	    cert_ext(l->cert, ca, NID_key_usage, "critical,digitalSignature") &&
	    cert_ext(l->cert, ca, NID_ext_key_usage, "serverAuth") &&
	    cert_ext(l->cert, ca, NID_subject_alt_name, san) &&
	    cert_ext(l->cert, ca, NID_authority_key_identifier, "keyid:always") &&
	    X509_sign(l->cert, ca_key, EVP_sha256()) > 0)
		return 0;
	return -EPROTO;
}

/* Every file in a caller's SSL_CERT_DIR, read now (a by-directory lookup would open files at
 * the first verification, after confinement). Return: how many loaded. */
static int store_load_dir(X509_STORE *st, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int loaded = 0, seen = 0;
	char path[4096];

	if (!d)
		return 0;
	while ((e = readdir(d)) && seen++ < CERT_DIR_FILES_MAX) {
		if (e->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path))
			continue;
		if (X509_STORE_load_file(st, path) == 1)
			loaded++;
	}
	closedir(d);
	ERR_clear_error(); /* files in it that hold no certificate */
	return loaded;
}

/* The host trust store, read in full now: OpenSSL's default file (or the caller's SSL_CERT_FILE)
 * and the caller's SSL_CERT_DIR if set. X509_STORE_set_default_paths() is not used because it
 * adds a by-directory lookup that opens files lazily, at verification time (killed by the
 * filter after confinement); the default directory holds the same roots as the default file on
 * Debian (update-ca-certificates writes both). */
static X509_STORE *store_load(char *why, size_t why_len)
{
	const char *file = hostenv_get(X509_get_default_cert_file_env());
	const char *dir = hostenv_get(X509_get_default_cert_dir_env());
	X509_STORE *st = X509_STORE_new();
	int loaded = 0;

	if (!st)
		return NULL;
	if (!file)
		file = X509_get_default_cert_file();
	if (X509_STORE_load_file(st, file) == 1)
		loaded++;
	ERR_clear_error();
	if (dir)
		loaded += store_load_dir(st, dir);
	if (loaded == 0) {
		snprintf(why, why_len, "no upstream trust store: cannot read certificates from '%s'%s%s%s "
			 "(install ca-certificates, or set SSL_CERT_FILE)", file, dir ? " nor '" : "",
			 dir ? dir : "", dir ? "'" : "");
		X509_STORE_free(st);
		return NULL;
	}
	return st;
}

/* The SNI callback's per-connection state: SSL_set_app_data() of the client's SSL points at it. */
static int sni_check(SSL *s, int *al, void *arg)
{
	struct tlsgate_sni *chk = SSL_get_app_data(s);
	const char *sni = SSL_get_servername(s, TLSEXT_NAMETYPE_host_name);
	char shown[64];
	size_t i;

	(void)arg;
	if (sni && strcasecmp(sni, chk->name) == 0)
		return SSL_TLSEXT_ERR_OK;
	/* the sandbox's bytes, shown bounded and printable only */
	for (i = 0; sni && sni[i] && i < sizeof(shown) - 1; i++)
		shown[i] = sni[i] > 0x20 && sni[i] < 0x7f && sni[i] != '\'' ? sni[i] : '?';
	shown[i] = '\0';
	if (sni)
		snprintf(chk->reason, sizeof(chk->reason), "client SNI '%s' is not %s", shown, chk->name);
	else
		snprintf(chk->reason, sizeof(chk->reason), "client sent no SNI (expected %s)", chk->name);
	*al = SSL_AD_UNRECOGNIZED_NAME;
	return SSL_TLSEXT_ERR_ALERT_FATAL;
}

/* http/1.1 when the client offers it; otherwise no ALPN at all (RFC 7301 3.2 lets a server
 * ignore the extension): the client then speaks HTTP/1.1, the only thing the keyed stream
 * reads, or fails at its first h2 frame — it is never told that h2 was accepted. */
static int alpn_select(SSL *s, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
		       unsigned int inlen, void *arg)
{
	(void)s;
	(void)arg;
	for (unsigned i = 0; i < inlen; i += 1u + in[i])
		if (in[i] == 8 && i + 9 <= inlen && memcmp(in + i + 1, "http/1.1", 8) == 0) {
			*out = in + i + 1;
			*outlen = 8;
			return SSL_TLSEXT_ERR_OK;
		}
	return SSL_TLSEXT_ERR_NOACK;
}

static SSL_CTX *server_ctx_new(void)
{
	SSL_CTX *c = SSL_CTX_new(TLS_server_method());

	if (!c)
		return NULL;
	/* TLS 1.2 at least; no renegotiation, no session tickets or cache (nothing to resume) */
	if (SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION) != 1 || SSL_CTX_set_num_tickets(c, 0) != 1) {
		SSL_CTX_free(c);
		return NULL;
	}
	SSL_CTX_set_options(c, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_tlsext_servername_callback(c, sni_check);
	SSL_CTX_set_alpn_select_cb(c, alpn_select, NULL);
	return c;
}

/* Towards the endpoint: the peer verified against @store (taken), TLS 1.2 at least, ALPN
 * http/1.1; the name (SNI and SSL_set1_host) is set per connection. */
static SSL_CTX *client_ctx_new(X509_STORE *store)
{
	SSL_CTX *c = SSL_CTX_new(TLS_client_method());

	if (!c) {
		X509_STORE_free(store);
		return NULL;
	}
	SSL_CTX_set_cert_store(c, store);
	SSL_CTX_set_verify(c, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_options(c, SSL_OP_NO_RENEGOTIATION);
	if (SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_set_alpn_protos(c, alpn_http11, sizeof(alpn_http11) - 1) != 0) {
		SSL_CTX_free(c);
		return NULL;
	}
	return c;
}

int tlsgate_client_ssl_setup(SSL *s, const char *name)
{
	if (SSL_set_tlsext_host_name(s, name) != 1 || SSL_set1_host(s, name) != 1)
		return -ENOMEM;
	SSL_set_hostflags(s, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	return 0;
}

const struct tlsgate_leaf *tlsgate_leaf_find(const struct tlsgate_tls *tls, const char *name)
{
	for (size_t i = 0; i < tls->n_leaves; i++)
		if (strcasecmp(tls->leaves[i].name, name) == 0)
			return &tls->leaves[i];
	return NULL;
}

int tlsgate_server_ssl_setup(SSL *s, const struct tlsgate_leaf *leaf, struct tlsgate_sni *chk)
{
	chk->name = leaf->name;
	chk->reason[0] = '\0';
	if (SSL_use_certificate(s, leaf->cert) != 1 || SSL_use_PrivateKey(s, leaf->key) != 1 ||
	    SSL_set_app_data(s, chk) != 1)
		return -ENOMEM;
	return 0;
}

/* Steps @a and @b against each other through a BIO pair until both finished their handshake,
 * then one byte each way and close_notify. Return: true when it all worked. */
static bool warm_pair(SSL *a, SSL *b)
{
	BIO *ba = NULL, *bb = NULL;
	unsigned char byte = 'x';
	int done = 0;

	if (BIO_new_bio_pair(&ba, 0, &bb, 0) != 1)
		return false;
	SSL_set_bio(a, ba, ba);
	SSL_set_bio(b, bb, bb);
	for (int i = 0; i < 64 && done != 3; i++) {
		if (!(done & 1) && SSL_do_handshake(a) == 1)
			done |= 1;
		if (!(done & 2) && SSL_do_handshake(b) == 1)
			done |= 2;
	}
	if (done != 3 || SSL_write(a, &byte, 1) != 1 || SSL_read(b, &byte, 1) != 1 ||
	    SSL_write(b, &byte, 1) != 1 || SSL_read(a, &byte, 1) != 1)
		return false;
	(void)SSL_shutdown(a);
	(void)SSL_shutdown(b);
	return true;
}

/* A throwaway handshake in memory, TLS 1.3 and then 1.2, between a server SSL made as the relay
 * makes them and a client trusting only @ca: every algorithm a handshake uses is fetched from
 * the providers now, before confinement (OpenSSL 3 fetches lazily, at first use). */
static bool warm_up(struct tlsgate_tls *tls, X509 *ca)
{
	X509_STORE *st = X509_STORE_new();
	SSL_CTX *cc = st ? client_ctx_new(st) : NULL;
	bool ok = cc != NULL;

	if (cc)
		ok = X509_STORE_add_cert(st, ca) == 1;
	for (int v = 0; ok && v < 2; v++) {
		SSL *srv = SSL_new(tls->server), *cl = SSL_new(cc);
		struct tlsgate_sni chk;

		ok = srv && cl && tlsgate_server_ssl_setup(srv, &tls->leaves[0], &chk) == 0 &&
		     tlsgate_client_ssl_setup(cl, tls->leaves[0].name) == 0 &&
		     SSL_set_max_proto_version(cl, v ? TLS1_2_VERSION : TLS1_3_VERSION) == 1;
		SSL_set_accept_state(srv);
		SSL_set_connect_state(cl);
		ok = ok && warm_pair(cl, srv);
		SSL_free(srv);
		SSL_free(cl);
	}
	SSL_CTX_free(cc);
	ERR_clear_error();
	return ok;
}

static void tls_free(struct tlsgate_tls *t)
{
	if (!t)
		return;
	SSL_CTX_free(t->server);
	SSL_CTX_free(t->client);
	for (size_t i = 0; i < t->n_leaves; i++) {
		X509_free(t->leaves[i].cert);
		EVP_PKEY_free(t->leaves[i].key);
	}
	free(t);
}

static char *pem_of(X509 *x)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data, *out = NULL;
	long n;

	if (b && PEM_write_bio_X509(b, x) == 1 && (n = BIO_get_mem_data(b, &data)) > 0 && n < TLSGATE_PEM_MAX &&
	    (out = malloc((size_t)n + 1))) {
		memcpy(out, data, (size_t)n);
		out[n] = '\0';
	}
	BIO_free(b);
	return out;
}

/* libssl and its providers: the libraries (dlopen: util/dl-ssl.c), the configuration file and
 * the default provider now, while files can still be opened. */
static int ssl_load(char *why, size_t why_len)
{
	static struct dl_lib *const libs[] = { &dl_libcrypto, &dl_libx509, &dl_libssl };

	for (size_t i = 0; i < ELEMENTSOF(libs); i++)
		if (dl_open(libs[i]) < 0) {
			snprintf(why, why_len, "tlsgate: cannot load %s: %s (install %s)", libs[i]->soname,
				 libs[i]->error, libs[i]->package);
			return -ELIBACC;
		}
	if (OPENSSL_init_ssl(OPENSSL_INIT_LOAD_CONFIG, NULL) != 1 || !OSSL_PROVIDER_load(NULL, "default")) {
		why_ssl(why, why_len, "cannot initialise libssl");
		return -ELIBACC;
	}
	return 0;
}

/* The CA and the leaves; the CA key is freed here, before anything of the sandbox runs. */
static int make_certs(struct tlsgate_tls *t, const struct tlsgate_config *cfg, X509 **ca, char *why, size_t why_len)
{
	EVP_PKEY *ca_key = key_new();
	int r = -EPROTO;

	*ca = ca_key ? ca_new(cfg, ca_key) : NULL;
	if (*ca) {
		for (r = 0; r == 0 && t->n_leaves < cfg->n_names; t->n_leaves++)
			r = leaf_new(&t->leaves[t->n_leaves], cfg->names[t->n_leaves], *ca, ca_key);
	}
	EVP_PKEY_free(ca_key);
	if (r < 0)
		why_ssl(why, why_len, "cannot make the session CA");
	return r;
}

struct tlsgate_tls *tlsgate_tls_new(const struct tlsgate_config *cfg, char **ca_pem, char *why, size_t why_len)
{
	struct tlsgate_tls *t;
	X509_STORE *store;
	X509 *ca = NULL;

	why[0] = '\0';
	if (cfg->n_names == 0 || cfg->n_names > TLSGATE_NAMES_MAX) {
		snprintf(why, why_len, "tlsgate: %zu endpoint names (1 to %d)", cfg->n_names, TLSGATE_NAMES_MAX);
		return NULL;
	}
	for (size_t i = 0; i < cfg->n_names; i++)
		if (!cfg->names[i] || !is_dns_name(cfg->names[i])) {
			snprintf(why, why_len, "tlsgate: endpoint name '%.64s' is not a DNS name",
				 cfg->names[i] ? cfg->names[i] : "");
			return NULL;
		}
	if (ssl_load(why, why_len) < 0 || !(t = calloc(1, sizeof(*t))))
		return NULL;
	store = store_load(why, why_len);
	t->server = server_ctx_new();
	t->client = store ? client_ctx_new(store) : NULL;
	if (!t->server || !t->client || make_certs(t, cfg, &ca, why, why_len) < 0)
		goto fail;
	if (!warm_up(t, ca) || !(*ca_pem = pem_of(ca))) {
		snprintf(why, why_len, "tlsgate: the handshake test in memory failed");
		goto fail;
	}
	X509_free(ca);
	return t;
fail:
	if (!why[0])
		why_ssl(why, why_len, "tlsgate: cannot set up TLS");
	X509_free(ca);
	tls_free(t);
	return NULL;
}
