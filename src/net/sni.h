/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sni.h — find the server name in a TLS ClientHello, without consuming it.
 *
 * For CONNECT to port 443 (and transparent TCP to 443) the gate peeks at the first TLS record
 * and refuses an SNI that differs from the name the policy checked (docs/design.md §6). Only a
 * ClientHello within one record (at most 16 KiB) is read. Pure.
 */
#ifndef AISB_NET_SNI_H
#define AISB_NET_SNI_H

#include <stddef.h>

#define SNI_RECORD_MAX (5 + 16384)

int sni_parse(const unsigned char *buf, size_t len, char *name, size_t size);

#endif
