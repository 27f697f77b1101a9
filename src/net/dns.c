// SPDX-License-Identifier: GPL-2.0-or-later
/* dns.c — DNS stub codec and fake-address pool */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "net/dns.h"
#include "util/util.h"

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* Read a (possibly compressed) name at *off; advance *off past it in the message. */
static int read_name(const uint8_t *msg, size_t len, size_t *off, struct dns_query *q)
{
	size_t pos = *off, out = 0, end = 0;
	unsigned jumps = 0;
	bool jumped = false;

	q->name_ok = true;
	for (;;) {
		uint8_t l;

		if (pos >= len)
			return -EBADMSG;
		l = msg[pos];
		if ((l & 0xc0) == 0xc0) {
			size_t target;

			if (pos + 1 >= len || ++jumps > DNS_PTR_MAX)
				return -EBADMSG;
			target = (size_t)((l & 0x3f) << 8 | msg[pos + 1]);
			/* Only backwards: a pointer loop cannot form. */
			if (target >= pos)
				return -EBADMSG;
			if (!jumped)
				end = pos + 2;
			jumped = true;
			pos = target;
			continue;
		}
		if (l & 0xc0)
			return -EBADMSG;
		if (l == 0) {
			if (!jumped)
				end = pos + 1;
			break;
		}
		if (pos + 1 + l > len || out + l + (out ? 1 : 0) > DNS_NAME_MAX)
			return -EBADMSG;
		if (out)
			q->name[out++] = '.';
		for (size_t i = 0; i < l; i++) {
			char c = (char)msg[pos + 1 + i];

			if (c >= 'A' && c <= 'Z')
				c = (char)(c - 'A' + 'a');
			if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) {
				q->name_ok = false; /* e.g. a '.' inside a label: never matched */
				c = '?';
			}
			q->name[out++] = c;
		}
		pos += 1 + l;
	}
	q->name[out] = '\0';
	*off = end;
	return 0;
}

/**
 * dns_parse_query() - parse a standard query with exactly one question
 * @msg: message (UDP payload, or TCP message without its length prefix)
 * @len: its length
 * @q: result
 *
 * Return: 0; -EBADMSG for malformed input (answer FORMERR if the header was readable),
 * -EOPNOTSUPP for a response or an opcode other than QUERY (answer NOTIMP). Does not log.
 */
int dns_parse_query(const uint8_t *msg, size_t len, struct dns_query *q)
{
	size_t off = 12;
	int r;

	memset(q, 0, sizeof(*q));
	if (len < 12 || len > DNS_TCP_MSG_MAX)
		return -EBADMSG;
	q->id = get16(msg);
	q->flags = get16(msg + 2);
	if (q->flags & 0x8000)
		return -EOPNOTSUPP;             /* QR: a response, not a query */
	if ((q->flags >> 11 & 0xf) != 0)
		return -EOPNOTSUPP;             /* only opcode QUERY */
	if (get16(msg + 4) != 1 || get16(msg + 6) != 0 || get16(msg + 8) != 0)
		return -EBADMSG;                /* one question, no answers or authority */
	r = read_name(msg, len, &off, q);
	if (r < 0)
		return r;
	if (off + 4 > len)
		return -EBADMSG;
	q->qtype = get16(msg + off);
	q->qclass = get16(msg + off + 2);
	return 0;
}

static size_t write_header(uint8_t *out, uint16_t id, uint16_t qflags, int rcode, uint16_t qd, uint16_t an)
{
	/* QR=1, opcode copied, AA=1, RD copied, RA=1 */
	uint16_t flags = (uint16_t)(0x8000 | (qflags & 0x7800) | 0x0400 | (qflags & 0x0100) | 0x0080 |
				    (rcode & 0xf));

	put16(out, id);
	put16(out + 2, flags);
	put16(out + 4, qd);
	put16(out + 6, an);
	put16(out + 8, 0);
	put16(out + 10, 0);
	return 12;
}

/**
 * dns_build_response() - answer a parsed query
 * @q: the query (its name must be printable, i.e. name_ok, or the answer carries no question)
 * @rcode: DNS_RCODE_*
 * @a: the A record's address, or NULL for an empty answer
 * @out: output buffer
 * @size: its size (DNS_MSG_MAX is always enough)
 *
 * The question is re-encoded from the parsed name (uncompressed); the answer points at it.
 * Return: the message length, or -ENOSPC. Does not log.
 */
int dns_build_response(const struct dns_query *q, int rcode, const uint8_t a[4], uint8_t *out, size_t size)
{
	size_t n, need = 12 + strlen(q->name) + 2 + 4 + (a ? 16 : 0);
	const char *p = q->name;

	if (need > size)
		return -ENOSPC;
	n = write_header(out, q->id, q->flags, rcode, 1, a ? 1 : 0);
	while (*p) {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);

		out[n++] = (uint8_t)l;
		memcpy(out + n, p, l);
		n += l;
		p += l + (dot ? 1 : 0);
	}
	out[n++] = 0;
	put16(out + n, q->qtype);
	put16(out + n + 2, q->qclass);
	n += 4;
	if (a) {
		put16(out + n, 0xc00c);         /* name: pointer to the question */
		put16(out + n + 2, DNS_TYPE_A);
		put16(out + n + 4, 1);          /* IN */
		put16(out + n + 6, 0);          /* TTL 60 s */
		put16(out + n + 8, 60);
		put16(out + n + 10, 4);
		memcpy(out + n + 12, a, 4);
		n += 16;
	}
	return (int)n;
}

/**
 * dns_build_error() - header-only error answer for a message that did not parse
 * @msg: the query
 * @len: its length (at least 2 bytes are needed for the id; else -EBADMSG)
 * @rcode: DNS_RCODE_FORMERR or DNS_RCODE_NOTIMP
 * @out: output
 * @size: its size (>= 12)
 *
 * Return: 12, or -EBADMSG/-ENOSPC. Does not log.
 */
int dns_build_error(const uint8_t *msg, size_t len, int rcode, uint8_t *out, size_t size)
{
	if (len < 4)
		return -EBADMSG;
	if (size < 12)
		return -ENOSPC;
	if (msg[2] & 0x80)
		return -EBADMSG;                /* never answer a response: no reflection loops */
	return (int)write_header(out, get16(msg), get16(msg + 2), rcode, 0, 0);
}

static void index_to_addr(size_t i, uint8_t a[4])
{
	uint32_t v = (198u << 24 | 18u << 16) + (uint32_t)i + 1;

	a[0] = (uint8_t)(v >> 24);
	a[1] = (uint8_t)(v >> 16);
	a[2] = (uint8_t)(v >> 8);
	a[3] = (uint8_t)v;
}

/**
 * dns_pool_lookup_or_add() - the fake address of @name, assigning the next free one
 * @p: pool
 * @name: normalized name
 * @a: result
 *
 * Return: 0, -ENOSPC when the pool is full, -ENOMEM. Does not log.
 */
int dns_pool_lookup_or_add(struct dns_pool *p, const char *name, uint8_t a[4])
{
	char *copy;

	for (size_t i = 0; i < p->n; i++)
		if (streq(p->names[i], name)) {
			index_to_addr(i, a);
			return 0;
		}
	if (p->n >= DNS_POOL_MAX)
		return -ENOSPC;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		char **v = realloc(p->names, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->names = v;
		p->cap = cap;
	}
	copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	p->names[p->n] = copy;
	index_to_addr(p->n++, a);
	return 0;
}

/**
 * dns_pool_name() - the name a fake address was given to
 * @p: pool
 * @a: address
 *
 * Return: the name, or NULL when @a is not an assigned pool address. Does not log.
 */
const char *dns_pool_name(const struct dns_pool *p, const uint8_t a[4])
{
	uint32_t v = (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 | (uint32_t)a[2] << 8 | a[3];
	uint32_t base = 198u << 24 | 18u << 16;

	if (v <= base || v - base - 1 >= p->n)
		return NULL;
	return p->names[v - base - 1];
}

void dns_pool_free(struct dns_pool *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->names[i]);
	free(p->names);
	p->names = NULL;
	p->n = p->cap = 0;
}
