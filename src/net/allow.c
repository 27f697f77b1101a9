// SPDX-License-Identifier: GPL-2.0-or-later
/* allow.c — allow-entry parser and matcher */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/allow.h"
#include "util/log.h"
#include "util/util.h"

static bool is_label_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/**
 * allow_normalize_name() - validate a DNS name and store it lower-case without trailing dot
 * @s: name
 * @out: output buffer
 * @size: size of @out
 *
 * Labels of 1..63 characters from [a-z0-9_-], not starting or ending with '-'; at most 253
 * characters; the last label not all digits (so "10.1.2" is never taken for a name).
 * Return: 0, or -EINVAL. Does not log.
 */
int allow_normalize_name(const char *s, char *out, size_t size)
{
	size_t n = strlen(s), label = 0;
	bool last_all_digits = true;

	if (n > 0 && s[n - 1] == '.')
		n--;
	if (n == 0 || n > ALLOW_NAME_MAX || n + 1 > size)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c == '.') {
			if (label == 0 || out[i - 1] == '-')
				return -EINVAL;
			label = 0;
			last_all_digits = true;
		} else {
			if (!is_label_char(c) || (label == 0 && c == '-') || ++label > 63)
				return -EINVAL;
			if (c < '0' || c > '9')
				last_all_digits = false;
		}
		out[i] = c;
	}
	if (label == 0 || out[n - 1] == '-' || last_all_digits)
		return -EINVAL;
	out[n] = '\0';
	return 0;
}

static int parse_port(const char *s, uint16_t *out)
{
	unsigned long long v;

	if (*s == '\0' || strlen(s) > 5 || parse_u64(s, &v) < 0 || v == 0 || v > 65535)
		return -EINVAL;
	*out = (uint16_t)v;
	return 0;
}

/* "ADDR" or "ADDR/PLEN" */
static int parse_prefix(const char *s, struct allow_entry *e, const char **why)
{
	char buf[ADDR_STRLEN + 8];
	char *slash;
	unsigned long long plen;
	unsigned max;

	if (strlen(s) >= sizeof(buf))
		return *why = "address too long", -EINVAL;
	memcpy(buf, s, strlen(s) + 1);
	slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	if (addr_parse(buf, &e->addr) < 0)
		return *why = "not an IP address", -EINVAL;
	max = e->addr.family == AF_INET ? 32 : 128;
	e->plen = max;
	if (slash) {
		if (slash[1] == '\0' || strlen(slash + 1) > 3 || parse_u64(slash + 1, &plen) < 0 || plen > max)
			return *why = "invalid prefix length", -EINVAL;
		e->plen = (unsigned)plen;
		struct net_addr masked = e->addr;

		addr_mask(&masked, e->plen);
		if (!addr_equal(&masked, &e->addr))
			return *why = "host bits set in CIDR (use the network address)", -EINVAL;
	}
	e->kind = ALLOW_ADDR;
	return 0;
}

/**
 * allow_parse_entry() - parse one allow entry
 * @s: the entry text
 * @out: result
 * @why: set to a static reason on failure (may be NULL)
 *
 * Return: 0, or -EINVAL. Does not log.
 */
int allow_parse_entry(const char *s, struct allow_entry *out, const char **why)
{
	const char *dummy;
	char host[ALLOW_NAME_MAX + 8];
	const char *colon, *port = NULL;
	size_t hlen;

	if (!why)
		why = &dummy;
	memset(out, 0, sizeof(*out));
	*why = "empty";
	if (!s || !*s)
		return -EINVAL;
	if (strlen(s) > ALLOW_NAME_MAX + 8)
		return *why = "too long", -EINVAL;

	if (s[0] == '[') {
		/* [v6] or [v6/plen] with optional :port */
		const char *close = strchr(s, ']');

		if (!close)
			return *why = "missing ']'", -EINVAL;
		hlen = (size_t)(close - s - 1);
		memcpy(host, s + 1, hlen);
		host[hlen] = '\0';
		if (close[1] == ':')
			port = close + 2;
		else if (close[1] != '\0')
			return *why = "unexpected text after ']'", -EINVAL;
		if (parse_prefix(host, out, why) < 0)
			return -EINVAL;
		if (out->addr.family != AF_INET6)
			return *why = "brackets are for IPv6 addresses", -EINVAL;
	} else if (strchr(s, ':') != strrchr(s, ':')) {
		/* two or more colons: a bare IPv6 address or prefix, no port */
		if (parse_prefix(s, out, why) < 0)
			return -EINVAL;
		if (out->addr.family != AF_INET6)
			return -EINVAL;
	} else {
		colon = strchr(s, ':');
		hlen = colon ? (size_t)(colon - s) : strlen(s);
		if (hlen == 0)
			return *why = "missing host", -EINVAL;
		if (hlen >= sizeof(host))
			return *why = "name too long", -EINVAL;
		memcpy(host, s, hlen);
		host[hlen] = '\0';
		if (colon)
			port = colon + 1;
		if (strspn(host, "0123456789./") == hlen) {
			if (parse_prefix(host, out, why) < 0)
				return -EINVAL;
		} else if (host[0] == '*') {
			if (host[1] != '.' || allow_normalize_name(host + 2, out->name, sizeof(out->name)) < 0)
				return *why = "invalid wildcard (use *.example.com)", -EINVAL;
			out->kind = ALLOW_WILDCARD;
		} else {
			if (allow_normalize_name(host, out->name, sizeof(out->name)) < 0)
				return *why = "invalid host name", -EINVAL;
			out->kind = ALLOW_NAME;
		}
	}
	if (port && parse_port(port, &out->port) < 0)
		return *why = "invalid port (1-65535)", -EINVAL;
	return 0;
}

/**
 * allow_list_add() - parse @s and append it to @l
 * @l: list
 * @s: entry text
 *
 * Return: 0, -EINVAL for an invalid entry, -E2BIG past ALLOW_ENTRIES_MAX, -ENOMEM.
 * Logs on failure (naming the entry).
 */
int allow_list_add(struct allow_list *l, const char *s)
{
	struct allow_entry e, *v;
	const char *why = NULL;

	if (allow_parse_entry(s, &e, &why) < 0)
		return log_error_errno(-EINVAL, "invalid allow entry '%s': %s", s, why);
	if (l->n >= ALLOW_ENTRIES_MAX)
		return log_error_errno(-E2BIG, "too many allow entries (at most %d)", ALLOW_ENTRIES_MAX);
	v = realloc(l->v, (l->n + 1) * sizeof(*v));
	if (!v)
		return log_error_errno(-ENOMEM, "out of memory");
	v[l->n++] = e;
	l->v = v;
	return 0;
}

void allow_list_free(struct allow_list *l)
{
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/**
 * allow_format_entry() - canonical text of an entry (what `--allow` would take)
 * @e: entry
 * @buf: output
 * @size: size of @buf
 *
 * Return: 0, or -ENOSPC. Does not log.
 */
int allow_format_entry(const struct allow_entry *e, char *buf, size_t size)
{
	char a[ADDR_STRLEN], pfx[ADDR_STRLEN + 8], port[8] = "";
	int n;

	if (e->port)
		snprintf(port, sizeof(port), ":%u", e->port);
	switch (e->kind) {
	case ALLOW_NAME:
		n = snprintf(buf, size, "%s%s", e->name, port);
		break;
	case ALLOW_WILDCARD:
		n = snprintf(buf, size, "*.%s%s", e->name, port);
		break;
	default:
		addr_format(&e->addr, a, sizeof(a));
		if (e->plen != (e->addr.family == AF_INET ? 32u : 128u))
			snprintf(pfx, sizeof(pfx), "%s/%u", a, e->plen);
		else
			snprintf(pfx, sizeof(pfx), "%s", a);
		if (e->addr.family == AF_INET6 && e->port)
			n = snprintf(buf, size, "[%s]%s", pfx, port);
		else
			n = snprintf(buf, size, "%s%s", pfx, port);
		break;
	}
	return n < 0 || (size_t)n >= size ? -ENOSPC : 0;
}

/**
 * allow_port_matches() - whether @port is one @e allows (443 and 80 when it names none)
 * @e: entry
 * @port: destination port
 *
 * Return: true if allowed. Does not log.
 */
bool allow_port_matches(const struct allow_entry *e, uint16_t port)
{
	return e->port ? e->port == port : (port == 443 || port == 80);
}

static bool name_below(const char *name, const char *suffix)
{
	size_t n = strlen(name), s = strlen(suffix);

	return n > s + 1 && name[n - s - 1] == '.' && streq(name + n - s, suffix);
}

/**
 * allow_match_name() - first entry allowing @name on @port
 * @l: list
 * @name: normalized (lower-case, no trailing dot) host name
 * @port: destination port
 *
 * `example.com` matches itself and any name below; `*.example.com` names below only.
 * Return: the entry, or NULL. Does not log.
 */
const struct allow_entry *allow_match_name(const struct allow_list *l, const char *name, uint16_t port)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct allow_entry *e = &l->v[i];

		if (!allow_port_matches(e, port))
			continue;
		if (e->kind == ALLOW_NAME && (streq(name, e->name) || name_below(name, e->name)))
			return e;
		if (e->kind == ALLOW_WILDCARD && name_below(name, e->name))
			return e;
	}
	return NULL;
}

/**
 * allow_match_addr() - first IP/CIDR entry covering @a on @port that names it
 * @l: list
 * @a: address (an IPv4-mapped IPv6 address is matched as IPv4)
 * @port: destination port; 0 matches any port (used for rebinding checks)
 *
 * A catch-all entry (0.0.0.0/0, ::/0, 0.0.0.0/1, 127.0.0.0/7, ...) covers the host's loopback,
 * link-local, metadata and private addresses without naming them, and must not open them: an
 * address in a special range needs an entry inside that range (addr_prefix_names()).
 * Return: the entry, or NULL. Does not log.
 */
const struct allow_entry *allow_match_addr(const struct allow_list *l, const struct net_addr *a,
					   uint16_t port)
{
	struct net_addr x = *a;
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (x.family == AF_INET6 && memcmp(x.b, mapped, 12) == 0) {
		x.family = AF_INET;
		memmove(x.b, x.b + 12, 4);
		memset(x.b + 4, 0, 12);
	}
	for (size_t i = 0; i < l->n; i++) {
		const struct allow_entry *e = &l->v[i];

		if (e->kind != ALLOW_ADDR || (port && !allow_port_matches(e, port)))
			continue;
		if (addr_prefix_names(&e->addr, e->plen, &x))
			return e;
	}
	return NULL;
}

bool allow_has_addr_entries(const struct allow_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].kind == ALLOW_ADDR)
			return true;
	return false;
}

bool allow_has_family(const struct allow_list *l, int family)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].kind == ALLOW_ADDR && l->v[i].addr.family == family)
			return true;
	return false;
}
