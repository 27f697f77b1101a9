// SPDX-License-Identifier: GPL-2.0-or-later
/* push.c — registry uploads: HEAD, cross-repository mount, monolithic blob upload, manifest PUT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rootfs/layout.h"
#include "rootfs/push.h"
#include "rootfs/registry-internal.h"
#include "util/log.h"
#include "util/sha256.h"
#include "util/util.h"

#define ERRBODY_MAX 512 /* the start of an error body, for the message */

struct resp {
	long status;
	char *location;
	char *www_auth;
	char *digest;   /* Docker-Content-Digest */
	char body[ERRBODY_MAX + 1];
	size_t body_len;
};

static void resp_reset(struct resp *rs)
{
	free(rs->location);
	free(rs->www_auth);
	free(rs->digest);
	memset(rs, 0, sizeof(*rs));
}

/* What a request sends: nothing, a buffer, or a store blob's fd. */
struct upload {
	const char *mem;
	int fd;
	uint64_t size, off;
	bool progress;
	const char *what;
	struct timespec last;
};

static size_t on_hdr(char *line, size_t size, size_t n, void *ud)
{
	struct resp *rs = ud;
	size_t len = size * n;
	char *v;

	if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
		/* a new response (after a 100 Continue or a redirect): forget the last one's */
		resp_reset(rs);
		return len;
	}
	if (len > 8192)
		return len;
	if (!rs->location && (v = registry_header_value(line, len, "Location")))
		rs->location = v;
	else if (!rs->www_auth && (v = registry_header_value(line, len, "WWW-Authenticate")))
		rs->www_auth = v;
	else if (!rs->digest && (v = registry_header_value(line, len, "Docker-Content-Digest")))
		rs->digest = v;
	return len;
}

static size_t on_data(char *data, size_t size, size_t n, void *ud)
{
	struct resp *rs = ud;
	size_t len = size * n, room = ERRBODY_MAX - rs->body_len;

	memcpy(rs->body + rs->body_len, data, len < room ? len : room);
	rs->body_len += len < room ? len : room;
	rs->body[rs->body_len] = 0;
	return len;
}

static size_t on_read(char *buf, size_t size, size_t n, void *ud)
{
	struct upload *up = ud;
	size_t want = size * n;
	uint64_t left = up->size - up->off;
	ssize_t k;

	if (want > left)
		want = (size_t)left;
	if (want == 0)
		return 0;
	if (up->mem) {
		memcpy(buf, up->mem + up->off, want);
		k = (ssize_t)want;
	} else {
		do
			k = pread(up->fd, buf, want, (off_t)up->off);
		while (k < 0 && errno == EINTR);
		if (k <= 0)
			return CURL_READFUNC_ABORT; /* a store blob shorter than its descriptor */
	}
	up->off += (uint64_t)k;
	return (size_t)k;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ultotal, curl_off_t ulnow)
{
	struct upload *up = ud;
	struct timespec now;

	(void)dt;
	(void)dn;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if ((now.tv_sec - up->last.tv_sec) * 1000 + (now.tv_nsec - up->last.tv_nsec) / 1000000 < 100)
		return 0;
	up->last = now;
	fprintf(stderr, "\r\033[K%.19s  %6.1f / %6.1f MB", up->what, (double)ulnow / 1e6,
		(double)(ultotal > 0 ? ultotal : (curl_off_t)up->size) / 1e6);
	return 0;
}

/* Is @url on the registry's own origin (scheme, host and port)? Upload locations elsewhere would
 * receive the credentials: refused. */
static bool same_origin(const struct registry *r, const char *url)
{
	size_t sl = strlen(r->scheme), hl = strlen(r->host);

	return strncasecmp(url, r->scheme, sl) == 0 && strncmp(url + sl, "://", 3) == 0 &&
	       strncasecmp(url + sl + 3, r->host, hl) == 0 && (url[sl + 3 + hl] == '/' || url[sl + 3 + hl] == 0);
}

/* One request with the registry's auth; @target is a path from the registry's root ("/v2/...")
 * or an absolute URL on its origin. A 401 is answered once (token or basic) and the request
 * repeated. Fills @rs. Return: 0 (any HTTP status), or -errno after logging. */
static int request(struct registry *r, const char *method, const char *target, const char *ctype,
		   struct upload *up, struct resp *rs, const char *what)
{
	bool auth_tried = false;
	/* a blob's PUT ends its upload session: push_blob() repeats POST and PUT together */
	bool repeatable = !up || up->mem;
	int attempt = 0;

	for (;;) {
		_cleanup_free_ char *url = NULL, *authz = NULL, *ct = NULL;
		struct curl_slist *hdrs = NULL;
		CURLcode c;
		int k = -EIO; /* set where it is returned; gcc with ASan cannot see that (-Wmaybe-uninitialized) */

		if (target[0] == '/' ? asprintf(&url, "%s://%s%s", r->scheme, r->host, target) < 0
				     : !(url = strdup(target)))
			return log_error_errno(-ENOMEM, "%m");
		resp_reset(rs);
		registry_curl_setup(r, url);
		/* no redirects on writes: a PUT's body and credentials go to the registry or nowhere */
		curl_easy_setopt(r->h, CURLOPT_FOLLOWLOCATION, 0L);
		hdrs = curl_slist_append(hdrs, "Expect:");
		if (ctype && asprintf(&ct, "Content-Type: %s", ctype) >= 0)
			hdrs = curl_slist_append(hdrs, ct);
		if (registry_curl_auth(r, &hdrs, &authz) < 0) {
			curl_slist_free_all(hdrs);
			return log_error_errno(-ENOMEM, "%m");
		}
		curl_easy_setopt(r->h, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(r->h, CURLOPT_HEADERFUNCTION, on_hdr);
		curl_easy_setopt(r->h, CURLOPT_HEADERDATA, rs);
		curl_easy_setopt(r->h, CURLOPT_WRITEFUNCTION, on_data);
		curl_easy_setopt(r->h, CURLOPT_WRITEDATA, rs);
		if (streq(method, "HEAD")) {
			curl_easy_setopt(r->h, CURLOPT_NOBODY, 1L);
		} else if (streq(method, "POST")) {
			curl_easy_setopt(r->h, CURLOPT_POST, 1L);
			curl_easy_setopt(r->h, CURLOPT_POSTFIELDS, "");
			curl_easy_setopt(r->h, CURLOPT_POSTFIELDSIZE, 0L);
		} else if (up) {
			up->off = 0;
			curl_easy_setopt(r->h, CURLOPT_UPLOAD, 1L);
			curl_easy_setopt(r->h, CURLOPT_READFUNCTION, on_read);
			curl_easy_setopt(r->h, CURLOPT_READDATA, up);
			curl_easy_setopt(r->h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)up->size);
			if (up->progress) {
				curl_easy_setopt(r->h, CURLOPT_NOPROGRESS, 0L);
				curl_easy_setopt(r->h, CURLOPT_XFERINFOFUNCTION, on_progress);
				curl_easy_setopt(r->h, CURLOPT_XFERINFODATA, up);
			}
		}
		r->requests++;
		c = curl_easy_perform(r->h);
		curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &rs->status);
		curl_slist_free_all(hdrs);
		if (authz)
			explicit_bzero(authz, strlen(authz));
		if (up && up->progress)
			fprintf(stderr, "\r\033[K");
		if (c != CURLE_OK && repeatable && registry_curl_is_transient(c) && ++attempt < r->o.retries) {
			log_debug("%s: %s, retrying", what, curl_easy_strerror(c));
			registry_backoff(attempt);
			continue;
		}
		if (c != CURLE_OK) {
			if (target[0] == '/' && (k = registry_transfer_error(r, c, what)) == 1)
				continue; /* --tls-verify=false: plain http, as pulls do */
			if (target[0] != '/')
				return log_error("%s: %s", what, curl_easy_strerror(c)), -EIO;
			return k;
		}
		if (rs->status == 401 && !auth_tried) {
			auth_tried = true;
			if ((k = registry_authenticate(r, rs->www_auth)) < 0)
				return k;
			continue;
		}
		if ((rs->status == 429 || rs->status >= 500) && repeatable && ++attempt < r->o.retries) {
			log_debug("%s: HTTP %ld, retrying", what, rs->status);
			registry_backoff(attempt);
			continue;
		}
		return 0;
	}
}

/* The registry's JSON error code and message, for a message: {"errors":[{"code":..,"message":..}]}
 * as the first ERRBODY_MAX bytes hold it, quoted characters only. */
static const char *reason(const struct resp *rs, char buf[160])
{
	const char *m = strstr(rs->body, "\"message\":\"");
	size_t n = 0;

	if (!m)
		return "";
	m += 11;
	buf[n++] = ':';
	buf[n++] = ' ';
	for (; *m && *m != '"' && n < 158; m++)
		buf[n++] = (*m >= ' ' && *m < 0x7f) ? *m : '?';
	buf[n] = 0;
	return buf;
}

static int http_failure(const struct registry *r, const struct resp *rs, const char *what)
{
	char why[160];

	if (rs->status == 401 || rs->status == 403)
		return log_error("registry %s denied push to '%s'%s (%s)", r->registry, r->repo,
				 r->user ? " with the stored credentials" : " (no credentials found)", what), -EACCES;
	if (rs->status == 429 || rs->status >= 500)
		return log_error("%s: registry %s answered HTTP %ld%s (after %d attempts)", what, r->host, rs->status,
				 reason(rs, why), r->o.retries), -EIO;
	return log_error("%s: registry %s answered HTTP %ld%s", what, r->host, rs->status, reason(rs, why)), -EIO;
}

/* Appends "digest=D" to an upload location (relative or on the registry's origin). */
static int upload_url(const struct registry *r, const char *loc, const char *digest, char **out)
{
	if (loc[0] != '/' && !same_origin(r, loc))
		return log_error("registry %s sent an upload location on another origin: refused (the credentials "
				 "go to the registry's origin only)", r->host), -EACCES;
	return asprintf(out, "%s%sdigest=%s%%3A%s", loc, strchr(loc, '?') ? "&" : "?", "sha256", digest + 7) < 0
		       ? log_error_errno(-ENOMEM, "%m")
		       : 0;
}

static int push_blob(struct registry *r, struct store *s, const struct oci_descriptor *d, struct push_stats *st)
{
	_cleanup_free_ char *path = NULL, *start = NULL, *url = NULL;
	_cleanup_close_ int fd = -1;
	struct resp rs = { 0 };
	struct upload up = { .fd = -1, .progress = r->o.progress, .what = d->digest };
	int k;

	fd = store_blob_open_desc(s, d);
	if (fd < 0)
		return fd;
	if (asprintf(&path, "/v2/%s/blobs/%s", r->repo, d->digest) < 0)
		return log_error_errno(-ENOMEM, "%m");
	if ((k = request(r, "HEAD", path, NULL, NULL, &rs, d->digest)) < 0)
		goto out;
	if (rs.status == 200) {
		st->present++;
		goto out;
	}
	if (rs.status != 404) {
		k = http_failure(r, &rs, d->digest);
		goto out;
	}
	if (r->mount_from ? asprintf(&start, "/v2/%s/blobs/uploads/?mount=sha256%%3A%s&from=%s", r->repo,
				     d->digest + 7, r->mount_from) < 0
			  : asprintf(&start, "/v2/%s/blobs/uploads/", r->repo) < 0)
		start = NULL;
	if (!start) {
		k = log_error_errno(-ENOMEM, "%m");
		goto out;
	}
	for (int attempt = 1;; attempt++) {
		free(url);
		url = NULL;
		if ((k = request(r, "POST", start, NULL, NULL, &rs, d->digest)) < 0)
			goto out;
		if (rs.status == 201 && r->mount_from) {
			st->mounted++;
			goto out;
		}
		if (rs.status != 202 || !rs.location) {
			k = http_failure(r, &rs, d->digest);
			goto out;
		}
		if ((k = upload_url(r, rs.location, d->digest, &url)) < 0)
			goto out;
		up.fd = fd;
		up.size = (uint64_t)d->size;
		if ((k = request(r, "PUT", url, "application/octet-stream", &up, &rs, d->digest)) < 0)
			goto out;
		if (rs.status == 201)
			break;
		if ((rs.status == 429 || rs.status >= 500) && attempt < r->o.retries) {
			log_debug("%s: upload answered HTTP %ld, starting it again", d->digest, rs.status);
			registry_backoff(attempt);
			continue;
		}
		k = http_failure(r, &rs, d->digest);
		goto out;
	}
	st->sent++;
	st->bytes += up.size;
out:
	resp_reset(&rs);
	return k;
}

int push_image(struct store *s, const struct store_ref *pin, const struct oci_ref *dest, const char *mount_from,
	       const char *manifest, size_t manifest_len, const struct registry_opts *o, struct push_stats *st)
{
	_cleanup_free_ char *buf = NULL, *path = NULL;
	struct registry *r = NULL;
	struct oci_manifest m = { 0 };
	struct upload up = { .fd = -1 };
	struct resp rs = { 0 };
	size_t len;
	int k;

	memset(st, 0, sizeof(*st));
	if (dest->transport != OCI_TRANSPORT_REGISTRY || !dest->tag)
		return log_error("push: '%s' is not a registry reference with a tag", dest->name), -EINVAL;
	if (manifest) {
		const char *why;
		char hex[SHA256_HEX_SIZE];
		if (!(buf = malloc(manifest_len + 1)))
			return log_error_errno(-ENOMEM, "%m");
		memcpy(buf, manifest, manifest_len);
		buf[manifest_len] = 0;
		len = manifest_len;
		if ((k = oci_manifest_parse(buf, len, NULL, &m, &why)) < 0)
			return log_error("%s: the manifest to push: %s", pin->name, why), k;
		if ((k = sha256_hex(buf, len, hex)) < 0)
			goto out;
		snprintf(st->digest, sizeof(st->digest), "sha256:%s", hex);
	} else {
		if ((k = layout_pin_manifest(s, pin, &buf, &len, &m)) < 0)
			return k;
		snprintf(st->digest, sizeof(st->digest), "%s", pin->digest);
	}
	if ((k = registry_open(dest, o, &r)) < 0)
		goto out;
	r->push = true;
	if (mount_from && !streq(mount_from, dest->repository) && !(r->mount_from = strdup(mount_from))) {
		k = log_error_errno(-ENOMEM, "%m");
		goto out;
	}
	/* layers first, config last, manifest at the end: a registry never holds a manifest whose
	 * blobs it lacks */
	for (size_t i = 0; i < m.n_layers; i++)
		if ((k = push_blob(r, s, &m.layers[i], st)) < 0)
			goto out;
	if ((k = push_blob(r, s, &m.config, st)) < 0)
		goto out;
	if (asprintf(&path, "/v2/%s/manifests/%s", r->repo, dest->tag) < 0) {
		k = log_error_errno(-ENOMEM, "%m");
		goto out;
	}
	up.mem = buf;
	up.size = len;
	if ((k = request(r, "PUT", path, m.media_type ? m.media_type : OCI_MT_MANIFEST, &up, &rs, dest->name)) < 0)
		goto out;
	if (rs.status != 201) {
		k = http_failure(r, &rs, dest->name);
		goto out;
	}
	if (rs.digest && !streq(rs.digest, st->digest)) {
		k = (log_error("%s: the registry stored the manifest as %s, not %s", dest->name, rs.digest, st->digest),
		     -EBADMSG);
		goto out;
	}
	k = 0;
out:
	if (r)
		st->requests = registry_requests(r);
	resp_reset(&rs);
	registry_free(r);
	oci_manifest_done(&m);
	return k;
}
