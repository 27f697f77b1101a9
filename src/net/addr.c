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

static bool v4_in(const uint8_t *b, uint8_t n0, uint8_t n1, uint8_t n2, uint8_t n3, unsigned plen)
{
	struct net_addr a = { .family = AF_INET }, net = { .family = AF_INET, .b = { n0, n1, n2, n3 } };

	memcpy(a.b, b, 4);
	return addr_in_prefix(&a, &net, plen);
}

static enum addr_class classify_v4(const uint8_t *b)
{
	if (v4_in(b, 169, 254, 169, 254, 32))
		return ADDR_METADATA;
	if (v4_in(b, 127, 0, 0, 0, 8))
		return ADDR_LOOPBACK;
	if (v4_in(b, 10, 0, 0, 0, 8) || v4_in(b, 172, 16, 0, 0, 12) || v4_in(b, 192, 168, 0, 0, 16))
		return ADDR_PRIVATE;
	if (v4_in(b, 169, 254, 0, 0, 16))
		return ADDR_LINKLOCAL;
	if (v4_in(b, 100, 64, 0, 0, 10))
		return ADDR_CGNAT;
	if (v4_in(b, 224, 0, 0, 0, 4))
		return ADDR_MULTICAST;
	if (v4_in(b, 0, 0, 0, 0, 8))
		return ADDR_UNSPECIFIED;
	if (v4_in(b, 240, 0, 0, 0, 4) || v4_in(b, 198, 18, 0, 0, 15) || v4_in(b, 192, 0, 0, 0, 24) ||
	    v4_in(b, 192, 0, 2, 0, 24) || v4_in(b, 198, 51, 100, 0, 24) || v4_in(b, 203, 0, 113, 0, 24))
		return ADDR_RESERVED;
	return ADDR_PUBLIC;
}

static bool v6_in(const struct net_addr *a, const char *net, unsigned plen)
{
	struct net_addr n;

	if (addr_parse(net, &n) < 0)
		return false;
	return addr_in_prefix(a, &n, plen);
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
	if (a->family == AF_INET)
		return classify_v4(a->b);
	if (v6_in(a, "::ffff:0:0", 96) || v6_in(a, "64:ff9b::", 96))
		return classify_v4(a->b + 12);
	if (v6_in(a, "::", 128))
		return ADDR_UNSPECIFIED;
	if (v6_in(a, "::1", 128))
		return ADDR_LOOPBACK;
	if (v6_in(a, "fd00:ec2::254", 128))
		return ADDR_METADATA;
	if (v6_in(a, "fc00::", 7))
		return ADDR_PRIVATE;
	if (v6_in(a, "fe80::", 10))
		return ADDR_LINKLOCAL;
	if (v6_in(a, "ff00::", 8))
		return ADDR_MULTICAST;
	if (v6_in(a, "::", 96) || v6_in(a, "2001:db8::", 32) || v6_in(a, "fec0::", 10) ||
	    v6_in(a, "100::", 64))
		return ADDR_RESERVED;
	return ADDR_PUBLIC;
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
