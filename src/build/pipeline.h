/* SPDX-License-Identifier: GPL-2.0-or-later */
/* pipeline.h — `aisb build` after its flags: the request the CLI fills, and the one call that
 * checks, previews or builds it.
 *
 * build_run() reads the recipe (the file, or the built-in one), parses and resolves it, makes the
 * network plan of --allow/--allow-file/--add-host, then either prints the recipe
 * (--print-containerfile), prints the steps (--dry-run), or builds: with podman
 * (build/podman-job.c: build, save, import) or natively (build/native-job.c: FROM through the
 * store, the steps on an overlay, one layer, commit). Both builders name the result by a content
 * hash of their inputs and run nothing on a cache hit (build/cache.c). Everything that can be
 * checked before the store is touched is checked first, so a bad recipe or entry fails with 78
 * and nothing is written. See docs/build.md.
 *
 * The CLI (src/cli/cmd-build.c) parses the flags, the environment (SOURCE_DATE_EPOCH, the
 * root-remap switch) and the context's recipe file into a struct build_request; nothing below
 * reads a flag.
 */
#ifndef AISB_BUILD_PIPELINE_H
#define AISB_BUILD_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "build/compress.h"
#include "rootfs/registry.h"

enum build_builder { BUILDER_NATIVE, BUILDER_PODMAN, BUILDER_MAX };

/* The image's times: `created` and the layer's mtimes (build_times() in build/native-job.c) */
enum build_time_from {
	TIME_DEFAULT,   /* created 0; what the build wrote gets mtime 0, the context's keep theirs */
	TIME_SDE,       /* SOURCE_DATE_EPOCH: created from it; later mtimes clamped to it */
	TIME_TIMESTAMP, /* --timestamp (podman's): created and every mtime from it */
	TIME_MAX
};

/* Latest accepted time: 9999-12-31T23:59:59Z, so that `created` stays 20 characters. */
#define BUILD_TIME_MAX 253402300799LL

/* The pin name of a build's cache entry: BUILD_CACHE_PREFIX + the build's 64-hex content hash
 * (build/cache.c). `aisb images` and the completion leave these internal entries out. */
#define BUILD_CACHE_PREFIX "localhost/aisb-build:"

struct build_request {
	const char *file;                  /* the Containerfile, or NULL: the built-in recipe */
	char *const *install;              /* --install: packages added to the built-in recipe */
	const char *tag;                   /* -t NAME, or NULL */
	char *const *build_args;           /* NAME=VALUE each */
	char *const *allow, *const *allow_files, *const *add_hosts; /* RUN's network (NULL: none) */
	const char *context;               /* the context directory (checked to be one) */
	enum build_builder builder;
	bool builder_explicit;             /* --builder given: no fallback to podman */
	bool print_containerfile;          /* print the recipe and stop; touches nothing */
	bool dry_run;                      /* check recipe and context, print the steps */
	/* FROM's --tls-verify, --cert-dir, --authfile, laid over the environment's (image_opts_init())
	 * for the native builder's pull: cert_dir replaces, auth_files go first; @reg_given: any was
	 * given (podman refuses them) */
	struct registry_opts reg;
	bool reg_given;
	/* a root caller's RUN steps may run as USERNS_ROOT_RUN_ID when the base can be idmapped
	 * (plan_root_remap_wanted(): off with AISB_TEST_NO_IDMAP=1) */
	bool root_remap;
	enum layer_compression comp;       /* the layer's compression (build/compress.h) */
	int comp_level;                    /* resolved: layer_compression_level() */
	enum build_time_from time_from;    /* where the image's times come from (docs/images.md) */
	int64_t timestamp;                 /* --timestamp or SOURCE_DATE_EPOCH; 0 otherwise */
};

/**
 * build_run() - check, preview or build what @req asks for
 * @req: the parsed request (the CLI owns it)
 *
 * Prints the recipe, the steps, or the built image's name on stdout; everything else on stderr.
 * Return: an exit code: 0, 78 (a bad recipe, context or entry), 77 (a policy that could not be
 * enforced), 125 (a failure). Logs on failure.
 */
int build_run(const struct build_request *req);

#endif
