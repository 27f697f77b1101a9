// SPDX-License-Identifier: GPL-2.0-or-later
/* push-job.c — push_job_run(): `aisb push` after its flags (build/push-job.h) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build/push-job.h"
#include "build/recompress.h"
#include "rootfs/push.h"
#include "rootfs/ref.h"
#include "util/log.h"
#include "util/util.h"

int push_job_open_pin(const struct image_opts *io, const char *refstr, struct store **s, struct store_ref *pin)
{
	int r;

	if (store_open(io->store_root, s) < 0)
		return AISB_EXIT_FAILED;
	r = image_find_pin(*s, refstr, pin);
	if (r == -EINVAL)
		return log_error("'%s' is not an image reference", refstr), AISB_EXIT_POLICY;
	if (r < 0)
		return log_error("no image '%s' in the store (aisb images lists them; aisb pull or aisb build makes "
				 "them)", refstr), AISB_EXIT_FAILED;
	return 0;
}

/* The repository of @pin on @dest's registry, for a cross-repository mount, or NULL. */
static char *mount_source(const struct store_ref *pin, const struct oci_ref *dest)
{
	struct oci_ref src;
	char *repo = NULL;

	if (oci_ref_parse(pin->name, &src) < 0)
		return NULL;
	if (src.transport == OCI_TRANSPORT_REGISTRY && streq(src.registry, dest->registry) &&
	    !streq(src.repository, dest->repository))
		repo = strdup(src.repository);
	oci_ref_done(&src);
	return repo;
}

/* The manifest to push instead of @pin's: its uncompressed layers compressed into new blobs,
 * named by a new manifest (*@man NULL when no layer needed it). Return: 0 or an exit code.
 * Logs on failure. */
static int recompressed(struct store *s, const struct store_ref *pin, const struct push_request *req, char **man,
			size_t *man_len)
{
	_cleanup_free_ char *pinman = NULL;
	size_t pinman_len = 0;
	unsigned n_comp = 0;
	int r;

	r = store_blob_read(s, pin->digest, OCI_JSON_MAX, &pinman, &pinman_len);
	if (r < 0)
		return log_error_errno(r, "%s: manifest %s is not in the store: %m", pin->name, pin->digest),
		       AISB_EXIT_FAILED;
	r = layer_recompress_manifest(s, pinman, pinman_len, req->comp, req->level, man, man_len, &n_comp);
	if (r < 0)
		return r == -EINVAL ? AISB_EXIT_POLICY : AISB_EXIT_FAILED;
	if (!req->io->quiet)
		log_info("%s: %u uncompressed layer(s) compressed with %s%s", pin->name, n_comp,
			 layer_compression_name(req->comp), n_comp ? "" : " (none was: the layers go as stored)");
	return 0;
}

/* @pin to @dest with @man (or its own manifest); prints the digest. Return: 0 or an exit code.
 * Logs on failure. */
static int push_send(struct store *s, const struct store_ref *pin, const struct oci_ref *dest, const char *man,
		     size_t man_len, const struct image_opts *io)
{
	_cleanup_free_ char *from = mount_source(pin, dest);
	struct push_stats st;
	int r;

	r = push_image(s, pin, dest, from, man, man_len, &io->reg, &st);
	if (r < 0)
		return r == -EINVAL ? AISB_EXIT_POLICY : AISB_EXIT_FAILED;
	printf("%s\n", st.digest);
	if (!io->quiet)
		log_info("%s: pushed %s as %s: %u blob(s) sent (%.1f MB), %u already there, %u mounted from %s",
			 dest->name, pin->name, st.digest, st.sent, (double)st.bytes / 1e6, st.present, st.mounted,
			 from ? from : "-");
	log_debug("%s: %u registry request(s)", dest->name, st.requests);
	return 0;
}

int push_job_run(const struct push_request *req)
{
	struct store *s = NULL;
	struct store_ref pin = { 0 };
	struct oci_ref dest = { 0 };
	_cleanup_free_ char *man = NULL;
	size_t man_len = 0;
	int ex;

	if (oci_ref_parse(req->dest, &dest) < 0 || dest.transport != OCI_TRANSPORT_REGISTRY || dest.digest ||
	    streq(dest.registry, IMAGE_LOCAL_REGISTRY)) {
		log_error("'%s' is not a registry destination (HOST[:PORT]/NAME[:TAG], without a digest)", req->dest);
		ex = AISB_EXIT_POLICY;
		goto out;
	}
	ex = push_job_open_pin(req->io, req->ref, &s, &pin);
	if (ex == 0 && req->comp != LAYER_COMP_MAX)
		ex = recompressed(s, &pin, req, &man, &man_len);
	if (ex == 0)
		ex = push_send(s, &pin, &dest, man, man_len, req->io);
out:
	store_ref_done(&pin);
	oci_ref_done(&dest);
	store_free(s);
	return ex;
}
