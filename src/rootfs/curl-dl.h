/* SPDX-License-Identifier: GPL-2.0-or-later */
/* curl-dl.h — libcurl, loaded with dlopen() on first use.
 *
 * Linking libcurl (and its ~30 dependencies: ldap, krb5, nghttp2, ssh2, ...) into aisb cost
 * 17 ms on every start, pull or not (measured: an empty program 3.2 ms, the same with -lcurl
 * 20.7 ms; hyperfine -N, 40 runs). Only the registry client needs it, so it is loaded there.
 * registry.c calls curl through the macros below (curl_easy_setopt() is variadic, so it cannot
 * get a same-name stub like util/dl-archive.c); curl_dl_load() must have succeeded first.
 */
#ifndef AISB_ROOTFS_CURL_DL_H
#define AISB_ROOTFS_CURL_DL_H

#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

struct curl_dl {
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *);
	void (*easy_reset)(CURL *);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	CURLcode (*easy_perform)(CURL *);
	const char *(*easy_strerror)(CURLcode);
	char *(*easy_escape)(CURL *, const char *, int);
	void (*free)(void *);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
};

/* Loads libcurl.so.4 once. Return: 0 or -ELIBACC. Logs on failure (naming the package). */
int curl_dl_load(void);

/* The loaded functions; aborts if curl_dl_load() did not succeed (a programmer error). */
const struct curl_dl *curl_dl_get(void);

#define curl_easy_init() (curl_dl_get()->easy_init())
#define curl_easy_cleanup(h) (curl_dl_get()->easy_cleanup(h))
#define curl_easy_reset(h) (curl_dl_get()->easy_reset(h))
#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_easy_setopt(h, o, ...) (curl_dl_get()->easy_setopt((h), (o), __VA_ARGS__))
#define curl_easy_getinfo(h, i, ...) (curl_dl_get()->easy_getinfo((h), (i), __VA_ARGS__))
#define curl_easy_perform(h) (curl_dl_get()->easy_perform(h))
#define curl_easy_strerror(c) (curl_dl_get()->easy_strerror(c))
#define curl_easy_escape(h, s, n) (curl_dl_get()->easy_escape((h), (s), (n)))
#define curl_free(p) (curl_dl_get()->free(p))
#define curl_slist_append(l, s) (curl_dl_get()->slist_append((l), (s)))
#define curl_slist_free_all(l) (curl_dl_get()->slist_free_all(l))

#endif
