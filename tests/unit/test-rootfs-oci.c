// SPDX-License-Identifier: GPL-2.0-or-later
/* test-rootfs-oci.c — manifests, indexes, platform choice, configs, challenges, auth files */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rootfs/oci.h"
#include "util/util.h"
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
			"\"annotations\":{\"org.opencontainers.image.ref.name\":\"v2\","
			"\"io.containerd.image.name\":\"example.com/x:v2\"}}]}";
		assert_int_equal(oci_manifest_parse(layout, strlen(layout), NULL, &m, NULL), 0);
		assert_true(m.is_index);
		assert_null(oci_descriptor_image_name(&m.manifests[0])); /* a bare tag names no image */
		assert_string_equal(oci_descriptor_image_name(&m.manifests[1]), "example.com/x:v2");
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
	/* podman save -m: several images, several tags each; an image saved by its id has none */
	static const char mf[] = "[{\"Config\":\"abc.json\",\"RepoTags\":[\"x:1\",\"example.com/x:2\"],"
				 "\"Layers\":[\"l1/layer.tar\",\"l2/layer.tar\"]},"
				 "{\"Config\":\"def.json\",\"RepoTags\":null,\"Layers\":[]},"
				 "{\"Config\":\"ghi.json\",\"Layers\":[\"a.tar\"]}]";
	static const struct {
		const char *in;
		int ret;
	} bad[] = {
		{ "[]", -EINVAL },
		{ "{}", -EINVAL },
		{ "[{\"RepoTags\":[\"x:1\"],\"Layers\":[]}]", -EINVAL },                 /* no Config */
		{ "[{\"Config\":\"c.json\",\"RepoTags\":[\"x:1\"]}]", -EINVAL },         /* no Layers */
		{ "[{\"Config\":\"c.json\",\"RepoTags\":[1],\"Layers\":[]}]", -EINVAL }, /* a tag not a string */
		{ "[{\"Config\":\"c.json\",\"RepoTags\":\"x:1\",\"Layers\":[]}]", -EINVAL },
	};
	struct oci_docker_image *v;
	size_t n;

	(void)state;
	assert_int_equal(oci_docker_archive_parse(mf, strlen(mf), &v, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(v[0].config_path, "abc.json");
	assert_string_equal(v[0].layer_paths[1], "l2/layer.tar");
	assert_int_equal(strv_length(v[0].repo_tags), 2);
	assert_string_equal(v[0].repo_tags[1], "example.com/x:2");
	assert_int_equal(strv_length(v[1].layer_paths), 0);
	assert_int_equal(strv_length(v[1].repo_tags), 0);
	assert_non_null(v[2].repo_tags);
	assert_int_equal(strv_length(v[2].repo_tags), 0);
	oci_docker_archive_done(v, n);
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		assert_int_equal(oci_docker_archive_parse(bad[i].in, strlen(bad[i].in), &v, &n), bad[i].ret);
		assert_null(v);
	}
}

/* The name an OCI archive's index.json member records, as each tool writes it (measured:
 * podman 4.3 save --format oci-archive, skopeo 1.9 copy oci-archive:F:TAG, aisb save). */
static void test_descriptor_image_name(void **state)
{
	static const struct {
		const char *ref_name, *image_name, *want;
	} t[] = {
		{ "example.com/team/bb:v1", NULL, "example.com/team/bb:v1" },             /* podman */
		{ "v1", NULL, NULL },                                                        /* skopeo: a tag */
		{ "v1", "127.0.0.1:5000/bb:v1", "127.0.0.1:5000/bb:v1" },                  /* aisb save */
		{ "bb:v1", NULL, "bb:v1" },
		{ "bb@sha256:" "0000000000000000000000000000000000000000000000000000000000000000", NULL,
		  "bb@sha256:" "0000000000000000000000000000000000000000000000000000000000000000" },
		{ NULL, NULL, NULL },
		{ "latest", "", NULL },
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		struct oci_descriptor d = { .ref_name = (char *)t[i].ref_name, .image_name = (char *)t[i].image_name };
		const char *got = oci_descriptor_image_name(&d);
		if (t[i].want)
			assert_string_equal(got, t[i].want);
		else
			assert_null(got);
	}
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

static void test_credentials_scope(void **state)
{
	/* Where the basic credentials may go with a token request: the registry's own host (any
	 * port) over https, or over http when the user said --tls-verify=false; another host only
	 * over verified https; never a realm with userinfo or an unreadable host. */
	static const struct {
		const char *reg;
		bool verify;
		const char *realm;
		bool ok;
	} t[] = {
		{ "registry-1.docker.io", true, "https://auth.docker.io/token", true }, /* Docker Hub */
		{ "registry-1.docker.io", false, "https://auth.docker.io/token", false },
		{ "ghcr.io", true, "https://ghcr.io/token", true },
		{ "GHCR.io", true, "HTTPS://ghcr.IO:443/token?x", true },
		{ "127.0.0.1:5000", true, "https://127.0.0.1:5001/token", true }, /* same host, other port */
		{ "127.0.0.1:5000", false, "https://127.0.0.1:5001/token", true },
		{ "127.0.0.1:5000", false, "http://127.0.0.1:5000/token", true },  /* the registry itself is http */
		{ "127.0.0.1:5000", true, "http://127.0.0.1:5000/token", false },  /* verified TLS: no plain http */
		{ "127.0.0.1:5000", false, "http://127.0.0.2:5000/token", false }, /* plain http, another host */
		{ "127.0.0.1:5000", true, "http://127.0.0.2:5000/token", false },
		{ "127.0.0.1:5000", true, "https://127.0.0.2:5000/token", true },
		{ "127.0.0.1:5000", false, "https://127.0.0.2:5000/token", false }, /* unverified TLS elsewhere */
		{ "reg.example", true, "https://reg.example@evil.example/token", false },
		{ "reg.example", true, "https://evil.example\\@reg.example/", false },
		{ "reg.example", true, "https://reg.example.evil.example/", true }, /* another host, https */
		{ "reg.example", false, "https://reg.example.evil.example/", false },
		{ "reg.example", false, "http://reg.example.evil.example/", false },
		{ "reg.example", true, "https://reg.example./", true },              /* another name, https */
		{ "reg.example", false, "http://reg.example./", false },             /* so not "the same host" */
		{ "[::1]:5000", false, "http://[::1]:6000/t", true },
		{ "[::1]:5000", false, "http://[::2]:5000/t", false },
		{ "[::1]:5000", false, "http://[::1/t", false },
		{ "reg.example", true, "ftp://reg.example/", false },
		{ "reg.example", true, "https:///token", false },
		{ "reg.example", true, "https://:443/token", false },
		{ "reg.example", true, "https://re%67.example/", false },
		{ "reg.example", true, NULL, false },
	};
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		const char *why = NULL;
		bool ok = registry_may_send_credentials(t[i].reg, t[i].verify, t[i].realm, &why);
		if (ok != t[i].ok)
			fail_msg("case %zu (%s, verify=%d, %s): %s", i, t[i].reg, t[i].verify, t[i].realm ?: "NULL",
				 ok ? "sent" : why);
		if (!ok)
			assert_non_null(why);
	}
}

static void test_token_parse(void **state)
{
	static const struct {
		const char *in;
		int ret;
		const char *token;
	} t[] = {
		{ "{\"token\":\"abc\"}", 0, "abc" },
		{ "{\"access_token\":\"def\",\"expires_in\":300}", 0, "def" },
		{ "{\"token\":\"\"}", -EINVAL, NULL },
		{ "{\"token\":42}", -EINVAL, NULL },
		{ "[\"token\"]", -EINVAL, NULL },
		{ "\"token\"", -EINVAL, NULL },
		{ "{\"tok", -EINVAL, NULL },
		{ "", -EINVAL, NULL },
	};
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		char *tok = NULL;
		int k = registry_token_parse(t[i].in, strlen(t[i].in), &tok);
		if (k != t[i].ret)
			fail_msg("case %zu ('%s'): %d", i, t[i].in, k);
		if (t[i].token)
			assert_string_equal(tok, t[i].token);
		else
			assert_null(tok);
		free(tok);
	}
	/* the 64 KiB bound */
	char *big = malloc(70000), *tok = NULL;
	int n = snprintf(big, 70000, "{\"token\":\"");
	memset(big + n, 'a', 65536);
	memcpy(big + n + 65536, "\"}", 3);
	assert_int_equal(registry_token_parse(big, strlen(big), &tok), -EINVAL);
	big[n + 65535] = '"';
	big[n + 65536] = '}';
	big[n + 65537] = 0;
	assert_int_equal(registry_token_parse(big, strlen(big), &tok), 0); /* control: 65535 bytes */
	free(tok);
	free(big);
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
		cmocka_unit_test(test_descriptor_image_name),
		cmocka_unit_test(test_challenge),   cmocka_unit_test(test_auth_lookup),
		cmocka_unit_test(test_pin_fresh),   cmocka_unit_test(test_credentials_scope),
		cmocka_unit_test(test_token_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
