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
#include "build/manifest.h"
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

	assert_int_equal(manifest_dpkg(status, strlen(status), &out), 0);
	assert_string_equal(out, "bash 5.2.15-2+b7\njq 1.6-2.1\n");
	free(out);
	assert_int_equal(manifest_dpkg("", 0, &out), 0);
	assert_string_equal(out, "");
	free(out);
	/* no trailing newline, CR-free garbage: no crash, nothing listed */
	assert_int_equal(manifest_dpkg("Package", 7, &out), 0);
	assert_string_equal(out, "");
	free(out);
}

static void test_apk_npm_manifest(void **state)
{
	static const char apk[] = "C:Q1abc=\nP:musl\nV:1.2.5-r0\nA:x86_64\n\n"
				  "P:busybox\nV:1.36.1-r29\n\nP:no-version\n\nP:bad name\nV:1\n";
	char *out = NULL;

	assert_int_equal(manifest_apk(apk, strlen(apk), &out), 0);
	assert_string_equal(out, "musl 1.2.5-r0\nbusybox 1.36.1-r29\n");
	free(out);
	static const struct {
		const char *json, *want;
	} t[] = {
		{ "{\"name\":\"@mariozechner/pi-coding-agent\",\"version\":\"0.73.1\",\"bin\":{}}",
		  "npm:@mariozechner/pi-coding-agent 0.73.1\n" },
		{ "{\"name\":\"npm\",\"version\":\"10.9.0\"}", "npm:npm 10.9.0\n" },
		{ "{\"name\":\"x\"}", "" },                          /* no version */
		{ "{\"name\":\"x\",\"version\":1}", "" },              /* not a string */
		{ "{\"name\":\"x y\",\"version\":\"1\"}", "" },        /* a blank in a name */
		{ "{\"name\":\"x\",\"version\":\"1\\n2\"}", "" },    /* a control character */
		{ "[1,2]", "" },
		{ "{\"name\":", "" },                                  /* truncated */
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_int_equal(manifest_npm_package(t[i].json, strlen(t[i].json), &out), 0);
		if (strcmp(out, t[i].want) != 0)
			fail_msg("%s: got '%s'", t[i].json, out);
		free(out);
	}
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

static void test_user_lookup(void **state)
{
	static const char pw[] = "root:x:0:0:root:/root:/bin/bash\n"
				 "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
				 "node:x:1000:1000::/home/node:/bin/sh\n"
				 "odd:x:1001:1001::relative:/bin/sh\n"
				 "bad:x:12x:5::/h:/bin/sh";
	static const char gr[] = "root:x:0:\nstaff:x:50:node\nnode:x:1000:\n";
	static const struct {
		const char *spec;
		int r;
		unsigned uid, gid;
		const char *home;
	} t[] = {
		{ "node", 0, 1000, 1000, "/home/node" },
		{ "1000", 0, 1000, 1000, "/home/node" },
		{ "node:staff", 0, 1000, 50, "/home/node" },
		{ "node:77", 0, 1000, 77, "/home/node" },
		{ "1000:staff", 0, 1000, 50, "/home/node" },
		{ "4242", 0, 4242, 0, "/" },          /* a number need not be in passwd: gid 0 */
		{ "4242:4242", 0, 4242, 4242, "/" },
		{ "daemon", 0, 1, 1, "/usr/sbin" },
		{ "odd", 0, 1001, 1001, "/" },        /* a relative home is not used */
		{ "nobody", -ENOENT, 0, 0, NULL },   /* a name must be there */
		{ "node:nogroup", -ENOENT, 0, 0, NULL },
		{ "no", -ENOENT, 0, 0, NULL },       /* a prefix of a name is not the name */
		{ "bad", -EINVAL, 0, 0, NULL },
		{ "", -EINVAL, 0, 0, NULL },
		{ ":staff", -EINVAL, 0, 0, NULL },
		{ "node:", -EINVAL, 0, 0, NULL },
		{ "node:staff:x", -EINVAL, 0, 0, NULL },
		{ "4294967295", -ENOENT, 0, 0, NULL }, /* (uid_t)-1 is no id: then a name, and not there */
	};
	struct native_user u;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int r = native_user_lookup(t[i].spec, pw, strlen(pw), gr, strlen(gr), &u);
		if (r != t[i].r)
			fail_msg("USER '%s': %d, want %d", t[i].spec, r, t[i].r);
		if (r == 0 && (u.uid != t[i].uid || u.gid != t[i].gid || strcmp(u.home, t[i].home) != 0))
			fail_msg("USER '%s': %u:%u %s", t[i].spec, (unsigned)u.uid, (unsigned)u.gid, u.home);
	}
	/* no passwd or group file at all: numbers only */
	assert_int_equal(native_user_lookup("7:8", NULL, 0, NULL, 0, &u), 0);
	assert_int_equal(u.uid, 7);
	assert_int_equal(u.gid, 8);
	assert_int_equal(native_user_lookup("node", NULL, 0, NULL, 0, &u), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dpkg_manifest),
		cmocka_unit_test(test_user_lookup),
		cmocka_unit_test(test_apk_npm_manifest),
		cmocka_unit_test(test_first_run),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
