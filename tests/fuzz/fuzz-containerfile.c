// SPDX-License-Identifier: GPL-2.0-or-later
/* fuzz-containerfile.c — the Containerfile parser and evaluator, word expansion, ignore files
 * also: ignore
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "build/containerfile.h"
#include "build/ignore.h"
#include "util/log.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char v1[] = "A=1", v2[] = "B=two words", v3[] = "EMPTY=";
	char *vars[] = { v1, v2, v3, NULL };
	char a1[] = "A=x", a2[] = "TAG=t";
	char *args[] = { a1, a2, NULL };
	struct containerfile cf;
	struct cf_recipe rc;
	struct cf_error err;
	struct ignore ig;
	char *text = malloc(size + 1);
	char **w = NULL;
	const char *why;
	unsigned bad;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	log_set_quiet(true);
	if (cf_parse(text, size, &cf, &err) == 0) {
		char *ser = cf_serialize(&cf, NULL);
		struct cf_base base = { .env = vars, .workdir = "/w", .user = "u" };
		free(ser);
		if (cf_resolve(&cf, NULL, &base, &rc, &err) == 0)
			cf_recipe_done(&rc);
		if (cf_resolve(&cf, args, NULL, &rc, &err) == 0)
			cf_recipe_done(&rc);
		cf_done(&cf);
	}
	if (size < 4096) {
		if (cf_words(text, vars, true, &w, &why) == 0)
			strv_free(w);
		if (cf_words(text, vars, false, &w, &why) == 0)
			strv_free(w);
		free(cf_path_clean(text, NULL));
	}
	if (ignore_parse(text, size, &ig, &bad) == 0) {
		(void)ignore_is_excluded(&ig, "a/b/c.txt");
		(void)ignore_is_excluded(&ig, "node_modules");
		if (ig.n > 0)
			(void)ignore_glob_match(ig.rules[0].pattern, "x/y", false);
		ignore_done(&ig);
	}
	free(text);
	return 0;
}
