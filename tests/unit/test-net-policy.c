// SPDX-License-Identifier: GPL-2.0-or-later
/* test-net-policy.c — gate decisions and the SNI peek (table-driven) */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "net/policy.h"
#include "net/sni.h"

static void test_policy_check(void **state)
{
	struct net_policy p = { 0 };
	static const char *const allows[] = { "example.com", "*.wild.org", "db.test:5432", "10.20.0.0/16",
					      "127.0.0.1:8080", "pinned.test:9000" };
	static const struct {
		const char *host;
		unsigned port;
		enum policy_step step;
		const char *suggest;   /* denials */
		const char *reason;    /* substring */
	} t[] = {
		{ "example.com", 443, POLICY_RESOLVE, NULL, NULL },
		{ "API.Example.com.", 80, POLICY_RESOLVE, NULL, NULL },
		{ "example.com", 8443, POLICY_DENY, "--allow example.com:8443", "port 8443 of example.com is not allowed" },
		{ "example.org", 443, POLICY_DENY, "--allow example.org", "example.org is not in the allowlist" },
		{ "example.org", 22, POLICY_DENY, "--allow example.org:22", "not in the allowlist" },
		{ "wild.org", 443, POLICY_DENY, "--allow wild.org", NULL },
		{ "a.wild.org", 443, POLICY_RESOLVE, NULL, NULL },
		{ "db.test", 5432, POLICY_RESOLVE, NULL, NULL },
		{ "10.20.1.1", 443, POLICY_DIAL, NULL, NULL },
		{ "10.20.1.1", 22, POLICY_DENY, "--allow 10.20.1.1:22", "not covered by an IP entry" },
		{ "10.21.1.1", 80, POLICY_DENY, "--allow 10.21.1.1", NULL },
		{ "127.0.0.1", 8080, POLICY_DIAL, NULL, NULL },
		{ "127.0.0.1", 8081, POLICY_DENY, "--allow 127.0.0.1:8081", NULL },
		{ "2001:db8::1", 443, POLICY_DENY, "--allow 2001:db8::1", NULL },
		{ "2001:db8::1", 22, POLICY_DENY, "--allow [2001:db8::1]:22", NULL },
		{ "pinned.test", 9000, POLICY_DIAL, NULL, NULL },
		{ "host.aisb.internal", 7000, POLICY_DIAL, NULL, NULL },
		{ "host.aisb.internal", 7001, POLICY_DENY, "--allow-host-port 7001", "not published" },
		{ "bad_name-.com", 443, POLICY_DENY, "", "invalid host name" },
	};

	for (size_t i = 0; i < sizeof(allows) / sizeof(allows[0]); i++)
		assert_int_equal(allow_list_add(&p.allow, allows[i]), 0);
	assert_int_equal(policy_add_pin(&p, "pinned.test=127.0.0.1"), 0);
	assert_int_equal(policy_add_pin(&p, "pinned.test"), -EINVAL);
	assert_int_equal(policy_add_pin(&p, "x=notanip"), -EINVAL);
	assert_int_equal(policy_add_host_port(&p, "7000"), 0);
	assert_int_equal(policy_add_host_port(&p, "70000"), -EINVAL);

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct policy_decision d;

		policy_check(&p, t[i].host, (uint16_t)t[i].port, &d);
		if (d.step != t[i].step)
			fail_msg("%s:%u: step %d want %d (%s)", t[i].host, t[i].port, d.step, t[i].step, d.reason);
		if (t[i].suggest)
			assert_string_equal(d.suggest, t[i].suggest);
		if (t[i].reason && !strstr(d.reason, t[i].reason))
			fail_msg("%s:%u: reason '%s'", t[i].host, t[i].port, d.reason);
	}
	{
		struct policy_decision d;

		policy_check(&p, "pinned.test", 9000, &d);
		assert_int_equal(d.n_addrs, 1);
		assert_string_equal(d.rule, "pinned.test:9000");
		policy_check(&p, "host.aisb.internal", 7000, &d);
		assert_true(d.host_internal);
	}
	assert_true(policy_name_listed(&p, "example.com"));
	assert_true(policy_name_listed(&p, "x.db.test"));
	assert_true(policy_name_listed(&p, "host.aisb.internal"));
	assert_false(policy_name_listed(&p, "wild.org"));
	assert_false(policy_name_listed(&p, "example.org"));
	policy_free(&p);
}

static void test_policy_rebinding(void **state)
{
	struct net_policy p = { 0 };
	static const struct {
		const char *addrs[3];
		enum policy_step step;
		size_t kept;
		const char *suggest;
	} t[] = {
		{ { "93.184.216.34" }, POLICY_DIAL, 1, NULL },
		{ { "127.0.0.1" }, POLICY_DENY, 0, "--add-host example.com=127.0.0.1" },
		{ { "169.254.169.254" }, POLICY_DENY, 0, "--add-host example.com=169.254.169.254" },
		{ { "10.1.2.3", "93.184.216.34" }, POLICY_DIAL, 1, NULL },
		{ { "10.20.0.9" }, POLICY_DIAL, 1, NULL },          /* named by the CIDR entry */
		{ { "::ffff:192.168.1.1" }, POLICY_DENY, 0, NULL },
		{ { "fd00::1", "::1" }, POLICY_DENY, 0, NULL },
		{ { "2606:4700::1" }, POLICY_DIAL, 1, NULL },
		{ { NULL }, POLICY_DENY, 0, "" },
	};

	assert_int_equal(allow_list_add(&p.allow, "example.com"), 0);
	assert_int_equal(allow_list_add(&p.allow, "10.20.0.0/16"), 0);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct policy_decision d;
		struct net_addr a[3];
		size_t n = 0;

		policy_check(&p, "example.com", 443, &d);
		assert_int_equal(d.step, POLICY_RESOLVE);
		for (; n < 3 && t[i].addrs[n]; n++)
			assert_int_equal(addr_parse(t[i].addrs[n], &a[n]), 0);
		policy_filter_resolved(&p, a, n, &d);
		if (d.step != t[i].step)
			fail_msg("case %zu: step %d (%s)", i, d.step, d.reason);
		assert_int_equal(d.n_addrs, t[i].kept);
		if (t[i].suggest)
			assert_string_equal(d.suggest, t[i].suggest);
	}
	policy_free(&p);
}

/* A catch-all IP entry (or one that merely contains a special range) covers the host's
 * loopback, link-local, metadata and private addresses but does not name them: they stay shut,
 * for IP literals and for resolved names. An entry inside the range opens it (the controls).
 * Pure: no packet is sent to any of these addresses. */
static void test_policy_catch_all(void **state)
{
	static const struct {
		const char *entries[3];
		const char *addr;
		bool ok;
	} t[] = {
		{ { "0.0.0.0/0" }, "127.0.0.1", false },
		{ { "0.0.0.0/0" }, "169.254.169.254", false },
		{ { "0.0.0.0/0" }, "169.254.7.1", false },
		{ { "0.0.0.0/0" }, "10.1.2.3", false },
		{ { "0.0.0.0/0" }, "::ffff:127.0.0.1", false },
		{ { "0.0.0.0/0" }, "93.184.216.34", true },
		{ { "0.0.0.0/1", "128.0.0.0/1" }, "127.0.0.1", false },
		{ { "0.0.0.0/1", "128.0.0.0/1" }, "169.254.169.254", false },
		{ { "0.0.0.0/1", "128.0.0.0/1" }, "198.51.100.7", false },
		{ { "0.0.0.0/1", "128.0.0.0/1" }, "93.184.216.34", true },
		{ { "126.0.0.0/7" }, "127.0.0.1", false },
		{ { "126.0.0.0/7" }, "126.1.2.3", true },
		{ { "::/0" }, "::1", false },
		{ { "::/0" }, "fe80::1", false },
		{ { "::/0" }, "fd00:ec2::254", false },
		{ { "::/0" }, "fd12::1", false },
		{ { "::/0" }, "64:ff9b::7f00:1", false },
		{ { "::/0" }, "2606:4700::1", true },
		{ { "::/1", "8000::/1" }, "::1", false },
		{ { "2001:db8::/31" }, "2001:db8::1", false },
		/* entries that name the range: the controls */
		{ { "0.0.0.0/0", "127.0.0.1" }, "127.0.0.1", true },
		{ { "0.0.0.0/0", "127.0.0.0/8" }, "127.0.0.9", true },
		{ { "169.254.169.254" }, "169.254.169.254", true },
		{ { "169.254.0.0/16" }, "169.254.7.1", true },
		{ { "169.254.0.0/16" }, "169.254.169.254", false }, /* metadata is its own range */
		{ { "127.0.0.1" }, "::ffff:127.0.0.1", true },
		{ { "::/0", "::1" }, "::1", true },
		{ { "fe80::/10" }, "fe80::1", true },
		{ { "2001:db8::/32" }, "2001:db8::1", true },
		{ { "10.0.0.0/8" }, "10.1.2.3", true },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct net_policy p = { 0 };
		struct policy_decision d;
		struct net_addr a;
		bool ok;

		for (size_t k = 0; k < 3 && t[i].entries[k]; k++)
			assert_int_equal(allow_list_add(&p.allow, t[i].entries[k]), 0);
		assert_int_equal(allow_list_add(&p.allow, "svc.test"), 0);
		/* the IP literal through the gate */
		policy_check(&p, t[i].addr, 443, &d);
		ok = d.step == POLICY_DIAL;
		if (ok != t[i].ok)
			fail_msg("case %zu: literal %s with %s: %s", i, t[i].addr, t[i].entries[0], d.reason);
		/* a name that resolves there */
		policy_check(&p, "svc.test", 443, &d);
		assert_int_equal(d.step, POLICY_RESOLVE);
		assert_int_equal(addr_parse(t[i].addr, &a), 0);
		policy_filter_resolved(&p, &a, 1, &d);
		ok = d.step == POLICY_DIAL;
		if (ok != t[i].ok)
			fail_msg("case %zu: svc.test resolving to %s with %s: %s", i, t[i].addr, t[i].entries[0], d.reason);
		policy_free(&p);
	}
}

/* A minimal TLS 1.2-style ClientHello carrying @sni (or none). */
static size_t mkhello(unsigned char *b, const char *sni)
{
	size_t n = 0, hs, ext, rec;

	b[n++] = 0x16, b[n++] = 3, b[n++] = 1;
	rec = n, n += 2;
	b[n++] = 1;
	hs = n, n += 3;
	b[n++] = 3, b[n++] = 3;
	memset(b + n, 0xab, 32), n += 32;
	b[n++] = 0;                        /* session id */
	b[n++] = 0, b[n++] = 2, b[n++] = 0x13, b[n++] = 0x01;
	b[n++] = 1, b[n++] = 0;            /* compression */
	ext = n, n += 2;
	b[n++] = 0, b[n++] = 0x2b, b[n++] = 0, b[n++] = 3, b[n++] = 2, b[n++] = 3, b[n++] = 4;
	if (sni) {
		size_t l = strlen(sni);

		b[n++] = 0, b[n++] = 0;
		b[n++] = 0, b[n++] = (unsigned char)(l + 5);
		b[n++] = 0, b[n++] = (unsigned char)(l + 3);
		b[n++] = 0;
		b[n++] = 0, b[n++] = (unsigned char)l;
		memcpy(b + n, sni, l), n += l;
	}
	b[ext] = (unsigned char)((n - ext - 2) >> 8), b[ext + 1] = (unsigned char)(n - ext - 2);
	b[hs] = 0, b[hs + 1] = (unsigned char)((n - hs - 3) >> 8), b[hs + 2] = (unsigned char)(n - hs - 3);
	b[rec] = (unsigned char)((n - rec - 2) >> 8), b[rec + 1] = (unsigned char)(n - rec - 2);
	return n;
}

static void test_sni(void **state)
{
	unsigned char b[512];
	char name[256];
	size_t n = mkhello(b, "Example.COM");

	assert_int_equal(sni_parse(b, n, name, sizeof(name)), 1);
	assert_string_equal(name, "example.com");
	for (size_t cut = 0; cut < n; cut++)
		assert_int_equal(sni_parse(b, cut, name, sizeof(name)), 0);
	n = mkhello(b, NULL);
	assert_int_equal(sni_parse(b, n, name, sizeof(name)), -ENOENT);
	assert_int_equal(sni_parse((const unsigned char *)"GET / HTTP/1.1\r\n", 16, name, sizeof(name)), -EPROTO);
	assert_int_equal(sni_parse((const unsigned char *)"SSH-2.0-x", 9, name, sizeof(name)), -EPROTO);
	n = mkhello(b, "evil\x01.com");
	assert_int_equal(sni_parse(b, n, name, sizeof(name)), -EBADMSG);
	n = mkhello(b, "a.com");
	b[n - 6] = 200;                    /* name length past the end */
	assert_int_equal(sni_parse(b, n, name, sizeof(name)), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policy_check),
		cmocka_unit_test(test_policy_rebinding),
		cmocka_unit_test(test_policy_catch_all),
		cmocka_unit_test(test_sni),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
