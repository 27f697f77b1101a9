// SPDX-License-Identifier: GPL-2.0-or-later
/* test-rootfs-ref.c — reference parsing and normalisation (table-driven) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rootfs/ref.h"
#include "util/macro.h"

#define D64 "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static const struct {
	const char *in;
	const char *registry, *repository, *tag, *digest, *name;
} good[] = {
	{ "ubuntu", "docker.io", "library/ubuntu", "latest", NULL, "docker.io/library/ubuntu:latest" },
	{ "ubuntu:24.04", "docker.io", "library/ubuntu", "24.04", NULL, "docker.io/library/ubuntu:24.04" },
	{ "docker.io/ubuntu:24.04", "docker.io", "library/ubuntu", "24.04", NULL, "docker.io/library/ubuntu:24.04" },
	{ "index.docker.io/library/ubuntu", "docker.io", "library/ubuntu", "latest", NULL,
	  "docker.io/library/ubuntu:latest" },
	{ "docker://alpine:3", "docker.io", "library/alpine", "3", NULL, "docker.io/library/alpine:3" },
	{ "user/app", "docker.io", "user/app", "latest", NULL, "docker.io/user/app:latest" },
	{ "127.0.0.1:5000/busybox:1", "127.0.0.1:5000", "busybox", "1", NULL, "127.0.0.1:5000/busybox:1" },
	{ "localhost/x/y:z", "localhost", "x/y", "z", NULL, "localhost/x/y:z" },
	{ "localhost:5000/a", "localhost:5000", "a", "latest", NULL, "localhost:5000/a:latest" },
	{ "quay.io/org/my-app_x.y__z:v1.2-rc_3", "quay.io", "org/my-app_x.y__z", "v1.2-rc_3", NULL,
	  "quay.io/org/my-app_x.y__z:v1.2-rc_3" },
	{ "ghcr.io/a/b@" D64, "ghcr.io", "a/b", NULL, D64, "ghcr.io/a/b@" D64 },
	{ "busybox:1@" D64, "docker.io", "library/busybox", "1", D64, "docker.io/library/busybox:1@" D64 },
	{ "[::1]:5000/x", "[::1]:5000", "x", "latest", NULL, "[::1]:5000/x:latest" },
};

static const char *const bad[] = {
	"", "UPPER", "docker.io/Library/ubuntu", "ubuntu:", "ubuntu:-x", "ubuntu@sha256:abc",
	"ubuntu@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", "a//b", "/abs",
	"a/", "a..b", "a b", "a\tb", "-a", "a-", "a___b", "host:port/x", "127.0.0.1:99999999/x",
	"http://x/y", "containers-storage:foo", "oci:", "oci-archive:", "x:" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	"oci:/dir:bad tag", "ubuntu@md5:abc",
};

static void test_good(void **state)
{
	for (size_t i = 0; i < ELEMENTSOF(good); i++) {
		struct oci_ref r;
		int k = oci_ref_parse(good[i].in, &r);
		if (k != 0)
			fail_msg("'%s' should parse (%d)", good[i].in, k);
		assert_int_equal(r.transport, OCI_TRANSPORT_REGISTRY);
		assert_string_equal(r.registry, good[i].registry);
		assert_string_equal(r.repository, good[i].repository);
		if (good[i].tag)
			assert_string_equal(r.tag, good[i].tag);
		else
			assert_null(r.tag);
		if (good[i].digest)
			assert_string_equal(r.digest, good[i].digest);
		else
			assert_null(r.digest);
		assert_string_equal(r.name, good[i].name);
		/* short: no registry typed (what may then find a local build, localhost/NAME) */
		assert_int_equal(r.short_name, streq(good[i].registry, "docker.io") && !strstr(good[i].in, "docker.io/"));
		oci_ref_done(&r);
	}
}

static void test_bad(void **state)
{
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct oci_ref r;
		int k = oci_ref_parse(bad[i], &r);
		if (k != -EINVAL)
			fail_msg("'%s' should be refused, got %d (%s)", bad[i], k, k == 0 ? r.name : "");
	}
}

static void test_offline(void **state)
{
	struct oci_ref r;
	assert_int_equal(oci_ref_parse("oci:/srv/img:v1", &r), 0);
	assert_int_equal(r.transport, OCI_TRANSPORT_OCI_DIR);
	assert_string_equal(r.path, "/srv/img");
	assert_string_equal(r.tag, "v1");
	assert_string_equal(r.name, "oci:/srv/img:v1");
	oci_ref_done(&r);

	assert_int_equal(oci_ref_parse("oci:/srv/my:dir/x", &r), 0); /* ':' before a '/' is part of DIR */
	assert_string_equal(r.path, "/srv/my:dir/x");
	assert_null(r.tag);
	oci_ref_done(&r);

	assert_int_equal(oci_ref_parse("oci-archive:/tmp/a.tar", &r), 0);
	assert_int_equal(r.transport, OCI_TRANSPORT_OCI_ARCHIVE);
	assert_string_equal(r.name, "oci-archive:/tmp/a.tar");
	oci_ref_done(&r);

	assert_int_equal(oci_ref_parse("docker-archive:/tmp/b.tar", &r), 0);
	assert_int_equal(r.transport, OCI_TRANSPORT_DOCKER_ARCHIVE);
	assert_string_equal(r.path, "/tmp/b.tar");
	oci_ref_done(&r);

	assert_int_equal(oci_ref_parse("oci:rel/dir", &r), 0); /* made absolute */
	assert_true(r.path[0] == '/');
	oci_ref_done(&r);
}

static void test_digest(void **state)
{
	assert_true(oci_digest_is_valid(D64));
	assert_false(oci_digest_is_valid("sha256:"));
	assert_false(oci_digest_is_valid(D64 "0"));
	assert_false(oci_digest_is_valid("sha512:00"));
	assert_false(oci_digest_is_valid(NULL));
}

static void test_api_host(void **state)
{
	struct oci_ref r;
	assert_int_equal(oci_ref_parse("alpine", &r), 0);
	assert_string_equal(oci_ref_api_host(&r), "registry-1.docker.io");
	oci_ref_done(&r);
	assert_int_equal(oci_ref_parse("127.0.0.1:5000/x", &r), 0);
	assert_string_equal(oci_ref_api_host(&r), "127.0.0.1:5000");
	oci_ref_done(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),   cmocka_unit_test(test_bad),      cmocka_unit_test(test_offline),
		cmocka_unit_test(test_digest), cmocka_unit_test(test_api_host),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
