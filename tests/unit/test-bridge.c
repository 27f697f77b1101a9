// SPDX-License-Identifier: GPL-2.0-or-later
/* test-bridge.c — the harness config bridges: rewrites, merge, TOML subset */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "agents/bridge-internal.h"

static void test_placeholder(void **state)
{
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_placeholder),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
