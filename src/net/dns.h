/* SPDX-License-Identifier: GPL-2.0-or-later */
/* dns.h — the DNS stub's message codec and the fake-address pool.
 *
 * The stub answers only from the allowlist: an allowlisted name gets an A record from
 * 198.18.0.0/15 (the pool, assigned to the sandbox's lo and redirected by nft to the gate's
 * transparent listener), AAAA and other types an empty answer, anything else NXDOMAIN. No query
 * ever leaves. Parsing is bounded (one question, 255-byte names, at most DNS_PTR_MAX compression
 * jumps and only backwards, so pointer loops are refused). Pure.
 */
#ifndef AISB_NET_DNS_H
#define AISB_NET_DNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DNS_MSG_MAX 512       /* UDP answers fit in the classic size */
#define DNS_TCP_MSG_MAX 65535
#define DNS_NAME_MAX 255
#define DNS_PTR_MAX 16
#define DNS_POOL_MAX 65536     /* names per session (the /15 holds 131070) */

enum { DNS_TYPE_A = 1, DNS_TYPE_AAAA = 28 };
enum { DNS_RCODE_NOERROR = 0, DNS_RCODE_FORMERR = 1, DNS_RCODE_SERVFAIL = 2, DNS_RCODE_NXDOMAIN = 3,
       DNS_RCODE_NOTIMP = 4, DNS_RCODE_REFUSED = 5 };

struct dns_query {
	uint16_t id;
	uint16_t flags;
	char name[DNS_NAME_MAX + 1];  /* lower-case, dotted, no trailing dot; "" for the root */
	uint16_t qtype, qclass;
	bool name_ok;                 /* every label was [a-z0-9_-]: otherwise never matched */
};

int dns_parse_query(const uint8_t *msg, size_t len, struct dns_query *q);
int dns_build_response(const struct dns_query *q, int rcode, const uint8_t a[4], uint8_t *out, size_t size);
int dns_build_error(const uint8_t *msg, size_t len, int rcode, uint8_t *out, size_t size);

/* Fake-address pool: name <-> 198.18.0.0/15, stable for a session. */
struct dns_pool {
	char **names;    /* index i <-> 198.18.0.0 + i + 1 */
	size_t n, cap;
};

int dns_pool_lookup_or_add(struct dns_pool *p, const char *name, uint8_t a[4]);
const char *dns_pool_name(const struct dns_pool *p, const uint8_t a[4]);
void dns_pool_free(struct dns_pool *p);

#endif
