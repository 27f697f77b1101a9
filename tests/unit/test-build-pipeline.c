// SPDX-License-Identifier: GPL-2.0-or-later
/* test-build-pipeline.c — the pure parts of build_run()'s files: the build's names (build/cache.c),
 * the registry flags laid over the environment's, the recipe errors' exit codes (build/pipeline.c)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "build/pipeline-internal.h"
#include "util/log.h"
#include "util/util.h"

#define S(x) ((char *)(x))

static void names_of(const char *name, char tag[65], char **cache_ref, char **tag_local)
{
	struct build_context ctx = { 0 };
	struct build_tag_input in = { .builder = "native", .base_digest = "sha256:00", .recipe = "FROM x\n",
				      .recipe_len = 7, .ctx = &ctx };

	*cache_ref = *tag_local = NULL;
	assert_int_equal(build_names(&in, name, tag, cache_ref, tag_local), 0);
}

/* -t NAME is a local name: no registry, so that an aged pin is never re-resolved upstream */
static void test_names(void **state)
{
	static const struct {
		const char *tag, *local;
	} t[] = {
		{ "demo", "localhost/demo" },
		{ "demo:v1", "localhost/demo:v1" },
		{ "org/demo", "localhost/org/demo" },
		{ "localhost/demo", "localhost/demo" },
		{ "reg.example:5000/demo", "reg.example:5000/demo" },
		{ "reg.example/demo", "reg.example/demo" },
		{ "host:5000/demo", "host:5000/demo" },
	};
	char tag[65], again[65];
	char *cache_ref, *tag_local;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		names_of(t[i].tag, tag, &cache_ref, &tag_local);
		assert_string_equal(tag_local, t[i].local);
		assert_int_equal(strlen(tag), 64);
		assert_int_equal(strncmp(cache_ref, BUILD_CACHE_PREFIX, strlen(BUILD_CACHE_PREFIX)), 0);
		assert_string_equal(cache_ref + strlen(BUILD_CACHE_PREFIX), tag);
		free(cache_ref);
		free(tag_local);
	}
	/* the name is not an input of the tag: -t changes what it is called, not what is built */
	names_of(NULL, again, &cache_ref, &tag_local);
	assert_null(tag_local);
	assert_string_equal(again, tag);
	free(cache_ref);
}

static void test_registry_over(void **state)
{
	char **env = NULL, **flags = NULL;
	struct registry_opts reg = { .tls_verify = true, .cert_dir = "/env-certs" };
	struct build_request none = { .reg = { .tls_verify = false, .cert_dir = "/ignored" } };
	struct build_request q = { .reg_given = true, .reg = { .tls_verify = false } };

	(void)state;
	assert_int_equal(strv_push(&env, "/env/auth.json"), 0);
	reg.auth_files = env;
	/* no flag given: the environment's options stay as they are */
	assert_int_equal(build_registry_over(&reg, &none), 0);
	assert_true(reg.tls_verify);
	assert_string_equal(reg.cert_dir, "/env-certs");
	assert_ptr_equal(reg.auth_files, env);
	/* --authfile a --authfile b --tls-verify=false: b, a, then the environment's; cert dir kept */
	assert_int_equal(strv_push(&flags, "/b.json"), 0);
	assert_int_equal(strv_push(&flags, "/a.json"), 0);
	q.reg.auth_files = flags;
	assert_int_equal(build_registry_over(&reg, &q), 0);
	assert_false(reg.tls_verify);
	assert_string_equal(reg.cert_dir, "/env-certs");
	assert_string_equal(reg.auth_files[0], "/b.json");
	assert_string_equal(reg.auth_files[1], "/a.json");
	assert_string_equal(reg.auth_files[2], "/env/auth.json");
	assert_null(reg.auth_files[3]);
	/* --cert-dir replaces the environment's */
	q.reg.cert_dir = "/flag-certs";
	assert_int_equal(build_registry_over(&reg, &q), 0);
	assert_string_equal(reg.cert_dir, "/flag-certs");
	strv_free(reg.auth_files);
	strv_free(flags);
}

static void test_report_codes(void **state)
{
	struct cf_error err = { .line = 3 };

	(void)state;
	snprintf(err.msg, sizeof(err.msg), "%s", "bad");
	assert_int_equal(build_report_recipe("f", -EINVAL, &err), AISB_EXIT_POLICY);
	assert_int_equal(build_report_recipe("f", -ENOMEM, &err), AISB_EXIT_FAILED);
	err.line = 0;
	assert_int_equal(build_report_recipe("f", -EINVAL, &err), AISB_EXIT_POLICY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_registry_over),
		cmocka_unit_test(test_report_codes),
	};

	log_set_level(LOG_LVL_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
