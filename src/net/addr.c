// SPDX-License-Identifier: GPL-2.0-or-later
/* addr.c — address parsing, formatting and range classification */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "net/addr.h"

/**
 * addr_parse() - parse a numeric IPv4 or IPv6 address (no prefix, no port, no brackets)
 * @s: text
 * @out: result
 *
 * Only strict dotted quads are IPv4 (inet_pton), so "10.1" or "0x7f.1" never parse.
 * Return: 0, or -EINVAL. Does not log.
 */
int addr_parse(const char *s, struct net_addr *out)
{
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, s, out->b) == 1) {
		out->family = AF_INET;
		return 0;
	}
	if (strchr(s, '%'))     /* zone ids have no meaning for the gate */
		return -EINVAL;
	if (inet_pton(AF_INET6, s, out->b) == 1) {
		out->family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

/**
 * addr_format() - text form of an address
 * @a: address
 * @buf: output
 * @size: size of @buf (ADDR_STRLEN is always enough)
 *
 * Return: 0, or -ENOSPC. Does not log.
 */
int addr_format(const struct net_addr *a, char *buf, size_t size)
{
	if (!inet_ntop(a->family, a->b, buf, size))
		return -ENOSPC;
	return 0;
}

bool addr_equal(const struct net_addr *a, const struct net_addr *b)
{
	return a->family == b->family &&
	       memcmp(a->b, b->b, a->family == AF_INET ? 4 : 16) == 0;
}

/**
 * addr_mask() - clear the host bits of @a beyond @plen
 * @a: address, changed in place
 * @plen: prefix length
 *
 * Does not log.
 */
void addr_mask(struct net_addr *a, unsigned plen)
{
	unsigned bits = a->family == AF_INET ? 32 : 128;

	for (unsigned i = 0; i < bits / 8; i++) {
		if (plen >= (i + 1) * 8)
			continue;
		if (plen <= i * 8)
			a->b[i] = 0;
		else
			a->b[i] &= (uint8_t)(0xff << (8 - (plen - i * 8)));
	}
}

/**
 * addr_in_prefix() - whether @a lies in @net/@plen (same family only)
 * @a: address
 * @net: network
 * @plen: prefix length
 *
 * Return: true if inside. Does not log.
 */
bool addr_in_prefix(const struct net_addr *a, const struct net_addr *net, unsigned plen)
{
	struct net_addr x = *a, y = *net;

	if (a->family != net->family)
		return false;
	addr_mask(&x, plen);
	addr_mask(&y, plen);
	return addr_equal(&x, &y);
}

/* The special ranges, most specific first within each overlap (metadata inside link-local,
 * the unspecified and loopback addresses inside ::/96): addr_special() returns the first
 * block that holds an address, which is then the most specific one. */
static const struct special {
	int family;
	uint8_t b[16];
	unsigned plen;
	enum addr_class c;
} specials[] = {
	{ AF_INET, { 169, 254, 169, 254 }, 32, ADDR_METADATA },
	{ AF_INET, { 127 }, 8, ADDR_LOOPBACK },
	{ AF_INET, { 10 }, 8, ADDR_PRIVATE },
	{ AF_INET, { 172, 16 }, 12, ADDR_PRIVATE },
	{ AF_INET, { 192, 168 }, 16, ADDR_PRIVATE },
	{ AF_INET, { 169, 254 }, 16, ADDR_LINKLOCAL },
	{ AF_INET, { 100, 64 }, 10, ADDR_CGNAT },
	{ AF_INET, { 224 }, 4, ADDR_MULTICAST },
	{ AF_INET, { 0 }, 8, ADDR_UNSPECIFIED },
	{ AF_INET, { 240 }, 4, ADDR_RESERVED },        /* incl. 255.255.255.255 */
	{ AF_INET, { 198, 18 }, 15, ADDR_RESERVED },   /* aisb's pool, benchmarking */
	{ AF_INET, { 192, 0, 0 }, 24, ADDR_RESERVED },
	{ AF_INET, { 192, 0, 2 }, 24, ADDR_RESERVED }, /* documentation (TEST-NET-1..3) */
	{ AF_INET, { 198, 51, 100 }, 24, ADDR_RESERVED },
	{ AF_INET, { 203, 0, 113 }, 24, ADDR_RESERVED },
	{ AF_INET6, { 0 }, 128, ADDR_UNSPECIFIED },
	{ AF_INET6, { [15] = 1 }, 128, ADDR_LOOPBACK },
	{ AF_INET6, { 0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54 }, 128, ADDR_METADATA },
	{ AF_INET6, { 0xfc }, 7, ADDR_PRIVATE },
	{ AF_INET6, { 0xfe, 0x80 }, 10, ADDR_LINKLOCAL },
	{ AF_INET6, { 0xff }, 8, ADDR_MULTICAST },
	{ AF_INET6, { 0 }, 96, ADDR_RESERVED },          /* IPv4-compatible (deprecated) */
	{ AF_INET6, { 0x20, 0x01, 0x0d, 0xb8 }, 32, ADDR_RESERVED },
	{ AF_INET6, { 0xfe, 0xc0 }, 10, ADDR_RESERVED },
	{ AF_INET6, { 0x01 }, 64, ADDR_RESERVED },       /* 100::/64 discard-only */
};

_Static_assert(sizeof(specials) / sizeof(specials[0]) <= ADDR_SPECIALS_MAX, "specials[] outgrew ADDR_SPECIALS_MAX");

/* IPv4-mapped (::ffff:0:0/96) and NAT64 (64:ff9b::/96) addresses carry an IPv4 address. */
static bool embeds_v4(const struct net_addr *a)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	static const uint8_t nat64[12] = { 0, 0x64, 0xff, 0x9b };

	return a->family == AF_INET6 && (memcmp(a->b, mapped, 12) == 0 || memcmp(a->b, nat64, 12) == 0);
}

/**
 * addr_special() - the most specific special range that holds @a
 * @a: address
 * @net: the range's network (same family as @a); may be NULL
 * @plen: its prefix length; may be NULL
 *
 * For an address that embeds an IPv4 address (IPv4-mapped, NAT64) the range is the IPv4
 * range, placed at the same position: ::ffff:127.0.0.1 lies in ::ffff:127.0.0.0/104.
 * Return: the range's class, or ADDR_PUBLIC (then @net and @plen are untouched). Does not log.
 */
enum addr_class addr_special(const struct net_addr *a, struct net_addr *net, unsigned *plen)
{
	struct net_addr x = *a, n;
	unsigned shift = 0;

	if (embeds_v4(a)) {
		x = (struct net_addr){ .family = AF_INET };
		memcpy(x.b, a->b + 12, 4);
		shift = 96;
	}
	for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]); i++) {
		const struct special *s = &specials[i];

		n = (struct net_addr){ .family = s->family };
		memcpy(n.b, s->b, sizeof(n.b));
		if (!addr_in_prefix(&x, &n, s->plen))
			continue;
		if (shift) {
			struct net_addr m = *a;

			memcpy(m.b + 12, n.b, 4);
			n = m;
		}
		if (net)
			*net = n;
		if (plen)
			*plen = s->plen + shift;
		return s->c;
	}
	return ADDR_PUBLIC;
}

/**
 * addr_classify() - which special range, if any, holds @a
 * @a: address
 *
 * IPv4-mapped (::ffff:0:0/96), IPv4-compatible-looking NAT64 (64:ff9b::/96) addresses are
 * classified by their embedded IPv4 address.
 * Return: the class; ADDR_PUBLIC for ordinary addresses. Does not log.
 */
enum addr_class addr_classify(const struct net_addr *a)
{
	return addr_special(a, NULL, NULL);
}

/**
 * addr_prefix_names() - whether the entry @net/@plen names @a (design: "an entry that names it")
 * @net: an allow entry's network
 * @plen: its prefix length
 * @a: a destination it covers
 *
 * An ordinary (public) address is named by every prefix that covers it. An address in a special
 * range (loopback, link-local, metadata, private, ...) only by a prefix that lies inside that
 * range itself: 127.0.0.1, 127.0.0.0/8 and 169.254.169.254 name theirs; 0.0.0.0/0, ::/0,
 * 0.0.0.0/1 or 127.0.0.0/7 merely contain them and do not. The range is the most specific one,
 * so 169.254.0.0/16 names the link-local addresses but not the metadata address in it.
 * Return: true if @net/@plen covers and names @a. Does not log.
 */
bool addr_prefix_names(const struct net_addr *net, unsigned plen, const struct net_addr *a)
{
	struct net_addr sn;
	unsigned sp;

	if (!addr_in_prefix(a, net, plen))
		return false;
	if (addr_special(a, &sn, &sp) == ADDR_PUBLIC)
		return true;
	return plen >= sp && addr_in_prefix(net, &sn, sp);
}

/**
 * addr_special_next() - iterate over the special ranges of one family
 * @family: AF_INET or AF_INET6
 * @i: cursor, start at 0
 * @net: the range
 * @plen: its prefix length
 *
 * Return: true while a range was returned. Does not log.
 */
bool addr_special_next(int family, size_t *i, struct net_addr *net, unsigned *plen)
{
	for (; *i < sizeof(specials) / sizeof(specials[0]); (*i)++) {
		const struct special *s = &specials[*i];

		if (s->family != family)
			continue;
		*net = (struct net_addr){ .family = s->family };
		memcpy(net->b, s->b, sizeof(net->b));
		*plen = s->plen;
		(*i)++;
		return true;
	}
	return false;
}

const char *addr_class_to_string(enum addr_class c)
{
	static const char *const names[ADDR_CLASS_MAX] = {
		"public", "loopback", "private", "link-local", "CGNAT", "multicast",
		"metadata", "unspecified", "reserved",
	};
	return c < ADDR_CLASS_MAX ? names[c] : "?";
}

/**
 * addr_from_sockaddr() - extract the address of a sockaddr_in/_in6
 * @sa: socket address
 * @out: result
 *
 * Return: 0, or -EAFNOSUPPORT. Does not log.
 */
int addr_from_sockaddr(const struct sockaddr *sa, struct net_addr *out)
{
	memset(out, 0, sizeof(*out));
	if (sa->sa_family == AF_INET) {
		out->family = AF_INET;
		memcpy(out->b, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		out->family = AF_INET6;
		memcpy(out->b, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
		return 0;
	}
	return -EAFNOSUPPORT;
}

socklen_t addr_to_sockaddr(const struct net_addr *a, uint16_t port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;

		s->sin_family = AF_INET;
		s->sin_port = htons(port);
		memcpy(&s->sin_addr, a->b, 4);
		return sizeof(*s);
	}
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	s6->sin6_family = AF_INET6;
	s6->sin6_port = htons(port);
	memcpy(&s6->sin6_addr, a->b, 16);
	return sizeof(*s6);
}
