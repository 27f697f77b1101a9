/* SPDX-License-Identifier: GPL-2.0-or-later */
/* nft.h — the sandbox's in-netns nftables ruleset (docs/design.md §6).
 *
 * One description (struct nft_ruleset) is computed from the policy by a pure builder; the same
 * description is rendered as `nft -f` text for --print-ruleset and as a libnftnl batch, so the
 * preview and what init installs cannot drift. The batch carries exactly the bytecode that nft
 * 1.0.6 generates for the printed text (shortened loads for byte-aligned prefixes, protocol
 * dependencies only where nft adds them), so `nft list ruleset` run by root in the sandbox's
 * netns prints the --print-ruleset text again instead of failing. nft_apply() sends the batch with one libmnl send,
 * drains every ACK, then reads the ruleset back and verifies it (output and input chains with
 * policy drop, the expected rule counts); any failure means the command must not run (exit 77).
 */
#ifndef AISB_NET_NFT_H
#define AISB_NET_NFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "net/addr.h"
#include "net/allow.h"

#define NFT_TABLE "aisb"
#define NFT_POOL_ADDR "198.18.0.0"
#define NFT_POOL_PLEN 15
#define NFT_RULES_MAX 2048

struct nftnl_batch;

struct nft_spec {
	uint16_t transparent_port;     /* the gate's transparent listener on 127.0.0.1 */
	bool pasta;                    /* a real IP path exists: IP/CIDR entries get accept rules */
	const struct allow_list *allow;
	const uint16_t *published;     /* ports inside that --publish exposes */
	size_t n_published;
};

enum nft_chain_id { NFT_CHAIN_OUTPUT, NFT_CHAIN_INPUT, NFT_CHAIN_NAT_OUTPUT, NFT_CHAIN_MAX };

enum nft_match_kind {
	NFT_M_OIF_LO,
	NFT_M_IIF_LO,
	NFT_M_CT_ESTABLISHED,   /* ct state established,related */
	NFT_M_NFPROTO,          /* value: NFPROTO_IPV4/IPV6 */
	NFT_M_L4PROTO,          /* value: IPPROTO_TCP/UDP */
	NFT_M_DADDR,            /* addr/plen (implies the family) */
	NFT_M_DPORT,            /* value: IPPROTO_TCP/UDP, port (implies the l4 protocol) */
	NFT_M_ICMPV6_TYPE,      /* value: ND_NEIGHBOR_SOLICIT/ADVERT (implies IPv6 and ICMPv6) */
	NFT_M_MAX
};

struct nft_match {
	enum nft_match_kind kind;
	unsigned value;
	uint16_t port;
	struct net_addr addr;
	unsigned plen;
};

enum nft_verdict { NFT_V_ACCEPT, NFT_V_DROP, NFT_V_REJECT_TCP, NFT_V_REJECT_ICMPX, NFT_V_REDIRECT, NFT_V_MAX };

struct nft_rule_desc {
	enum nft_chain_id chain;
	struct nft_match m[4];
	size_t n_m;
	bool counter;
	enum nft_verdict verdict;
	uint16_t redirect_port;
};

struct nft_ruleset {
	struct nft_rule_desc *rules;
	size_t n_rules;
};

int nft_ruleset_build(const struct nft_spec *spec, struct nft_ruleset *rs);
void nft_ruleset_free(struct nft_ruleset *rs);
int nft_ruleset_render(const struct nft_ruleset *rs, FILE *f);
int nft_ruleset_batch(const struct nft_ruleset *rs, uint32_t seq, struct nftnl_batch **out, unsigned *n_acks);
const char *nft_chain_name(enum nft_chain_id c);
size_t nft_ruleset_count(const struct nft_ruleset *rs, enum nft_chain_id c);
int nft_apply(const struct nft_ruleset *rs);
int nft_verify(const struct nft_ruleset *rs);

#endif
