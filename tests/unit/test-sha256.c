// SPDX-License-Identifier: GPL-2.0-or-later
/* test-sha256.c — the SHA-256 helper against known vectors (FIPS 180-2 and sha256sum), and
 * incremental in odd chunk sizes equal to one-shot, and sha256_fd() over files. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/sha256.h"

#define MIB (1u << 20)

static const char *const empty_hex = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
static const char *const abc_hex = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
/* printf 'a%.0s' $(seq 1048576) | sha256sum: 1 MiB of 'a' */
static const char *const mib_a_hex = "9bc1b2a288b26af7257a36277ae3816a7d4f16e89c1e7e77d0a5c48bad62b360";

static void test_vectors(void **state)
{
	char hex[SHA256_HEX_SIZE];
	unsigned char raw[SHA256_RAW_SIZE];

	(void)state;
	assert_int_equal(sha256_hex("", 0, hex), 0);
	assert_string_equal(hex, empty_hex);
	assert_int_equal(sha256_hex("abc", 3, hex), 0);
	assert_string_equal(hex, abc_hex);
	assert_int_equal(sha256_raw("abc", 3, raw), 0);
	assert_int_equal(raw[0], 0xba);
	assert_int_equal(raw[31], 0xad);
}

static void test_mib_incremental(void **state)
{
	char one[SHA256_HEX_SIZE], inc[SHA256_HEX_SIZE];
	struct sha256 c = { 0 };
	char *buf = malloc(MIB);
	size_t off = 0, step = 1;

	(void)state;
	assert_non_null(buf);
	memset(buf, 'a', MIB);
	assert_int_equal(sha256_hex(buf, MIB, one), 0);
	assert_int_equal(strlen(one), 64);
	assert_int_equal(sha256_init(&c), 0);
	while (off < MIB) {
		size_t n = step < MIB - off ? step : MIB - off;
		assert_int_equal(sha256_update(&c, buf + off, n), 0);
		off += n;
		step = step * 3 + 1; /* odd sizes across every block boundary */
	}
	assert_int_equal(sha256_final_hex(&c, inc), 0);
	assert_string_equal(one, mib_a_hex);
	assert_string_equal(one, inc);
	/* the context re-initialises: "" after a long input */
	assert_int_equal(sha256_init(&c), 0);
	assert_int_equal(sha256_final_hex(&c, inc), 0);
	assert_string_equal(inc, empty_hex);
	sha256_done(&c);
	sha256_done(&c); /* twice is harmless */
	free(buf);
}

/* An unlinked file in /tmp holding @len bytes of @buf, read from its start. */
static int tmp_file(const void *buf, size_t len)
{
	char path[] = "/tmp/test-sha256-XXXXXX";
	int fd = mkostemp(path, O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

static int fd_hex(int fd, uint64_t max, int copy_fd, char hex[SHA256_HEX_SIZE], uint64_t *size)
{
	struct sha256 c = { 0 };
	int r = sha256_init(&c);

	if (r == 0)
		r = sha256_fd(&c, fd, max, copy_fd, size);
	if (r == 0)
		r = sha256_final_hex(&c, hex);
	sha256_done(&c);
	return r;
}

static void test_fd(void **state)
{
	char hex[SHA256_HEX_SIZE], copied[SHA256_HEX_SIZE];
	char *buf = malloc(MIB);
	uint64_t size = 0;
	int fd, copy;

	(void)state;
	assert_non_null(buf);
	memset(buf, 'a', MIB);
	/* 1 MiB: 16 reads of the 64 KiB buffer, the same digest as one-shot */
	fd = tmp_file(buf, MIB);
	assert_int_equal(fd_hex(fd, UINT64_MAX, -1, hex, &size), 0);
	assert_string_equal(hex, mib_a_hex);
	assert_int_equal(size, MIB);
	/* with a copy: the copy holds the same bytes */
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	copy = tmp_file("", 0);
	assert_int_equal(fd_hex(fd, MIB, copy, hex, NULL), 0); /* exactly at the bound is fine */
	assert_string_equal(hex, mib_a_hex);
	assert_int_equal(lseek(copy, 0, SEEK_SET), 0);
	assert_int_equal(fd_hex(copy, UINT64_MAX, -1, copied, &size), 0);
	assert_string_equal(copied, mib_a_hex);
	assert_int_equal(size, MIB);
	close(copy);
	/* one byte over the bound */
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(fd_hex(fd, MIB - 1, -1, hex, &size), -EFBIG);
	close(fd);
	/* an empty file */
	fd = tmp_file("", 0);
	assert_int_equal(fd_hex(fd, 0, -1, hex, &size), 0);
	assert_string_equal(hex, empty_hex);
	assert_int_equal(size, 0);
	close(fd);
	free(buf);
}

static void test_fd_errors(void **state)
{
	char hex[SHA256_HEX_SIZE];
	uint64_t size = 1;
	int fd, ro;

	(void)state;
	/* a read error: read() of a directory */
	fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fd_hex(fd, UINT64_MAX, -1, hex, &size), -EISDIR);
	assert_int_equal(size, 0);
	close(fd);
	/* a read error: an fd open for writing only */
	fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fd_hex(fd, UINT64_MAX, -1, hex, NULL), -EBADF);
	close(fd);
	/* a write error on the copy: it is reported, not the digest */
	fd = tmp_file("abc", 3);
	ro = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(ro >= 0);
	assert_int_equal(fd_hex(fd, UINT64_MAX, ro, hex, NULL), -EBADF);
	close(ro);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_mib_incremental),
		cmocka_unit_test(test_fd),
		cmocka_unit_test(test_fd_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
