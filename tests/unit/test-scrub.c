// SPDX-License-Identifier: GPL-2.0-or-later
/* test-scrub.c — masking passed-in values: the buffer rule (table), the needles of a plan, and
 * the walk over a real tree (chunk boundaries, symlinks, names, read-only files, the since rule) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ns/scrub.h"
#include "util/util.h"

#define KEY "sk-test-0123456789abcdef"

static void test_buffer(void **s)
{
	static const struct {
		const char *in, *out;
		size_t hits;
	} rows[] = {
		{ "declare -x KEY=\"" KEY "\"", "declare -x KEY=\"REDACTEDREDACTEDREDACTED\"", 1 },
		{ KEY KEY, "REDACTEDREDACTEDREDACTEDREDACTEDREDACTEDREDACTED", 2 },
		{ "x" KEY "y" KEY, "xREDACTEDREDACTEDREDACTEDyREDACTEDREDACTEDREDACTED", 2 },
		{ "sk-test-0123456789abcde", "sk-test-0123456789abcde", 0 }, /* one byte short */
		{ "pw=hunter2hunter2;", "pw=REDACTEDREDACT;", 1 },            /* the second needle */
		{ "", "", 0 },
	};
	const struct scrub_needle nd[] = { { .value = KEY, .len = strlen(KEY) },
					   { .value = "hunter2hunter2", .len = 14 } };

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char buf[128];
		uint64_t found = 0;
		snprintf(buf, sizeof(buf), "%s", rows[i].in);
		assert_int_equal(scrub_buffer(buf, strlen(buf), nd, 2, &found), rows[i].hits);
		assert_string_equal(buf, rows[i].out);
		assert_int_equal(found != 0, rows[i].hits != 0);
	}
}

static void test_needles(void **s)
{
	char k1[] = KEY, k2[] = KEY, one[] = "1", term[] = "xterm-256color", db[] = "postgres://u:pw@db/x";
	char n1[] = "MOCK_KEY", n2[] = "AI_API_TOKEN", n3[] = "DEBUG", n4[] = "TERM", n5[] = "DB_URL";
	struct plan_env env[] = {
		{ .name = n1, .value = k1, .secret = true },
		{ .name = n2, .value = k2, .secret = true }, /* the same value: one needle */
		{ .name = n3, .value = one, .secret = true }, /* too short to look for */
		{ .name = n4, .value = term, .secret = false },
		{ .name = n5, .value = db, .secret = true },
	};
	struct aisb_plan p = { .env = env, .n_env = 5 };
	struct scrub_needle nd[SCRUB_MAX_NEEDLES];
	size_t n_short, n = scrub_needles(&p, nd, &n_short);
	char line[512];

	assert_int_equal(n, 2);
	assert_int_equal(n_short, 1);
	assert_string_equal(nd[0].names, "$MOCK_KEY, $AI_API_TOKEN"); /* 24 bytes before 20 */
	assert_string_equal(nd[1].names, "$DB_URL");
	scrub_describe(&p, line, sizeof(line));
	assert_non_null(strstr(line, "$MOCK_KEY, $AI_API_TOKEN, $DB_URL"));
	/* a value that contains another is masked whole, as itself */
	{
		char longer[] = KEY "-suffix", n6[] = "LONG", buf[] = "x=" KEY "-suffix;";
		struct plan_env env2[] = { { .name = n1, .value = k1, .secret = true },
					   { .name = n6, .value = longer, .secret = true } };
		struct aisb_plan p2 = { .env = env2, .n_env = 2 };
		uint64_t found = 0;

		assert_int_equal(scrub_needles(&p2, nd, &n_short), 2);
		assert_string_equal(nd[0].names, "$LONG");
		assert_int_equal(scrub_buffer(buf, strlen(buf), nd, 2, &found), 1);
		assert_int_equal(found, 1);
		assert_string_equal(buf, "x=REDACTEDREDACTEDREDACTEDREDACTE;");
	}
	assert_non_null(strstr(line, "1 value shorter than 8 bytes is not searched"));
	assert_null(strstr(line, KEY));
	assert_false(nd[0].placeholder);
}

/* A --key-via-gate placeholder is a needle like a passed value, marked as one; merged with a
 * real value it is a real value's needle (the report must then warn). */
static void test_needles_placeholder(void **s)
{
	char ph[] = "aisb-placeholder-0123456789abcdef0123456789abcdef", ph2[] = "aisb-placeholder-0123456789abcdef0123456789abcdef";
	char k1[] = KEY, n1[] = "AI_API_TOKEN", n2[] = "MOCK_KEY", n3[] = "OTHER";
	struct plan_env env[] = {
		{ .name = n1, .value = ph, .secret = true, .placeholder = true },
		{ .name = n2, .value = k1, .secret = true },
	};
	struct aisb_plan p = { .env = env, .n_env = 2 };
	struct scrub_needle nd[SCRUB_MAX_NEEDLES];
	size_t n_short;
	char line[512];

	(void)s;
	assert_int_equal(scrub_needles(&p, nd, &n_short), 2);
	assert_string_equal(nd[0].names, "$AI_API_TOKEN"); /* 49 bytes before 24 */
	assert_true(nd[0].placeholder);
	assert_false(nd[1].placeholder);
	scrub_describe(&p, line, sizeof(line));
	assert_non_null(strstr(line, "the values of the placeholder in $AI_API_TOKEN, $MOCK_KEY are searched"));
	{
		struct plan_env env2[] = {
			{ .name = n1, .value = ph, .secret = true, .placeholder = true },
			{ .name = n3, .value = ph2, .secret = true }, /* the same bytes, passed with --env */
		};
		struct aisb_plan p2 = { .env = env2, .n_env = 2 };

		assert_int_equal(scrub_needles(&p2, nd, &n_short), 1);
		assert_false(nd[0].placeholder);
	}
}

static char root[64];

static void put(const char *rel, const char *data, size_t len, mode_t mode)
{
	_cleanup_free_ char *p = path_join(root, rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write_full(fd, data, len), 0);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static char *get(const char *rel, size_t *len)
{
	_cleanup_free_ char *p = path_join(root, rel);
	char *d = NULL;

	if (read_file_at(AT_FDCWD, p, 8 << 20, &d, len) < 0)
		return NULL;
	return d;
}

static void test_tree(void **s)
{
	const struct scrub_needle nd[] = { { .value = KEY, .len = strlen(KEY), .names = "$MOCK_KEY" } };
	struct scrub_report rep;
	struct timespec future, past = { 0, 0 };
	size_t big = (1u << 20) + 4096, len;
	_cleanup_free_ char *data = malloc(big), *outside = NULL, *sub = NULL, *link = NULL;
	char *got;
	struct stat st;

	snprintf(root, sizeof(root), "/tmp/aisb-scrubtest-XXXXXX");
	assert_non_null(mkdtemp(root));
	sub = path_join(root, "home/.codex/shell_snapshots");
	assert_int_equal(mkdir_p(sub, 0700), 0);
	/* across the first chunk's end: 10 bytes of it before 1 MiB, the rest after */
	memset(data, 'a', big);
	memcpy(data + (1u << 20) - 10, KEY, strlen(KEY));
	put("home/big.bin", data, big, 0600);
	put("home/.codex/shell_snapshots/x.sh", "declare -x MOCK_KEY=\"" KEY "\"\n", strlen(KEY) + 23, 0644);
	put("home/ro.json", "{\"k\":\"" KEY "\"}", 32, 0444);
	put("home/clean.txt", "nothing here", 12, 0600);
	put("home/" KEY ".txt", "x", 1, 0600);
	/* a symlink out of the tree is not followed: the file it names keeps its bytes */
	put("outside", KEY, strlen(KEY), 0600);
	outside = path_join(root, "outside");
	link = path_join(root, "home/link");
	assert_int_equal(symlink(outside, link), 0);

	/* since in the future: nothing was changed in the session, nothing is touched */
	clock_gettime(CLOCK_REALTIME, &future);
	future.tv_sec += 60;
	{
		_cleanup_free_ char *home = path_join(root, "home");
		assert_int_equal(scrub_tree(home, &future, nd, 1, &rep), 0);
		assert_int_equal(rep.n_files, 0);
		scrub_report_free(&rep);
		assert_int_equal(scrub_tree(home, &past, nd, 1, &rep), 0);
	}
	assert_null(rep.stopped_at);
	assert_int_equal(rep.n_files, 4); /* big.bin, x.sh, ro.json, the name */
	scrub_report_free(&rep);

	got = get("home/big.bin", &len);
	assert_int_equal(len, big);
	assert_null(memmem(got, len, KEY, strlen(KEY)));
	assert_memory_equal(got + (1u << 20) - 10, "REDACTEDREDACTEDREDACTED", strlen(KEY));
	free(got);
	got = get("home/.codex/shell_snapshots/x.sh", &len);
	assert_string_equal(got, "declare -x MOCK_KEY=\"REDACTEDREDACTEDREDACTED\"\n");
	free(got);
	got = get("home/ro.json", &len);
	assert_string_equal(got, "{\"k\":\"REDACTEDREDACTEDREDACTED\"}");
	free(got);
	{
		_cleanup_free_ char *ro = path_join(root, "home/ro.json"), *renamed = path_join(root, "home/REDACTEDREDACTEDREDACTED.txt");
		assert_int_equal(stat(ro, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0444); /* the mode is kept */
		assert_int_equal(stat(renamed, &st), 0);
	}
	got = get("outside", &len);
	assert_memory_equal(got, KEY, strlen(KEY));
	free(got);
	rm_rf(root);
}

/* a bound that is hit is named, never passed over as clean */
static void test_bound(void **s)
{
	const struct scrub_needle nd[] = { { .value = KEY, .len = strlen(KEY), .names = "$K" } };
	struct scrub_report rep;
	char dir[64];
	int fd;

	snprintf(dir, sizeof(dir), "/tmp/aisb-scrubdeep-XXXXXX");
	assert_non_null(mkdtemp(dir));
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (int i = 0; i < SCRUB_MAX_DEPTH + 2; i++) {
		int sub;
		assert_int_equal(mkdirat(fd, "d", 0700), 0);
		sub = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		fd = sub;
	}
	close(fd);
	assert_int_equal(scrub_tree(dir, NULL, nd, 1, &rep), 0);
	assert_non_null(rep.stopped_at);
	assert_non_null(strstr(rep.stop_why, "128 levels"));
	assert_int_equal(strlen(rep.stopped_at), 2 * (SCRUB_MAX_DEPTH + 1) - 1); /* d/d/.../d */
	scrub_report_free(&rep);
	rm_rf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buffer),
		cmocka_unit_test(test_needles),
		cmocka_unit_test(test_needles_placeholder),
		cmocka_unit_test(test_tree),
		cmocka_unit_test(test_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
