// SPDX-License-Identifier: GPL-2.0-or-later
/* test-dl.c — the dlopen() loader: all symbols or none, a reason that names the library */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "util/dl.h"
#include "util/log.h"

static size_t (*my_strlen)(const char *);
static int (*my_missing)(void);

static void test_loads_all(void **state)
{
	const struct dl_sym syms[] = { { "strlen", (void **)&my_strlen } };
	struct dl_lib lib = { .soname = "libc.so.6", .package = "libc6", .purpose = "for a test",
			      .syms = syms, .n_syms = 1 };

	(void)state;
	assert_int_equal(dl_open(&lib), 0);
	assert_int_equal(lib.state, 1);
	assert_int_equal(my_strlen("four"), 4);
	assert_int_equal(dl_load(&lib), 0); /* cached */
}

static void test_missing_symbol_fills_none(void **state)
{
	const struct dl_sym syms[] = { { "strlen", (void **)&my_strlen },
				       { "aisb_no_such_symbol", (void **)&my_missing } };
	struct dl_lib lib = { .soname = "libc.so.6", .package = "libc6", .purpose = "for a test",
			      .syms = syms, .n_syms = 2 };

	(void)state;
	assert_int_equal(dl_open(&lib), -ELIBACC);
	assert_null(my_strlen);
	assert_null(my_missing);
	assert_non_null(strstr(lib.error, "'aisb_no_such_symbol'"));
	assert_int_equal(dl_load(&lib), -ELIBACC); /* the first outcome sticks */
}

static void test_missing_library(void **state)
{
	const struct dl_sym syms[] = { { "strlen", (void **)&my_strlen } };
	struct dl_lib lib = { .soname = "libaisb-absent.so.9", .package = "aisb-absent",
			      .purpose = "for a test", .syms = syms, .n_syms = 1 };

	(void)state;
	assert_int_equal(dl_load(&lib), -ELIBACC); /* logs once, naming the package */
	assert_int_equal(lib.state, -1);
	assert_non_null(strstr(lib.error, "libaisb-absent.so.9"));
	assert_int_equal(dl_open(&lib), -ELIBACC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loads_all),
		cmocka_unit_test(test_missing_symbol_fills_none),
		cmocka_unit_test(test_missing_library),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
