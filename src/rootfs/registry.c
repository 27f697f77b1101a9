// SPDX-License-Identifier: GPL-2.0-or-later
/* registry.c — registry v2 client: token flow, basic auth, TLS, retries, streaming into the store */
#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <openssl/evp.h>

#include "rootfs/curl-dl.h"
#include "rootfs/registry-internal.h"
#include "util/log.h"
#include "util/sha256.h"
#include "util/util.h"

#define MANIFEST_ACCEPT                                                                                        \
	"Accept: " OCI_MT_INDEX ", " DOCKER_MT_LIST ", " OCI_MT_MANIFEST ", " DOCKER_MT_MANIFEST
#define HEADER_MAX 8192
#define CA_MAX (1u << 20)
#define REGISTRY_BLOB_MAX (16ULL << 30) /* one layer; the descriptor's size is enforced exactly */

/* ---- WWW-Authenticate ---- */

void registry_challenge_done(struct registry_challenge *c)
{
	if (!c)
		return;
	free(c->scheme);
	free(c->realm);
	free(c->service);
	free(c->scope);
	memset(c, 0, sizeof(*c));
}

int registry_challenge_parse(const char *h, struct registry_challenge *c)
{
	const char *p = h;
	size_t n;

	memset(c, 0, sizeof(*c));
	if (!h || strlen(h) > HEADER_MAX)
		return -EINVAL;
	while (*p == ' ' || *p == '\t')
		p++;
	for (n = 0; p[n] && p[n] != ' ' && p[n] != '\t'; n++)
		if (!isalpha((unsigned char)p[n]))
			return -EINVAL;
	if (n == 0)
		return -EINVAL;
	c->scheme = strndup(p, n);
	if (!c->scheme)
		return -ENOMEM;
	for (char *s = c->scheme; *s; s++)
		*s = (char)tolower((unsigned char)*s);
	p += n;
	for (;;) {
		char key[32];
		size_t k = 0;
		_cleanup_free_ char *val = NULL;
		size_t vn = 0;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (!*p)
			break;
		while (isalnum((unsigned char)*p) || *p == '_' || *p == '-') {
			if (k + 1 >= sizeof(key))
				goto bad;
			key[k++] = (char)tolower((unsigned char)*p++);
		}
		key[k] = 0;
		while (*p == ' ')
			p++;
		if (k == 0 || *p != '=')
			goto bad;
		p++;
		while (*p == ' ')
			p++;
		val = malloc(strlen(p) + 1);
		if (!val) {
			registry_challenge_done(c);
			return -ENOMEM;
		}
		if (*p == '"') {
			p++;
			while (*p && *p != '"') {
				if (*p == '\\' && p[1])
					p++;
				val[vn++] = *p++;
			}
			if (*p != '"')
				goto bad;
			p++;
		} else {
			while (*p && *p != ',' && *p != ' ')
				val[vn++] = *p++;
		}
		val[vn] = 0;
		while (*p == ' ')
			p++;
		if (*p && *p != ',')
			goto bad;
		if (streq(key, "realm") && !c->realm)
			c->realm = TAKE_PTR(val);
		else if (streq(key, "service") && !c->service)
			c->service = TAKE_PTR(val);
		else if (streq(key, "scope") && !c->scope)
			c->scope = TAKE_PTR(val);
	}
	if (streq(c->scheme, "bearer") && !c->realm)
		goto bad;
	return 0;
bad:
	registry_challenge_done(c);
	return -EINVAL;
}

/* ---- credentials ---- */

/* The host of "host", "host:port", "[v6]" or "[v6]:port" (without port and brackets) into @out.
 * Return: false when empty, too long or malformed. */
static bool split_host(const char *hp, size_t n, char *out, size_t size)
{
	const char *end = hp + n, *h = hp, *he;

	if (n == 0)
		return false;
	if (*hp == '[') {
		he = memchr(hp, ']', n);
		if (!he || (he + 1 < end && he[1] != ':'))
			return false;
		h = hp + 1;
	} else {
		he = memchr(hp, ':', n);
		if (!he)
			he = end;
	}
	if (he == h || (size_t)(he - h) >= size)
		return false;
	for (const char *p = h; p < he; p++)
		if (!isalnum((unsigned char)*p) && *p != '.' && *p != '-' && *p != ':' && *p != '_')
			return false;
	memcpy(out, h, (size_t)(he - h));
	out[he - h] = 0;
	return true;
}

bool registry_may_send_credentials(const char *registry_host, bool tls_verify, const char *realm,
				   const char **why)
{
	char rh[256], th[256];
	const char *auth, *aend;
	bool https, same;

	*why = "the realm is not an http(s) URL";
	if (!realm || !registry_host)
		return false;
	if (strncasecmp(realm, "https://", 8) == 0)
		https = true, auth = realm + 8;
	else if (strncasecmp(realm, "http://", 7) == 0)
		https = false, auth = realm + 7;
	else
		return false;
	aend = auth + strcspn(auth, "/?#");
	/* "https://registry.example@evil.example/" reaches evil.example: never guess */
	*why = "the realm URL names a user or an unreadable host";
	if (memchr(auth, '@', (size_t)(aend - auth)) || memchr(auth, '\\', (size_t)(aend - auth)))
		return false;
	if (!split_host(auth, (size_t)(aend - auth), th, sizeof(th)) ||
	    !split_host(registry_host, strlen(registry_host), rh, sizeof(rh)))
		return false;
	same = strcasecmp(rh, th) == 0;
	if (same && https)
		return true;
	if (same) {
		*why = "plain http while TLS is verified for the registry (only --tls-verify=false allows it)";
		return !tls_verify;
	}
	if (!https) {
		*why = "plain http to another host";
		return false;
	}
	*why = "TLS verification is off (--tls-verify=false covers the registry, not an auth server on another host)";
	return tls_verify;
}

int registry_token_parse(const char *body, size_t len, char **token)
{
	json_object *o, *v;
	int r = -EINVAL;

	*token = NULL;
	if (!body || len > (1u << 20))
		return -EINVAL;
	o = json_tokener_parse(body);
	if (!o)
		return -EINVAL;
	if (json_object_is_type(o, json_type_object) &&
	    (json_object_object_get_ex(o, "token", &v) || json_object_object_get_ex(o, "access_token", &v)) &&
	    json_object_is_type(v, json_type_string) && json_object_get_string_len(v) > 0 &&
	    json_object_get_string_len(v) < 65536) {
		*token = strdup(json_object_get_string(v));
		r = *token ? 0 : -ENOMEM;
	}
	json_object_put(o);
	return r;
}

static int b64_decode(const char *in, char **out)
{
	size_t n = strlen(in);
	_cleanup_free_ unsigned char *buf = NULL;
	int k;

	if (n == 0 || n % 4 || n > 16384)
		return -EINVAL;
	buf = malloc(n / 4 * 3 + 1);
	if (!buf)
		return -ENOMEM;
	k = EVP_DecodeBlock(buf, (const unsigned char *)in, (int)n);
	if (k < 0)
		return -EINVAL;
	if (in[n - 1] == '=')
		k--;
	if (in[n - 2] == '=')
		k--;
	buf[k] = 0;
	if (memchr(buf, 0, (size_t)k))
		return -EINVAL;
	*out = (char *)TAKE_PTR(buf);
	return 0;
}

int registry_auth_lookup(const char *json, const char *registry, char **user, char **pass)
{
	json_object *o = json_tokener_parse(json), *auths, *e = NULL, *v;
	char key[300];
	const char *keys[3];
	size_t nk = 0;
	_cleanup_free_ char *dec = NULL;
	char *colon;
	int r = -ENOENT;

	*user = *pass = NULL;
	if (!o)
		return -EINVAL;
	keys[nk++] = registry;
	snprintf(key, sizeof(key), "https://%s", registry);
	keys[nk++] = key;
	if (streq(registry, "docker.io"))
		keys[nk++] = "https://index.docker.io/v1/";
	if (!json_object_object_get_ex(o, "auths", &auths) || !json_object_is_type(auths, json_type_object))
		goto out;
	for (size_t i = 0; i < nk && !e; i++)
		if (!json_object_object_get_ex(auths, keys[i], &e))
			e = NULL;
	if (!e || !json_object_object_get_ex(e, "auth", &v) || !json_object_is_type(v, json_type_string))
		goto out;
	r = b64_decode(json_object_get_string(v), &dec);
	if (r < 0)
		goto out;
	colon = strchr(dec, ':');
	if (!colon) {
		r = -EINVAL;
		goto out;
	}
	*colon = 0;
	*user = strdup(dec);
	*pass = strdup(colon + 1);
	r = (*user && *pass) ? 0 : -ENOMEM;
	if (r < 0) {
		free(*user);
		free(*pass);
		*user = *pass = NULL;
	}
	explicit_bzero(colon + 1, strlen(colon + 1));
out:
	json_object_put(o);
	return r;
}

/* ---- the client ---- */


unsigned registry_requests(const struct registry *r)
{
	return r->requests;
}

static void secret_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

void registry_free(struct registry *r)
{
	if (!r)
		return;
	if (r->h)
		curl_easy_cleanup(r->h);
	free(r->registry);
	free(r->host);
	free(r->repo);
	free(r->mount_from);
	secret_free(r->user);
	secret_free(r->pass);
	secret_free(r->token);
	free(r->ca);
	free(r);
}

static int load_cert_dir(struct registry *r, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char *buf = NULL;
	size_t len = 0;

	if (!d)
		return log_error_errno(-errno, "cannot open --cert-dir '%s': %m", dir);
	while ((de = readdir(d))) {
		_cleanup_free_ char *data = NULL;
		size_t n = 0, l = strlen(de->d_name);
		char *nb;
		if (l < 5 || !streq(de->d_name + l - 4, ".crt"))
			continue;
		if (read_file_at(dirfd(d), de->d_name, CA_MAX, &data, &n) < 0 || len + n + 2 > CA_MAX)
			continue;
		nb = realloc(buf, len + n + 2);
		if (!nb)
			break;
		buf = nb;
		memcpy(buf + len, data, n);
		len += n;
		buf[len++] = '\n';
		buf[len] = 0;
	}
	closedir(d);
	if (!buf) {
		return log_error("--cert-dir '%s' holds no *.crt file", dir), -ENOENT;
	}
	r->ca = buf;
	r->ca_len = len;
	return 0;
}

int registry_open(const struct oci_ref *ref, const struct registry_opts *o, struct registry **out)
{
	struct registry *r = calloc(1, sizeof(*r));
	int k;

	if (!r)
		return log_error_errno(-ENOMEM, "%m");
	r->o = *o;
	if (r->o.retries <= 0)
		r->o.retries = 3;
	r->scheme = "https";
	r->registry = strdup(ref->registry);
	r->host = strdup(oci_ref_api_host(ref));
	r->repo = strdup(ref->repository);
	if (curl_dl_load() < 0) {
		registry_free(r);
		return -ELIBACC;
	}
	r->h = curl_easy_init();
	if (!r->registry || !r->host || !r->repo || !r->h) {
		registry_free(r);
		return log_error_errno(-ENOMEM, "cannot initialise libcurl");
	}
	if (o->cert_dir && (k = load_cert_dir(r, o->cert_dir)) < 0) {
		registry_free(r);
		return k;
	}
	/* Credentials: the first auth file that names this registry. Never printed. */
	for (size_t i = 0; o->auth_files && o->auth_files[i]; i++) {
		_cleanup_free_ char *json = NULL;
		if (read_file_at(AT_FDCWD, o->auth_files[i], 1 << 20, &json, NULL) < 0)
			continue;
		k = registry_auth_lookup(json, ref->registry, &r->user, &r->pass);
		explicit_bzero(json, strlen(json));
		if (k == 0) {
			log_debug("using credentials for %s from '%s'", ref->registry, o->auth_files[i]);
			break;
		}
		if (k == -EINVAL)
			log_warn("ignoring malformed auth file '%s'", o->auth_files[i]);
	}
	*out = r;
	return 0;
}

struct body {
	char *buf;
	size_t len, cap, max;
	bool overflow;
	struct store_blob_writer *w;
	int werr;
	struct registry *r;
	long status;
};

struct headers {
	char *www_auth;
	char *content_type;
};

static void headers_reset(struct headers *h)
{
	free(h->www_auth);
	free(h->content_type);
	h->www_auth = h->content_type = NULL;
}

char *registry_header_value(const char *line, size_t n, const char *name)
{
	size_t k = strlen(name);
	const char *v, *end = line + n;
	if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
		return NULL;
	v = line + k + 1;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
		end--;
	return strndup(v, (size_t)(end - v));
}

static size_t on_header(char *line, size_t size, size_t n, void *ud)
{
	struct headers *h = ud;
	size_t len = size * n;
	char *v;

	if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
		headers_reset(h); /* a new response (after a redirect or 100) */
		return len;
	}
	if (len > HEADER_MAX)
		return len;
	if (!h->www_auth && (v = registry_header_value(line, len, "WWW-Authenticate")))
		h->www_auth = v;
	else if (!h->content_type && (v = registry_header_value(line, len, "Content-Type")))
		h->content_type = v;
	return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
	struct body *b = ud;
	size_t len = size * n;

	curl_easy_getinfo(b->r->h, CURLINFO_RESPONSE_CODE, &b->status);
	if (b->w && b->status == 200) {
		int k = store_blob_write(b->w, data, len);
		if (k < 0) {
			b->werr = k;
			return 0; /* aborts the transfer */
		}
		return len;
	}
	/* manifests and error bodies: bounded, in memory */
	if (b->len + len > b->max) {
		b->overflow = true;
		return 0;
	}
	if (b->len + len + 1 > b->cap) {
		size_t cap = (b->len + len + 1) * 2;
		char *nb = realloc(b->buf, cap);
		if (!nb)
			return 0;
		b->buf = nb;
		b->cap = cap;
	}
	memcpy(b->buf + b->len, data, len);
	b->len += len;
	b->buf[b->len] = 0;
	return len;
}

struct progress {
	const char *what;
	struct timespec last;
};

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ut, curl_off_t un)
{
	struct progress *p = ud;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if ((now.tv_sec - p->last.tv_sec) * 1000 + (now.tv_nsec - p->last.tv_nsec) / 1000000 < 100)
		return 0;
	p->last = now;
	if (dltotal > 0)
		fprintf(stderr, "\r\033[K%.19s  %6.1f / %6.1f MB", p->what, (double)dlnow / 1e6, (double)dltotal / 1e6);
	else
		fprintf(stderr, "\r\033[K%.19s  %6.1f MB", p->what, (double)dlnow / 1e6);
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void registry_curl_setup(struct registry *r, const char *url)
{
	CURL *h = r->h;
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	/* Blob GETs are redirected to storage hosts (S3, CDNs). Credentials and the bearer token
	 * never follow a redirect to another host, port or scheme: libcurl >= 7.83 strips both the
	 * basic auth and a custom Authorization header then unless CURLOPT_UNRESTRICTED_AUTH is set
	 * (CVE-2018-1000007, CVE-2022-27776), which is spelled out here; tests/e2e/images.bats
	 * checks it against a second server. An https request is never redirected to plain http. */
	curl_easy_setopt(h, CURLOPT_UNRESTRICTED_AUTH, 0L);
	curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, strncmp(url, "https:", 6) == 0 ? "https" : "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 15L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "aisb/" PACKAGE_VERSION);
	/* never the ambient *_proxy variables: aisb reads its environment in one place */
	curl_easy_setopt(h, CURLOPT_PROXY, r->o.proxy ? r->o.proxy : "");
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, r->o.tls_verify ? 1L : 0L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, r->o.tls_verify ? 2L : 0L);
	if (r->ca) {
		struct curl_blob blob = { .data = r->ca, .len = r->ca_len, .flags = CURL_BLOB_NOCOPY };
		curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
	}
}

static bool curl_is_tls_error(CURLcode c)
{
	return c == CURLE_SSL_CONNECT_ERROR || c == CURLE_PEER_FAILED_VERIFICATION || c == CURLE_SSL_CACERT_BADFILE ||
	       c == CURLE_SSL_CERTPROBLEM || c == CURLE_SSL_ISSUER_ERROR;
}

static bool curl_is_transient(CURLcode c)
{
	return c == CURLE_COULDNT_CONNECT || c == CURLE_PARTIAL_FILE || c == CURLE_RECV_ERROR ||
	       c == CURLE_SEND_ERROR || c == CURLE_OPERATION_TIMEDOUT || c == CURLE_GOT_NOTHING ||
	       c == CURLE_HTTP2 || c == CURLE_HTTP2_STREAM;
}

static int fetch_token(struct registry *r, const struct registry_challenge *ch)
{
	_cleanup_free_ char *url = NULL, *scope = NULL;
	char *svc = NULL, *sc = NULL;
	struct body b = { .max = 1 << 20, .r = r };
	struct headers hd = { 0 };
	const char *why = NULL;
	bool creds = false;
	CURLcode c;
	int ret;

	assert(ch->realm); /* registry_challenge_parse() refuses a bearer challenge without one */
	if (strncmp(ch->realm, "https://", 8) != 0 && strncmp(ch->realm, "http://", 7) != 0)
		return log_error("registry %s sent a token realm that is not an http(s) URL", r->host), -EACCES;
	if (r->user) {
		creds = registry_may_send_credentials(r->host, r->o.tls_verify, ch->realm, &why);
		if (!creds) {
			/* the origin only: a realm's path and query are the registry's to choose */
			const char *host = strstr(ch->realm, "://") + 3;
			log_warn("not sending the stored credentials for %s to its token server '%.*s': %s; asking "
				 "for an anonymous token", r->registry, (int)(host - ch->realm + (ptrdiff_t)strcspn(host, "/?#")),
				 ch->realm, why);
		}
	}
	if (asprintf(&scope, "repository:%s:%s", r->repo, r->push ? "pull,push" : "pull") < 0)
		return -ENOMEM;
	sc = curl_easy_escape(r->h, scope, 0);
	svc = ch->service ? curl_easy_escape(r->h, ch->service, 0) : NULL;
	if (r->mount_from) {
		/* a cross-repository mount also reads the source repository (a second scope) */
		_cleanup_free_ char *from = NULL;
		char *fe;
		if (asprintf(&from, "repository:%s:pull", r->mount_from) < 0)
			from = NULL;
		fe = from ? curl_easy_escape(r->h, from, 0) : NULL;
		if (!fe || asprintf(&url, "%s%sscope=%s&scope=%s%s%s", ch->realm, strchr(ch->realm, '?') ? "&" : "?",
				    sc ?: "", fe, svc ? "&service=" : "", svc ?: "") < 0)
			url = NULL;
		curl_free(fe);
	} else if (asprintf(&url, "%s%sscope=%s%s%s", ch->realm, strchr(ch->realm, '?') ? "&" : "?", sc ?: "",
			    svc ? "&service=" : "", svc ?: "") < 0)
		url = NULL;
	curl_free(sc);
	curl_free(svc);
	if (!url)
		return -ENOMEM;
	registry_curl_setup(r, url);
	if (creds) {
		curl_easy_setopt(r->h, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
		curl_easy_setopt(r->h, CURLOPT_USERNAME, r->user);
		curl_easy_setopt(r->h, CURLOPT_PASSWORD, r->pass);
	}
	curl_easy_setopt(r->h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(r->h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(r->h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(r->h, CURLOPT_HEADERDATA, &hd);
	r->requests++;
	c = curl_easy_perform(r->h);
	curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &b.status);
	headers_reset(&hd);
	if (c != CURLE_OK) {
		free(b.buf);
		return log_error("cannot get a token from %s's auth server: %s", r->host, curl_easy_strerror(c)), -EACCES;
	}
	if (b.status == 401 || b.status == 403) {
		free(b.buf);
		return log_error("registry %s refused %s for a %s token of '%s'%s%s", r->host,
				 creds ? "the stored credentials" : "anonymous access", r->push ? "push" : "pull", r->repo,
				 why && !creds ? ": the credentials were withheld because of " : "",
				 why && !creds ? why : ""), -EACCES;
	}
	if (b.status != 200 || !b.buf) {
		free(b.buf);
		return log_error("registry %s: token request failed (HTTP %ld)", r->host, b.status), -EACCES;
	}
	secret_free(r->token);
	r->token = NULL;
	ret = registry_token_parse(b.buf, b.len, &r->token);
	secret_free(b.buf);
	if (ret == -ENOMEM)
		return log_error_errno(ret, "%m");
	if (ret < 0)
		return log_error("registry %s: token response has no token", r->host), -EACCES;
	return 0;
}

/* One authenticated GET with retries. @w non-NULL streams a 200 body into the blob writer. */
static int do_get(struct registry *r, const char *path, const char *accept, struct body *b,
		  char **content_type, const char *what)
{
	bool auth_tried = false;
	int attempt = 0;

	for (;;) {
		_cleanup_free_ char *url = NULL, *authz = NULL;
		struct curl_slist *hdrs = NULL;
		struct headers hd = { 0 };
		struct progress pg = { .what = what };
		CURLcode c;

		if (asprintf(&url, "%s://%s/v2/%s", r->scheme, r->host, path) < 0)
			return -ENOMEM;
		registry_curl_setup(r, url);
		if (accept)
			hdrs = curl_slist_append(hdrs, accept);
		if (registry_curl_auth(r, &hdrs, &authz) < 0) {
			curl_slist_free_all(hdrs);
			return -ENOMEM;
		}
		curl_easy_setopt(r->h, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(r->h, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(r->h, CURLOPT_WRITEDATA, b);
		curl_easy_setopt(r->h, CURLOPT_HEADERFUNCTION, on_header);
		curl_easy_setopt(r->h, CURLOPT_HEADERDATA, &hd);
		if (r->o.progress && b->w) {
			curl_easy_setopt(r->h, CURLOPT_NOPROGRESS, 0L);
			curl_easy_setopt(r->h, CURLOPT_XFERINFOFUNCTION, on_progress);
			curl_easy_setopt(r->h, CURLOPT_XFERINFODATA, &pg);
		}
		if (b->w) {
			/* bigger reads than curl's 16 KiB default: fewer callbacks into the digest,
			 * the file and the unpack queue */
			curl_easy_setopt(r->h, CURLOPT_BUFFERSIZE, 256L << 10);
			if (store_blob_reset(b->w) == -ESPIPE) {
				/* a streamed unpack has the first bytes: the caller starts over */
				log_debug("%s: the download broke mid-stream", what);
				return -EAGAIN;
			}
		}
		b->len = 0;
		b->status = 0;
		b->werr = 0;
		b->overflow = false;
		r->requests++;
		c = curl_easy_perform(r->h);
		curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &b->status);
		curl_slist_free_all(hdrs);
		if (authz)
			explicit_bzero(authz, strlen(authz));
		if (r->o.progress && b->w)
			fprintf(stderr, "\r\033[K");

		if (c == CURLE_OK && b->status == 200) {
			if (content_type) {
				*content_type = TAKE_PTR(hd.content_type);
			}
			headers_reset(&hd);
			return 0;
		}
		if (b->werr == -ECANCELED) { /* the caller stopped this download (store_blob_cancel()) */
			headers_reset(&hd);
			return -ECANCELED;
		}
		if (b->werr == -EFBIG) {
			headers_reset(&hd);
			return log_error("%s: the registry sent more bytes than the descriptor's size: refused", what),
			       -EBADMSG;
		}
		if (b->overflow) {
			headers_reset(&hd);
			return log_error("%s: response larger than %zu bytes: refused", what, b->max), -E2BIG;
		}
		if (c != CURLE_OK && curl_is_tls_error(c)) {
			headers_reset(&hd);
			if (registry_transfer_error(r, c, what) == 1)
				continue;
			return -EPROTO;
		}
		if (c == CURLE_OK && b->status == 401 && !auth_tried) {
			int k;
			auth_tried = true;
			k = registry_authenticate(r, hd.www_auth);
			headers_reset(&hd);
			if (k < 0)
				return k;
			continue;
		}
		headers_reset(&hd);
		if (c == CURLE_OK && (b->status == 401 || b->status == 403))
			return log_error("registry %s denied access to '%s'%s", r->registry, r->repo,
					 r->user ? " with the stored credentials" : " (no credentials found)"), -EACCES;
		if (c == CURLE_OK && b->status == 404)
			return -ENOENT;
		if (++attempt < r->o.retries &&
		    ((c != CURLE_OK && curl_is_transient(c)) || (c == CURLE_OK && (b->status == 429 || b->status >= 500)))) {
			long ms = 250L << (attempt - 1);
			log_debug("%s: %s, retrying in %ld ms", what,
				  c != CURLE_OK ? curl_easy_strerror(c) : "server error", ms);
			sleep_ms(ms);
			continue;
		}
		if (c == CURLE_COULDNT_CONNECT || c == CURLE_COULDNT_RESOLVE_HOST)
			return log_error("cannot reach registry %s: %s", r->host, curl_easy_strerror(c)), -ECONNREFUSED;
		if (c == CURLE_PARTIAL_FILE)
			return log_error("%s: download truncated (after %d attempts): refused", what, attempt), -EBADMSG;
		if (c != CURLE_OK)
			return log_error("%s: %s", what, curl_easy_strerror(c)), -EIO;
		return log_error("%s: registry %s answered HTTP %ld", what, r->host, b->status), -EIO;
	}
}

int registry_get_manifest(struct registry *r, const char *reference, char **buf, size_t *len, char **media_type,
			  char **digest)
{
	_cleanup_free_ char *path = NULL, *ct = NULL, *what = NULL;
	struct body b = { .max = OCI_JSON_MAX, .r = r };
	char hex[SHA256_HEX_SIZE];
	int k;

	if (asprintf(&path, "%s/manifests/%s", r->repo, reference) < 0 ||
	    asprintf(&what, "manifest %s/%s:%s", r->registry, r->repo, reference) < 0)
		return log_error_errno(-ENOMEM, "%m");
	k = do_get(r, path, MANIFEST_ACCEPT, &b, &ct, what);
	if (k == -ENOENT)
		log_error("%s/%s: no manifest '%s' on the registry", r->registry, r->repo, reference);
	if (k < 0) {
		free(b.buf);
		return k;
	}
	if (!b.buf) {
		b.buf = strdup("");
		if (!b.buf)
			return -ENOMEM;
	}
	k = sha256_hex(b.buf, b.len, hex);
	if (k < 0) {
		free(b.buf);
		/* a missing libcrypto was said once by dl_load(), with its package */
		return k == -ELIBACC ? k : log_error_errno(k, "%s: SHA-256 failed", what);
	}
	if (asprintf(digest, "sha256:%s", hex) < 0) {
		free(b.buf);
		return -ENOMEM;
	}
	if (oci_digest_is_valid(reference) && !streq(reference, *digest)) {
		log_error("%s: content hashes to %s: refused", what, *digest);
		free(*digest);
		*digest = NULL;
		free(b.buf);
		return -EBADMSG;
	}
	/* "application/json; charset=utf-8" and the like: keep the type only */
	if (ct) {
		char *semi = strchr(ct, ';');
		if (semi)
			*semi = 0;
	}
	*media_type = TAKE_PTR(ct);
	*buf = b.buf;
	*len = b.len;
	return 0;
}

int registry_fetch_blob_into(struct registry *r, const struct oci_descriptor *d, struct store_blob_writer *w)
{
	_cleanup_free_ char *path = NULL;
	struct body b = { .max = 1 << 16, .r = r, .w = w };
	int k;

	if (d->size < 0 || (uint64_t)d->size > REGISTRY_BLOB_MAX)
		return log_error("blob %s: declared size %lld is over the 16 GiB cap: refused", d->digest,
				 (long long)d->size), -E2BIG;
	if (asprintf(&path, "%s/blobs/%s", r->repo, d->digest) < 0)
		return log_error_errno(-ENOMEM, "%m");
	k = do_get(r, path, NULL, &b, NULL, d->digest);
	free(b.buf);
	/* a foreign layer's urls (Windows base layers, licensed content) are not followed: only the
	 * registry is asked, the host the network policy and the credentials are for; the image
	 * spec makes them a place the blob MAY be downloaded from, never the only one */
	if (k == -ENOENT && d->has_urls)
		log_error("blob %s is missing on registry %s: it is a foreign layer whose manifest lists other "
			  "URLs for it, and aisb fetches layers from the registry only (upload the blob to the "
			  "registry, or pull the image from a registry that has it)", d->digest, r->registry);
	else if (k == -ENOENT)
		log_error("blob %s is missing on registry %s", d->digest, r->registry);
	return k;
}

int registry_fetch_blob(struct registry *r, const struct oci_descriptor *d, struct store *s)
{
	_cleanup_close_ int lock = -1;
	struct store_blob_writer *w = NULL;
	int k;

	if (!oci_digest_is_valid(d->digest))
		return log_error("invalid digest in a descriptor"), -EINVAL;
	if (d->size < 0 || (uint64_t)d->size > REGISTRY_BLOB_MAX)
		return log_error("blob %s: declared size %lld is over the 16 GiB cap: refused", d->digest,
				 (long long)d->size), -E2BIG;
	/* One download per blob even with concurrent pulls: whoever holds the lock fetches. */
	lock = store_lock(s, "blob", d->digest + 7, false);
	if (lock < 0)
		return log_error_errno(lock, "cannot lock blob %s: %m", d->digest);
	if (store_has_blob(s, d->digest))
		return 0;
	k = store_blob_begin(s, d->digest, d->size, &w);
	if (k < 0)
		return k;
	k = registry_fetch_blob_into(r, d, w);
	if (k < 0) {
		store_blob_abort(w);
		return k;
	}
	return store_blob_commit(w, NULL);
}

/* ---- request helpers shared with push.c (registry-internal.h) ---- */

int registry_curl_auth(struct registry *r, struct curl_slist **hdrs, char **authz)
{
	if (r->token) {
		struct curl_slist *n;
		if (asprintf(authz, "Authorization: Bearer %s", r->token) < 0) {
			*authz = NULL;
			return -ENOMEM;
		}
		n = curl_slist_append(*hdrs, *authz);
		if (!n)
			return -ENOMEM;
		*hdrs = n;
	} else if (r->use_basic && r->user) {
		curl_easy_setopt(r->h, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
		curl_easy_setopt(r->h, CURLOPT_USERNAME, r->user);
		curl_easy_setopt(r->h, CURLOPT_PASSWORD, r->pass);
	}
	return 0;
}

int registry_authenticate(struct registry *r, const char *www_auth)
{
	struct registry_challenge ch;
	int k;

	if (!www_auth || registry_challenge_parse(www_auth, &ch) < 0)
		return log_error("registry %s demands authentication without a usable challenge", r->host), -EACCES;
	if (streq(ch.scheme, "bearer")) {
		k = fetch_token(r, &ch);
		registry_challenge_done(&ch);
		return k;
	}
	if (streq(ch.scheme, "basic")) {
		registry_challenge_done(&ch);
		if (!r->user)
			return log_error("registry %s requires a login and no credentials for it were found "
					 "(looked in auth.json and ~/.docker/config.json)", r->registry), -EACCES;
		r->use_basic = true;
		return 0;
	}
	registry_challenge_done(&ch);
	return log_error("registry %s asks for an unsupported auth scheme", r->host), -EACCES;
}

int registry_transfer_error(struct registry *r, CURLcode c, const char *what)
{
	if (curl_is_tls_error(c)) {
		if (!r->o.tls_verify && streq(r->scheme, "https") && !r->tried_http) {
			/* --tls-verify=false: like skopeo, fall back to plain HTTP */
			r->scheme = "http";
			r->tried_http = true;
			return 1;
		}
		if (c == CURLE_PEER_FAILED_VERIFICATION || c == CURLE_SSL_CACERT_BADFILE || c == CURLE_SSL_ISSUER_ERROR)
			return log_error("the TLS certificate of registry %s is not trusted (%s): for a private CA "
					 "use --cert-dir DIR with its .crt file", r->host, curl_easy_strerror(c)), -EPROTO;
		return log_error("TLS handshake with registry %s failed (%s): a plain-HTTP registry needs "
				 "--tls-verify=false", r->host, curl_easy_strerror(c)), -EPROTO;
	}
	if (c == CURLE_COULDNT_CONNECT || c == CURLE_COULDNT_RESOLVE_HOST)
		return log_error("cannot reach registry %s: %s", r->host, curl_easy_strerror(c)), -ECONNREFUSED;
	return log_error("%s: %s", what, curl_easy_strerror(c)), -EIO;
}

bool registry_curl_is_transient(CURLcode c)
{
	return curl_is_transient(c);
}

void registry_backoff(int attempt)
{
	sleep_ms(250L << (attempt > 1 ? attempt - 1 : 0));
}
