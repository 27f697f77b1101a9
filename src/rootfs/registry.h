/* SPDX-License-Identifier: GPL-2.0-or-later */
/* registry.h — a distribution-API-v2 client (libcurl) that fetches manifests and blobs.
 *
 * Talks HTTPS with verification on; plain HTTP only when the caller turned verification off
 * (`--tls-verify=false`, as skopeo and podman do). Auth: the anonymous bearer-token flow of
 * `WWW-Authenticate: Bearer realm=...,service=...,scope=...`, with basic credentials from the
 * first auth file that names the registry (containers' auth.json, Docker's config.json) when
 * there are any; a `Basic` challenge uses those credentials directly. Credentials and tokens live
 * only in memory and are never printed. Blobs stream into the store through its verifying writer;
 * transient failures (connection errors, truncated bodies, 429, 5xx) are retried with backoff.
 * No ambient proxy variable is read: the caller passes the proxy, if any.
 */
#ifndef AISB_ROOTFS_REGISTRY_H
#define AISB_ROOTFS_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

#include "rootfs/oci.h"
#include "rootfs/ref.h"
#include "rootfs/store.h"

struct registry_opts {
	bool tls_verify;       /* default true */
	const char *cert_dir;  /* *.crt files: CAs to trust instead of the system's */
	char **auth_files;     /* tried in order; missing files are skipped */
	const char *proxy;     /* NULL: none */
	bool progress;         /* draw a progress bar on stderr */
	int retries;           /* attempts per request; 0 means 3 */
};

struct registry;

/* Parsed `WWW-Authenticate` header. */
struct registry_challenge {
	char *scheme; /* "bearer" or "basic", lower-case */
	char *realm;
	char *service;
	char *scope;
};

/* Parses one challenge (scheme followed by comma-separated key="value" or key=token params).
 * Return: 0, -EINVAL when malformed, -ENOMEM. Does not log. */
int registry_challenge_parse(const char *header, struct registry_challenge *c);
void registry_challenge_done(struct registry_challenge *c);

/* Where the basic credentials for a registry may go with a token request (design in
 * docs/images.md, "Credentials"):
 *   - a realm on the registry's own host (any port): over https; over plain http only when the
 *     user turned TLS verification off for this registry (then the registry itself is spoken to
 *     over plain http too, so nothing new is exposed);
 *   - a realm on any other host: only over https with verification on (--tls-verify=false names
 *     one registry, not the auth servers it points at);
 *   - never to a realm URL with userinfo ("https://registry@evil/"), an unparsable host or a scheme
 *     other than http(s).
 * @registry_host is where registry requests go ("host[:port]", "[v6]:port"); @realm the URL of
 * the challenge. Return: true, or false with *why a static phrase ("plain http to another
 * host"). Pure, does not log. */
bool registry_may_send_credentials(const char *registry_host, bool tls_verify, const char *realm,
				   const char **why);

/* Extracts the token of a token-server response ({"token": ...} or {"access_token": ...}, at
 * most 64 KiB). *token is malloc'd. Return: 0, -EINVAL (no token, not JSON), -ENOMEM. Does not
 * log (never logs secrets). */
int registry_token_parse(const char *body, size_t len, char **token);

/* Looks up credentials for @host in auth.json/config.json text @json: "auths" keyed by host,
 * "https://host", or "https://index.docker.io/v1/" for docker.io. *user and *pass are malloc'd.
 * Return: 0, -ENOENT (no entry), -EINVAL (malformed). Does not log (never logs secrets). */
int registry_auth_lookup(const char *json, const char *registry, char **user, char **pass);

/* Creates a client for @ref's registry and repository. Logs on failure. */
int registry_open(const struct oci_ref *ref, const struct registry_opts *o, struct registry **out);
void registry_free(struct registry *r);

/* GETs the manifest or index @reference (tag or digest). *buf is the body (NUL-terminated),
 * *media_type the Content-Type, *digest the sha256 of the body (verified against @reference when
 * that is a digest). Return: 0, -ENOENT (unknown), -EACCES (auth), -ECONNREFUSED/-EHOSTUNREACH
 * (unreachable: the caller may fall back to a pin), other -errno. Logs on failure. */
int registry_get_manifest(struct registry *r, const char *reference, char **buf, size_t *len,
			  char **media_type, char **digest);

/* Downloads blob @d into @s unless present; verified against its digest and size.
 * Return: 0 or -errno. Logs on failure. */
int registry_fetch_blob(struct registry *r, const struct oci_descriptor *d, struct store *s);

/* Downloads blob @d into @w (begun by the caller, which commits or aborts it), with the retries
 * above. Return: 0, -EAGAIN when a retry was needed but @w's bytes already went to a streamed
 * unpack (store_blob_reset() said -ESPIPE), other -errno. Logs on failure. */
int registry_fetch_blob_into(struct registry *r, const struct oci_descriptor *d, struct store_blob_writer *w);

/* Number of HTTP requests made so far (for tests and -v). */
unsigned registry_requests(const struct registry *r);

#endif
