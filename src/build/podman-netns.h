/* SPDX-License-Identifier: GPL-2.0-or-later */
/* podman-netns.h — the network namespace the podman builder's RUN steps join: aisb's gate.
 *
 * With an allowlist, `podman build --network=ns:PATH` joins a netns that aisb prepared as the
 * native builder prepares each RUN step's (netplan_netns_stage(): lo up, the pool, the verified
 * nft ruleset, the gate's listeners), served by the same gate (netplan_gate_new(), egress log
 * and summary), so --allow means the same with either builder. A holder process keeps the netns
 * alive for the build; PATH is its /proc/PID/ns/net. Rootful podman (aisb run as root) joins any
 * netns. Rootless podman runs in the user namespace of its pause process and can join only a
 * netns owned by that namespace (setns(2) needs CAP_SYS_ADMIN over the netns' owner; measured,
 * podman 4.3.1: a netns of aisb's own user namespace fails with "checking network namespace:
 * stat /proc/PID/ns/net: permission denied"), so the holder first joins podman's user namespace
 * (allowed: its owner is the caller, who holds every capability in it from the parent
 * namespace), found through a `podman unshare` child, and creates the netns there.
 */
#ifndef AISB_BUILD_PODMAN_NETNS_H
#define AISB_BUILD_PODMAN_NETNS_H

#include <sys/types.h>

struct gate;
struct net_plan;

struct podman_netns {
	pid_t holder;   /* the netns holder, or -1 */
	int sock;       /* the holder stays while this is open */
	char path[64];  /* /proc/PID/ns/net, for --network=ns:PATH */
};

/* Prepares the netns for @np's allowlist and hands its listeners to the gate @g (made by
 * netplan_gate_new(), not started: it is started here); @podman_exe is used to find rootless
 * podman's user namespace when the caller is not root. libmnl and libnftnl must be loaded.
 * Return: 0 with @ns set, or an exit code: 77 when the policy could not be installed or the gate
 * not started, 78 when rootless podman's user namespace cannot be found or joined (said with
 * the fix). Logs on failure. */
int podman_netns_open(const char *podman_exe, const struct net_plan *np, struct gate *g, struct podman_netns *ns);

/* Ends the holder (the netns goes with it once podman is done). Accepts a closed @ns. Does not
 * log. */
void podman_netns_close(struct podman_netns *ns);

#endif
