#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/lib/testnet.sh SCRIPT — run SCRIPT (bash) inside a test network of its own, so that
# pasta's "host side" is that network and never the machine's real one. Call it as
#   unshare -Urnm --fork tests/e2e/lib/testnet.sh SCRIPT
# Namespace A (the caller's new netns, where aisb and pasta run): 192.0.2.2/24, 2001:db8:1::2/64
# on veth0, default routes via the peer. Namespace B (the peer): 192.0.2.1, 2001:db8:1::1 on
# veth1, plus any address SCRIPT adds with `peer ip addr add ...`. Only TEST-NET and
# documentation addresses. SCRIPT sees PEER_PID and the function `peer CMD...` (run in B); with
# TESTNET_RESOLV set, /etc/resolv.conf (in this mount namespace only) holds that text.
set -eu
ip link set lo up
unshare -n sleep 1000 &
PEER_PID=$!
export PEER_PID
# At the end every process left in either namespace (servers the script started) is killed:
# only this script can have started them, nothing else lives in these namespaces.
cleanup() {
	local me pid ns a b
	a=$(readlink /proc/self/ns/net)
	b=$(readlink /proc/$PEER_PID/ns/net)
	for pid in $(ls /proc | grep -E '^[0-9]+$'); do
		[ "$pid" = $$ ] && continue
		ns=$(readlink /proc/$pid/ns/net 2>/dev/null) || continue
		{ [ "$ns" = "$a" ] || [ "$ns" = "$b" ]; } && kill "$pid" 2>/dev/null
	done
	return 0
}
trap cleanup EXIT
for _ in $(seq 50); do [ "$(readlink /proc/$PEER_PID/ns/net)" != "$(readlink /proc/self/ns/net)" ] && break; sleep 0.02; done
ip link add veth0 type veth peer name veth1
ip link set veth1 netns "$PEER_PID"
ip addr add 192.0.2.2/24 dev veth0
ip -6 addr add 2001:db8:1::2/64 dev veth0 nodad
ip link set veth0 up
nsenter -t "$PEER_PID" -n sh -c 'ip link set lo up && ip addr add 192.0.2.1/24 dev veth1 &&
	ip -6 addr add 2001:db8:1::1/64 dev veth1 nodad && ip link set veth1 up &&
	ip route add default via 192.0.2.2 && ip -6 route add default via 2001:db8:1::2'
ip route add default via 192.0.2.1
ip -6 route add default via 2001:db8:1::1
if [ -n "${TESTNET_RESOLV:-}" ]; then
	printf '%s\n' "$TESTNET_RESOLV" >"$(dirname "$1")/testnet-resolv.conf"
	mount --bind "$(dirname "$1")/testnet-resolv.conf" /etc/resolv.conf
fi
peer() { nsenter -t "$PEER_PID" -n "$@"; }
export -f peer
# peer_wait URL: until a server in the peer answers (up to ~30 s: python starts slowly on a loaded machine)
peer_wait() { for _ in $(seq 300); do nsenter -t "$PEER_PID" -n curl -s -m 1 -o /dev/null "$1" && return 0; sleep 0.05; done; return 1; }
export -f peer_wait
# wait_http URL: until a server answers (up to ~30 s)
wait_http() { for _ in $(seq 300); do curl -s -m 1 -o /dev/null "$1" && return 0; sleep 0.05; done; return 1; }
export -f wait_http
set +e
bash "$1"
