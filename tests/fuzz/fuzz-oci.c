// SPDX-License-Identifier: GPL-2.0-or-later
/* fuzz-oci.c — the image parsers: references, manifests/indexes (and platform choice), configs,
 * docker-archive manifest.json, WWW-Authenticate challenges, auth files, layer entry names
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rootfs/oci.h"
#include "rootfs/ref.h"
#include "rootfs/registry.h"
#include "rootfs/unpack.h"
#include "util/log.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	struct oci_ref ref;
	struct oci_manifest m;
	struct oci_image_config c;
	struct registry_challenge ch;
	char *a = NULL, *b = NULL;
	struct oci_docker_image *di;
	size_t n;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	log_set_quiet(true);
	if (oci_ref_parse(text, &ref) == 0)
		oci_ref_done(&ref);
	if (oci_manifest_parse(text, size, NULL, &m, NULL) == 0) {
		if (m.is_index) {
			(void)oci_index_choose(&m, "linux", "amd64", NULL, NULL);
			(void)oci_index_choose(&m, "linux", "arm64", "v8", "latest");
		}
		oci_manifest_done(&m);
	}
	if (oci_config_parse(text, size, &c) == 0)
		oci_config_done(&c);
	if (oci_docker_archive_parse(text, size, &di, &n) == 0)
		oci_docker_archive_done(di, n);
	if (registry_challenge_parse(text, &ch) == 0)
		registry_challenge_done(&ch);
	if (registry_auth_lookup(text, "127.0.0.1:5000", &a, &b) == 0) {
		free(a);
		free(b);
	}
	if (unpack_path_normalize(text, &a) == 0) {
		(void)unpack_whiteout_kind(a, &b);
		free(b);
		free(a);
	}
	free(text);
	return 0;
}
