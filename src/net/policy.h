/* SPDX-License-Identifier: GPL-2.0-or-later */
/* policy.h — the gate's decisions, in the order of docs/design.md §6, as pure functions.
 *
 * policy_check() decides from the destination alone: host.aisb.internal and its published ports,
 * IP literals (only when an IP/CIDR entry covers them), names (an entry must match name and
 * port), --add-host pins. A name that passes and is not pinned must be resolved on the host;
 * policy_filter_resolved() then drops every address in a special range (loopback, private,
 * link-local, CGNAT, multicast, metadata, ...) that no IP entry names: the DNS-rebinding wall.
 * Every denial carries a one-line reason and the exact flag that would allow it.
 */
#ifndef AISB_NET_POLICY_H
#define AISB_NET_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/addr.h"
#include "net/allow.h"

#define POLICY_HOST_INTERNAL "host.aisb.internal"
#define POLICY_ADDRS_MAX 8

struct policy_pin {
	char name[ALLOW_NAME_MAX + 1];
	struct net_addr addr;
};

struct net_policy {
	struct allow_list allow;
	struct policy_pin *pins;
	size_t n_pins;
	uint16_t *host_ports;
	size_t n_host_ports;
};

enum policy_step { POLICY_DENY, POLICY_DIAL, POLICY_RESOLVE, POLICY_STEP_MAX };

struct policy_decision {
	enum policy_step step;
	char host[ALLOW_NAME_MAX + 1];      /* normalized */
	uint16_t port;
	bool is_literal;                    /* the destination was an IP address */
	bool host_internal;                 /* host.aisb.internal: dial the host's 127.0.0.1 */
	char rule[ALLOW_NAME_MAX + 16];     /* the entry or flag that allowed it */
	char reason[ALLOW_NAME_MAX + 128];  /* denials: one line */
	char suggest[ALLOW_NAME_MAX + 64];  /* denials: the flag that would allow it, or "" */
	struct net_addr addrs[POLICY_ADDRS_MAX];
	size_t n_addrs;
};

int policy_add_pin(struct net_policy *p, const char *spec);
int policy_add_host_port(struct net_policy *p, const char *spec);
void policy_free(struct net_policy *p);
bool policy_name_listed(const struct net_policy *p, const char *name);
void policy_check(const struct net_policy *p, const char *host, uint16_t port, struct policy_decision *d);
void policy_filter_resolved(const struct net_policy *p, const struct net_addr *addrs, size_t n,
			    struct policy_decision *d);
void policy_suggest_allow(const char *host, uint16_t port, bool literal, char *buf, size_t size);

#endif
