// SPDX-License-Identifier: GPL-2.0-or-later
/* dl.c — table-driven dlopen() of optional libraries */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#include "util/dl.h"
#include "util/log.h"

int dl_open(struct dl_lib *lib)
{
	void *h;

	if (lib->state)
		return lib->state > 0 ? 0 : -ELIBACC;
	lib->state = -1;
	/* RTLD_LOCAL: the library's names never interpose on ours or on another library's */
	h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(lib->error, sizeof(lib->error), "%s", dlerror());
		return -ELIBACC;
	}
	for (size_t i = 0; i < lib->n_syms; i++) {
		*lib->syms[i].slot = dlsym(h, lib->syms[i].name);
		if (!*lib->syms[i].slot) {
			snprintf(lib->error, sizeof(lib->error), "%s has no symbol '%s'", lib->soname,
				 lib->syms[i].name);
			for (size_t j = 0; j <= i; j++)
				*lib->syms[j].slot = NULL;
			dlclose(h);
			return -ELIBACC;
		}
	}
	lib->state = 1;
	return 0;
}

int dl_load(struct dl_lib *lib)
{
	bool first = lib->state == 0;
	int r = dl_open(lib);

	if (r < 0 && first)
		log_error("cannot load %s, needed %s: %s (apt-get install %s)", lib->soname, lib->purpose,
			  lib->error, lib->package);
	return r;
}
