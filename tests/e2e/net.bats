#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/net.bats — allow mode: the gate (proxy, DNS stub, transparent), the in-netns ruleset,
# pasta for --publish/IP entries/--net full. Every destination is a server this file starts on the
# host's 127.0.0.1 (reached through the gate with --add-host NAME=127.0.0.1 + --allow), never any
# other address. Each refusal is paired with a control where the same probe succeeds.
load lib/common

setup() {
	common_setup
	require_feature "curl" command -v curl
	require_feature "python3" command -v python3
	SERVERS=()
	start_server
	PORT=$SRV_PORT
}

teardown() {
	for pid in "${SERVERS[@]}"; do kill "$pid" 2>/dev/null || true; done
	common_teardown
}

# start_server: a python http.server on 127.0.0.1 with a free port, in SRV_PORT. Not in a
# subshell, so teardown can kill it; fd 3 (bats' TAP channel) is closed for it.
start_server() {
	local port dir
	dir=$(mktemp -d "$WORK/srv.XXXXXX")
	echo "hello from the host" >"$dir/index.html"
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	python3 -m http.server "$port" --bind 127.0.0.1 --directory "$dir" >/dev/null 2>&1 3>&- &
	SERVERS+=("$!")
	for _ in $(seq 200); do
		curl -s -o /dev/null "http://127.0.0.1:$port/" && break
		sleep 0.05
	done
	SRV_PORT=$port
}

egress_log() { local d; for d in $(session_dirs); do cat "$d/egress.jsonl" 2>/dev/null; done; }

# gate ARGS... -- CMD: aisb in allow mode with svc.test pinned to the host's loopback.
gate() { "$AISB" --keep --add-host svc.test=127.0.0.1 --add-host other.test=127.0.0.1 "$@"; }

CURL='curl -sS -m 10 -o /dev/null -w %{http_code}\n'
# the same for use inside a `sh -c "..."` string
SCURL="curl -sS -m 10 -o /dev/null -w '%{http_code}\\n'"
NOPROXY='env -u HTTP_PROXY -u HTTPS_PROXY -u ALL_PROXY -u http_proxy -u https_proxy -u all_proxy -u NO_PROXY -u no_proxy'

@test "net: an allowlisted name works over plain HTTP, CONNECT and transparently" {
	run gate --allow "svc.test:$PORT" -- sh -c "
		$SCURL http://svc.test:$PORT/
		$SCURL -p http://svc.test:$PORT/
		$NOPROXY $SCURL http://svc.test:$PORT/"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 200 ]
	[ "${lines[1]}" = 200 ]
	[ "${lines[2]}" = 200 ]
	egress_log | grep -q '"kind":"http","method":"GET","host":"svc.test".*"decision":"allow"'
	egress_log | grep -q '"kind":"connect","method":"CONNECT","host":"svc.test".*"decision":"allow"'
	egress_log | grep -q '"kind":"transparent","host":"svc.test".*"decision":"allow"'
}

@test "net: a name off the list fails over HTTP, CONNECT and transparently, logged and summarized" {
	run gate --allow "svc.test:$PORT" -- sh -c "
		$SCURL http://other.test:$PORT/
		$SCURL -p http://other.test:$PORT/; echo \"rc=\$?\"
		$NOPROXY curl -sS -m 10 http://other.test:$PORT/; echo \"rc=\$?\"
		$SCURL http://svc.test:$PORT/"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 403 ]
	[[ "$output" == *"CONNECT tunnel failed, response 403"*"rc=56"* ]]
	[[ "$output" == *"Could not resolve host: other.test"* ]] # transparent: NXDOMAIN first
	[[ "$output" == *"aisb: network: denied"*"other.test:$PORT"*"--allow other.test:$PORT"* ]]
	[[ "$output" == *"other.test:53"*"--allow other.test"* ]]
	egress_log | grep -q '"host":"other.test".*"decision":"deny","rule":"","reason":"other.test is not in the allowlist"'
	# control in the same run: the allowed name
	[[ "$output" == *$'rc=6\n200'* ]]
}

@test "net: the 403 names the reason in X-Aisb-Denied" {
	run gate --allow "svc.test:$PORT" -- curl -sS -m 10 -D - -o /dev/null "http://other.test:$PORT/"
	echo "$output"
	[[ "$output" == *"HTTP/1.1 403 Forbidden"* ]]
	[[ "$output" == *"X-Aisb-Denied: other.test is not in the allowlist"* ]]
}

@test "net: a Host header naming another host is refused (control: the matching one passes)" {
	run gate --allow "svc.test:$PORT" -- $CURL -H "Host: other.test:$PORT" "http://svc.test:$PORT/"
	echo "$output"
	[ "${lines[0]}" = 403 ]
	run gate --allow "svc.test:$PORT" -- $CURL -H "Host: svc.test:$PORT" "http://svc.test:$PORT/"
	[ "${lines[0]}" = 200 ]
}

@test "net: a non-default port is refused until name:port is allowed" {
	run gate --allow svc.test -- $CURL "http://svc.test:$PORT/"
	echo "$output"
	[[ "$output" == 403* ]]
	[[ "$output" == *"--allow svc.test:$PORT"* ]]
	run gate --allow "svc.test:$PORT" -- $CURL "http://svc.test:$PORT/"
	[ "${lines[0]}" = 200 ]
}

@test "net: an IP literal is refused until an IP entry covers it" {
	run gate --allow "svc.test:$PORT" -- $CURL --noproxy '' "http://127.0.0.1:$PORT/"
	echo "$output"
	[[ "$output" == 403* ]]
	[[ "$output" == *"--allow 127.0.0.1:$PORT"* ]]
	run gate --allow "127.0.0.1:$PORT" -- $CURL --noproxy '' "http://127.0.0.1:$PORT/"
	echo "$output"
	[ "${lines[0]}" = 200 ]
}

@test "net: a name resolving to 127.0.0.1 on the host is refused unless pinned with --add-host" {
	getent hosts localhost | grep -q '127.0.0.1' || skip "localhost does not resolve to 127.0.0.1 here"
	run "$AISB" --keep --allow "localhost:$PORT" -- $CURL --noproxy '' -x http://127.0.0.1:3128 "http://localhost:$PORT/"
	echo "$output"
	[[ "$output" == 403* ]]
	egress_log | grep -q 'resolves to loopback address 127.0.0.1'
	[[ "$output" == *"--add-host localhost=127.0.0.1"* ]]
	run "$AISB" --allow "localhost:$PORT" --add-host localhost=127.0.0.1 -- \
		$CURL --noproxy '' -x http://127.0.0.1:3128 "http://localhost:$PORT/"
	[ "${lines[0]}" = 200 ]
}

@test "net: DNS for an unknown name is NXDOMAIN from the stub, an allowed name gets a pool address" {
	run gate --allow "svc.test:$PORT" -- python3 -c '
import socket, struct
def q(name, qtype=1):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5)
    msg = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
    msg += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0" + struct.pack(">HH", qtype, 1)
    s.sendto(msg, ("127.0.0.53", 53)); a = s.recv(512)
    return a[3] & 0xf, struct.unpack(">H", a[6:8])[0], a[-4:]
print(q("unknown.test")[0], q("svc.test")[0], q("svc.test")[1], ".".join(map(str, q("svc.test")[2])))
print(q("svc.test", 28)[0], q("svc.test", 28)[1])'
	echo "$output"
	[ "${lines[0]}" = "3 0 1 198.18.0.1" ]
	[ "${lines[1]}" = "0 0" ]
	egress_log | grep -q '"kind":"dns","host":"unknown.test".*"decision":"deny"'
	# no query leaves: the stub never forwards, so no allowed line for the unknown name exists
	! egress_log | grep -q '"host":"unknown.test".*"decision":"allow"' || false
}

# nft lives in /usr/sbin, which an unprivileged user's PATH may lack
nft_bin() { command -v nft || { [ -x /usr/sbin/nft ] && echo /usr/sbin/nft; }; }

@test "net: the ruleset cannot be flushed or listed from inside (control: it can in a netns we own)" {
	require_feature "nft" nft_bin
	require_feature "unshare -Urn" unshare -Urn true
	local nft
	nft=$(nft_bin)
	run gate --allow "svc.test:$PORT" -- sh -c "$nft flush ruleset; echo flush=\$?; $nft list ruleset; echo list=\$?"
	echo "$output"
	[[ "$output" == *"flush=1"* ]]
	[[ "$output" == *"list=1"* ]]
	run unshare -Urn sh -c "$nft add table inet t && $nft list ruleset >/dev/null; echo list=\$?"
	[[ "$output" == *"list=0"* ]]
}

@test "net: the installed ruleset is the printed one; --print-ruleset starts nothing" {
	run "$AISB" --allow example.com --print-ruleset -- true
	[ "$status" -eq 0 ]
	[[ "$output" == *"table inet aisb"*"policy drop"*"redirect to :3129"* ]]
	ls "$XDG_STATE_HOME/aisb/sessions" 2>/dev/null && false
	require_feature "unshare -Urn" unshare -Urn true
	require_feature "nft" nft_bin
	local nft
	nft=$(nft_bin)
	"$AISB" --allow example.com --print-ruleset -- true >"$WORK/r.nft"
	run unshare -Urn sh -c "$nft -f '$WORK/r.nft' && $nft list ruleset"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"meta l4proto tcp counter packets 0 bytes 0 reject with tcp reset"* ]]
}

# nft 1.0.6 aborted (payload_expr_complete assertion) listing the installed table: its bytecode
# was not what nft makes of the printed text. Now root lists it, and it is the printed text.
@test "net: root lists the installed ruleset with nft in the sandbox's netns, and it is the printed text" {
	is_root || skip "entering the sandbox's netns from the host needs root (test-nft covers the batch in a netns of its own)"
	require_feature "nft" nft_bin
	require_feature "nsenter" command -v nsenter
	require_feature "pasta" command -v pasta
	local nft hp sess init i
	nft=$(nft_bin)
	hp=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	# every rule shape: names, a byte-aligned and an odd prefix, IPv6 (neighbour discovery), a
	# catch-all with its special-range rejects, a published port; the sandbox only waits. Its
	# command starts after the ruleset is in place, so its ready file is the state to wait for;
	# it ends when the host has listed (listed; 60 s at most)
	local args=(--allow example.com --allow 198.51.100.0/24:22 --allow 198.18.0.0/15:7 --allow '[2001:db8::1]:443'
		--allow 0.0.0.0/0:9 --publish "$hp:8080")
	"$AISB" "${args[@]}" --print-ruleset -- true >"$WORK/printed"
	"$AISB" --keep "${args[@]}" -- sh -c 'touch ready
		i=0; while [ ! -e listed ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done' 3>&- &
	local apid=$!
	for i in $(seq 600); do
		sess=$(ls -d "$XDG_STATE_HOME"/aisb/sessions/*/ 2>/dev/null | head -1)
		[ -n "$sess" ] && [ -s "$sess/init" ] && [ -e "$PROJ/ready" ] && break
		sleep 0.05
	done
	init=$(cat "$sess/init")
	run nsenter -t "$init" -n "$nft" list ruleset
	touch "$PROJ/listed"
	wait "$apid"
	echo "$output"
	[ "$status" -eq 0 ]
	echo "$output" | sed 's/ packets [0-9]* bytes [0-9]*//' >"$WORK/listed"
	diff -u "$WORK/printed" "$WORK/listed"
}

@test "net: --net allow with an empty allowlist is 78; an invalid entry is 78 naming it" {
	run "$AISB" --net allow -- true
	[ "$status" -eq 78 ]
	[[ "$output" == *"empty allowlist"* ]]
	run "$AISB" --allow 'exa mple.com' -- true
	[ "$status" -eq 78 ]
	[[ "$output" == *"'exa mple.com'"* ]]
	printf 'svc.test:%s # a comment\n\n' "$PORT" >"$WORK/allow"
	run gate --allow-file "$WORK/allow" -- $CURL "http://svc.test:$PORT/"
	[ "${lines[0]}" = 200 ]
	# the default mode with no allowlist runs with loopback only
	run "$AISB" -- true
	[ "$status" -eq 0 ]
}

@test "net: --allow-host-port reaches exactly that host port" {
	local port2
	start_server
	port2=$SRV_PORT
	run "$AISB" --allow-host-port "$PORT" -- sh -c "
		$SCURL http://host.aisb.internal:$PORT/
		$SCURL http://host.aisb.internal:$port2/
		$NOPROXY $SCURL http://host.aisb.internal:$PORT/"
	echo "$output"
	[ "${lines[0]}" = 200 ]
	[ "${lines[1]}" = 403 ]
	[ "${lines[2]}" = 200 ]
	[[ "$output" == *"--allow-host-port $port2"* ]]
}

@test "net: --publish answers from the host's 127.0.0.1 while egress stays filtered; pasta is gone after" {
	require_feature "pasta" command -v pasta
	local hp
	hp=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	echo inside >"$PROJ/index.html"
	# the sandbox serves until the host has fetched (it touches fetched; 60 s at most)
	"$AISB" --allow "svc.test:$PORT" --add-host svc.test=127.0.0.1 --publish "$hp:8080" -- sh -c "
		python3 -m http.server 8080 --bind 0.0.0.0 >/dev/null 2>&1 &
		i=0; while [ ! -e fetched ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done
		$SCURL http://other.test:$PORT/ >egress" 2>"$WORK/err" 3>&- &
	local apid=$!
	local got=""
	for _ in $(seq 300); do
		got=$(curl -s -m 2 "http://127.0.0.1:$hp/index.html" || true)
		[ "$got" = inside ] && break
		sleep 0.1
	done
	touch "$PROJ/fetched"
	wait "$apid" || { cat "$WORK/err"; false; }
	[ "$got" = inside ]
	[ "$(cat "$PROJ/egress")" = 403 ]
	! pgrep -u "$(id -u)" -f -- "-t 127.0.0.1/$hp:8080" >/dev/null || false
}

# Escape 5 of issue 10: --publish HOST:3128 made the gate a proxy for every local user.
@test "net: the gate's own ports can never be published (control: an ordinary port is, and does not lead to the gate)" {
	require_feature "pasta" command -v pasta
	local hp p
	hp=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	for p in 3128 3129 53; do
		for spec in "$hp:$p" "127.0.0.1:$hp:$p" "0.0.0.0:$hp:$p"; do
			run "$AISB" --allow "svc.test:$PORT" --add-host svc.test=127.0.0.1 --publish "$spec" -- true
			echo "$output"
			[ "$status" -eq 78 ]
			[[ "$output" == *"--publish '$spec': port $p inside the sandbox is the gate's"* ]]
		done
	done
	# nothing was started for them, and the host port is free
	! curl -s -m 2 -o /dev/null "http://127.0.0.1:$hp/" || false
	# control: an ordinary port is published; a proxy request sent to it meets the sandbox's own
	# server, never the gate (the host server's page does not come back)
	echo inside >"$PROJ/index.html"
	"$AISB" --allow "svc.test:$PORT" --add-host svc.test=127.0.0.1 --publish "$hp:8080" -- sh -c "
		python3 -m http.server 8080 --bind 127.0.0.1 >/dev/null 2>&1 &
		i=0; while [ ! -e fetched ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done" 2>"$WORK/err" 3>&- &
	local apid=$! got="" via=""
	for _ in $(seq 300); do
		got=$(curl -s -m 2 "http://127.0.0.1:$hp/index.html" || true)
		[ "$got" = inside ] && break
		sleep 0.1
	done
	via=$(curl -s -m 5 -x "http://127.0.0.1:$hp" "http://svc.test:$PORT/" || true)
	touch "$PROJ/fetched"
	wait "$apid" || { cat "$WORK/err"; false; }
	[ "$got" = inside ]
	[[ "$via" != *"hello from the host"* ]]
	# and the host server itself is reachable, so the probe above could have succeeded
	[ "$(curl -s -m 5 "http://127.0.0.1:$PORT/")" = "hello from the host" ]
}

@test "net: --net full warns loudly and pasta is reaped" {
	require_feature "pasta" command -v pasta
	run "$AISB" --net full --keep -- true
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"warning: --net full"*"UNFILTERED"* ]]
	# this run's pasta (its argv ends with the sandbox's init pid), not another test run's
	local sess init
	sess=$(ls -d "$XDG_STATE_HOME"/aisb/sessions/*/ | head -1)
	init=$(cat "$sess/init")
	[ -n "$init" ]
	! pgrep -u "$(id -u)" -f -- "--config-net.* $init\$" >/dev/null || false
}

@test "net: malformed, oversized and slow requests get their errors while a parallel good one completes" {
	run gate --allow "svc.test:$PORT" -- python3 -c "
import socket, time
def conn():
    s = socket.create_connection(('127.0.0.1', 3128)); s.settimeout(20); return s
def answer(s):
    out = b''
    while True:
        b = s.recv(65536)
        if not b: return out
        out += b
slow = conn(); slow.sendall(b'CONNECT svc.te')
bad = conn(); bad.sendall(b'GET / HTTP/1.1\r\n\r\n'); print(answer(bad).split(b'\r\n')[0].decode())
big = conn(); big.sendall(b'GET http://svc.test:$PORT/ HTTP/1.1\r\nX: ' + b'a' * 70000 + b'\r\n\r\n'); print(answer(big).split(b'\r\n')[0].decode())
good = conn(); good.sendall(b'GET http://svc.test:$PORT/ HTTP/1.1\r\nHost: svc.test\r\n\r\n'); print(answer(good).split(b'\r\n')[0].decode())
t = time.time(); print(answer(slow).split(b'\r\n')[0].decode(), round(time.time() - t) <= 15)"
	echo "$output"
	[ "${lines[0]}" = "HTTP/1.1 400 Bad Request" ]
	[ "${lines[1]}" = "HTTP/1.1 431 Request Header Fields Too Large" ]
	[[ "${lines[2]}" == "HTTP/1.0 200"* ]]
	[ "${lines[3]}" = "HTTP/1.1 408 Request Timeout True" ]
}

@test "net: the egress log holds no path, query or header value" {
	run gate --allow "svc.test:$PORT" -- sh -c "
		curl -sS -o /dev/null -H 'X-Token: canary-hdr-value' 'http://svc.test:$PORT/canary-path?canary=query'
		curl -sS -o /dev/null -H 'X-Token: canary-hdr-value' 'http://other.test:$PORT/canary-path?canary=query'"
	[ "$status" -eq 0 ]
	egress_log | grep -q '"host":"svc.test"'
	! egress_log | grep -q canary || false
	[[ "$output" != *canary* ]]
}

# start_upstream: a small CONNECT-only proxy on 127.0.0.1 with a free port, in UP_PORT; it logs
# each request line it gets to $WORK/upstream.log and, standing in for a real upstream's DNS, maps
# svc.test/other.test to 127.0.0.1 (the only address it ever dials).
start_upstream() {
	UP_LOG="$WORK/upstream.log"
	: >"$UP_LOG"
	UP_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	python3 -c '
import socket, sys, threading
port, log = int(sys.argv[1]), sys.argv[2]
def pipe(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d: break
            b.sendall(d)
    except OSError: pass
    for s in (a, b):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
def serve(c):
    head = b""
    while b"\r\n\r\n" not in head:
        d = c.recv(4096)
        if not d: c.close(); return
        head += d
    line = head.split(b"\r\n")[0].decode("latin-1")
    with open(log, "a") as f: f.write(line + "\n")
    parts = line.split()
    if len(parts) != 3 or parts[0] != "CONNECT":
        c.sendall(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n"); c.close(); return
    host, _, p = parts[1].rpartition(":")
    if host not in ("svc.test", "other.test", "127.0.0.1"):
        c.sendall(b"HTTP/1.1 502 Bad Gateway\r\n\r\n"); c.close(); return
    u = socket.create_connection(("127.0.0.1", int(p)))
    c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    rest = head.split(b"\r\n\r\n", 1)[1]
    if rest: u.sendall(rest)
    threading.Thread(target=pipe, args=(u, c), daemon=True).start()
    pipe(c, u)
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", port)); l.listen(16)
while True:
    c, _ = l.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
' "$UP_PORT" "$UP_LOG" >/dev/null 2>&1 3>&- &
	SERVERS+=("$!")
	for _ in $(seq 200); do
		python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])))' "$UP_PORT" 2>/dev/null && break
		sleep 0.05
	done
}

@test "net: --proxy chains allowed connections through the upstream; a refused name never reaches it" {
	start_upstream
	# a name: the upstream gets it by name and resolves it (plain HTTP, CONNECT, transparent)
	run "$AISB" --keep --allow "svc.test:$PORT" --proxy "127.0.0.1:$UP_PORT" -- sh -c "
		$SCURL http://svc.test:$PORT/
		$SCURL -p http://svc.test:$PORT/
		$NOPROXY $SCURL http://svc.test:$PORT/
		$SCURL http://other.test:$PORT/"
	echo "$output"; cat "$UP_LOG"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 200 ]
	[ "${lines[1]}" = 200 ]
	[ "${lines[2]}" = 200 ]
	[ "${lines[3]}" = 403 ]
	[ "$(grep -c "^CONNECT svc.test:$PORT HTTP/1.1\$" "$UP_LOG")" -eq 3 ]
	[ "$(wc -l <"$UP_LOG")" -eq 3 ]
	! grep -q other.test "$UP_LOG" || false
	egress_log | grep -q '"host":"other.test".*"decision":"deny"'
	# a pin (--add-host): the upstream gets the checked address, not the name (docs/networking.md)
	: >"$UP_LOG"
	run gate --allow "svc.test:$PORT" --proxy "127.0.0.1:$UP_PORT" -- $CURL -p "http://svc.test:$PORT/"
	echo "$output"; cat "$UP_LOG"
	[ "${lines[0]}" = 200 ]
	[ "$(cat "$UP_LOG")" = "CONNECT 127.0.0.1:$PORT HTTP/1.1" ]
	# control for the upstream itself: a tunnel it refuses is a 502 from the gate, not a bypass
	kill "${SERVERS[-1]}"
	run gate --allow "svc.test:$PORT" --proxy "127.0.0.1:$UP_PORT" -- $CURL "http://svc.test:$PORT/"
	echo "$output"
	[ "${lines[0]}" = 502 ]
}

