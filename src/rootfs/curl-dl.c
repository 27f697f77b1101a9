// SPDX-License-Identifier: GPL-2.0-or-later
/* curl-dl.c — dlopen() of libcurl on first use */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>

#include "rootfs/curl-dl.h"
#include "util/log.h"

static struct curl_dl fns;
static int loaded; /* 0 not tried, 1 ok, -1 failed */

#define LOAD(field, sym)                                                                           \
	do {                                                                                       \
		*(void **)&fns.field = dlsym(h, sym);                                              \
		if (!fns.field) {                                                                  \
			log_error("libcurl.so.4 has no symbol '%s'", sym);                         \
			goto fail;                                                                 \
		}                                                                                  \
	} while (0)

int curl_dl_load(void)
{
	void *h;

	if (loaded)
		return loaded > 0 ? 0 : -ELIBACC;
	h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		log_error("cannot load libcurl.so.4, needed to talk to a registry: %s "
			  "(apt-get install libcurl4)", dlerror());
		goto fail;
	}
	LOAD(easy_init, "curl_easy_init");
	LOAD(easy_cleanup, "curl_easy_cleanup");
	LOAD(easy_reset, "curl_easy_reset");
	LOAD(easy_setopt, "curl_easy_setopt");
	LOAD(easy_getinfo, "curl_easy_getinfo");
	LOAD(easy_perform, "curl_easy_perform");
	LOAD(easy_strerror, "curl_easy_strerror");
	LOAD(easy_escape, "curl_easy_escape");
	LOAD(free, "curl_free");
	LOAD(slist_append, "curl_slist_append");
	LOAD(slist_free_all, "curl_slist_free_all");
	loaded = 1;
	return 0;
fail:
	loaded = -1;
	return -ELIBACC;
}

const struct curl_dl *curl_dl_get(void)
{
	if (loaded <= 0)
		abort(); /* registry.c calls curl only after curl_dl_load() succeeded */
	return &fns;
}
