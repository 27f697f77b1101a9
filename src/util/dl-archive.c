// SPDX-License-Identifier: GPL-2.0-or-later
/* dl-archive.c — libarchive through dlopen(): one stub per function aisb calls
 *
 * Each stub has the library's own name and prototype (archive.h declares it, so the compiler
 * checks every line of the table against the real header), loads libarchive.so.13 on first use
 * and calls through. aisb is not linked with -larchive (11 ms off every start, see dl.h), and a
 * PIE executable exports none of these names, so nothing else binds to them. When the library
 * is missing, the constructors return NULL after one log line naming the package, and the other
 * functions (unreachable without an object from a constructor) return a failure value.
 */
#include <archive.h>
#include <archive_entry.h>

#include "util/dl.h"

/* F(return type, name, parameters, arguments, value returned when libarchive is missing);
 * V(name, parameters, arguments) for functions returning void. */
#define ARCHIVE_FUNCTIONS(F, V)                                                                    \
	/* reading layers and archives: rootfs/unpack.c, rootfs/image.c */                        \
	F(struct archive *, archive_read_new, (void), (), NULL)                                    \
	F(int, archive_read_free, (struct archive *a), (a), ARCHIVE_FATAL)                         \
	F(int, archive_read_support_filter_all, (struct archive *a), (a), ARCHIVE_FATAL)           \
	F(int, archive_read_support_filter_gzip, (struct archive *a), (a), ARCHIVE_FATAL)          \
	F(int, archive_read_support_filter_zstd, (struct archive *a), (a), ARCHIVE_FATAL)          \
	F(int, archive_read_support_filter_none, (struct archive *a), (a), ARCHIVE_FATAL)          \
	F(int, archive_read_support_format_tar, (struct archive *a), (a), ARCHIVE_FATAL)           \
	F(int, archive_read_support_format_gnutar, (struct archive *a), (a), ARCHIVE_FATAL)        \
	F(int, archive_read_open_fd, (struct archive *a, int fd, size_t block), (a, fd, block),    \
	  ARCHIVE_FATAL)                                                                           \
	F(int, archive_read_next_header, (struct archive *a, struct archive_entry **e), (a, e),    \
	  ARCHIVE_FATAL)                                                                           \
	F(int, archive_read_data_block,                                                            \
	  (struct archive *a, const void **buf, size_t *len, la_int64_t *off), (a, buf, len, off), \
	  ARCHIVE_FATAL)                                                                           \
	F(const char *, archive_error_string, (struct archive *a), (a), "libarchive is missing")   \
	/* streamed layers: rootfs/unpack.c's decompression and extraction stages */               \
	F(int, archive_read_support_format_raw, (struct archive *a), (a), ARCHIVE_FATAL)           \
	F(int, archive_read_open,                                                                  \
	  (struct archive *a, void *data, archive_open_callback *o, archive_read_callback *r,      \
	   archive_close_callback *c), (a, data, o, r, c), ARCHIVE_FATAL)                          \
	/* writing build layers: build/layer.c */                                                  \
	F(struct archive *, archive_write_new, (void), (), NULL)                                   \
	F(int, archive_write_set_format_pax_restricted, (struct archive *a), (a), ARCHIVE_FATAL)   \
	F(int, archive_write_set_bytes_in_last_block, (struct archive *a, int n), (a, n),          \
	  ARCHIVE_FATAL)                                                                           \
	F(int, archive_write_set_bytes_per_block, (struct archive *a, int n), (a, n),             \
	  ARCHIVE_FATAL)                                                                           \
	F(int, archive_write_open2,                                                                \
	  (struct archive *a, void *data, archive_open_callback *o, archive_write_callback *w,      \
	   archive_close_callback *c, archive_free_callback *f),                                   \
	  (a, data, o, w, c, f), ARCHIVE_FATAL)                                                    \
	F(int, archive_write_header, (struct archive *a, struct archive_entry *e), (a, e),         \
	  ARCHIVE_FATAL)                                                                           \
	F(la_ssize_t, archive_write_data, (struct archive *a, const void *buf, size_t len),        \
	  (a, buf, len), -1)                                                                       \
	F(int, archive_write_close, (struct archive *a), (a), ARCHIVE_FATAL)                       \
	/* compressing build layers: build/compress.c */                                           \
	F(int, archive_write_set_format_raw, (struct archive *a), (a), ARCHIVE_FATAL)              \
	F(int, archive_write_add_filter_zstd, (struct archive *a), (a), ARCHIVE_FATAL)             \
	F(int, archive_write_add_filter_gzip, (struct archive *a), (a), ARCHIVE_FATAL)             \
	F(int, archive_write_set_filter_option,                                                    \
	  (struct archive *a, const char *m, const char *o, const char *v), (a, m, o, v),          \
	  ARCHIVE_FATAL)                                                                           \
	F(int, archive_write_free, (struct archive *a), (a), ARCHIVE_FATAL)                        \
	/* entries */                                                                              \
	F(struct archive_entry *, archive_entry_new, (void), (), NULL)                             \
	V(archive_entry_free, (struct archive_entry *e), (e))                                      \
	F(mode_t, archive_entry_filetype, (struct archive_entry *e), (e), 0)                       \
	F(mode_t, archive_entry_perm, (struct archive_entry *e), (e), 0)                           \
	F(const char *, archive_entry_pathname, (struct archive_entry *e), (e), NULL)              \
	F(const char *, archive_entry_hardlink, (struct archive_entry *e), (e), NULL)              \
	F(const char *, archive_entry_symlink, (struct archive_entry *e), (e), NULL)               \
	F(la_int64_t, archive_entry_size, (struct archive_entry *e), (e), 0)                       \
	F(time_t, archive_entry_mtime, (struct archive_entry *e), (e), 0)                          \
	F(int, archive_entry_xattr_count, (struct archive_entry *e), (e), 0)                       \
	V(archive_entry_set_pathname, (struct archive_entry *e, const char *p), (e, p))            \
	V(archive_entry_set_filetype, (struct archive_entry *e, unsigned int t), (e, t))           \
	V(archive_entry_set_perm, (struct archive_entry *e, mode_t m), (e, m))                     \
	V(archive_entry_set_uid, (struct archive_entry *e, la_int64_t id), (e, id))                \
	V(archive_entry_set_gid, (struct archive_entry *e, la_int64_t id), (e, id))                \
	V(archive_entry_set_mtime, (struct archive_entry *e, time_t s, long ns), (e, s, ns))       \
	V(archive_entry_set_size, (struct archive_entry *e, la_int64_t n), (e, n))                 \
	V(archive_entry_set_symlink, (struct archive_entry *e, const char *p), (e, p))             \
	/* only the unit tests, to write and read back their fixtures */                           \
	F(int, archive_read_open_filename, (struct archive *a, const char *f, size_t block),       \
	  (a, f, block), ARCHIVE_FATAL)                                                            \
	F(int, archive_write_open_filename, (struct archive *a, const char *f), (a, f),            \
	  ARCHIVE_FATAL)                                                                           \
	F(la_int64_t, archive_entry_uid, (struct archive_entry *e), (e), 0)                        \
	F(la_int64_t, archive_entry_gid, (struct archive_entry *e), (e), 0)                        \
	V(archive_entry_set_hardlink, (struct archive_entry *e, const char *p), (e, p))            \
	V(archive_entry_set_rdev, (struct archive_entry *e, dev_t d), (e, d))                      \
	V(archive_entry_xattr_add_entry, (struct archive_entry *e, const char *k, const void *v,     \
	  size_t n), (e, k, v, n))

DL_DEFINE_STUBS(ARCHIVE_FUNCTIONS, dl_libarchive, "libarchive.so.13", "libarchive13",
		"to unpack image layers and write build layers", true, "archive", "required")
