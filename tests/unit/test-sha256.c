// SPDX-License-Identifier: GPL-2.0-or-later
/* test-sha256.c — the SHA-256 helper against known vectors (FIPS 180-2 and sha256sum), and
 * incremental in odd chunk sizes equal to one-shot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_mib_incremental),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
