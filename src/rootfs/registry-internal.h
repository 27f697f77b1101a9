/* SPDX-License-Identifier: GPL-2.0-or-later */
/* registry-internal.h — the registry client's state and request helpers, for the modules that
 * speak more of the distribution API than GET (push.c) and their tests.
 *
 * Everything that decides where credentials go stays in registry.c: registry_curl_setup() is
 * the one place a request's TLS, proxy, redirect and timeout options are set, and
 * registry_authenticate() the one place a 401 challenge is answered (token or basic).
 */
#ifndef AISB_ROOTFS_REGISTRY_INTERNAL_H
#define AISB_ROOTFS_REGISTRY_INTERNAL_H

#include "rootfs/curl-dl.h"
#include "rootfs/registry.h"

struct registry {
	CURL *h;
	char *registry; /* as named in the reference: the auth.json key */
	char *host;     /* where requests go */
	char *repo;
	const char *scheme;
	bool tried_http;
	char *user, *pass;
	char *token;
	bool use_basic;
	struct registry_opts o;
	char *ca;
	size_t ca_len;
	unsigned requests;
	bool push;        /* token requests ask for pull,push on repo */
	char *mount_from; /* and pull on this repository (cross-repository blob mounts), or NULL */
};

/* The value of header @name in the raw header @line of @n bytes (trimmed, malloc'd), or NULL
 * when the line is another header. Does not log. */
char *registry_header_value(const char *line, size_t n, const char *name);

/* Resets the handle and sets the URL and the options every request shares (TLS verification,
 * CA, proxy, redirects that never carry credentials to another origin, timeouts). Does not log. */
void registry_curl_setup(struct registry *r, const char *url);

/* Adds the credentials the last challenge asked for to the next request: a bearer token header
 * (appended to *hdrs, its text in *authz for the caller to wipe) or basic auth. Return: 0 or
 * -ENOMEM. Does not log. */
int registry_curl_auth(struct registry *r, struct curl_slist **hdrs, char **authz);

/* Answers a 401's WWW-Authenticate value @www_auth: fetches a token (scope from ->push and
 * ->mount_from) or switches to basic credentials. Return: 0 to retry the request, -EACCES.
 * Logs on failure. */
int registry_authenticate(struct registry *r, const char *www_auth);

/* Maps a failed transfer to a message and an errno: TLS problems name --cert-dir or
 * --tls-verify=false (and switch to plain http once when verification is off: then 1 is
 * returned and the caller retries), connection failures are -ECONNREFUSED. @what names the
 * object. Return: 1 (retry over http), or -errno. Logs unless it returns 1. */
int registry_transfer_error(struct registry *r, CURLcode c, const char *what);

/* Is @c a failure worth repeating (connection refused or reset, truncated, timeout)? */
bool registry_curl_is_transient(CURLcode c);

/* Sleeps before retry number @attempt (1, 2, ...): 250 ms, 500 ms, ... as pulls do. */
void registry_backoff(int attempt);

#endif
