// SPDX-License-Identifier: GPL-2.0-or-later
/* sni.c — TLS ClientHello server_name extraction */
#include <errno.h>
#include <string.h>

#include "net/sni.h"

struct rd {
	const unsigned char *p;
	size_t len, off;
};

static int need(struct rd *r, size_t n)
{
	return r->len - r->off >= n ? 0 : -EBADMSG;
}

static unsigned u8(struct rd *r)
{
	return r->p[r->off++];
}

static unsigned u16(struct rd *r)
{
	unsigned v = (unsigned)r->p[r->off] << 8 | r->p[r->off + 1];

	r->off += 2;
	return v;
}

/**
 * sni_parse() - the server_name of the ClientHello at the start of @buf
 * @buf: bytes the client sent so far
 * @len: their count
 * @name: output (lower-cased)
 * @size: its size
 *
 * Return: 1 when found; 0 when more bytes are needed; -EPROTO when the bytes are not a TLS
 * ClientHello; -ENOENT when it has no server_name; -EBADMSG when malformed. Does not log.
 */
int sni_parse(const unsigned char *buf, size_t len, char *name, size_t size)
{
	struct rd r;
	size_t rec_len, ext_end;

	if (len >= 1 && buf[0] != 0x16)
		return -EPROTO;
	if (len >= 2 && buf[1] != 0x03)
		return -EPROTO;
	if (len < 5)
		return 0;
	rec_len = (size_t)buf[3] << 8 | buf[4];
	if (rec_len > 16384 || rec_len < 4)
		return -EBADMSG;
	if (len < 5 + rec_len)
		return 0;
	r = (struct rd){ .p = buf + 5, .len = rec_len };
	if (u8(&r) != 1)
		return -EPROTO;                 /* not a ClientHello */
	{
		size_t hs_len = (size_t)u8(&r) << 16;

		hs_len |= u16(&r);
		if (hs_len > rec_len - 4)
			return -EBADMSG;        /* spans records: not supported, refuse */
		r.len = 4 + hs_len;
	}
	if (need(&r, 2 + 32 + 1) < 0)
		return -EBADMSG;
	r.off += 2 + 32;
	{
		size_t sid = u8(&r);

		if (need(&r, sid + 2) < 0)
			return -EBADMSG;
		r.off += sid;
	}
	{
		size_t cs = u16(&r);

		if (need(&r, cs + 1) < 0)
			return -EBADMSG;
		r.off += cs;
	}
	{
		size_t comp = u8(&r);

		if (need(&r, comp) < 0)
			return -EBADMSG;
		r.off += comp;
	}
	if (r.off == r.len)
		return -ENOENT;                 /* no extensions at all */
	if (need(&r, 2) < 0)
		return -EBADMSG;
	ext_end = u16(&r);
	if (need(&r, ext_end) < 0)
		return -EBADMSG;
	ext_end += r.off;
	while (r.off + 4 <= ext_end) {
		unsigned type = u16(&r);
		size_t elen = u16(&r);

		if (r.off + elen > ext_end)
			return -EBADMSG;
		if (type == 0) {
			struct rd s = { .p = r.p + r.off, .len = elen };
			size_t list, nlen;

			if (need(&s, 2) < 0)
				return -EBADMSG;
			list = u16(&s);
			if (list + 2 > elen || need(&s, 3) < 0)
				return -EBADMSG;
			if (u8(&s) != 0)
				return -EBADMSG;        /* host_name is the only type */
			nlen = u16(&s);
			if (need(&s, nlen) < 0 || nlen == 0 || nlen >= size)
				return -EBADMSG;
			for (size_t i = 0; i < nlen; i++) {
				char c = (char)s.p[s.off + i];

				if (c >= 'A' && c <= 'Z')
					c = (char)(c - 'A' + 'a');
				if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
				      c == '_'))
					return -EBADMSG;
				name[i] = c;
			}
			name[nlen] = '\0';
			if (nlen > 0 && name[nlen - 1] == '.')
				name[nlen - 1] = '\0';
			return 1;
		}
		r.off += elen;
	}
	return -ENOENT;
}
