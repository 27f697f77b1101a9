#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/gate.sh — the gate against a direct loopback transfer: 1 GiB through CONNECT and through
# the transparent listener vs direct, and vs relay-floor (the cheapest possible splice relay, as a
# yardstick); CPU seconds of server, client and relay for each; time to first byte per
# connection; 1,000 concurrent connections; the supervisor's peak RSS. A server on the host's
# 127.0.0.1 only, reached from the sandbox as svc.test (--add-host svc.test=127.0.0.1). Not a
# test: prints numbers, no thresholds. Wrap it in `flock /tmp/bench.lock` on a shared machine.
#   AISB_BIN=./build/aisb bench/gate.sh
#   BYTES=... N=... CONC=... REPEAT=3    sizes and the number of bulk rounds (medians printed)
#   SINK=splice                           the client splices into /dev/null (no userspace copy)
#   PIN=1                                 server and client on CPU 0, the relay on CPU 1
set -eu
here=$(cd "$(dirname "$0")" && pwd)
aisb=${AISB_BIN:-$here/../build/aisb}
case $aisb in /*) ;; *) aisb=$PWD/$aisb ;; esac # the script cds into its work dir
n=${N:-200}
conc=${CONC:-1000}
work=$(mktemp -d /tmp/aisb-gate-bench.XXXXXX)
chmod 755 "$work"
cp "$here/gate-load.py" "$work/"
export XDG_STATE_HOME="$work/state"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 "$work/gate-load.py" serve "$port" &
srv=$!
trap 'kill $srv 2>/dev/null; rm -rf "$work"' EXIT
cd "$work"
for _ in $(seq 100); do python3 -c "import socket; socket.create_connection(('127.0.0.1',$port))" 2>/dev/null && break; sleep 0.05; done

export BYTES=${BYTES:-1073741824}
repeat=${REPEAT:-3}
pin_cli=() pin_relay=()
if [ "${PIN:-0}" = 1 ]; then
	pin_cli=(taskset -c 0) pin_relay=(taskset -c 1)
	taskset -pc 0 "$srv" >/dev/null
fi
sbcmd=("${pin_relay[@]}" "$aisb" --allow "svc.test:$port" --add-host svc.test=127.0.0.1 --ephemeral-home
	--no-agents --env BYTES --env HOLD=2)
[ -n "${SINK:-}" ] && sbcmd+=(--env SINK)
sbcmd+=(-- "${pin_cli[@]}")
sb() { "${sbcmd[@]}" "$@"; }
# the work dir is the project: inside, the script is in the working directory
load=(python3 gate-load.py)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# the supervisor and its gate process (issue 13: the gate is a child of the supervisor)
gate_of() { pgrep -P "$1" -x aisb-gate | head -1; }
tree_ticks() {
	local g t
	g=$(gate_of "$1")
	t=$(ticks "$1")
	[ -n "$g" ] && t=$((t + $(ticks "$g")))
	echo "$t"
}
hz=$(getconf CLK_TCK)
secs() { awk -v t="$1" -v hz="$hz" 'BEGIN {printf "%.2f", t / hz}'; }

floor=
if command -v cc >/dev/null && cc -O2 -pthread -o "$work/relay-floor" "$here/relay-floor.c" 2>/dev/null; then
	fport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	"${pin_relay[@]}" "$work/relay-floor" "$fport" "$port" &
	floor=$!
	trap 'kill $srv $floor 2>/dev/null; rm -rf "$work"' EXIT
else
	echo "bench: no C compiler: the relay-floor yardstick is skipped" >&2
fi

# one bulk transfer; prints the client's line plus server and relay CPU seconds
bulk() {
	local mode=$1 s0 r0=0 out relay=0 apid t
	s0=$(ticks "$srv")
	case $mode in
	direct) out=$("${pin_cli[@]}" "${load[@]}" bulk direct 127.0.0.1 "$port") ;;
	floor)
		r0=$(ticks "$floor")
		out=$("${pin_cli[@]}" "${load[@]}" bulk floor 127.0.0.1 "$fport")
		relay=$(($(ticks "$floor") - r0)) ;;
	*)
		"${sbcmd[@]}" "${load[@]}" bulk "$mode" svc.test "$port" >"$work/out" 2>"$work/err" &
		apid=$! # the supervisor, parent of the gate (taskset execs it: same pid)
		while kill -0 "$apid" 2>/dev/null; do
			t=$(tree_ticks "$apid") && [ "$t" -gt 0 ] && relay=$t
			sleep 0.02
		done
		wait "$apid" || true
		out=$(cat "$work/out")
		grep -v 'warning: resource limits' "$work/err" >&2 || true ;;
	esac
	echo "$out server_cpu $(secs $(($(ticks "$srv") - s0))) s relay_cpu $(secs "$relay") s"
}

echo "== 1 GiB, one connection, $repeat rounds (${SINK:-recv_into} client${PIN:+, pinned: server+client CPU 0, relay CPU 1})"
modes=(direct connect transparent)
[ -n "$floor" ] && modes=(direct floor connect transparent)
: >"$work/bulk"
for _ in $(seq "$repeat"); do
	for m in "${modes[@]}"; do
		bulk "$m" | tee -a "$work/bulk"
	done
done
median_of() { awk -v m="$1" '$1 == m {print $4}' "$work/bulk" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
dmed=$(median_of direct)
for m in "${modes[@]}"; do
	med=$(median_of "$m")
	awk -v m="$m" -v x="$med" -v d="$dmed" 'BEGIN {printf "median %-12s %6.0f MiB/s  %.2fx direct\n", m, x, x / d}'
done

echo "== time to first byte, $n sequential connections"
"${load[@]}" ttfb direct 127.0.0.1 "$port" "$n"
sb "${load[@]}" ttfb connect svc.test "$port" "$n"
sb "${load[@]}" ttfb transparent svc.test "$port" "$n"

echo "== $conc concurrent connections through CONNECT, supervisor and gate RSS"
"$aisb" --allow "svc.test:$port" --add-host svc.test=127.0.0.1 --ephemeral-home --no-agents \
	--env HOLD=2 -- "${load[@]}" many connect svc.test "$port" "$conc" &
apid=$! # the supervisor itself
peak=0 gpeak=0
while kill -0 "$apid" 2>/dev/null; do
	rss=$(awk '/^VmRSS/ {print $2}' "/proc/$apid/status" 2>/dev/null || echo 0)
	[ "${rss:-0}" -gt "$peak" ] && peak=$rss
	g=$(gate_of "$apid")
	rss=$([ -n "$g" ] && awk '/^VmRSS/ {print $2}' "/proc/$g/status" 2>/dev/null || echo 0)
	[ "${rss:-0}" -gt "$gpeak" ] && gpeak=$rss
	sleep 0.05
done
wait "$apid" || true
echo "supervisor peak VmRSS ${peak} KiB, gate peak VmRSS ${gpeak} KiB (sampled every 50 ms)"
echo "(user $(id -un), $(uname -r), $(nproc) cpus)"
