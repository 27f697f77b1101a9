/* SPDX-License-Identifier: GPL-2.0-or-later */
/* context.h — the build context: what COPY may take, and the content-hash tag of a build.
 *
 * context_scan() lists the context directory once (lstat only, no symlink followed, the ignore
 * file applied; an excluded directory is still walked so that '!' exceptions below it work).
 * context_select() is pure: the entries one COPY step takes (a named file or directory and all
 * below it; a wildcard matched component by component as Go's filepath.Match; "." the whole
 * context). context_hash_files() reads the contents of just those entries.
 *
 * build_tag() is pure: sha256 over a canonical serialisation of the builder, the base image's
 * manifest digest, the normalised recipe (cf_serialize), the build args (sorted), and for each
 * COPY step the entries it takes (path, type and permission bits, size, content sha256 or link
 * target). Modification times and owners are not inputs: they do not reach the image.
 */
#ifndef AISB_BUILD_CONTEXT_H
#define AISB_BUILD_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "build/ignore.h"

#define CTX_MAX_ENTRIES 200000u
#define CTX_MAX_DEPTH 64u
#define CTX_MAX_BYTES (16ull << 30) /* file contents hashed for one build */
#define BUILD_TAG_VERSION "aisb-build-tag-1"

struct ctx_entry {
	char *path;      /* relative to the context root, cleaned */
	mode_t mode;     /* type and permission bits, from lstat */
	uint64_t size;
	char *link;      /* symlink target, else NULL */
	char sha256[65]; /* regular files: content hash in hex once hashed, else "" */
};

struct build_context {
	struct ctx_entry *e;
	size_t n; /* sorted by path */
};

/* Reads .containerignore, else .dockerignore, from context @dirfd into @ig (empty when neither
 * exists). Logs on failure. */
int context_load_ignore(int dirfd, struct ignore *ig);

/* Lists the context under @dirfd with @ig applied. Return: 0, -EFBIG past CTX_MAX_ENTRIES or
 * CTX_MAX_DEPTH, -errno. Logs on failure. */
int context_scan(int dirfd, const struct ignore *ig, struct build_context *out);

void context_done(struct build_context *c);

/* Marks in @take (c->n bools, not cleared first) the entries that COPY @sources takes.
 * Return: 0, or -ENOENT with *missing set to the first source that matches nothing. Pure;
 * does not log. */
int context_select(const struct build_context *c, char *const *sources, bool *take, const char **missing);

/* Fills sha256 for each regular file marked in @take, reading through @dirfd without following
 * symlinks; fails for fifos, sockets and devices, for a file that changed type since the scan,
 * and when more than *budget bytes would be read (*budget is decreased). Logs on failure. */
int context_hash_files(int dirfd, struct build_context *c, const bool *take, uint64_t *budget);

struct build_tag_input {
	const char *builder;          /* "native" or "podman" */
	const char *base_digest;      /* "sha256:..." of the base image manifest */
	const char *recipe;           /* cf_serialize() output */
	size_t recipe_len;
	char *const *build_args;      /* "K=V" */
	const struct build_context *ctx;
	const bool *const *copies;    /* per COPY step, in recipe order: c->n bools */
	size_t n_copies;
};

/* The canonical serialisation the tag hashes (exposed for tests and `--dry-run`). Caller frees.
 * Return: 0, -EINVAL for a COPY entry not hashed yet, -ENOMEM. Does not log. */
int build_tag_serialize(const struct build_tag_input *in, char **out, size_t *len);

/* sha256 of build_tag_serialize() as 64 hex characters. Does not log. */
int build_tag(const struct build_tag_input *in, char hex[65]);

/* sha256 of @len bytes as 64 hex characters. Does not log. */
int build_sha256_hex(const void *data, size_t len, char hex[65]);

#endif
