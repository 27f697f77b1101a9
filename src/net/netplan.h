/* SPDX-License-Identifier: GPL-2.0-or-later */
/* netplan.h — the network part of the plan: settings resolved into policy, ruleset and pasta needs.
 *
 * netplan_resolve() turns --net, --allow/--allow-file/config entries, --add-host,
 * --allow-host-port, --publish and --proxy into an immutable struct net_plan, refusing invalid
 * input with exit 78 (naming the entry). The nft ruleset is computed here, once, by the pure
 * builder; --print-ruleset renders exactly it and init installs exactly it. netplan_init_apply()
 * is the stage init runs inside the new netns; netplan_env() the proxy variables for the command.
 */
#ifndef AISB_NET_NETPLAN_H
#define AISB_NET_NETPLAN_H

#include <stdbool.h>
#include <stdio.h>

#include "core/plan.h"
#include "net/nft.h"
#include "net/pasta.h"
#include "net/policy.h"

#define NETPLAN_GATE_FDS 4   /* proxy, transparent, DNS UDP, DNS TCP: the order of the fd array */

struct net_plan {
	enum net_mode mode;
	struct net_policy policy;
	struct pasta_publish *publish;
	size_t n_publish;
	char *upstream;               /* --proxy HOST:PORT */
	bool pasta;                   /* a real IP path is needed: full, IP/CIDR entries, --publish */
	char *pasta_path;
	bool defaulted_to_none;       /* the default mode with an empty allowlist: nothing to allow */
	bool ingress_only;            /* --publish without allow entries: a server-only sandbox */
	struct nft_ruleset ruleset;   /* allow mode only */
};

int netplan_resolve(const struct aisb_settings *s, struct net_plan **out);
void netplan_free(struct net_plan *n);
void netplan_print(const struct net_plan *n, FILE *f);
void netplan_print_policy(const struct net_plan *n, FILE *f);
void netplan_print_ruleset(const struct net_plan *n, FILE *f);
bool netplan_has_gate(const struct net_plan *n);
int netplan_init_apply(const struct net_plan *n, int fds[NETPLAN_GATE_FDS], char *err, size_t err_size);

#endif
