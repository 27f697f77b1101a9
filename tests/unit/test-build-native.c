// SPDX-License-Identifier: GPL-2.0-or-later
/* test-build-native.c — the native builder's pure parts: package manifest, RUN detection */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "build/containerfile.h"
#include "build/native.h"
#include "util/util.h"

static void test_dpkg_manifest(void **state)
{
	static const char status[] =
		"Package: bash\n"
		"Status: install ok installed\n"
		"Priority: required\n"
		"Version: 5.2.15-2+b7\n"
		"Description: GNU Bourne Again SHell\n"
		" continuation line: Version: 9\n"
		"\n"
		"Package: removed\n"
		"Status: deinstall ok config-files\n"
		"Version: 1.0\n"
		"\n"
		"Package: gone\n"
		"Status: purge ok not-installed\n"
		"Version: 2.0\n"
		"\n"
		"Package: jq\n"
		"Version: 1.6-2.1\n"
		"Status: install ok installed\n";
	char *out = NULL;

	assert_int_equal(native_dpkg_manifest(status, strlen(status), &out), 0);
	assert_string_equal(out, "bash 5.2.15-2+b7\njq 1.6-2.1\n");
	free(out);
	assert_int_equal(native_dpkg_manifest("", 0, &out), 0);
	assert_string_equal(out, "");
	free(out);
	/* no trailing newline, CR-free garbage: no crash, nothing listed */
	assert_int_equal(native_dpkg_manifest("Package", 7, &out), 0);
	assert_string_equal(out, "");
	free(out);
}

static void test_first_run(void **state)
{
	static const char a[] = "FROM x\nCOPY a /a\nRUN true\nRUN false\n";
	static const char b[] = "FROM x\nCOPY a /a\nWORKDIR /w\n";
	struct containerfile cf;
	struct cf_recipe rc;
	struct cf_error err;

	assert_int_equal(cf_parse(a, strlen(a), &cf, &err), 0);
	assert_int_equal(cf_resolve(&cf, NULL, NULL, &rc, &err), 0);
	assert_int_equal(native_first_run(&rc)->line, 3);
	cf_recipe_done(&rc);
	cf_done(&cf);
	assert_int_equal(cf_parse(b, strlen(b), &cf, &err), 0);
	assert_int_equal(cf_resolve(&cf, NULL, NULL, &rc, &err), 0);
	assert_null(native_first_run(&rc));
	cf_recipe_done(&rc);
	cf_done(&cf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dpkg_manifest),
		cmocka_unit_test(test_first_run),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
