/* SPDX-License-Identifier: GPL-2.0-or-later */
/* addr.h — IPv4/IPv6 addresses: parse, format, prefix match and range classification.
 *
 * The gate refuses names that resolve into special ranges (loopback, private, link-local, CGNAT,
 * multicast, the cloud metadata address, unspecified, reserved) unless the user named the address:
 * that is the DNS-rebinding wall of docs/design.md §6. IPv4-mapped IPv6 addresses are classified
 * by the IPv4 address they carry, so ::ffff:127.0.0.1 is loopback. An address in a special range is
 * reachable only through an entry that *names* it (addr_prefix_names(): a prefix inside the
 * range), never through one that merely contains it (0.0.0.0/0, ::/0). Everything here is pure.
 */
#ifndef AISB_NET_ADDR_H
#define AISB_NET_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct net_addr {
	int family;        /* AF_INET or AF_INET6 */
	uint8_t b[16];     /* network byte order; IPv4 uses b[0..3] */
};

enum addr_class {
	ADDR_PUBLIC,
	ADDR_LOOPBACK,
	ADDR_PRIVATE,      /* RFC 1918, fc00::/7 */
	ADDR_LINKLOCAL,    /* 169.254.0.0/16, fe80::/10 */
	ADDR_CGNAT,        /* 100.64.0.0/10 */
	ADDR_MULTICAST,    /* 224.0.0.0/4, ff00::/8 */
	ADDR_METADATA,     /* 169.254.169.254, fd00:ec2::254 */
	ADDR_UNSPECIFIED,  /* 0.0.0.0/8, :: */
	ADDR_RESERVED,     /* 240.0.0.0/4, broadcast, 198.18.0.0/15 (aisb's pool), documentation */
	ADDR_CLASS_MAX
};

/* An upper bound on the special ranges of addr_special_next() (checked at compile time). */
#define ADDR_SPECIALS_MAX 64

/* Longest text form incl. NUL (INET6_ADDRSTRLEN). */
#define ADDR_STRLEN 46

int addr_parse(const char *s, struct net_addr *out);
int addr_format(const struct net_addr *a, char *buf, size_t size);
bool addr_equal(const struct net_addr *a, const struct net_addr *b);
bool addr_in_prefix(const struct net_addr *a, const struct net_addr *net, unsigned plen);
void addr_mask(struct net_addr *a, unsigned plen);
enum addr_class addr_classify(const struct net_addr *a);
enum addr_class addr_special(const struct net_addr *a, struct net_addr *net, unsigned *plen);
bool addr_prefix_names(const struct net_addr *net, unsigned plen, const struct net_addr *a);
bool addr_special_next(int family, size_t *i, struct net_addr *net, unsigned *plen);
const char *addr_class_to_string(enum addr_class c);
int addr_from_sockaddr(const struct sockaddr *sa, struct net_addr *out);
/* Fill a sockaddr_in/_in6 in @ss with @a and @port; returns its length. */
socklen_t addr_to_sockaddr(const struct net_addr *a, uint16_t port, struct sockaddr_storage *ss);

#endif
