// SPDX-License-Identifier: GPL-2.0-or-later
/* fuzz-sni.c — the TLS ClientHello server_name parser the gate checks CONNECT tunnels to port 443
 * with. The bytes are copied to a buffer of exactly their size; every prefix length the gate could
 * see is tried for short inputs, and a found name must be a terminated string that fits.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/sni.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(const unsigned char *buf, size_t len)
{
	char name[256], small[8];
	int r;

	memset(name, 'x', sizeof(name));
	r = sni_parse(buf, len, name, sizeof(name));
	if (r == 1 && memchr(name, 0, sizeof(name)) == NULL)
		abort();
	r = sni_parse(buf, len, small, sizeof(small));
	if (r == 1 && memchr(small, 0, sizeof(small)) == NULL)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char *buf;

	if (size > SNI_RECORD_MAX + 1024)
		return 0;
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	one(buf, size);
	for (size_t l = 0; size <= 600 && l < size; l++) {
		unsigned char *pre = malloc(l ? l : 1);

		if (!pre)
			break;
		memcpy(pre, buf, l);
		one(pre, l);
		free(pre);
	}
	free(buf);
	return 0;
}
