// SPDX-License-Identifier: GPL-2.0-or-later
/* test-nft.c — ruleset builder: text rendering, batch parse-back, and a real apply in a private netns */
#include <errno.h>
#include <netinet/in.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <libmnl/libmnl.h>
#include <libnftnl/batch.h>
#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>

#include "net/nft.h"
#include "util/dl.h"

static char *render(const struct nft_ruleset *rs)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(nft_ruleset_render(rs, f), 0);
	fclose(f);
	return buf;
}

static const char expect_plain[] =
	"table inet aisb {\n"
	"\tchain output {\n"
	"\t\ttype filter hook output priority 0; policy drop;\n"
	"\t\toif \"lo\" accept\n"
	"\t\tmeta nfproto ipv6 counter drop\n"
	"\t\tmeta l4proto tcp counter reject with tcp reset\n"
	"\t\tcounter reject with icmpx type admin-prohibited\n"
	"\t}\n"
	"\n\tchain input {\n"
	"\t\ttype filter hook input priority 0; policy drop;\n"
	"\t\tiif \"lo\" accept\n"
	"\t}\n"
	"}\n"
	"\n"
	"table ip aisb {\n"
	"\tchain nat_output {\n"
	"\t\ttype nat hook output priority -100; policy accept;\n"
	"\t\tip daddr 198.18.0.0/15 meta l4proto tcp redirect to :3129\n"
	"\t}\n"
	"}\n";

static void test_render_plain(void **state)
{
	struct allow_list l = { 0 };
	struct nft_spec spec = { .transparent_port = 3129, .allow = &l };
	struct nft_ruleset rs;
	char *text;

	assert_int_equal(allow_list_add(&l, "example.com"), 0);
	assert_int_equal(allow_list_add(&l, "10.0.0.0/8"), 0); /* no pasta: no accept rule */
	assert_int_equal(nft_ruleset_build(&spec, &rs), 0);
	text = render(&rs);
	assert_string_equal(text, expect_plain);
	free(text);
	nft_ruleset_free(&rs);
	allow_list_free(&l);
}

static void test_render_pasta(void **state)
{
	struct allow_list l = { 0 };
	static const uint16_t pub[] = { 8080 };
	struct nft_spec spec = { .transparent_port = 3129, .allow = &l, .pasta = true,
				 .published = pub, .n_published = 1 };
	struct nft_ruleset rs;
	char *text;

	assert_int_equal(allow_list_add(&l, "10.20.0.0/16"), 0);
	assert_int_equal(allow_list_add(&l, "[2001:db8::5]:22"), 0);
	assert_int_equal(nft_ruleset_build(&spec, &rs), 0);
	text = render(&rs);
	assert_non_null(strstr(text, "\t\tip daddr 10.20.0.0/16 tcp dport 443 accept\n"
				     "\t\tip daddr 10.20.0.0/16 udp dport 443 accept\n"
				     "\t\tip daddr 10.20.0.0/16 tcp dport 80 accept\n"
				     "\t\tip daddr 10.20.0.0/16 udp dport 80 accept\n"
				     "\t\tip6 daddr 2001:db8::5 tcp dport 22 accept\n"
				     "\t\tip6 daddr 2001:db8::5 udp dport 22 accept\n"
				     "\t\tmeta l4proto tcp counter reject"));
	assert_null(strstr(text, "meta nfproto ipv6 counter drop")); /* an IPv6 entry exists */
	assert_non_null(strstr(text, "\t\ttcp dport 8080 accept\n\t}"));
	free(text);
	assert_int_equal(nft_ruleset_count(&rs, NFT_CHAIN_OUTPUT), 10);
	assert_int_equal(nft_ruleset_count(&rs, NFT_CHAIN_INPUT), 3);
	assert_int_equal(nft_ruleset_count(&rs, NFT_CHAIN_NAT_OUTPUT), 1);
	nft_ruleset_free(&rs);
	allow_list_free(&l);
}

struct expr_walk {
	char kinds[256];
};

static int expr_cb(struct nftnl_expr *e, void *data)
{
	struct expr_walk *w = data;

	if (w->kinds[0])
		strncat(w->kinds, ",", sizeof(w->kinds) - strlen(w->kinds) - 1);
	strncat(w->kinds, nftnl_expr_get_str(e, NFTNL_EXPR_NAME), sizeof(w->kinds) - strlen(w->kinds) - 1);
	return 0;
}

static unsigned nfmsg_family(const struct nlmsghdr *h)
{
	const struct nfgenmsg *g = mnl_nlmsg_get_payload(h);

	return g->nfgen_family;
}

/* Build the batch, then parse every message back with libnftnl and compare with the description. */
static void test_batch_parse_back(void **state)
{
	struct allow_list l = { 0 };
	struct nft_spec spec = { .transparent_port = 3129, .allow = &l, .pasta = true };
	struct nft_ruleset rs;
	struct nftnl_batch *b = NULL;
	unsigned acks = 0, tables = 0, chains = 0, rules = 0;
	static const char *const expect_exprs[] = {
		"meta,cmp,immediate",                                  /* oif lo accept */
		"ct,bitwise,cmp,immediate",                            /* ct state */
		"meta,cmp,payload,cmp,meta,cmp,payload,cmp,immediate", /* ip daddr 10.1.2.3 tcp dport 5432 */
		"meta,cmp,payload,cmp,meta,cmp,payload,cmp,immediate", /* ... udp dport 5432 */
		"meta,cmp,counter,immediate",                          /* ipv6 drop */
		"meta,cmp,counter,reject",
		"counter,reject",
		"meta,cmp,immediate",                                  /* iif lo */
		"ct,bitwise,cmp,immediate",
		"meta,cmp,payload,bitwise,cmp,meta,cmp,immediate,redir",
	};

	assert_int_equal(allow_list_add(&l, "10.1.2.3:5432"), 0);
	assert_int_equal(nft_ruleset_build(&spec, &rs), 0);
	assert_int_equal(rs.n_rules, sizeof(expect_exprs) / sizeof(expect_exprs[0]));
	assert_int_equal(nft_ruleset_batch(&rs, 100, &b, &acks), 0);
	assert_int_equal(acks, 2 + NFT_CHAIN_MAX + rs.n_rules);

	int n_iov = nftnl_batch_iovec_len(b);
	struct iovec iov[16];

	assert_true(n_iov <= 16);
	nftnl_batch_iovec(b, iov, (uint32_t)n_iov);
	for (int i = 0; i < n_iov; i++) {
		const struct nlmsghdr *h = iov[i].iov_base;
		int left = (int)iov[i].iov_len;

		for (; mnl_nlmsg_ok(h, left); h = mnl_nlmsg_next(h, &left)) {
			uint16_t type = h->nlmsg_type & 0xff;

			if (h->nlmsg_type == NFNL_MSG_BATCH_BEGIN || h->nlmsg_type == NFNL_MSG_BATCH_END)
				continue;
			assert_true(h->nlmsg_flags & NLM_F_ACK);
			if (type == NFT_MSG_NEWTABLE) {
				struct nftnl_table *t = nftnl_table_alloc();

				assert_int_equal(nftnl_table_nlmsg_parse(h, t), 0);
				assert_string_equal(nftnl_table_get_str(t, NFTNL_TABLE_NAME), "aisb");
				assert_int_equal(nftnl_table_get_u32(t, NFTNL_TABLE_FAMILY),
						 tables ? NFPROTO_IPV4 : NFPROTO_INET);
				nftnl_table_free(t);
				tables++;
			} else if (type == NFT_MSG_NEWCHAIN) {
				struct nftnl_chain *c = nftnl_chain_alloc();
				static const char *const names[] = { "output", "input", "nat_output" };
				static const unsigned pol[] = { NF_DROP, NF_DROP, NF_ACCEPT };
				static const unsigned fam[] = { NFPROTO_INET, NFPROTO_INET, NFPROTO_IPV4 };

				assert_int_equal(nftnl_chain_nlmsg_parse(h, c), 0);
				assert_string_equal(nftnl_chain_get_str(c, NFTNL_CHAIN_NAME), names[chains]);
				assert_int_equal(nftnl_chain_get_u32(c, NFTNL_CHAIN_POLICY), pol[chains]);
				assert_int_equal(nfmsg_family(h), fam[chains]);
				nftnl_chain_free(c);
				chains++;
			} else if (type == NFT_MSG_NEWRULE) {
				struct nftnl_rule *r = nftnl_rule_alloc();
				struct expr_walk w = { 0 };

				assert_int_equal(nftnl_rule_nlmsg_parse(h, r), 0);
				assert_string_equal(nftnl_rule_get_str(r, NFTNL_RULE_CHAIN),
						    nft_chain_name(rs.rules[rules].chain));
				assert_int_equal(nftnl_rule_get_u32(r, NFTNL_RULE_FAMILY),
						 rs.rules[rules].chain == NFT_CHAIN_NAT_OUTPUT ? NFPROTO_IPV4 : NFPROTO_INET);
				nftnl_expr_foreach(r, expr_cb, &w);
				if (strcmp(w.kinds, expect_exprs[rules]) != 0)
					fail_msg("rule %u: %s, want %s", rules, w.kinds, expect_exprs[rules]);
				nftnl_rule_free(r);
				rules++;
			} else {
				fail_msg("unexpected message type %u", type);
			}
		}
	}
	assert_int_equal(tables, 2);
	assert_int_equal(chains, NFT_CHAIN_MAX);
	assert_int_equal(rules, rs.n_rules);
	nftnl_batch_free(b);
	nft_ruleset_free(&rs);
	allow_list_free(&l);
}

/* The real thing, in a private user+net namespace (skipped where none can be made). */
static void test_apply(void **state)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		struct allow_list l = { 0 };
		struct nft_spec spec = { .transparent_port = 3129, .allow = &l };
		struct nft_ruleset rs, other;

		if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0)
			_exit(77);
		if (nft_ruleset_build(&spec, &rs) < 0)
			_exit(1);
		if (nft_verify(&rs) == 0)
			_exit(2); /* nothing installed yet: verification must fail */
		if (nft_apply(&rs) < 0)
			_exit(3);
		if (nft_verify(&rs) < 0)
			_exit(4);
		spec.pasta = true;         /* a ruleset with other rules must not pass as this one */
		if (nft_ruleset_build(&spec, &other) < 0 || nft_verify(&other) == 0)
			_exit(6);
		if (nft_apply(&rs) == 0)
			_exit(5); /* the table exists now: NLM_F_EXCL must make the batch fail */
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	/* aisb loads them explicitly, before any use (util/dl.h) */
	if (dl_load(&dl_libmnl) < 0 || dl_load(&dl_libnftnl) < 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_render_plain),
		cmocka_unit_test(test_render_pasta),
		cmocka_unit_test(test_batch_parse_back),
		cmocka_unit_test(test_apply),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
