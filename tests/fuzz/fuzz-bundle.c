// SPDX-License-Identifier: GPL-2.0-or-later
/* fuzz-bundle.c — the import's parsers of what a sandbox produced (workspace-internal.h): the
 * bundle header, git's listing of the sandbox's commits, a raw commit object and show-index
 * output. The input is copied to a buffer of exactly its size (the header parser and the
 * commit parser take a length, the listings a NUL-terminated string); whatever is accepted must
 * be self-consistent.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"
#include "workspace/workspace-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BASE "1111111111111111111111111111111111111111"
#define TIP "2222222222222222222222222222222222222222"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf, *str, tree[65], **chain = NULL, **set = NULL;
	struct ws_bundle b;
	const char *why, *msg;
	size_t mlen;
	int n;

	if (size > (1u << 20))
		return 0;
	buf = malloc(size ? size : 1);
	str = malloc(size + 1);
	if (!buf || !str) {
		free(buf);
		free(str);
		return 0;
	}
	memcpy(buf, data, size);
	memcpy(str, data, size);
	str[size] = 0;
	if (ws_bundle_parse(buf, size, BASE, &b, &why) == 0 &&
	    (b.pack_offset > size || strcmp(b.prereq, BASE) != 0 || strlen(b.tip) != 40))
		abort();
	n = ws_chain_check(str, BASE, TIP, &chain, &why);
	if (n > 0 && (strv_length(chain) != (size_t)n || strcmp(chain[n - 1], TIP) != 0 || n > WS_MAX_COMMITS))
		abort();
	strv_free(chain);
	if (ws_commit_parse(buf, size, tree, &msg, &mlen) == 0 &&
	    (strlen(tree) != 40 && strlen(tree) != 64 ? 1 : msg < buf || msg + mlen > buf + size || mlen > WS_MESSAGE_MAX))
		abort();
	n = ws_oidset_from_show_index(str, &set);
	for (int i = 1; i < n; i++)
		if (strcmp(set[i - 1], set[i]) > 0)
			abort();
	strv_free(set);
	free(buf);
	free(str);
	return 0;
}
