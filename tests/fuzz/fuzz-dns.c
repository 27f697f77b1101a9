// SPDX-License-Identifier: GPL-2.0-or-later
/* fuzz-dns.c — the DNS stub's codec, driven the way the gate drives it: parse a query, answer
 * NOTIMP/FORMERR/REFUSED from the raw bytes or build a (NXDOMAIN, empty or A) response, and map the
 * name through the fake-address pool and back. The query is copied to a buffer of exactly its size.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/dns.h"
#include "util/macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dns_query q;
	uint8_t out[DNS_MSG_MAX], a[4];
	struct dns_pool pool = { 0 };
	uint8_t *msg;
	int r, n;

	if (size > DNS_TCP_MSG_MAX)
		return 0;
	msg = malloc(size ? size : 1);
	if (!msg)
		return 0;
	memcpy(msg, data, size);
	r = dns_parse_query(msg, size, &q);
	if (r < 0) {
		n = dns_build_error(msg, size, r == -EOPNOTSUPP ? DNS_RCODE_NOTIMP : DNS_RCODE_FORMERR, out, sizeof(out));
		if (n > (int)sizeof(out))
			abort();
	} else if (!q.name_ok) {
		n = dns_build_error(msg, size, DNS_RCODE_REFUSED, out, sizeof(out));
		if (n > (int)sizeof(out))
			abort();
	} else {
		if (memchr(q.name, 0, sizeof(q.name)) == NULL)
			abort();
		n = dns_build_response(&q, DNS_RCODE_NXDOMAIN, NULL, out, sizeof(out));
		if (n < 12 || n > (int)sizeof(out))
			abort();
		if (dns_pool_lookup_or_add(&pool, q.name, a) == 0) {
			const char *back = dns_pool_name(&pool, a);

			if (!back || !streq(back, q.name))
				abort();
			n = dns_build_response(&q, DNS_RCODE_NOERROR, a, out, sizeof(out));
			if (n < 12 || n > (int)sizeof(out))
				abort();
		}
		dns_pool_free(&pool);
	}
	free(msg);
	return 0;
}
