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
#include "net/gate.h"
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
	uint64_t egress_log_max;      /* the gate's egress log bound (0: GATE_LOG_MAX); a test hook */
	struct gate_key keys[GATE_KEYS_MAX]; /* --key-via-gate: what the gate adds for which endpoint */
	size_t n_keys;
	char *tls_roots;              /* a key for an https:// endpoint: the host's roots the tlsgate
				       * verifies it against, as a file (the caller's $SSL_CERT_FILE, or
				       * OpenSSL's default file), also the bundle's part inside */
	char *tls_roots_dir;          /* ... and the caller's $SSL_CERT_DIR, which it loads too */
};

int netplan_resolve(const struct aisb_settings *s, struct net_plan **out);
void netplan_free(struct net_plan *n);
void netplan_print(const struct net_plan *n, FILE *f);
void netplan_print_policy(const struct net_plan *n, FILE *f);
void netplan_print_ruleset(const struct net_plan *n, FILE *f);
bool netplan_has_gate(const struct net_plan *n);

/* The network mode @n was resolved to (--net, or none when the default allow mode had nothing
 * to allow): the one place a run's mode is stored; the plan keeps no copy (core/plan.h), so
 * every reader outside src/net asks here. NET_NONE for NULL (no network part). Does not log. */
enum net_mode netplan_mode(const struct net_plan *n);

/* --key-via-gate: the gate puts @value in place of @placeholder in requests to @host:@port (the
 * model endpoint as the policy names it); @tls: it is https://, so the tlsgate terminates the
 * sandbox's TLS to it (net/tlsgate.h; netplan_tls_trust() first). @value is copied and kept only
 * in this plan's memory, which the gate's process inherits: never printed, never written.
 * Return: 0, -E2BIG (more than GATE_KEYS_MAX, or more https:// names than TLSGATE_NAMES_MAX),
 * -EINVAL (a value the head cannot carry: empty, too long, a control byte), -ENOMEM. Does not
 * log. */
int netplan_add_key(struct net_plan *n, const char *host, uint16_t port, const char *placeholder, const char *value,
		    bool tls);

/* The upstream trust of the https:// endpoints (n->tls_roots, n->tls_roots_dir): @get's
 * $SSL_CERT_FILE (a private CA, a company's proxy root), else OpenSSL's default file, and
 * $SSL_CERT_DIR: what the tlsgate loads. Return: 0, -ENOENT (no readable file), -ELIBACC (no
 * libcrypto to ask), -ENOMEM. Does not log. */
int netplan_tls_trust(struct net_plan *n, env_getter get);

/* Whether a key of @n is for an https:// endpoint (the session then spawns the tlsgate). */
bool netplan_has_tls(const struct net_plan *n);

/* The https:// endpoints' names of @n's keys, each once, into @names (TLSGATE_NAMES_MAX; they
 * point into @n). Return: how many. Does not log. */
size_t netplan_tls_names(const struct net_plan *n, const char **names);

/* Stage: network, inside a new netns while its user namespace's capabilities are held (init of
 * `aisb run`, the holder of a build's RUN step: one implementation for both). Should: bring lo
 * up; with a gate (allow mode), put the pool on lo, install and verify the ruleset and open the
 * gate's listeners into @fds (NETPLAN_GATE_FDS order; all -1 without a gate). Mustn't: create
 * any interface or route out, or let anything run unfiltered (77). @n may be NULL (no network).
 * Return: 0, or an exit code (77 enforcement, 125 failure) with @err filled. Does not log. */
int netplan_netns_stage(const struct net_plan *n, int fds[NETPLAN_GATE_FDS], char *err, size_t err_size);

struct gate;
/* The network stage's answer, from the process that ran netplan_netns_stage() in a netns of
 * its own (a build's RUN holder, the podman builder's netns holder) to the supervisor that
 * serves its gate, over the SOCK_SEQPACKET @sock: @stage_rc 0 sends the NETPLAN_GATE_FDS
 * listeners (and closes them here), anything else says the policy could not be installed (the
 * sender said why). Return: 0 or -errno. Does not log. */
int netplan_listeners_send(int sock, int stage_rc, int fds[NETPLAN_GATE_FDS]);

/* Receives what netplan_listeners_send() sent on @sock and hands the listeners to the gate @g
 * (gate_listen(): the gate owns them from then on, also when it refuses them). Return: 0;
 * -EPERM when the sender could not install the policy; -EPROTO when it sent nothing usable (it
 * died, or said why) or the gate refused them. Does not log. */
int netplan_listeners_take(int sock, struct gate *g);

/* The supervisor's gate for @n's policy and upstream, without listeners yet (gate_listen() takes
 * what the network stage opened; gate_start() forks it): the egress log is @log_fd (the caller
 * keeps it) or, when that is -1, @log_path, created at gate_start(); @log_hint names it in the
 * summary. Used by `aisb run` and by a build's RUN steps alike. Return: 0 or -errno. Logs on
 * failure. */
int netplan_gate_new(const struct net_plan *n, int log_fd, const char *log_path, const char *log_hint,
		     struct gate **out);

#endif
