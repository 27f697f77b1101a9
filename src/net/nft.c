// SPDX-License-Identifier: GPL-2.0-or-later
/* nft.c — ruleset builder, text rendering, libnftnl batch, apply and verify */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#include <libmnl/libmnl.h>
#include <libnftnl/batch.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>

#include "net/nft.h"
#include "util/log.h"
#include "util/util.h"

/* The filter chains are inet (both families); the nat chain lives in an ip table of the same
 * name: its one rule redirects the IPv4 pool, and a nat chain of the inet family would also turn
 * on IPv6 connection tracking, whose hooks cost ~0.9 ms per sandbox start on a host that has no
 * IPv6 netfilter hook of its own (each first hook flips a kernel static key; measured with
 * `strace -T nft -f` in `unshare -Urn`: inet nat 2.84 ms, ip nat 1.95 ms for the whole batch). */
static const struct {
	const char *name, *type;
	int hook, prio;
	unsigned policy;
	uint32_t family;
} chains[NFT_CHAIN_MAX] = {
	[NFT_CHAIN_OUTPUT] = { "output", "filter", NF_INET_LOCAL_OUT, 0, NF_DROP, NFPROTO_INET },
	[NFT_CHAIN_INPUT] = { "input", "filter", NF_INET_LOCAL_IN, 0, NF_DROP, NFPROTO_INET },
	[NFT_CHAIN_NAT_OUTPUT] = { "nat_output", "nat", NF_INET_LOCAL_OUT, -100, NF_ACCEPT, NFPROTO_IPV4 },
};

static const uint32_t table_families[] = { NFPROTO_INET, NFPROTO_IPV4 };

static const char *family_name(uint32_t family)
{
	return family == NFPROTO_INET ? "inet" : "ip";
}

const char *nft_chain_name(enum nft_chain_id c)
{
	return c < NFT_CHAIN_MAX ? chains[c].name : "?";
}

static struct nft_rule_desc *add_rule(struct nft_ruleset *rs, enum nft_chain_id chain, enum nft_verdict v)
{
	struct nft_rule_desc *r;

	if (rs->n_rules >= NFT_RULES_MAX)
		return NULL;
	r = &rs->rules[rs->n_rules++];
	memset(r, 0, sizeof(*r));
	r->chain = chain;
	r->verdict = v;
	return r;
}

static void add_match(struct nft_rule_desc *r, enum nft_match_kind k, unsigned value)
{
	r->m[r->n_m].kind = k;
	r->m[r->n_m].value = value;
	r->n_m++;
}

static void add_dport(struct nft_rule_desc *r, unsigned proto, uint16_t port)
{
	r->m[r->n_m].kind = NFT_M_DPORT;
	r->m[r->n_m].value = proto;
	r->m[r->n_m].port = port;
	r->n_m++;
}

static void add_daddr(struct nft_rule_desc *r, const struct net_addr *a, unsigned plen)
{
	r->m[r->n_m].kind = NFT_M_DADDR;
	r->m[r->n_m].addr = *a;
	r->m[r->n_m].plen = plen;
	r->n_m++;
}

static int add_reject_pair(struct nft_ruleset *rs, const struct net_addr *net, unsigned plen)
{
	struct nft_rule_desc *r = add_rule(rs, NFT_CHAIN_OUTPUT, NFT_V_REJECT_TCP);

	if (!r)
		return -E2BIG;
	add_daddr(r, net, plen);
	add_match(r, NFT_M_L4PROTO, IPPROTO_TCP);
	r->counter = true;
	if (!(r = add_rule(rs, NFT_CHAIN_OUTPUT, NFT_V_REJECT_ICMPX)))
		return -E2BIG;
	add_daddr(r, net, plen);
	r->counter = true;
	return 0;
}

static int add_entry_accepts(struct nft_ruleset *rs, const struct allow_entry *e)
{
	static const unsigned protos[] = { IPPROTO_TCP, IPPROTO_UDP };
	uint16_t ports[2] = { e->port, 0 };

	if (!e->port)
		ports[0] = 443, ports[1] = 80;
	for (size_t p = 0; p < 2 && ports[p]; p++)
		for (size_t k = 0; k < 2; k++) {
			struct nft_rule_desc *r = add_rule(rs, NFT_CHAIN_OUTPUT, NFT_V_ACCEPT);

			if (!r)
				return -E2BIG;
			add_daddr(r, &e->addr, e->plen);
			add_dport(r, protos[k], ports[p]);
		}
	return 0;
}

static int by_plen_desc(const void *a, const void *b)
{
	const struct allow_entry *x = *(const struct allow_entry *const *)a, *y = *(const struct allow_entry *const *)b;

	if (x->plen != y->plen)
		return x->plen < y->plen ? 1 : -1;
	return x < y ? -1 : x > y; /* stable: the user's order within one length */
}

/* The IP/CIDR entries' accept rules, most specific entry first, and before each entry a reject
 * for every special range (loopback, link-local, metadata, private, ...) that lies strictly
 * inside it, emitted once. An entry that merely contains a range (0.0.0.0/0, ::/0) therefore
 * never opens it, and one inside the range (127.0.0.0/8, 169.254.169.254) still does: such an
 * entry is at least as long as the range, so it sorts before every entry that contains the
 * range, and before that range's reject. The same rule as addr_prefix_names() for the gate. */
static int add_addr_entries(struct nft_ruleset *rs, const struct allow_list *l)
{
	_cleanup_free_ const struct allow_entry **v = calloc(l->n ? l->n : 1, sizeof(*v)); /* NOLINT(bugprone-sizeof-expression): an array of pointers, sizeof(*v) is one pointer */
	bool rejected[2][ADDR_SPECIALS_MAX] = { { false } };
	size_t n = 0;
	int r;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].kind == ALLOW_ADDR)
			v[n++] = &l->v[i];
	qsort(v, n, sizeof(*v), by_plen_desc); /* NOLINT(bugprone-sizeof-expression): an array of pointers, sizeof(*v) is one pointer */
	for (size_t i = 0; i < n; i++) {
		const struct allow_entry *e = v[i];
		bool six = e->addr.family == AF_INET6;
		struct net_addr net;
		unsigned plen;
		size_t cur = 0;

		while (addr_special_next(e->addr.family, &cur, &net, &plen)) {
			size_t idx = cur - 1;

			assert(idx < ADDR_SPECIALS_MAX);
			if (plen <= e->plen || !addr_in_prefix(&net, &e->addr, e->plen) || rejected[six][idx])
				continue;
			rejected[six][idx] = true;
			if ((r = add_reject_pair(rs, &net, plen)) < 0)
				return r;
		}
		if ((r = add_entry_accepts(rs, e)) < 0)
			return r;
	}
	return 0;
}

/* IPv6 needs neighbour discovery on the tap (the route out is via pasta's link-local gateway);
 * conntrack does not track NS/NA, so neither the established rule nor the entries accept it. */
static int add_nd(struct nft_ruleset *rs, enum nft_chain_id chain)
{
	static const unsigned types[] = { 135, 136 }; /* ND_NEIGHBOR_SOLICIT, ND_NEIGHBOR_ADVERT */

	for (size_t i = 0; i < ELEMENTSOF(types); i++) {
		struct nft_rule_desc *r = add_rule(rs, chain, NFT_V_ACCEPT);

		if (!r)
			return -E2BIG;
		add_match(r, NFT_M_ICMPV6_TYPE, types[i]);
	}
	return 0;
}

/**
 * nft_ruleset_build() - compute the ruleset for a policy
 * @spec: policy facts (gate port, pasta posture, IP entries, published ports)
 * @rs: result; free with nft_ruleset_free()
 *
 * output: policy drop; accept everything on lo (it cannot leave the netns: the gate's listeners,
 * the pool after the nat redirect and the sandbox's own local servers all live there); in the
 * pasta posture established/related, neighbour discovery when an IPv6 entry exists, and each
 * IP/CIDR entry (tcp and udp, its port or 443 and 80) behind the rejects of the special ranges
 * it merely contains (add_addr_entries()); IPv6 dropped unless an IPv6 entry exists; TCP
 * rejected with a reset and the rest with icmpx admin-prohibited, both counted (measured:
 * reject fails in 0.01 s where drop waits 3 s).
 * input: policy drop; lo, in the pasta posture established/related, neighbour discovery and
 * published ports.
 * Without pasta lo is the only interface, so an established/related rule after the lo rule could
 * never match: leaving it out keeps connection tracking to the ip nat table (IPv4 only), which
 * is ~1 ms of start-up (see chains[] above) with exactly the same packets accepted.
 * nat_output: TCP to 198.18.0.0/15 redirected to the transparent listener.
 * Return: 0, -E2BIG (too many rules), -ENOMEM. Does not log.
 */
int nft_ruleset_build(const struct nft_spec *spec, struct nft_ruleset *rs)
{
	bool v6 = spec->pasta && spec->allow && allow_has_family(spec->allow, AF_INET6);
	struct nft_rule_desc *r;
	struct net_addr pool;
	int k;

	rs->n_rules = 0;
	rs->rules = calloc(NFT_RULES_MAX, sizeof(*rs->rules));
	if (!rs->rules)
		return -ENOMEM;

	r = add_rule(rs, NFT_CHAIN_OUTPUT, NFT_V_ACCEPT);
	add_match(r, NFT_M_OIF_LO, 0);
	if (spec->pasta) {
		r = add_rule(rs, NFT_CHAIN_OUTPUT, NFT_V_ACCEPT);
		add_match(r, NFT_M_CT_ESTABLISHED, 0);
	}
	if (v6 && (k = add_nd(rs, NFT_CHAIN_OUTPUT)) < 0)
		return k;
	if (spec->pasta && spec->allow && (k = add_addr_entries(rs, spec->allow)) < 0)
		return k;
	if (!v6) {
		r = add_rule(rs, NFT_CHAIN_OUTPUT, NFT_V_DROP);
		add_match(r, NFT_M_NFPROTO, NFPROTO_IPV6);
		r->counter = true;
	}
	if (!(r = add_rule(rs, NFT_CHAIN_OUTPUT, NFT_V_REJECT_TCP)))
		return -E2BIG;
	add_match(r, NFT_M_L4PROTO, IPPROTO_TCP);
	r->counter = true;
	if (!(r = add_rule(rs, NFT_CHAIN_OUTPUT, NFT_V_REJECT_ICMPX)))
		return -E2BIG;
	r->counter = true;

	if (!(r = add_rule(rs, NFT_CHAIN_INPUT, NFT_V_ACCEPT)))
		return -E2BIG;
	add_match(r, NFT_M_IIF_LO, 0);
	if (spec->pasta) {
		if (!(r = add_rule(rs, NFT_CHAIN_INPUT, NFT_V_ACCEPT)))
			return -E2BIG;
		add_match(r, NFT_M_CT_ESTABLISHED, 0);
	}
	if (v6 && (k = add_nd(rs, NFT_CHAIN_INPUT)) < 0)
		return k;
	for (size_t i = 0; i < spec->n_published; i++) {
		r = add_rule(rs, NFT_CHAIN_INPUT, NFT_V_ACCEPT);
		if (!r)
			return -E2BIG;
		add_dport(r, IPPROTO_TCP, spec->published[i]);
	}

	r = add_rule(rs, NFT_CHAIN_NAT_OUTPUT, NFT_V_REDIRECT);
	if (!r)
		return -E2BIG;
	addr_parse(NFT_POOL_ADDR, &pool);
	add_daddr(r, &pool, NFT_POOL_PLEN);
	add_match(r, NFT_M_L4PROTO, IPPROTO_TCP);
	r->redirect_port = spec->transparent_port;
	return 0;
}

void nft_ruleset_free(struct nft_ruleset *rs)
{
	free(rs->rules);
	rs->rules = NULL;
	rs->n_rules = 0;
}

size_t nft_ruleset_count(const struct nft_ruleset *rs, enum nft_chain_id c)
{
	size_t n = 0;

	for (size_t i = 0; i < rs->n_rules; i++)
		n += rs->rules[i].chain == c;
	return n;
}

/* ---- text ---------------------------------------------------------------------------------- */

static const char *proto_name(unsigned p)
{
	return p == IPPROTO_TCP ? "tcp" : p == IPPROTO_UDP ? "udp" : "?";
}

static void render_match(const struct nft_match *m, FILE *f)
{
	char a[ADDR_STRLEN];

	switch (m->kind) {
	case NFT_M_OIF_LO: fputs("oif \"lo\"", f); break;
	case NFT_M_IIF_LO: fputs("iif \"lo\"", f); break;
	case NFT_M_CT_ESTABLISHED: fputs("ct state established,related", f); break;
	case NFT_M_NFPROTO: fprintf(f, "meta nfproto %s", m->value == NFPROTO_IPV6 ? "ipv6" : "ipv4"); break;
	case NFT_M_L4PROTO: fprintf(f, "meta l4proto %s", proto_name(m->value)); break;
	case NFT_M_DADDR:
		addr_format(&m->addr, a, sizeof(a));
		fprintf(f, "%s daddr %s", m->addr.family == AF_INET ? "ip" : "ip6", a);
		if (m->plen != (m->addr.family == AF_INET ? 32u : 128u))
			fprintf(f, "/%u", m->plen);
		break;
	case NFT_M_DPORT: fprintf(f, "%s dport %u", proto_name(m->value), m->port); break;
	case NFT_M_ICMPV6_TYPE:
		fprintf(f, "icmpv6 type %s", m->value == 135 ? "nd-neighbor-solicit" : "nd-neighbor-advert");
		break;
	default: break;
	}
}

/**
 * nft_ruleset_render() - write the ruleset in `nft -f` syntax
 * @rs: ruleset
 * @f: output
 *
 * The text is what `nft list ruleset` (nft 1.0.6) prints for the installed batch, counters'
 * values left out: `priority filter`, `icmpx admin-prohibited`, no blank line between tables.
 * Return: 0, or -EIO. Does not log.
 */
int nft_ruleset_render(const struct nft_ruleset *rs, FILE *f)
{
	for (int c = 0; c < NFT_CHAIN_MAX; c++) {
		if (!c || chains[c].family != chains[c - 1].family) {
			if (c)
				fputs("}\n", f);
			fprintf(f, "table %s %s {\n", family_name(chains[c].family), NFT_TABLE);
		} else
			fputc('\n', f);
		fprintf(f, "\tchain %s {\n", chains[c].name);
		fprintf(f, "\t\ttype %s hook %s priority ", chains[c].type,
			chains[c].hook == NF_INET_LOCAL_OUT ? "output" : "input");
		if (chains[c].prio == 0 && streq(chains[c].type, "filter"))
			fputs("filter", f);
		else
			fprintf(f, "%d", chains[c].prio);
		fprintf(f, "; policy %s;\n", chains[c].policy == NF_DROP ? "drop" : "accept");
		for (size_t i = 0; i < rs->n_rules; i++) {
			const struct nft_rule_desc *r = &rs->rules[i];

			if (r->chain != (enum nft_chain_id)c)
				continue;
			fputs("\t\t", f);
			for (size_t k = 0; k < r->n_m; k++) {
				render_match(&r->m[k], f);
				fputc(' ', f);
			}
			if (r->counter)
				fputs("counter ", f);
			switch (r->verdict) {
			case NFT_V_ACCEPT: fputs("accept\n", f); break;
			case NFT_V_DROP: fputs("drop\n", f); break;
			case NFT_V_REJECT_TCP: fputs("reject with tcp reset\n", f); break;
			case NFT_V_REJECT_ICMPX: fputs("reject with icmpx admin-prohibited\n", f); break;
			case NFT_V_REDIRECT: fprintf(f, "redirect to :%u\n", r->redirect_port); break;
			default: break;
			}
		}
		fputs("\t}\n", f);
	}
	fputs("}\n", f);
	return ferror(f) ? -EIO : 0;
}

/* ---- libnftnl ------------------------------------------------------------------------------ */

static int add_expr(struct nftnl_rule *r, struct nftnl_expr *e)
{
	if (!e)
		return -ENOMEM;
	nftnl_rule_add_expr(r, e);
	return 0;
}

static struct nftnl_expr *e_meta(uint32_t key)
{
	struct nftnl_expr *e = nftnl_expr_alloc("meta");

	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
		nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, NFT_REG_1);
	}
	return e;
}

static struct nftnl_expr *e_cmp(uint32_t op, const void *data, uint32_t len)
{
	struct nftnl_expr *e = nftnl_expr_alloc("cmp");

	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
		nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, op);
		nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len);
	}
	return e;
}

static struct nftnl_expr *e_payload(uint32_t base, uint32_t off, uint32_t len)
{
	struct nftnl_expr *e = nftnl_expr_alloc("payload");

	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, base);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, off);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, NFT_REG_1);
	}
	return e;
}

static struct nftnl_expr *e_bitwise(const void *mask, const void *xor, uint32_t len)
{
	struct nftnl_expr *e = nftnl_expr_alloc("bitwise");

	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, len);
		nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, mask, len);
		nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, xor, len);
	}
	return e;
}

/* The bytecode nft 1.0.6 emits for each match, so that nft can list what was installed: in an
 * inet chain an address or ICMPv6 match first checks meta nfproto (nft's protocol dependency;
 * in an ip chain the family is implied and nft adds none); a prefix of whole bytes loads only
 * those bytes and compares them, any other prefix (and /0) loads the whole address and masks
 * it. A load of the whole address followed by a whole-byte mask is what the old builder did,
 * and nft 1.0.6 aborted on it (payload_expr_complete assertion) listing the installed table. */
static int rule_add_match(struct nftnl_rule *r, const struct nft_match *m, uint32_t family)
{
	static const uint8_t zero[16];
	int rr;

	switch (m->kind) {
	case NFT_M_OIF_LO:
	case NFT_M_IIF_LO: {
		uint32_t lo = 1; /* LOOPBACK_IFINDEX: lo is ifindex 1 in every netns */

		if ((rr = add_expr(r, e_meta(m->kind == NFT_M_OIF_LO ? NFT_META_OIF : NFT_META_IIF))) < 0)
			return rr;
		return add_expr(r, e_cmp(NFT_CMP_EQ, &lo, sizeof(lo)));
	}
	case NFT_M_CT_ESTABLISHED: {
		uint32_t mask = NF_CT_STATE_BIT(IP_CT_ESTABLISHED) | NF_CT_STATE_BIT(IP_CT_RELATED), z = 0;
		struct nftnl_expr *e = nftnl_expr_alloc("ct");

		if (e) {
			nftnl_expr_set_u32(e, NFTNL_EXPR_CT_KEY, NFT_CT_STATE);
			nftnl_expr_set_u32(e, NFTNL_EXPR_CT_DREG, NFT_REG_1);
		}
		if ((rr = add_expr(r, e)) < 0 || (rr = add_expr(r, e_bitwise(&mask, &z, 4))) < 0)
			return rr;
		return add_expr(r, e_cmp(NFT_CMP_NEQ, &z, 4));
	}
	case NFT_M_NFPROTO:
	case NFT_M_L4PROTO: {
		uint8_t v = (uint8_t)m->value;

		if ((rr = add_expr(r, e_meta(m->kind == NFT_M_NFPROTO ? NFT_META_NFPROTO : NFT_META_L4PROTO))) < 0)
			return rr;
		return add_expr(r, e_cmp(NFT_CMP_EQ, &v, 1));
	}
	case NFT_M_DADDR: {
		bool v4 = m->addr.family == AF_INET;
		uint32_t len = v4 ? 4 : 16;
		uint8_t v = v4 ? NFPROTO_IPV4 : NFPROTO_IPV6;
		bool aligned = m->plen > 0 && m->plen % 8 == 0;
		struct net_addr mask = { .family = m->addr.family };

		if (family == NFPROTO_INET &&
		    ((rr = add_expr(r, e_meta(NFT_META_NFPROTO))) < 0 || (rr = add_expr(r, e_cmp(NFT_CMP_EQ, &v, 1))) < 0))
			return rr;
		if (aligned)
			len = m->plen / 8;
		if ((rr = add_expr(r, e_payload(NFT_PAYLOAD_NETWORK_HEADER, v4 ? 16 : 24, len))) < 0)
			return rr;
		if (!aligned) {
			memset(mask.b, 0xff, len);
			addr_mask(&mask, m->plen);
			if ((rr = add_expr(r, e_bitwise(mask.b, zero, len))) < 0)
				return rr;
		}
		return add_expr(r, e_cmp(NFT_CMP_EQ, m->addr.b, len));
	}
	case NFT_M_ICMPV6_TYPE: {
		uint8_t nfp = NFPROTO_IPV6, l4 = IPPROTO_ICMPV6, type = (uint8_t)m->value;

		if (family == NFPROTO_INET &&
		    ((rr = add_expr(r, e_meta(NFT_META_NFPROTO))) < 0 || (rr = add_expr(r, e_cmp(NFT_CMP_EQ, &nfp, 1))) < 0))
			return rr;
		if ((rr = add_expr(r, e_meta(NFT_META_L4PROTO))) < 0 || (rr = add_expr(r, e_cmp(NFT_CMP_EQ, &l4, 1))) < 0 ||
		    (rr = add_expr(r, e_payload(NFT_PAYLOAD_TRANSPORT_HEADER, 0, 1))) < 0)
			return rr;
		return add_expr(r, e_cmp(NFT_CMP_EQ, &type, 1));
	}
	case NFT_M_DPORT: {
		uint8_t p = (uint8_t)m->value;
		uint16_t port = htons(m->port);

		if ((rr = add_expr(r, e_meta(NFT_META_L4PROTO))) < 0 || (rr = add_expr(r, e_cmp(NFT_CMP_EQ, &p, 1))) < 0 ||
		    (rr = add_expr(r, e_payload(NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2))) < 0)
			return rr;
		return add_expr(r, e_cmp(NFT_CMP_EQ, &port, 2));
	}
	default:
		return -EINVAL;
	}
}

static int rule_add_verdict(struct nftnl_rule *r, const struct nft_rule_desc *d)
{
	struct nftnl_expr *e;
	int rr;

	if (d->counter && (rr = add_expr(r, nftnl_expr_alloc("counter"))) < 0)
		return rr;
	switch (d->verdict) {
	case NFT_V_ACCEPT:
	case NFT_V_DROP:
		e = nftnl_expr_alloc("immediate");
		if (e) {
			nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
			nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, d->verdict == NFT_V_ACCEPT ? NF_ACCEPT : NF_DROP);
		}
		return add_expr(r, e);
	case NFT_V_REJECT_TCP:
	case NFT_V_REJECT_ICMPX:
		e = nftnl_expr_alloc("reject");
		if (e) {
			bool tcp = d->verdict == NFT_V_REJECT_TCP;

			nftnl_expr_set_u32(e, NFTNL_EXPR_REJECT_TYPE, tcp ? NFT_REJECT_TCP_RST : NFT_REJECT_ICMPX_UNREACH);
			nftnl_expr_set_u8(e, NFTNL_EXPR_REJECT_CODE, tcp ? 0 : NFT_REJECT_ICMPX_ADMIN_PROHIBITED);
		}
		return add_expr(r, e);
	case NFT_V_REDIRECT: {
		uint16_t port = htons(d->redirect_port);

		e = nftnl_expr_alloc("immediate");
		if (e) {
			nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_1);
			nftnl_expr_set(e, NFTNL_EXPR_IMM_DATA, &port, sizeof(port));
		}
		if ((rr = add_expr(r, e)) < 0)
			return rr;
		e = nftnl_expr_alloc("redir");
		if (e) {
			nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_REG_PROTO_MIN, NFT_REG_1);
			nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_REG_PROTO_MAX, NFT_REG_1);
			nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_FLAGS, NF_NAT_RANGE_PROTO_SPECIFIED);
		}
		return add_expr(r, e);
	}
	default:
		return -EINVAL;
	}
}

static void batch_freep(struct nftnl_batch **b)
{
	if (*b)
		nftnl_batch_free(*b);
}

static void table_freep(struct nftnl_table **t)
{
	if (*t)
		nftnl_table_free(*t);
}

static void chain_freep(struct nftnl_chain **c)
{
	if (*c)
		nftnl_chain_free(*c);
}

static void rule_freep(struct nftnl_rule **r)
{
	if (*r)
		nftnl_rule_free(*r);
}

static int batch_next(struct nftnl_batch *b)
{
	return nftnl_batch_update(b) < 0 ? -ENOMEM : 0;
}

/**
 * nft_ruleset_batch() - the ruleset as one nf_tables batch (pure: no socket)
 * @rs: ruleset
 * @seq: first sequence number
 * @out: the batch; free with nftnl_batch_free()
 * @n_acks: number of messages that request an ACK
 *
 * Return: 0, or -ENOMEM/-EINVAL. Does not log.
 */
int nft_ruleset_batch(const struct nft_ruleset *rs, uint32_t seq, struct nftnl_batch **out, unsigned *n_acks)
{
	_cleanup_(batch_freep) struct nftnl_batch *b = nftnl_batch_alloc(MNL_SOCKET_BUFFER_SIZE, MNL_SOCKET_BUFFER_SIZE);
	_cleanup_(table_freep) struct nftnl_table *t = nftnl_table_alloc();
	struct nlmsghdr *nlh;
	unsigned acks = 0;
	int r;

	if (!b || !t)
		return -ENOMEM;
	nftnl_batch_begin(nftnl_batch_buffer(b), seq++);
	if ((r = batch_next(b)) < 0)
		return r;

	for (size_t i = 0; i < ELEMENTSOF(table_families); i++) {
		nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, table_families[i]);
		nftnl_table_set_str(t, NFTNL_TABLE_NAME, NFT_TABLE);
		nlh = nftnl_nlmsg_build_hdr(nftnl_batch_buffer(b), NFT_MSG_NEWTABLE, (uint16_t)table_families[i],
					    NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK, seq++);
		nftnl_table_nlmsg_build_payload(nlh, t);
		acks++;
		if ((r = batch_next(b)) < 0)
			return r;
	}

	for (int c = 0; c < NFT_CHAIN_MAX; c++) {
		_cleanup_(chain_freep) struct nftnl_chain *ch = nftnl_chain_alloc();

		if (!ch)
			return -ENOMEM;
		nftnl_chain_set_str(ch, NFTNL_CHAIN_TABLE, NFT_TABLE);
		nftnl_chain_set_str(ch, NFTNL_CHAIN_NAME, chains[c].name);
		nftnl_chain_set_str(ch, NFTNL_CHAIN_TYPE, chains[c].type);
		nftnl_chain_set_u32(ch, NFTNL_CHAIN_HOOKNUM, (uint32_t)chains[c].hook);
		nftnl_chain_set_s32(ch, NFTNL_CHAIN_PRIO, chains[c].prio);
		nftnl_chain_set_u32(ch, NFTNL_CHAIN_POLICY, chains[c].policy);
		nlh = nftnl_nlmsg_build_hdr(nftnl_batch_buffer(b), NFT_MSG_NEWCHAIN, (uint16_t)chains[c].family,
					    NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK, seq++);
		nftnl_chain_nlmsg_build_payload(nlh, ch);
		acks++;
		if ((r = batch_next(b)) < 0)
			return r;
	}

	for (size_t i = 0; i < rs->n_rules; i++) {
		const struct nft_rule_desc *d = &rs->rules[i];
		_cleanup_(rule_freep) struct nftnl_rule *ru = nftnl_rule_alloc();

		if (!ru)
			return -ENOMEM;
		nftnl_rule_set_u32(ru, NFTNL_RULE_FAMILY, chains[d->chain].family);
		nftnl_rule_set_str(ru, NFTNL_RULE_TABLE, NFT_TABLE);
		nftnl_rule_set_str(ru, NFTNL_RULE_CHAIN, chains[d->chain].name);
		for (size_t k = 0; k < d->n_m; k++)
			if ((r = rule_add_match(ru, &d->m[k], chains[d->chain].family)) < 0)
				return r;
		if ((r = rule_add_verdict(ru, d)) < 0)
			return r;
		nlh = nftnl_nlmsg_build_hdr(nftnl_batch_buffer(b), NFT_MSG_NEWRULE, (uint16_t)chains[d->chain].family,
					    NLM_F_CREATE | NLM_F_APPEND | NLM_F_ACK, seq++);
		nftnl_rule_nlmsg_build_payload(nlh, ru);
		acks++;
		if ((r = batch_next(b)) < 0)
			return r;
	}

	nftnl_batch_end(nftnl_batch_buffer(b), seq++);
	if ((r = batch_next(b)) < 0)
		return r;
	*n_acks = acks;
	*out = TAKE_PTR(b);
	return 0;
}

/* ---- apply and verify ---------------------------------------------------------------------- */

static void mnl_closep(struct mnl_socket **s)
{
	if (*s)
		mnl_socket_close(*s);
}

static int open_nl(struct mnl_socket **out)
{
	_cleanup_(mnl_closep) struct mnl_socket *nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	struct timeval tv = { .tv_sec = 5 };

	if (!nl)
		return -errno;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0)
		return -errno;
	/* Never wait forever for the kernel: a missing ACK is a failure, not a hang. */
	if (setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
		return -errno;
	*out = TAKE_PTR(nl);
	return 0;
}

/**
 * nft_apply() - install the ruleset in the current netns and verify it
 * @rs: ruleset
 *
 * One sendmsg of the whole batch, then every ACK is drained (an error in any message aborts
 * the whole transaction in the kernel); then nft_verify().
 * Return: 0, or -errno. Logs on failure.
 */
int nft_apply(const struct nft_ruleset *rs)
{
	_cleanup_(mnl_closep) struct mnl_socket *nl = NULL;
	_cleanup_(batch_freep) struct nftnl_batch *b = NULL;
	_cleanup_free_ struct iovec *iov = NULL;
	struct sockaddr_nl snl = { .nl_family = AF_NETLINK };
	struct msghdr msg = { 0 };
	char buf[MNL_SOCKET_BUFFER_SIZE];
	unsigned n_acks = 0, got = 0;
	uint32_t seq = (uint32_t)time(NULL);
	int n_iov, r;

	r = nft_ruleset_batch(rs, seq, &b, &n_acks);
	if (r < 0)
		return log_error_errno(r, "cannot build the nftables batch: %m");
	r = open_nl(&nl);
	if (r < 0)
		return log_error_errno(r, "cannot open a netfilter netlink socket: %m");
	n_iov = nftnl_batch_iovec_len(b);
	iov = calloc((size_t)n_iov, sizeof(*iov));
	if (!iov)
		return log_error_errno(-ENOMEM, "out of memory");
	nftnl_batch_iovec(b, iov, (uint32_t)n_iov);
	msg.msg_name = &snl;
	msg.msg_namelen = sizeof(snl);
	msg.msg_iov = iov;
	msg.msg_iovlen = (size_t)n_iov;
	if (sendmsg(mnl_socket_get_fd(nl), &msg, 0) < 0)
		return log_error_errno(-errno, "cannot send the nftables batch: %m");

	while (got < n_acks) {
		ssize_t len = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
		int left = (int)len;

		if (len < 0)
			return log_error_errno(errno == EAGAIN ? -ETIMEDOUT : -errno,
					       "no answer from nf_tables after %u of %u messages: %m", got, n_acks);
		for (; mnl_nlmsg_ok(h, left); h = mnl_nlmsg_next(h, &left)) {
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = mnl_nlmsg_get_payload(h);

				if (e->error != 0)
					return log_error_errno(e->error, "nf_tables refused the ruleset "
							       "(message %u of %u): %m", got + 1, n_acks);
				got++;
			}
		}
	}
	return nft_verify(rs);
}

struct verify_ctx {
	unsigned policy[NFT_CHAIN_MAX];
	int hook[NFT_CHAIN_MAX];
	bool seen[NFT_CHAIN_MAX];
	size_t rules[NFT_CHAIN_MAX];
};

static int chain_cb(const struct nlmsghdr *nlh, void *data)
{
	struct verify_ctx *v = data;
	_cleanup_(chain_freep) struct nftnl_chain *c = nftnl_chain_alloc();

	if (!c || nftnl_chain_nlmsg_parse(nlh, c) < 0)
		return MNL_CB_ERROR;
	if (!streq(nftnl_chain_get_str(c, NFTNL_CHAIN_TABLE), NFT_TABLE))
		return MNL_CB_OK;
	for (int i = 0; i < NFT_CHAIN_MAX; i++)
		if (nftnl_chain_get_u32(c, NFTNL_CHAIN_FAMILY) == chains[i].family &&
		    streq(nftnl_chain_get_str(c, NFTNL_CHAIN_NAME), chains[i].name)) {
			v->seen[i] = true;
			v->policy[i] = nftnl_chain_is_set(c, NFTNL_CHAIN_POLICY) ?
					       nftnl_chain_get_u32(c, NFTNL_CHAIN_POLICY) : NF_ACCEPT;
			v->hook[i] = nftnl_chain_is_set(c, NFTNL_CHAIN_HOOKNUM) ?
					     (int)nftnl_chain_get_u32(c, NFTNL_CHAIN_HOOKNUM) : -1;
		}
	return MNL_CB_OK;
}

static int rule_cb(const struct nlmsghdr *nlh, void *data)
{
	struct verify_ctx *v = data;
	_cleanup_(rule_freep) struct nftnl_rule *r = nftnl_rule_alloc();

	if (!r || nftnl_rule_nlmsg_parse(nlh, r) < 0)
		return MNL_CB_ERROR;
	if (!streq(nftnl_rule_get_str(r, NFTNL_RULE_TABLE), NFT_TABLE))
		return MNL_CB_OK;
	for (int i = 0; i < NFT_CHAIN_MAX; i++)
		if (nftnl_rule_get_u32(r, NFTNL_RULE_FAMILY) == chains[i].family &&
		    streq(nftnl_rule_get_str(r, NFTNL_RULE_CHAIN), chains[i].name))
			v->rules[i]++;
	return MNL_CB_OK;
}

static int dump(struct mnl_socket *nl, uint16_t type, mnl_cb_t cb, struct verify_ctx *v)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	uint32_t seq = (uint32_t)time(NULL), portid = mnl_socket_get_portid(nl);
	struct nlmsghdr *nlh = nftnl_nlmsg_build_hdr(buf, type, NFPROTO_UNSPEC, NLM_F_DUMP | NLM_F_ACK, seq);
	ssize_t len;
	int r;

	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	while ((len = mnl_socket_recvfrom(nl, buf, sizeof(buf))) > 0) {
		r = mnl_cb_run(buf, (size_t)len, seq, portid, cb, v);
		if (r < 0)
			return -errno;
		if (r == MNL_CB_STOP)
			return 0;
	}
	return len < 0 ? -errno : -EIO;
}

/**
 * nft_verify() - read the ruleset back and check it is the one that was meant
 * @rs: the ruleset that was applied
 *
 * Output and input chains exist on their hooks with policy drop, the nat chain exists, and every
 * chain holds exactly the rules of @rs.
 * Return: 0, -EPERM/-ENOENT when the check fails, -errno. Logs on failure.
 */
int nft_verify(const struct nft_ruleset *rs)
{
	_cleanup_(mnl_closep) struct mnl_socket *nl = NULL;
	struct verify_ctx v = { 0 };
	int r;

	r = open_nl(&nl);
	if (r < 0)
		return log_error_errno(r, "cannot open a netfilter netlink socket: %m");
	r = dump(nl, NFT_MSG_GETCHAIN, chain_cb, &v);
	if (r >= 0)
		r = dump(nl, NFT_MSG_GETRULE, rule_cb, &v);
	if (r < 0)
		return log_error_errno(r, "cannot read the nftables ruleset back: %m");
	for (int c = 0; c < NFT_CHAIN_MAX; c++) {
		if (!v.seen[c] || v.hook[c] != chains[c].hook)
			return log_error_errno(-ENOENT, "nftables chain %s %s %s is missing after install",
					       family_name(chains[c].family), NFT_TABLE, chains[c].name);
		if (v.policy[c] != chains[c].policy)
			return log_error_errno(-EPERM, "nftables chain %s %s %s has the wrong policy",
					       family_name(chains[c].family), NFT_TABLE, chains[c].name);
		if (v.rules[c] != nft_ruleset_count(rs, (enum nft_chain_id)c))
			return log_error_errno(-EPERM, "nftables chain %s %s %s holds %zu rules, expected %zu",
					       family_name(chains[c].family), NFT_TABLE, chains[c].name, v.rules[c],
					       nft_ruleset_count(rs, (enum nft_chain_id)c));
	}
	return 0;
}
