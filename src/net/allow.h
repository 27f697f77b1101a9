/* SPDX-License-Identifier: GPL-2.0-or-later */
/* allow.h — network allow entries: grammar and matching (docs/design.md §6).
 *
 * Grammar: `example.com` (the name and every name below it), `*.example.com` (below only),
 * `example.com:8443`, `10.20.0.5`, `10.20.0.0/16`, `10.20.0.5:5432`, `2001:db8::1`,
 * `2001:db8::/32`, `[2001:db8::1]:443`, `[2001:db8::/32]:443`. An entry without a port allows
 * 443 and 80; with a port, only that port. Names are case-insensitive and stored lower-case
 * without a trailing dot. Parsing and matching are pure.
 */
#ifndef AISB_NET_ALLOW_H
#define AISB_NET_ALLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/addr.h"

#define ALLOW_NAME_MAX 253
#define ALLOW_ENTRIES_MAX 4096

enum allow_kind { ALLOW_NAME, ALLOW_WILDCARD, ALLOW_ADDR, ALLOW_KIND_MAX };

struct allow_entry {
	enum allow_kind kind;
	char name[ALLOW_NAME_MAX + 1]; /* ALLOW_NAME/ALLOW_WILDCARD: without the "*." */
	struct net_addr addr;          /* ALLOW_ADDR: network, host bits cleared */
	unsigned plen;                 /* ALLOW_ADDR: prefix length */
	uint16_t port;                 /* 0: the default ports 443 and 80 */
};

struct allow_list {
	struct allow_entry *v;
	size_t n;
};

int allow_parse_entry(const char *s, struct allow_entry *out, const char **why);
int allow_list_add(struct allow_list *l, const char *s);
void allow_list_free(struct allow_list *l);
int allow_format_entry(const struct allow_entry *e, char *buf, size_t size);

int allow_normalize_name(const char *s, char *out, size_t size);
bool allow_port_matches(const struct allow_entry *e, uint16_t port);
const struct allow_entry *allow_match_name(const struct allow_list *l, const char *name, uint16_t port);
const struct allow_entry *allow_match_addr(const struct allow_list *l, const struct net_addr *a,
					   uint16_t port);
bool allow_has_addr_entries(const struct allow_list *l);
bool allow_has_family(const struct allow_list *l, int family);

#endif
