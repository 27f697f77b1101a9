/* SPDX-License-Identifier: GPL-2.0-or-later */
/* caps.h — leave the workload with no capability at all.
 *
 * Clears the bounding set (needs CAP_SETPCAP, so it runs before the sets are emptied), the ambient
 * set, and the effective/permitted/inheritable sets, sets no_new_privs, then reads everything back.
 */
#ifndef AISB_NS_CAPS_H
#define AISB_NS_CAPS_H

/* Drops every capability and verifies it. Return: 0 or -errno. Does not log. */
int caps_drop_all(void);

#endif
