// SPDX-License-Identifier: GPL-2.0-or-later
/* fuzz-bridge.c — the harness config bridges: the TOML subset, the JSON reader, the rewrites and
 * the merge, on host config bytes (docs/agents.md)
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agents/bridge-internal.h"
#include "util/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *no_env(const char *name)
{
	return strcmp(name, "K") == 0 ? "v" : NULL;
}

/* Every rewrite over @doc, and the merge of the result with @doc as the sandbox's copy. */
static void rewrite_all(json_object *doc)
{
	struct bridge_ctx c = { .host_home = "/home/u", .token_env = "AI_API_TOKEN", .thinking = "high",
				.project_dst = "/p", .get = no_env };
	struct bridge_result r = { .n_files = 0 };

	if (bridge_pi((json_object *[]){ doc, doc }, &c, &r) == 0)
		for (size_t i = 0; i < r.n_files; i++) {
			json_object *m = bridge_merge(r.files[i].doc, doc, r.files[i].doc);
			char *t = m ? bridge_json_format(m) : NULL;
			free(t);
			json_object_put(m);
		}
	bridge_result_done(&r);
	if (bridge_codex((json_object *[]){ doc }, &c, &r) == 0 && r.n_files) {
		char *t = bridge_toml_format(r.files[0].doc);
		free(t);
	}
	bridge_result_done(&r);
	(void)bridge_claude((json_object *[]){ doc, doc }, &c, &r);
	bridge_result_done(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), err[160];
	json_object *doc = NULL, *again = NULL;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	log_set_quiet(true);
	if (bridge_toml_parse(text, &doc, err, sizeof(err)) == 0) {
		/* what the writer makes of a parsed document reads back to the same document */
		char *out = bridge_toml_format(doc);
		if (out && bridge_toml_parse(out, &again, err, sizeof(err)) == 0) {
			if (json_object_equal(doc, again) != 1)
				abort();
			json_object_put(again);
		} else if (out)
			abort();
		free(out);
		rewrite_all(doc);
		json_object_put(doc);
	}
	doc = bridge_json_parse(text, size);
	if (doc) {
		rewrite_all(doc);
		json_object_put(doc);
	}
	free(text);
	return 0;
}
