// SPDX-License-Identifier: GPL-2.0-or-later
/* dl-nftnl.c — libnftnl through dlopen(), loaded explicitly, like dl-mnl.c */
#include <sys/uio.h>

#include <libnftnl/batch.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>

#include "util/dl.h"

#define NFTNL_FUNCTIONS(F, V)                                                                      \
	/* batches */                                                                              \
	F(struct nftnl_batch *, nftnl_batch_alloc, (uint32_t pg, uint32_t overrun), (pg, overrun), \
	  NULL)                                                                                    \
	V(nftnl_batch_free, (struct nftnl_batch *b), (b))                                          \
	F(struct nlmsghdr *, nftnl_batch_begin, (char *buf, uint32_t seq), (buf, seq), NULL)       \
	F(struct nlmsghdr *, nftnl_batch_end, (char *buf, uint32_t seq), (buf, seq), NULL)         \
	F(void *, nftnl_batch_buffer, (struct nftnl_batch *b), (b), NULL)                          \
	F(int, nftnl_batch_update, (struct nftnl_batch *b), (b), -1)                               \
	F(int, nftnl_batch_iovec_len, (struct nftnl_batch *b), (b), 0)                             \
	V(nftnl_batch_iovec, (struct nftnl_batch *b, struct iovec *iov, uint32_t n), (b, iov, n)) \
	F(struct nlmsghdr *, nftnl_nlmsg_build_hdr,                                                \
	  (char *buf, uint16_t type, uint16_t family, uint16_t flags, uint32_t seq),               \
	  (buf, type, family, flags, seq), NULL)                                                   \
	/* tables */                                                                               \
	F(struct nftnl_table *, nftnl_table_alloc, (void), (), NULL)                               \
	V(nftnl_table_free, (const struct nftnl_table *t), (t))                                    \
	F(int, nftnl_table_set_str, (struct nftnl_table *t, uint16_t a, const char *s), (t, a, s), \
	  -1)                                                                                      \
	V(nftnl_table_set_u32, (struct nftnl_table *t, uint16_t a, uint32_t v), (t, a, v))         \
	F(const char *, nftnl_table_get_str, (const struct nftnl_table *t, uint16_t a), (t, a),    \
	  NULL)                                                                                    \
	F(uint32_t, nftnl_table_get_u32, (const struct nftnl_table *t, uint16_t a), (t, a), 0)     \
	V(nftnl_table_nlmsg_build_payload, (struct nlmsghdr *nlh, const struct nftnl_table *t),    \
	  (nlh, t))                                                                                \
	F(int, nftnl_table_nlmsg_parse, (const struct nlmsghdr *nlh, struct nftnl_table *t),       \
	  (nlh, t), -1)                                                                            \
	/* chains */                                                                               \
	F(struct nftnl_chain *, nftnl_chain_alloc, (void), (), NULL)                               \
	V(nftnl_chain_free, (const struct nftnl_chain *c), (c))                                    \
	F(int, nftnl_chain_set_str, (struct nftnl_chain *c, uint16_t a, const char *s), (c, a, s), \
	  -1)                                                                                      \
	V(nftnl_chain_set_u32, (struct nftnl_chain *c, uint16_t a, uint32_t v), (c, a, v))         \
	V(nftnl_chain_set_s32, (struct nftnl_chain *c, uint16_t a, int32_t v), (c, a, v))          \
	F(const char *, nftnl_chain_get_str, (const struct nftnl_chain *c, uint16_t a), (c, a),    \
	  NULL)                                                                                    \
	F(uint32_t, nftnl_chain_get_u32, (const struct nftnl_chain *c, uint16_t a), (c, a), 0)     \
	F(bool, nftnl_chain_is_set, (const struct nftnl_chain *c, uint16_t a), (c, a), false)      \
	V(nftnl_chain_nlmsg_build_payload, (struct nlmsghdr *nlh, const struct nftnl_chain *c),    \
	  (nlh, c))                                                                                \
	F(int, nftnl_chain_nlmsg_parse, (const struct nlmsghdr *nlh, struct nftnl_chain *c),       \
	  (nlh, c), -1)                                                                            \
	/* rules and expressions */                                                                \
	F(struct nftnl_rule *, nftnl_rule_alloc, (void), (), NULL)                                 \
	V(nftnl_rule_free, (const struct nftnl_rule *r), (r))                                      \
	F(int, nftnl_rule_set_str, (struct nftnl_rule *r, uint16_t a, const char *s), (r, a, s),   \
	  -1)                                                                                      \
	V(nftnl_rule_set_u32, (struct nftnl_rule *r, uint16_t a, uint32_t v), (r, a, v))           \
	F(const char *, nftnl_rule_get_str, (const struct nftnl_rule *r, uint16_t a), (r, a),      \
	  NULL)                                                                                    \
	F(uint32_t, nftnl_rule_get_u32, (const struct nftnl_rule *r, uint16_t a), (r, a), 0)       \
	V(nftnl_rule_add_expr, (struct nftnl_rule *r, struct nftnl_expr *e), (r, e))               \
	V(nftnl_rule_nlmsg_build_payload, (struct nlmsghdr *nlh, struct nftnl_rule *r), (nlh, r))  \
	F(int, nftnl_rule_nlmsg_parse, (const struct nlmsghdr *nlh, struct nftnl_rule *r),         \
	  (nlh, r), -1)                                                                            \
	F(int, nftnl_expr_foreach,                                                                 \
	  (struct nftnl_rule *r, int (*cb)(struct nftnl_expr *e, void *data), void *data),         \
	  (r, cb, data), -1)                                                                       \
	F(struct nftnl_expr *, nftnl_expr_alloc, (const char *name), (name), NULL)                 \
	F(int, nftnl_expr_set, (struct nftnl_expr *e, uint16_t t, const void *d, uint32_t n),      \
	  (e, t, d, n), -1)                                                                        \
	V(nftnl_expr_set_u32, (struct nftnl_expr *e, uint16_t t, uint32_t v), (e, t, v))           \
	V(nftnl_expr_set_u8, (struct nftnl_expr *e, uint16_t t, uint8_t v), (e, t, v))             \
	F(const char *, nftnl_expr_get_str, (const struct nftnl_expr *e, uint16_t t), (e, t),      \
	  NULL)

DL_DEFINE_STUBS(NFTNL_FUNCTIONS, dl_libnftnl, "libnftnl.so.11", "libnftnl11",
		"for --net allow (nftables)", false, "nftables", "required")
