// SPDX-License-Identifier: GPL-2.0-or-later
/* curl-dl.c — dlopen() of libcurl on first use (the loader is util/dl.c) */
#include <stdlib.h>

#include "rootfs/curl-dl.h"
#include "util/dl.h"

static struct curl_dl fns;

static const struct dl_sym syms[] = {
	{ "curl_easy_init", (void **)&fns.easy_init },
	{ "curl_easy_cleanup", (void **)&fns.easy_cleanup },
	{ "curl_easy_reset", (void **)&fns.easy_reset },
	{ "curl_easy_setopt", (void **)&fns.easy_setopt },
	{ "curl_easy_getinfo", (void **)&fns.easy_getinfo },
	{ "curl_easy_perform", (void **)&fns.easy_perform },
	{ "curl_easy_strerror", (void **)&fns.easy_strerror },
	{ "curl_easy_escape", (void **)&fns.easy_escape },
	{ "curl_free", (void **)&fns.free },
	{ "curl_slist_append", (void **)&fns.slist_append },
	{ "curl_slist_free_all", (void **)&fns.slist_free_all },
};

DL_DEFINE_LIB(dl_libcurl, "libcurl.so.4", "libcurl4", "to talk to a registry", "registry", "required", syms);

int curl_dl_load(void)
{
	return dl_load(&dl_libcurl);
}

const struct curl_dl *curl_dl_get(void)
{
	if (dl_libcurl.state <= 0)
		abort(); /* registry.c calls curl only after curl_dl_load() succeeded */
	return &fns;
}
