// SPDX-License-Identifier: GPL-2.0-or-later
/* test-net-parse.c — allow entries, matcher, address classes (table-driven) */
#include <errno.h>
#include <setjmp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "net/addr.h"
#include "net/allow.h"

static void test_allow_parse(void **state)
{
	static const struct {
		const char *in;
		int ok;
		const char *canon; /* allow_format_entry() */
		enum allow_kind kind;
		unsigned port;
	} t[] = {
		{ "example.com", 1, "example.com", ALLOW_NAME, 0 },
		{ "Example.COM.", 1, "example.com", ALLOW_NAME, 0 },
		{ "*.example.com", 1, "*.example.com", ALLOW_WILDCARD, 0 },
		{ "example.com:8443", 1, "example.com:8443", ALLOW_NAME, 8443 },
		{ "*.example.com:22", 1, "*.example.com:22", ALLOW_WILDCARD, 22 },
		{ "localhost", 1, "localhost", ALLOW_NAME, 0 },
		{ "_srv.x-y.example", 1, "_srv.x-y.example", ALLOW_NAME, 0 },
		{ "10.20.0.5", 1, "10.20.0.5", ALLOW_ADDR, 0 },
		{ "10.20.0.0/16", 1, "10.20.0.0/16", ALLOW_ADDR, 0 },
		{ "10.20.0.5:5432", 1, "10.20.0.5:5432", ALLOW_ADDR, 5432 },
		{ "10.20.0.0/16:443", 1, "10.20.0.0/16:443", ALLOW_ADDR, 443 },
		{ "2001:db8::1", 1, "2001:db8::1", ALLOW_ADDR, 0 },
		{ "2001:db8::/32", 1, "2001:db8::/32", ALLOW_ADDR, 0 },
		{ "[2001:db8::1]:443", 1, "[2001:db8::1]:443", ALLOW_ADDR, 443 },
		{ "[2001:db8::/32]:22", 1, "[2001:db8::/32]:22", ALLOW_ADDR, 22 },
		{ "[2001:db8::1]", 1, "2001:db8::1", ALLOW_ADDR, 0 },
		{ "", 0, NULL, 0, 0 },
		{ "*", 0, NULL, 0, 0 },
		{ "*example.com", 0, NULL, 0, 0 },
		{ "a.*.com", 0, NULL, 0, 0 },
		{ "example.com:0", 0, NULL, 0, 0 },
		{ "example.com:65536", 0, NULL, 0, 0 },
		{ "example.com:", 0, NULL, 0, 0 },
		{ "example.com:80x", 0, NULL, 0, 0 },
		{ ":80", 0, NULL, 0, 0 },
		{ "exa mple.com", 0, NULL, 0, 0 },
		{ "-bad.com", 0, NULL, 0, 0 },
		{ "bad-.com", 0, NULL, 0, 0 },
		{ "a..b", 0, NULL, 0, 0 },
		{ "http://example.com", 0, NULL, 0, 0 },
		{ "example.com/path", 0, NULL, 0, 0 },
		{ "10.20.0.256", 0, NULL, 0, 0 },
		{ "10.20.0", 0, NULL, 0, 0 },
		{ "10.20.0.5/33", 0, NULL, 0, 0 },
		{ "10.20.0.5/16", 0, NULL, 0, 0 },   /* host bits set */
		{ "10.20.0.0/", 0, NULL, 0, 0 },
		{ "[10.0.0.1]:80", 0, NULL, 0, 0 },
		{ "[2001:db8::1]x", 0, NULL, 0, 0 },
		{ "[2001:db8::1", 0, NULL, 0, 0 },
		{ "2001:db8::1:443x", 0, NULL, 0, 0 },
		{ "fe80::1%eth0", 0, NULL, 0, 0 },
		{ "123", 0, NULL, 0, 0 },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com", 0, NULL, 0, 0 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct allow_entry e;
		const char *why = NULL;
		char buf[300];
		int r = allow_parse_entry(t[i].in, &e, &why);

		if (t[i].ok) {
			if (r != 0)
				fail_msg("'%s' should parse: %s", t[i].in, why);
			assert_int_equal(e.kind, t[i].kind);
			assert_int_equal(e.port, t[i].port);
			assert_int_equal(allow_format_entry(&e, buf, sizeof(buf)), 0);
			assert_string_equal(buf, t[i].canon);
		} else {
			if (r == 0)
				fail_msg("'%s' should be refused", t[i].in);
			assert_non_null(why);
		}
	}
}

static void test_allow_match(void **state)
{
	struct allow_list l = { 0 };
	static const char *const entries[] = { "example.com", "*.wild.org", "db.internal:5432",
					       "10.20.0.0/16", "192.168.1.5:22", "[2001:db8::/32]:443" };
	static const struct {
		const char *name;
		unsigned port;
		int ok;
	} names[] = {
		{ "example.com", 443, 1 },     { "example.com", 80, 1 },       { "example.com", 8080, 0 },
		{ "a.example.com", 443, 1 },   { "a.b.example.com", 80, 1 },   { "badexample.com", 443, 0 },
		{ "example.com.evil", 443, 0 },{ "wild.org", 443, 0 },         { "x.wild.org", 443, 1 },
		{ "db.internal", 5432, 1 },    { "db.internal", 443, 0 },      { "x.db.internal", 5432, 1 },
		{ "org", 443, 0 },             { "com", 443, 0 },
	};
	static const struct {
		const char *addr;
		unsigned port;
		int ok;
	} addrs[] = {
		{ "10.20.3.4", 443, 1 },  { "10.20.3.4", 22, 0 },   { "10.21.0.1", 443, 0 },
		{ "192.168.1.5", 22, 1 }, { "192.168.1.5", 443, 0 },{ "::ffff:10.20.0.1", 80, 1 },
		{ "2001:db8:1::5", 443, 1 }, { "2001:db8:1::5", 80, 0 }, { "2001:db9::1", 443, 0 },
		{ "10.20.3.4", 0, 1 },
	};

	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++)
		assert_int_equal(allow_list_add(&l, entries[i]), 0);
	assert_int_equal(allow_list_add(&l, "bad entry"), -EINVAL);
	assert_int_equal(l.n, 6);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if ((allow_match_name(&l, names[i].name, (uint16_t)names[i].port) != NULL) != names[i].ok)
			fail_msg("name %s:%u expected %d", names[i].name, names[i].port, names[i].ok);
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		struct net_addr a;

		assert_int_equal(addr_parse(addrs[i].addr, &a), 0);
		if ((allow_match_addr(&l, &a, (uint16_t)addrs[i].port) != NULL) != addrs[i].ok)
			fail_msg("addr %s:%u expected %d", addrs[i].addr, addrs[i].port, addrs[i].ok);
	}
	assert_true(allow_has_addr_entries(&l));
	assert_true(allow_has_family(&l, AF_INET6));
	allow_list_free(&l);
	assert_int_equal(allow_list_add(&l, "a.com"), 0);
	assert_false(allow_has_addr_entries(&l));
	assert_false(allow_has_family(&l, AF_INET6));
	allow_list_free(&l);
}

static void test_addr_classify(void **state)
{
	static const struct {
		const char *a;
		enum addr_class c;
	} t[] = {
		{ "8.8.8.8", ADDR_PUBLIC },          { "1.1.1.1", ADDR_PUBLIC },
		{ "127.0.0.1", ADDR_LOOPBACK },      { "127.255.0.9", ADDR_LOOPBACK },
		{ "10.0.0.1", ADDR_PRIVATE },        { "172.16.0.1", ADDR_PRIVATE },
		{ "172.31.255.255", ADDR_PRIVATE },  { "172.32.0.1", ADDR_PUBLIC },
		{ "192.168.0.1", ADDR_PRIVATE },     { "169.254.1.1", ADDR_LINKLOCAL },
		{ "169.254.169.254", ADDR_METADATA },{ "100.64.0.1", ADDR_CGNAT },
		{ "100.127.255.255", ADDR_CGNAT },   { "100.128.0.1", ADDR_PUBLIC },
		{ "224.0.0.1", ADDR_MULTICAST },     { "239.1.1.1", ADDR_MULTICAST },
		{ "0.0.0.0", ADDR_UNSPECIFIED },     { "0.1.2.3", ADDR_UNSPECIFIED },
		{ "255.255.255.255", ADDR_RESERVED },{ "198.18.0.1", ADDR_RESERVED },
		{ "::1", ADDR_LOOPBACK },            { "::", ADDR_UNSPECIFIED },
		{ "fc00::1", ADDR_PRIVATE },         { "fd12::1", ADDR_PRIVATE },
		{ "fe80::1", ADDR_LINKLOCAL },       { "ff02::1", ADDR_MULTICAST },
		{ "fd00:ec2::254", ADDR_METADATA },  { "2606:4700::1111", ADDR_PUBLIC },
		{ "::ffff:127.0.0.1", ADDR_LOOPBACK },{ "::ffff:169.254.169.254", ADDR_METADATA },
		{ "::ffff:8.8.8.8", ADDR_PUBLIC },   { "64:ff9b::10.0.0.1", ADDR_PRIVATE },
		{ "::127.0.0.1", ADDR_RESERVED },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct net_addr a;

		assert_int_equal(addr_parse(t[i].a, &a), 0);
		if (addr_classify(&a) != t[i].c)
			fail_msg("%s: got %s want %s", t[i].a, addr_class_to_string(addr_classify(&a)),
				 addr_class_to_string(t[i].c));
	}
}

static void test_addr_misc(void **state)
{
	struct net_addr a, b;
	char buf[ADDR_STRLEN];
	struct sockaddr_storage ss;

	assert_int_equal(addr_parse("10.1", &a), -EINVAL);
	assert_int_equal(addr_parse("0x7f.0.0.1", &a), -EINVAL);
	assert_int_equal(addr_parse("10.1.2.3", &a), 0);
	assert_int_equal(addr_format(&a, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "10.1.2.3");
	assert_int_equal(addr_to_sockaddr(&a, 80, &ss), sizeof(struct sockaddr_in));
	assert_int_equal(addr_from_sockaddr((struct sockaddr *)&ss, &b), 0);
	assert_true(addr_equal(&a, &b));
	assert_int_equal(addr_parse("2001:db8::ff", &a), 0);
	addr_mask(&a, 120);
	assert_int_equal(addr_format(&a, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "2001:db8::");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allow_parse),
		cmocka_unit_test(test_allow_match),
		cmocka_unit_test(test_addr_classify),
		cmocka_unit_test(test_addr_misc),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
