// SPDX-License-Identifier: GPL-2.0-or-later
/* fuzz-registry.c — what a registry or its token server sends: WWW-Authenticate challenges
 * and the credential-scope decision on their realm, token responses, manifests and indexes (with
 * the platform choice), and the auth files that hold the credentials
 *
 * The input is one text; its first line is also used as the registry host and the rest as the
 * realm, so the scope decision sees hostile host and URL spellings together. The token and
 * manifest parsers get a buffer of exactly the input's size plus the NUL they require.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rootfs/oci.h"
#include "rootfs/registry.h"
#include "util/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct registry_challenge ch;
	struct oci_manifest m;
	char *text, *nl, *tok = NULL, *u = NULL, *p = NULL;
	const char *why;

	if (size > (1u << 20))
		return 0;
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	log_set_quiet(true);

	if (registry_challenge_parse(text, &ch) == 0) {
		if (ch.realm) {
			(void)registry_may_send_credentials("registry.example:5000", true, ch.realm, &why);
			(void)registry_may_send_credentials("[::1]:5000", false, ch.realm, &why);
		}
		registry_challenge_done(&ch);
	}
	if (registry_token_parse(text, size, &tok) == 0) {
		if (!tok || !*tok)
			abort(); /* a success always yields a token */
		free(tok);
	}
	if (oci_manifest_parse(text, size, NULL, &m, NULL) == 0) {
		if (m.is_index)
			(void)oci_index_choose(&m, "linux", "amd64", NULL, NULL);
		oci_manifest_done(&m);
	}
	if (registry_auth_lookup(text, "registry.example:5000", &u, &p) == 0) {
		if (!u || !p)
			abort();
		free(u);
		free(p);
	}
	nl = strchr(text, '\n');
	if (nl) {
		*nl = 0;
		(void)registry_may_send_credentials(text, size & 1, nl + 1, &why);
	}
	free(text);
	return 0;
}
