/* SPDX-License-Identifier: GPL-2.0-or-later */
/* copy.h — execute a COPY step into the build's root tree.
 *
 * The native builder applies COPY itself (no sandbox needed: it only reads the context and writes
 * the build's tree) to the merged root of the build's overlay. Every destination path is resolved
 * inside that root with openat2(RESOLVE_IN_ROOT), so an absolute or ".." symlink in the image
 * points into the image, never to the host. Docker's rules: a directory source copies its
 * contents; a file source lands at DEST, or at DEST/NAME when DEST ends in '/' or is a directory;
 * missing parent directories are created 0755. Modes come from the context (or --chmod), owners
 * stay inside-root (one owner), symlinks are copied as links, a file keeps its mtime. Every
 * file is hashed again while it is copied and must match the hash the tag was computed from: a
 * context file that changed between the tag and the copy fails the build instead of producing a
 * mislabelled image.
 */
#ifndef AISB_BUILD_COPY_H
#define AISB_BUILD_COPY_H

#include <stdbool.h>

#include "build/containerfile.h"
#include "build/context.h"

/* Copies what COPY step @st takes (@take, from context_select(); files hashed by
 * context_hash_files()) from @ctx_fd into @root_fd. Return: 0, -ESTALE for a context file that
 * changed, -ENOTDIR/-EISDIR for a destination of the wrong type, -errno. Logs on failure. */
int copy_step(int ctx_fd, const struct build_context *ctx, const bool *take, const struct cf_step *st,
	      int root_fd);

/* Reads the regular file @path (absolute) inside @root_fd, at most @max bytes (-EFBIG past it),
 * NUL-terminated. Return: 0, -ENOENT, -errno. Does not log. */
int copy_read_file(int root_fd, const char *path, size_t max, char **out, size_t *len);

/* mkdir -p of @dir (absolute, cleaned) inside @root_fd, @mode for what is created (WORKDIR).
 * Return: an O_PATH fd of the directory, or -errno. Logs on failure. */
int copy_mkdir(int root_fd, const char *dir, mode_t mode);

/* Writes @len bytes to @path (absolute) inside @root_fd, replacing a file there, creating its
 * parents. Logs on failure. */
int copy_write_file(int root_fd, const char *path, const char *data, size_t len, mode_t mode);

#endif
