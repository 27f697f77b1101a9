#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/gate.sh — the gate against a direct loopback transfer and against its peers, in one table:
# 1 GiB through aisb's CONNECT and transparent listener, through relay-floor (the cheapest possible
# splice relay, a yardstick), through squid's CONNECT and through srt's proxy (Anthropic's
# sandbox-runtime), each vs direct; CPU seconds of server, client and relay; time to first byte
# per connection; 1,000 concurrent tunnels and the relay's peak RSS. A server on the host's
# 127.0.0.1 only, reached from aisb's sandbox as svc.test (--add-host svc.test=127.0.0.1). Not a
# test: prints numbers, no thresholds. Wrap it in `flock /tmp/bench.lock` on a shared machine.
#   AISB_BIN=./build/aisb bench/gate.sh   (relative or absolute; default: ../build/aisb)
#   BYTES=... N=... CONC=... REPEAT=3     sizes and the number of bulk rounds (medians printed)
#   SINK=splice                           the client splices into /dev/null (no userspace copy)
#   PIN=1                                 server and client on CPU 0, the relay on CPU 1
#   PEERS=0                               skip squid and srt even when installed
#   AISB_BEFORE=OTHER_BINARY              its CONNECT and transparent columns too (A/B, interleaved)
#   KEYED=0                               skip the injecting path's table (--key-via-gate)
#   ONLY=keyed                            the injecting path's table only
#   TLS=0                                 skip its TLS columns (https_*, keyed_tls_connect)
#   BENCH_NODELAY=0                       its TLS clients without TCP_NODELAY (curl, node, reqwest
#                                         set it): shows the delayed-ACK stall of a terminated TLS
# The injecting path (--key-via-gate, issue 27): HTTP requests (GET /bulk: BYTES; GET /: time to
# the answer's first byte) through a CONNECT tunnel to a model endpoint on the host's loopback
# (--allow-host-port, a fake pi as the harness so that the bridge names the endpoint), as a plain
# tunnel (http_connect: the gate splices) and keyed (keyed_connect: the gate reads each request
# head, puts the key in, and reads every answer byte through the key masker, net/keymask.c),
# next to the same requests without the sandbox (http_direct). Its TLS columns: the same over
# TLS to an https:// endpoint, direct (https_direct), through a plain CONNECT tunnel with TLS end
# to end (https_connect), and keyed with the tlsgate terminating TLS (keyed_tls_connect, issue 27:
# docs/key-via-gate-tls.md); the server's certificate comes from a throwaway CA.
# The peers run when installed (they are not in contrib/packages.txt: CI does not run benches):
#   squid: apt-get install squid          (run here as `squid -N` with a config in the work dir)
#   srt:   apt-get install bubblewrap socat ripgrep && npm install -g @anthropic-ai/sandbox-runtime
# Rounds are interleaved (direct, floor, aisb, squid, srt, direct, ...), so a load change on a
# shared machine hits every column alike: compare the ratios, not the MiB/s.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
aisb=${AISB_BIN:-$here/../build/aisb}
# The script changes into its work dir below: a relative AISB_BIN would stop resolving there.
case $aisb in
*/*) aisb=$(realpath -e "$aisb") || { echo "bench/gate.sh: no aisb binary at '${AISB_BIN:-}'" >&2; exit 1; } ;;
*) aisb=$(command -v "$aisb") || { echo "bench/gate.sh: '${AISB_BIN:-}' is not on PATH" >&2; exit 1; } ;;
esac
n=${N:-200}
conc=${CONC:-1000}
work=$(mktemp -d /tmp/aisb-gate-bench.XXXXXX)
chmod 755 "$work"
cp "$here/gate-load.py" "$work/"
export XDG_STATE_HOME="$work/state"
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(freeport)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work" "${khome:-}"
}
trap cleanup EXIT
python3 "$work/gate-load.py" serve "$port" &
srv=$!
pids+=("$srv")
cd "$work"
waitport() {
	for _ in $(seq 100); do
		python3 -c "import socket; socket.create_connection(('127.0.0.1',$1))" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}
waitport "$port"

export BYTES=${BYTES:-1073741824}
repeat=${REPEAT:-3}
pin_cli=() pin_relay=()
if [ "${PIN:-0}" = 1 ]; then
	pin_cli=(taskset -c 0) pin_relay=(taskset -c 1)
	taskset -pc 0 "$srv" >/dev/null
fi
sbopts=(--allow "svc.test:$port" --add-host svc.test=127.0.0.1 --ephemeral-home --no-agents --env BYTES --env HOLD=2)
[ -n "${SINK:-}" ] && sbopts+=(--env SINK)
# sb BINARY ARGS...: ARGS in a sandbox of that aisb binary (the bench's, or AISB_BEFORE's)
sb() { local bin=$1; shift; "${pin_relay[@]}" "$bin" "${sbopts[@]}" -- "${pin_cli[@]}" "$@"; }
# AISB_BEFORE=BINARY adds its CONNECT and transparent columns (before_connect, ...), interleaved
before=
if [ -n "${AISB_BEFORE:-}" ]; then
	before=$(realpath -e "$AISB_BEFORE") || { echo "bench/gate.sh: no aisb binary at '$AISB_BEFORE'" >&2; exit 1; }
fi
cur_aisb=$aisb
# the work dir is the project: inside, the script is in the working directory
load=(python3 gate-load.py)
# The host-side clients (direct, relay-floor, squid) run in a session of their own, as aisb's
# sandboxed command does (its init calls setsid()): with the kernel's autogroup scheduling
# (kernel.sched_autogroup_enabled=1 on Debian) every session is a scheduling group with an equal
# share, so a client in the bench's own session shared one share with the server and the relay
# while aisb's client had a share of its own. Measured before this (14:08, load 6-7): the aisb
# columns moved 1.6-1.8x the bytes per second of direct and relay-floor.
hload=(setsid -w "${load[@]}")
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
hz=$(getconf CLK_TCK)
secs() { awk -v t="$1" -v hz="$hz" 'BEGIN {printf "%.2f", t / hz}'; }

# ---- the injecting path (--key-via-gate) ----
# kpath M: kmode, khost, kp, kplain for the injecting path's column M: the gate-load.py mode, the
# host and port it dials, and the column its xplain compares with (the same bytes as a plain
# CONNECT tunnel: http_connect for http://, https_connect for TLS end to end)
kpath() {
	case $1 in
	http_direct) kmode=direct khost=127.0.0.1 kp=$kport kplain=http_connect ;;
	http_connect | keyed_connect) kmode=connect khost=host.aisb.internal kp=$kport kplain=http_connect ;;
	https_direct) kmode=direct-tls khost=127.0.0.1 kp=$ktport kplain=https_connect ;;
	*) kmode=connect-tls khost=host.aisb.internal kp=$ktport kplain=https_connect ;;
	esac
}
keyed_section() {
	local kfake="$work/kfake" m out apid relay kmodes=(http_direct http_connect keyed_connect) h
	# the host homes the bridge reads (pi's config): outside the project (the work dir); one for
	# the http:// endpoint, one for the https:// endpoint
	khome=$(mktemp -d /tmp/aisb-gate-bench-home.XXXXXX)
	kport=$(freeport)
	python3 "$work/gate-load.py" serve-http "$kport" &
	pids+=("$!")
	waitport "$kport"
	mkdir -p "$khome/http/.pi/agent" "$khome/https/.pi/agent" "$kfake/bin"
	# The TLS columns (issue 27, the https:// part): the same requests over TLS to a server whose
	# certificate comes from a throwaway CA (tests/e2e/lib/test-ca.sh, kept outside the project):
	# https_direct trusts it by BENCH_CA; https_connect is TLS end to end through a plain CONNECT
	# tunnel (the gate splices; the client trusts the CA by BENCH_CA inside); keyed_tls_connect is
	# --key-via-gate with the https:// endpoint: the tlsgate terminates the sandbox's TLS (the
	# client trusts the session CA by the SSL_CERT_FILE aisb sets inside) and makes its own TLS
	# connection to the server, verified against the CA by aisb's caller's SSL_CERT_FILE.
	ktport=
	if [ "${TLS:-1}" != 0 ] && command -v openssl >/dev/null &&
		"$here/../tests/e2e/lib/test-ca.sh" "$khome/ca" bench host.aisb.internal; then
		cp "$khome/ca/ca.pem" "$work/bench-ca.pem"
		ktport=$(freeport)
		python3 "$work/gate-load.py" serve-http "$ktport" "$khome/ca/bench.pem" "$khome/ca/bench.key" &
		pids+=("$!")
		waitport "$ktport"
		kmodes+=(https_direct https_connect keyed_tls_connect)
	else
		echo "bench: no openssl (or TLS=0): the TLS columns of the injecting path are skipped" >&2
	fi
	for h in http https; do
		[ "$h" = https ] && [ -z "$ktport" ] && continue
		printf '{"providers":{"bench":{"baseUrl":"%s://%s/v1","api":"openai-completions","apiKey":"literal","models":[{"id":"m"}]}}}\n' \
			"$h" "$([ "$h" = http ] && echo "127.0.0.1:$kport" || echo "host.aisb.internal:$ktport")" \
			>"$khome/$h/.pi/agent/models.json"
		echo '{"defaultProvider":"bench","defaultModel":"m"}' >"$khome/$h/.pi/agent/settings.json"
	done
	# shellcheck disable=SC2016 # expanded by the fake pi's shell, inside
	printf '#!/bin/sh\n# shellcheck disable=SC2086\nexec python3 gate-load.py $BENCH_ARGS\n' >"$kfake/bin/pi"
	chmod 755 "$kfake" "$kfake/bin" "$kfake/bin/pi"
	# kcmd_for LABEL ARGS...: kcmd=(the aisb command that runs gate-load.py ARGS as the fake pi;
	# keyed for keyed_*) and kenv=(the host environment it needs), run as a simple command
	# (env "${kenv[@]}" "${kcmd[@]}"), so that $! of a background run is the supervisor
	kcmd_for() {
		local label=$1 kv=() h=http
		shift
		[ "${label#keyed_}" != "$label" ] && kv=(--key-via-gate pi)
		kpath "$label"
		[ "$kp" = "$ktport" ] && h=https
		kenv=(HOME="$khome/$h" AI_API_TOKEN=sk-bench-0123456789abcdefghij)
		# the tlsgate's upstream trust: the bench CA (OpenSSL's default paths read SSL_CERT_FILE)
		[ "$h" = https ] && kenv+=(SSL_CERT_FILE="$work/bench-ca.pem")
		# the plain tunnel's client verifies the server itself
		[ "$label" = https_connect ] && kv+=(--env BENCH_CA=bench-ca.pem)
		[ -n "${BENCH_NODELAY:-}" ] && kv+=(--env BENCH_NODELAY)
		kcmd=("${pin_relay[@]}" "$aisb" --harness-from "$kfake" --allow-host-port "$kp" "${kv[@]}" --ephemeral-home
			--env BENCH_ARGS="$*" --env BYTES -p x)
	}
	kb() { kcmd_for "$@"; env "${kenv[@]}" "${kcmd[@]}" </dev/null; }
	# the host-side client of the direct columns
	kdirect() { env BENCH_CA=bench-ca.pem BENCH_SNI=host.aisb.internal "${pin_cli[@]}" "${hload[@]}" "$@"; }
	: >"$work/kbulk"
	: >"$work/kttfb"
	echo "== the injecting path (--key-via-gate): $BYTES bytes of HTTP answer, $repeat interleaved rounds; time to first byte, $n requests a round"
	for _ in $(seq "$repeat"); do
		for m in "${kmodes[@]}"; do
			relay=0
			kpath "$m"
			if [ "${m%_direct}" != "$m" ]; then
				out=$(kdirect hbulk "$m" "$kmode" "$khost" "$kp")
			else
				kcmd_for "$m" hbulk "$m" "$kmode" "$khost" "$kp"
				env "${kenv[@]}" "${kcmd[@]}" </dev/null >"$work/out" 2>"$work/err" &
				apid=$! # env and taskset exec: the supervisor's pid
				cur_aisb=$aisb
				follow_ticks aisb_relay_pids
				relay=$relay_ticks
				wait "$apid" || true
				out=$(grep "^$m " "$work/out" || tail -3 "$work/err" | sed 's/^/err: /')
			fi
			echo "$out relay_cpu $(secs "$relay") s" | tee -a "$work/kbulk"
		done
		for m in "${kmodes[@]}"; do
			kpath "$m"
			if [ "${m%_direct}" != "$m" ]; then
				kdirect httfb "$m" "$kmode" "$khost" "$kp" "$n"
			else
				kb "$m" httfb "$m" "$kmode" "$khost" "$kp" "$n" 2>/dev/null | grep "^$m "
			fi | tee -a "$work/kttfb"
		done
	done
	med() { sort -n | awk '{a[NR] = $1} END {if (NR) print a[int((NR + 1) / 2)]; else print "-"}'; }
	printf '%-18s %9s %8s %10s %10s %10s\n' path MiB/s xplain relay_cpu ttfb_ms ttfb_p90
	for m in "${kmodes[@]}"; do
		local x c t q pmed
		kpath "$m"
		pmed=$(awk -v m="$kplain" '$1 == m {print $4}' "$work/kbulk" | med)
		x=$(awk -v m="$m" '$1 == m {print $4}' "$work/kbulk" | med)
		c=$(awk -v m="$m" '$1 == m {for (i = 1; i < NF; i++) if ($i == "relay_cpu") print $(i + 1)}' "$work/kbulk" | med)
		[ "${m%_direct}" != "$m" ] && c=-
		t=$(awk -v m="$m" '$1 == m {print $4}' "$work/kttfb" | med)
		q=$(awk -v m="$m" '$1 == m {print $7}' "$work/kttfb" | med)
		awk -v m="$m" -v x="$x" -v p="$pmed" -v c="$c" -v t="$t" -v q="$q" \
			'BEGIN {printf "%-18s %9.0f %8.2f %10s %10s %10s\n", m, x, (p + 0) ? x / p : 0, c, t, q}'
	done
	echo "(xplain: vs http_connect for http://, vs https_connect for TLS; user $(id -un), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg))"
}
floor=
if command -v cc >/dev/null && cc -O2 -pthread -o "$work/relay-floor" "$here/relay-floor.c" 2>/dev/null; then
	fport=$(freeport)
	"${pin_relay[@]}" "$work/relay-floor" "$fport" "$port" &
	floor=$!
	pids+=("$floor")
else
	echo "bench: no C compiler: the relay-floor yardstick is skipped" >&2
fi

# squid: a CONNECT-only forward proxy on 127.0.0.1, no cache, no access log (aisb's egress log is
# on; squid's cache.log gets only start-up lines)
squid=
if [ "${PEERS:-1}" != 0 ] && command -v /usr/sbin/squid >/dev/null; then
	sport=$(freeport)
	cat >"$work/squid.conf" <<EOF
http_port 127.0.0.1:$sport
acl bench_port port $port
acl CONNECT method CONNECT
http_access allow CONNECT bench_port
http_access deny all
cache deny all
access_log none
cache_log $work/squid-cache.log
pid_filename $work/squid.pid
coredump_dir $work
shutdown_lifetime 0 seconds
max_filedescriptors 8192
EOF
	"${pin_relay[@]}" /usr/sbin/squid -N -f "$work/squid.conf" 2>"$work/squid.err" &
	squid=$!
	pids+=("$squid")
	if waitport "$sport"; then
		export BENCH_PROXY=127.0.0.1:$sport
	else
		echo "bench: squid did not start: $(tail -3 "$work/squid.err" "$work/squid-cache.log" 2>/dev/null)" >&2
		squid=
	fi
else
	echo "bench: squid not installed (apt-get install squid): its column is skipped" >&2
fi

# srt: its own proxy, allowed to reach the server only; the client runs in srt's sandbox
srt=
if [ "${PEERS:-1}" != 0 ] && command -v srt >/dev/null; then
	cat >"$work/srt.json" <<EOF
{"network": {"allowedDomains": ["127.0.0.1:$port"], "deniedDomains": []},
 "filesystem": {"denyRead": [], "allowWrite": ["$work"], "denyWrite": []}}
EOF
	if out=$(srt -s "$work/srt.json" -c "${load[*]} ttfb srt 127.0.0.1 $port 1" 2>&1); then
		srt=1
	else
		echo "bench: srt does not run here (needs bwrap, socat, rg): ${out##*$'\n'}" >&2
	fi
else
	echo "bench: srt not installed (npm install -g @anthropic-ai/sandbox-runtime): its column is skipped" >&2
fi
srtcmd() { "${pin_relay[@]}" srt -s "$work/srt.json" -c "BYTES=$BYTES SINK=${SINK:-} HOLD=2 ${pin_cli[*]} $*"; }

# The samplers below run while a transfer runs, on the same 2 cores: they use bash builtins
# only. The first version forked pgrep, readlink, awk and sleep for every process every 20 ms,
# which took ~0.7 s of CPU in 2.2 s (a third of a core) in the aisb and srt columns only, never
# in relay-floor's (which needs no sampling): the yardstick ran on a quieter machine than the
# relays it was compared with.
exec {napfd}<> <(:) # a pipe that nobody writes to: `read -t` on it sleeps without a fork
nap() { read -r -t "$1" -u "$napfd" _ || :; }
# tk=utime+stime (ticks) of pid $1, 0 once it is gone
ticks_of() {
	local l f
	tk=0
	{ read -r l <"/proc/$1/stat"; } 2>/dev/null || return 0
	read -r -a f <<<"${l##*) }" # fields from the 3rd on: utime and stime are the 14th and 15th
	tk=$((f[11] + f[12]))
}
# kids=(children of pid $1)
kids_of() {
	local t k
	kids=()
	for t in /proc/"$1"/task/*/children; do
		k=()
		{ read -r -a k <"$t"; } 2>/dev/null || :
		kids+=("${k[@]}")
	done
}
# st=(the fields of the "$2:" line of /proc/$1/status), empty if none
status_of() {
	local k v
	st=()
	{ while read -r k v; do
		[ "$k" = "$2:" ] && { read -r -a st <<<"$v"; return 0; }
	done <"/proc/$1/status"; } 2>/dev/null || : # the process may be gone: set -e must not end the round
}

# The processes of a relay, for CPU and RSS, into relay_pids: aisb's supervisor (whose gate it
# runs) or srt's node process (its proxy) and the socat bridges srt puts on both sides of its
# sandbox's wall.
srt_walk() {
	local p c kids
	kids_of "$1"
	for p in "${kids[@]}"; do
		{ read -r c <"/proc/$p/comm"; } 2>/dev/null || c=
		case $c in node | socat) relay_pids+=("$p") ;; esac
		srt_walk "$p"
	done
}
srt_relay_pids() { relay_pids=(); srt_walk "$apid"; }
# aisb's relay: the supervisor and every process below it running the aisb binary, except the
# sandbox's init (pid 1 inside) and what it runs: the supervisor itself and its gate process
# ("aisb-gate", a child of the supervisor since issue 13)
aisb_relay_pids() {
	local p st
	relay_pids=("$apid")
	kids_of "$apid"
	for p in "${kids[@]}"; do
		[ "/proc/$p/exe" -ef "$cur_aisb" ] || continue
		# the sandbox's init is pid 1 in its own pid namespace
		status_of "$p" NSpid
		[ "${#st[@]}" -gt 0 ] && [ "${st[-1]}" = 1 ] && continue
		relay_pids+=("$p")
	done
}
# Samples the CPU ticks (user+sys of each process itself, not of the children it reaped: the
# client's would count) summed over the pids "$1" lists, while $apid lives; the largest sum
# seen goes to $relay_ticks.
follow_ticks() {
	local p sum tk
	relay_ticks=0
	while kill -0 "$apid" 2>/dev/null; do
		sum=0
		"$1"
		for p in "${relay_pids[@]}"; do
			ticks_of "$p"
			sum=$((sum + tk))
		done
		[ "$sum" -gt "$relay_ticks" ] && relay_ticks=$sum
		nap 0.02
	done
}

# one bulk transfer; prints the client's line plus server and relay CPU seconds
bulk() {
	local mode=$1 s0 r0=0 out relay=0 apid
	s0=$(ticks "$srv")
	case $mode in
	direct) out=$("${pin_cli[@]}" "${hload[@]}" bulk direct 127.0.0.1 "$port") ;;
	floor | squid)
		local rp=$floor dport=${fport:-}
		[ "$mode" = squid ] && rp=$squid dport=$port
		r0=$(ticks "$rp")
		out=$("${pin_cli[@]}" "${hload[@]}" bulk "$mode" 127.0.0.1 "$dport")
		relay=$(($(ticks "$rp") - r0)) ;;
	srt)
		srtcmd "${load[*]} bulk srt 127.0.0.1 $port" >"$work/out" 2>"$work/err" &
		apid=$!
		follow_ticks srt_relay_pids
		relay=$relay_ticks
		wait "$apid" || true
		out=$(cat "$work/out") ;;
	*)
		cur_aisb=$aisb
		[ "${mode#before_}" != "$mode" ] && cur_aisb=$before
		# a simple command, not sb(): $! must be the supervisor itself, not a subshell
		"${pin_relay[@]}" "$cur_aisb" "${sbopts[@]}" -- "${pin_cli[@]}" "${load[@]}" bulk "${mode#before_}" svc.test "$port" \
			>"$work/out" 2>"$work/err" &
		apid=$! # the supervisor, which runs the gate (taskset execs it: same pid)
		follow_ticks aisb_relay_pids
		relay=$relay_ticks
		wait "$apid" || true
		out=$(sed "s/^/${mode%"${mode#before_}"}/" "$work/out")
		grep -v 'warning: resource limits' "$work/err" >&2 || true ;;
	esac
	echo "$out server_cpu $(secs $(($(ticks "$srv") - s0))) s relay_cpu $(secs "$relay") s"
}

if [ "${KEYED:-1}" != 0 ]; then
	keyed_section
	[ "${ONLY:-}" = keyed ] && exit 0
fi

modes=(direct)
[ -n "$floor" ] && modes+=(floor)
modes+=(connect transparent)
[ -n "$before" ] && modes+=(before_connect before_transparent)
[ -n "$squid" ] && modes+=(squid)
[ -n "$srt" ] && modes+=(srt)
echo "== $BYTES bytes, one connection, $repeat interleaved rounds (${SINK:-recv_into} client${PIN:+, pinned: server+client CPU 0, relay CPU 1})"
: >"$work/bulk"
for _ in $(seq "$repeat"); do
	for m in "${modes[@]}"; do
		bulk "$m" | tee -a "$work/bulk"
	done
done
median_col() { # mode field
	awk -v m="$1" -v f="$2" '$1 == m {for (i = 1; i < NF; i++) if ($i == f) print $(i + 1)}' "$work/bulk" |
		sort -n | awk '{a[NR] = $1} END {print (NR ? a[int((NR + 1) / 2)] : "")}'
}
mibs() { awk -v m="$1" '$1 == m {print $4}' "$work/bulk" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

echo "== time to first byte, $n sequential connections per mode, $repeat interleaved rounds"
: >"$work/ttfb"
for _ in $(seq "$repeat"); do for m in "${modes[@]}"; do
	case $m in
	direct) "${hload[@]}" ttfb direct 127.0.0.1 "$port" "$n" ;;
	floor) "${hload[@]}" ttfb direct 127.0.0.1 "$fport" "$n" | sed 's/^direct/floor/' ;;
	squid) "${hload[@]}" ttfb squid 127.0.0.1 "$port" "$n" ;;
	srt) srtcmd "${load[*]} ttfb srt 127.0.0.1 $port $n" 2>/dev/null ;;
	before_*) sb "$before" "${load[@]}" ttfb "${m#before_}" svc.test "$port" "$n" 2>/dev/null | sed 's/^/before_/' ;;
	*) sb "$aisb" "${load[@]}" ttfb "$m" svc.test "$port" "$n" 2>/dev/null ;;
	esac | tee -a "$work/ttfb"
done; done

# Peak VmRSS (KiB, sampled every 50 ms while $1 lives), summed over the pids that the function
# $2 puts in relay_pids (re-evaluated each sample: the gate may be its own process).
peak_rss() {
	local watch=$1 lister=$2 peak=0 sum p st
	while kill -0 "$watch" 2>/dev/null; do
		sum=0
		"$lister"
		for p in "${relay_pids[@]}"; do
			status_of "$p" VmRSS
			sum=$((sum + ${st[0]:-0}))
		done
		[ "$sum" -gt "$peak" ] && peak=$sum
		nap 0.05
	done
	echo "$peak"
}
echo "== $conc concurrent tunnels, the relay's peak RSS (sampled every 50 ms)"
: >"$work/rss"
aisb_gate_pid() {
	local p c
	relay_pids=()
	kids_of "$apid"
	for p in "${kids[@]}"; do
		{ read -r c <"/proc/$p/comm"; } 2>/dev/null || c=
		[ "$c" = aisb-gate ] && relay_pids+=("$p")
	done
}
for m in connect gate squid srt; do
	case $m in
	connect)
		"$aisb" --allow "svc.test:$port" --add-host svc.test=127.0.0.1 --ephemeral-home --no-agents \
			--env HOLD=2 -- "${load[@]}" many connect svc.test "$port" "$conc" &
		apid=$!
		peak=$(peak_rss "$apid" aisb_relay_pids) ;;
	gate)
		# the same load again, the gate process alone (empty when the gate runs in the supervisor)
		"$aisb" --allow "svc.test:$port" --add-host svc.test=127.0.0.1 --ephemeral-home --no-agents \
			--env HOLD=2 -- "${load[@]}" many connect svc.test "$port" "$conc" >/dev/null 2>&1 &
		apid=$!
		peak=$(peak_rss "$apid" aisb_gate_pid) ;;
	squid)
		[ -n "$squid" ] || continue
		"${hload[@]}" many squid 127.0.0.1 "$port" "$conc" &
		apid=$!
		sq() { relay_pids=("$squid"); }
		peak=$(peak_rss "$apid" sq) ;;
	srt)
		[ -n "$srt" ] || continue
		srtcmd "${load[*]} many srt 127.0.0.1 $port $conc" &
		apid=$!
		peak=$(peak_rss "$apid" srt_relay_pids) ;;
	esac
	wait "$apid" || true
	echo "$m $peak" >>"$work/rss"
done
# the idle baseline of the same processes: one tunnel
"$aisb" --allow "svc.test:$port" --add-host svc.test=127.0.0.1 --ephemeral-home --no-agents \
	--env HOLD=2 -- "${load[@]}" many connect svc.test "$port" 1 >/dev/null &
apid=$!
base=$(peak_rss "$apid" aisb_relay_pids)
wait "$apid" || true

echo
echo "== summary (medians; ratios are the numbers to compare)"
dmed=$(mibs direct)
fmed=$( [ -n "$floor" ] && mibs floor || echo "")
printf '%-18s %9s %8s %8s %10s %10s %12s\n' relay MiB/s xdirect xfloor relay_cpu ttfb_ms "rss_${conc}_KiB"
for m in "${modes[@]}"; do
	med=$(mibs "$m")
	cpu=$(median_col "$m" relay_cpu)
	tt=$(awk -v m="$m" '$1 == m {print $4}' "$work/ttfb" | sort -n | awk '{a[NR] = $1} END {if (NR) print a[int((NR + 1) / 2)]}')
	rss=$(awk -v m="$m" '$1 == m {print $2}' "$work/rss")
	awk -v m="$m" -v x="$med" -v d="$dmed" -v f="$fmed" -v c="${cpu:--}" -v t="${tt:--}" -v r="${rss:--}" \
		'BEGIN {printf "%-18s %9.0f %8.2f %8s %10s %10s %12s\n", m, x, x / d, f ? sprintf("%.2f", x / f) : "-", c, t, r}'
done
echo "aisb relay RSS with 1 tunnel: $base KiB (so $conc tunnels cost $(( $(awk '$1 == "connect" {print $2}' "$work/rss") - base )) KiB);" \
	"the gate process alone with $conc: $(awk '$1 == "gate" {print $2}' "$work/rss") KiB"
echo "(user $(id -un), $(uname -r), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg), aisb $("$aisb" --version 2>/dev/null | head -1))"
