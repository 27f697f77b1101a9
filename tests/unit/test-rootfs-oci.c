// SPDX-License-Identifier: GPL-2.0-or-later
/* test-rootfs-oci.c — manifests, indexes, platform choice, configs, challenges, auth files */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rootfs/oci.h"
#include "rootfs/registry.h"
#include "rootfs/store.h"
#include "util/macro.h"

#define DA "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define DB "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define DC "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"

static const char oci_manifest[] =
	"{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
	"\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"" DA "\",\"size\":10},"
	"\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"" DB "\",\"size\":20},"
	"{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+zstd\",\"digest\":\"" DC "\",\"size\":30}]}";

static const char docker_manifest[] =
	"{\"schemaVersion\":2,\"mediaType\":\"application/vnd.docker.distribution.manifest.v2+json\","
	"\"config\":{\"mediaType\":\"application/vnd.docker.container.image.v1+json\",\"digest\":\"" DA "\",\"size\":1},"
	"\"layers\":[{\"mediaType\":\"application/vnd.docker.image.rootfs.diff.tar.gzip\",\"digest\":\"" DB "\",\"size\":2}]}";

static const char index_json[] =
	"{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"manifests\":["
	"{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" DA "\",\"size\":1,"
	" \"platform\":{\"os\":\"linux\",\"architecture\":\"arm\",\"variant\":\"v7\"}},"
	"{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" DB "\",\"size\":1,"
	" \"platform\":{\"os\":\"linux\",\"architecture\":\"arm64\",\"variant\":\"v8\"}},"
	"{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" DC "\",\"size\":1,"
	" \"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"}}]}";

static void test_manifests(void **state)
{
	struct oci_manifest m;
	const char *why;

	assert_int_equal(oci_manifest_parse(oci_manifest, strlen(oci_manifest), NULL, &m, &why), 0);
	assert_false(m.is_index);
	assert_string_equal(m.config.digest, DA);
	assert_int_equal(m.n_layers, 2);
	assert_string_equal(m.layers[1].digest, DC);
	assert_int_equal(m.layers[1].size, 30);
	oci_manifest_done(&m);

	assert_int_equal(oci_manifest_parse(docker_manifest, strlen(docker_manifest), NULL, &m, &why), 0);
	assert_int_equal(m.n_layers, 1);
	oci_manifest_done(&m);

	/* no mediaType: decided by shape, or by Content-Type */
	{
		static const char bare[] = "{\"schemaVersion\":2,\"config\":{\"digest\":\"" DA "\",\"size\":1},\"layers\":[]}";
		assert_int_equal(oci_manifest_parse(bare, strlen(bare), NULL, &m, &why), 0);
		assert_false(m.is_index);
		oci_manifest_done(&m);
	}
}

static void test_manifest_refusals(void **state)
{
	static const struct {
		const char *json;
		const char *why;
	} bad[] = {
		{ "{\"schemaVersion\":1,\"fsLayers\":[]}", "Docker schema 1" },
		{ "not json", "malformed" },
		{ "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\"}", "config" },
		{ "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"config\":{\"digest\":\"sha256:xx\","
		  "\"size\":1},\"layers\":[]}", "config" },
		{ "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"config\":{\"mediaType\":"
		  "\"application/vnd.cncf.helm.config.v1+json\",\"digest\":\"" DA "\",\"size\":1},\"layers\":[]}", "artifact" },
		{ "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"config\":{\"digest\":\"" DA "\","
		  "\"size\":1},\"layers\":[{\"mediaType\":\"application/x-evil\",\"digest\":\"" DB "\",\"size\":1}]}",
		  "media type" },
		{ "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"config\":{\"digest\":\"" DA "\","
		  "\"size\":-1},\"layers\":[]}", "config" },
		{ "{\"mediaType\":\"text/plain\"}", "unsupported" },
		{ "{\"manifests\":[]} trailing", "malformed" },
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct oci_manifest m;
		const char *why = NULL;
		if (oci_manifest_parse(bad[i].json, strlen(bad[i].json), NULL, &m, &why) == 0)
			fail_msg("case %zu parsed", i);
		assert_non_null(why);
		if (!strstr(why, bad[i].why))
			fail_msg("case %zu: reason '%s' lacks '%s'", i, why, bad[i].why);
	}
}

static void test_index_choose(void **state)
{
	struct oci_manifest m;
	assert_int_equal(oci_manifest_parse(index_json, strlen(index_json), NULL, &m, NULL), 0);
	assert_true(m.is_index);
	assert_int_equal(m.n_manifests, 3);
	assert_int_equal(oci_index_choose(&m, "linux", "amd64", NULL, NULL), 2);
	assert_int_equal(oci_index_choose(&m, "linux", "arm64", "v8", NULL), 1);
	assert_int_equal(oci_index_choose(&m, "linux", "arm64", NULL, NULL), 1);
	assert_int_equal(oci_index_choose(&m, "linux", "arm", "v7", NULL), 0);
	assert_int_equal(oci_index_choose(&m, "linux", "arm", "v6", NULL), -ENOENT);
	assert_int_equal(oci_index_choose(&m, "linux", "s390x", NULL, NULL), -ENOENT);
	assert_int_equal(oci_index_choose(&m, "windows", "amd64", NULL, NULL), -ENOENT);
	oci_manifest_done(&m);

	/* oci-layout index.json: no platform, chosen by ref.name */
	{
		static const char layout[] = "{\"schemaVersion\":2,\"manifests\":["
			"{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" DA "\",\"size\":1,"
			"\"annotations\":{\"org.opencontainers.image.ref.name\":\"v1\"}},"
			"{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" DB "\",\"size\":1,"
			"\"annotations\":{\"org.opencontainers.image.ref.name\":\"v2\"}}]}";
		assert_int_equal(oci_manifest_parse(layout, strlen(layout), NULL, &m, NULL), 0);
		assert_true(m.is_index);
		assert_int_equal(oci_index_choose(&m, "linux", "amd64", NULL, "v2"), 1);
		assert_int_equal(oci_index_choose(&m, "linux", "amd64", NULL, "v1"), 0);
		assert_int_equal(oci_index_choose(&m, "linux", "amd64", NULL, "v3"), -ENOENT);
		oci_manifest_done(&m);
	}
}

static void test_host_platform(void **state)
{
	const char *os, *arch, *variant;
	oci_host_platform(&os, &arch, &variant);
	assert_string_equal(os, "linux");
	assert_non_null(arch);
}

static void test_config(void **state)
{
	static const char cfg[] =
		"{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Env\":[\"PATH=/usr/bin\",\"A=b c\"],"
		"\"Entrypoint\":[\"/bin/sh\",\"-c\"],\"Cmd\":null,\"WorkingDir\":\"/work\",\"User\":\"\","
		"\"Labels\":{\"org.x\":\"1\"}},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"" DA "\"]}}";
	struct oci_image_config c;

	assert_int_equal(oci_config_parse(cfg, strlen(cfg), &c), 0);
	assert_string_equal(c.arch, "amd64");
	assert_string_equal(c.env[1], "A=b c");
	assert_string_equal(c.entrypoint[0], "/bin/sh");
	assert_null(c.cmd);
	assert_string_equal(c.working_dir, "/work");
	assert_null(c.user); /* "" means unset */
	assert_string_equal(c.labels[0], "org.x=1");
	assert_string_equal(c.diff_ids[0], DA);
	oci_config_done(&c);

	assert_int_equal(oci_config_parse("{\"config\":{\"Env\":[1]}}", 22, &c), -EINVAL);
	assert_int_equal(oci_config_parse("[]", 2, &c), -EINVAL);
	assert_int_equal(oci_config_parse("{}", 2, &c), 0);
	oci_config_done(&c);
}

static void test_docker_archive(void **state)
{
	static const char mf[] = "[{\"Config\":\"abc.json\",\"RepoTags\":[\"x:1\"],\"Layers\":[\"l1/layer.tar\",\"l2/layer.tar\"]},"
				 "{\"Config\":\"def.json\",\"RepoTags\":[\"y:2\"],\"Layers\":[]}]";
	char *cfg;
	char **layers;
	assert_int_equal(oci_docker_archive_manifest_parse(mf, strlen(mf), "x:1", &cfg, &layers), 0);
	assert_string_equal(cfg, "abc.json");
	assert_string_equal(layers[1], "l2/layer.tar");
	free(cfg);
	strv_free(layers);
	assert_int_equal(oci_docker_archive_manifest_parse(mf, strlen(mf), NULL, &cfg, &layers), -ENOENT);
	assert_int_equal(oci_docker_archive_manifest_parse(mf, strlen(mf), "z:9", &cfg, &layers), -ENOENT);
}

static void test_challenge(void **state)
{
	static const struct {
		const char *in;
		int ret;
		const char *scheme, *realm, *service, *scope;
	} t[] = {
		{ "Bearer realm=\"https://auth.docker.io/token\",service=\"registry.docker.io\",scope=\"repository:library/ubuntu:pull\"",
		  0, "bearer", "https://auth.docker.io/token", "registry.docker.io", "repository:library/ubuntu:pull" },
		{ "bearer  realm = \"http://127.0.0.1:1/t\" , service=reg", 0, "bearer", "http://127.0.0.1:1/t", "reg", NULL },
		{ "Basic realm=\"Registry Realm\"", 0, "basic", "Registry Realm", NULL, NULL },
		{ "Basic", 0, "basic", NULL, NULL, NULL },
		{ "Bearer realm=\"a\\\"b\"", 0, "bearer", "a\"b", NULL, NULL },
		{ "Bearer service=\"x\"", -EINVAL, NULL, NULL, NULL, NULL }, /* bearer needs a realm */
		{ "Bearer realm=\"unterminated", -EINVAL, NULL, NULL, NULL, NULL },
		{ "Bearer realm", -EINVAL, NULL, NULL, NULL, NULL },
		{ "", -EINVAL, NULL, NULL, NULL, NULL },
		{ "Be@rer realm=x", -EINVAL, NULL, NULL, NULL, NULL },
		{ "Bearer realm=x junk=y", -EINVAL, NULL, NULL, NULL, NULL },
	};
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		struct registry_challenge c;
		int k = registry_challenge_parse(t[i].in, &c);
		if (k != t[i].ret)
			fail_msg("case %zu ('%s'): %d", i, t[i].in, k);
		if (k < 0)
			continue;
		assert_string_equal(c.scheme, t[i].scheme);
#define OPT(f)                                                                                                 \
	if (t[i].f)                                                                                            \
		assert_string_equal(c.f, t[i].f);                                                              \
	else                                                                                                   \
		assert_null(c.f);
		OPT(realm) OPT(service) OPT(scope)
#undef OPT
		registry_challenge_done(&c);
	}
}

static void test_auth_lookup(void **state)
{
	/* "dXNlcjpwYTpzcw==" is base64("user:pa:ss") */
	static const char j[] = "{\"auths\":{\"127.0.0.1:5001\":{\"auth\":\"dXNlcjpwYTpzcw==\"},"
				"\"https://index.docker.io/v1/\":{\"auth\":\"YTpi\"},\"bad.io\":{\"auth\":\"!!!!\"}}}";
	char *u, *p;
	assert_int_equal(registry_auth_lookup(j, "127.0.0.1:5001", &u, &p), 0);
	assert_string_equal(u, "user");
	assert_string_equal(p, "pa:ss");
	free(u);
	free(p);
	assert_int_equal(registry_auth_lookup(j, "docker.io", &u, &p), 0);
	assert_string_equal(u, "a");
	assert_string_equal(p, "b");
	free(u);
	free(p);
	assert_int_equal(registry_auth_lookup(j, "127.0.0.1:5002", &u, &p), -ENOENT);
	assert_int_equal(registry_auth_lookup(j, "bad.io", &u, &p), -EINVAL);
	assert_int_equal(registry_auth_lookup("nope", "x", &u, &p), -EINVAL);
}

static void test_pin_fresh(void **state)
{
	assert_true(store_pin_is_fresh(1000, 1000 + 86400 * 6, 7));
	assert_false(store_pin_is_fresh(1000, 1000 + 86400 * 7, 7));
	assert_false(store_pin_is_fresh(1000, 1000, 0));
	assert_true(store_pin_is_fresh(0, 1LL << 40, -1));
	assert_false(store_pin_is_fresh(2000, 1000, 7)); /* clock went back */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_manifests),   cmocka_unit_test(test_manifest_refusals),
		cmocka_unit_test(test_index_choose), cmocka_unit_test(test_host_platform),
		cmocka_unit_test(test_config),      cmocka_unit_test(test_docker_archive),
		cmocka_unit_test(test_challenge),   cmocka_unit_test(test_auth_lookup),
		cmocka_unit_test(test_pin_fresh),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
