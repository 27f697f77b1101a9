// SPDX-License-Identifier: GPL-2.0-or-later
/* cache.c — a build's names and its cache: the content tag, the pins it is recorded under, and
 * the lookup that makes a second build of the same inputs run nothing (build/pipeline-internal.h)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "build/pipeline-internal.h"
#include "rootfs/image.h"
#include "rootfs/ref.h"
#include "rootfs/store.h"
#include "util/log.h"
#include "util/util.h"

/* "NAME" or "org/NAME" → "localhost/NAME": a built image has no registry, and a docker.io name
 * would be re-resolved upstream when its pin ages (podman does the same). Caller frees. */
static char *local_name(const char *tag)
{
	const char *slash = strchr(tag, '/');
	size_t n = slash ? (size_t)(slash - tag) : 0;
	char *r;

	if (slash && (memchr(tag, '.', n) || memchr(tag, ':', n) || (n == 9 && strncmp(tag, "localhost", 9) == 0)))
		return strdup(tag);
	if (asprintf(&r, "localhost/%s", tag) < 0)
		return NULL;
	return r;
}

int build_pin_as(struct store *s, const struct store_ref *pin, const char *refstr, char **canonical)
{
	struct oci_ref ref;
	struct store_ref copy = *pin;
	int r = oci_ref_parse(refstr, &ref);

	if (r < 0)
		return log_error_errno(r, "'%s' is not an image name", refstr);
	copy.name = ref.name;
	copy.resolved_at = (int64_t)time(NULL);
	r = store_ref_write(s, &copy);
	if (r >= 0 && canonical) {
		*canonical = strdup(ref.name);
		if (!*canonical)
			r = log_error_errno(-ENOMEM, "%m");
	}
	oci_ref_done(&ref);
	return r;
}

static bool pin_is_complete(struct store *s, const struct store_ref *pin)
{
	_cleanup_free_ char *p = NULL;
	struct stat st;

	if (!pin->rootfs_id || !pin->digest || !store_has_blob(s, pin->digest))
		return false;
	p = store_rootfs_path(s, pin->rootfs_id);
	return p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int build_names(const struct build_tag_input *in, const char *name, char tag[65], char **cache_ref, char **tag_local)
{
	if (build_tag(in, tag) < 0 || asprintf(cache_ref, BUILD_CACHE_PREFIX "%s", tag) < 0) {
		*cache_ref = NULL;
		return -ENOMEM;
	}
	if (name && !(*tag_local = local_name(name)))
		return -ENOMEM;
	return 0;
}

int build_cache_hit(struct store *s, const char *cache_ref, const char *tag_local)
{
	_cleanup_free_ char *final = NULL;
	struct store_ref pin = { 0 };
	int r = 0;

	if (image_find_pin(s, cache_ref, &pin) == 0 && pin_is_complete(s, &pin)) {
		log_info("cache hit: %s (nothing to build)", cache_ref);
		r = tag_local ? build_pin_as(s, &pin, tag_local, &final) : 0;
		if (r >= 0) {
			printf("%s\n", final ? final : pin.name);
			r = 1;
		}
	}
	store_ref_done(&pin);
	return r;
}
