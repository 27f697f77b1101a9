// SPDX-License-Identifier: GPL-2.0-or-later
/* test-pasta.c — pasta option detection, --publish parsing and argv */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "net/pasta.h"
#include "util/util.h"

/* Excerpt of Debian 12's pasta (0.0~git20230309) --help, syslog noise included. */
static const char help_2023[] =
	"Failed to send 51 bytes to syslog\nUsage: pasta [OPTION]... [COMMAND] [ARGS]...\n"
	"  -q, --quiet\t\tDon't print informational messages\nFailed to send 49 bytes to syslog\n"
	"  -f, --foreground\tDon't run in background\n"
	"  --no-map-gw\t\tDon't map gateway address to host\n"
	"  -4, --ipv4-only\tEnable IPv4 operation only\n"
	"  -T, --tcp-ns SPEC\tTCP port forwarding to init namespace\n"
	"  --config-net\t\tConfigure tap interface in namespace\n"
	"  --runas UID|UID:GID \tRun as given UID, GID, which can be\n";

static char *join(char **v)
{
	size_t n = 0;
	char *s;

	for (char **p = v; *p; p++)
		n += strlen(*p) + 1;
	s = calloc(1, n + 1);
	for (char **p = v; *p; p++) {
		strcat(s, *p);
		if (p[1])
			strcat(s, " ");
	}
	return s;
}

static void test_help(void **state)
{
	struct pasta_opts o;

	assert_int_equal(pasta_parse_help(help_2023, &o), 0);
	assert_true(o.no_map_gw);
	assert_false(o.map_host_loopback);
	assert_true(o.config_net);
	assert_true(o.tcp_ns);
	assert_true(o.ipv4_only);
	assert_int_equal(pasta_parse_help("bash: command not found", &o), -ENOEXEC);
	assert_int_equal(pasta_parse_help("pasta\n  --map-host-loopback ADDR\n  --config-net\n", &o), 0);
	assert_true(o.map_host_loopback);
	assert_false(o.no_map_gw);
}

static void test_publish(void **state)
{
	static const struct {
		const char *in;
		int ok;
		const char *addr;
		unsigned hp, p;
	} t[] = {
		{ "8080:80", 1, "127.0.0.1", 8080, 80 },
		{ "0.0.0.0:8080:80", 1, "0.0.0.0", 8080, 80 },
		{ "[::1]:8080:80", 1, "::1", 8080, 80 },
		{ "80", 0, NULL, 0, 0 },
		{ "x:80", 0, NULL, 0, 0 },
		{ "8080:0", 0, NULL, 0, 0 },
		{ "8080:70000", 0, NULL, 0, 0 },
		{ "host:8080:80", 0, NULL, 0, 0 },
		{ "1.2.3:8080:80", 0, NULL, 0, 0 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct pasta_publish p;
		int r = pasta_parse_publish(t[i].in, &p);

		if ((r == 0) != t[i].ok)
			fail_msg("'%s': r=%d", t[i].in, r);
		if (t[i].ok) {
			assert_string_equal(p.addr, t[i].addr);
			assert_int_equal(p.host_port, t[i].hp);
			assert_int_equal(p.port, t[i].p);
		}
	}
}

static void test_argv(void **state)
{
	struct pasta_opts o;
	struct pasta_publish pub = { "127.0.0.1", 8080, 80 };
	struct pasta_spec s = { .pid = 1234, .uid = 1000, .gid = 100 };
	char **v = NULL, *line;

	assert_int_equal(pasta_parse_help(help_2023, &o), 0);
	assert_int_equal(pasta_build_argv(&o, &s, &v), 0);
	line = join(v);
	assert_string_equal(line, "pasta --foreground --config-net --quiet --runas 1000:100 -T none -U none -u none --no-map-gw "
				  "--ipv4-only -t none 1234");
	free(line);
	strv_free(v);
	s.publish = &pub;
	s.n_publish = 1;
	s.ipv6 = true;
	assert_int_equal(pasta_build_argv(&o, &s, &v), 0);
	line = join(v);
	assert_string_equal(line, "pasta --foreground --config-net --quiet --runas 1000:100 -T none -U none -u none --no-map-gw "
				  "-t 127.0.0.1/8080:80 1234");
	free(line);
	strv_free(v);
	{
		/* a forward to a reserved port (the gate's listeners) is refused at the exec too;
		 * control: the same spec with another reserved list builds (above) */
		static const uint16_t reserved[] = { 3128, 80 };

		s.reserved = reserved;
		s.n_reserved = 2;
		assert_int_equal(pasta_build_argv(&o, &s, &v), -EPERM);
		s.n_reserved = 1;
		assert_int_equal(pasta_build_argv(&o, &s, &v), 0);
		strv_free(v);
	}
	o.no_map_gw = false; /* a pasta that cannot turn the gateway mapping off is refused */
	assert_int_equal(pasta_build_argv(&o, &s, &v), -ENOTSUP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_publish),
		cmocka_unit_test(test_argv),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
