/* SPDX-License-Identifier: GPL-2.0-or-later */
/* push-job.h — `aisb push REF DEST` after its flags: the pin looked up, its uncompressed layers
 * compressed when asked (build/recompress.h), the image sent (rootfs/push.h), its digest printed.
 *
 * It sits with the build because the compression on the way out is the build's layer codec;
 * src/cli/cmd-push.c parses the flags into a struct push_request. `aisb save` shares the pin
 * lookup (push_job_open_pin()).
 */
#ifndef AISB_BUILD_PUSH_JOB_H
#define AISB_BUILD_PUSH_JOB_H

#include "build/compress.h"
#include "rootfs/image.h"
#include "rootfs/store.h"

struct push_request {
	const char *ref;                   /* REF: an image in the store, as `aisb images` lists it */
	const char *dest;                  /* DEST: HOST[:PORT]/NAME[:TAG], checked here */
	enum layer_compression comp;       /* LAYER_COMP_GZIP/ZSTD, or LAYER_COMP_MAX: as stored */
	int level;                         /* resolved: layer_compression_level() (with @comp) */
	const struct image_opts *io;       /* the store and registry options, flags applied */
};

/**
 * push_job_open_pin() - the store and the pin @refstr names
 * @io: where the store is
 * @refstr: a user-typed reference (image_find_pin())
 * @s: the opened store (the caller frees it, also on failure)
 * @pin: the pin found (the caller frees it with store_ref_done())
 *
 * Return: 0, or an exit code (78: not a reference; 125: not in the store). Logs on failure.
 */
int push_job_open_pin(const struct image_opts *io, const char *refstr, struct store **s, struct store_ref *pin);

/**
 * push_job_run() - push what @req names and print the pushed manifest's digest on stdout
 * @req: the parsed request (the CLI owns it)
 *
 * Return: an exit code: 0, 78 (DEST is not a registry destination, a manifest that cannot take
 * the compression, the registry refused), 125. Logs on failure.
 */
int push_job_run(const struct push_request *req);

#endif
