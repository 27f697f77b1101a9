#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/smuggle.bats — request smuggling through the gate's proxy (issue 22, item 3): bytes
# behind a checked request head must never reach the allowed upstream. The upstream is
# lib/http-recorder.py on the host's 127.0.0.1 (svc.test pinned to it with --add-host), a
# server that keeps every connection alive and answers pipelined requests, so whatever the
# gate forwards shows in its log; the client inside is lib/raw-http.py, which sends its bytes
# in one write, ends its side and reads until the connection closes (no time-outs).
load lib/common

setup() {
	common_setup
	require_feature "python3" command -v python3
	REC_LOG="$WORK/requests"
	: >"$REC_LOG"
	python3 "$BATS_TEST_DIRNAME/lib/http-recorder.py" "$WORK/port" "$REC_LOG" >/dev/null 2>&1 3>&- &
	SRV=$!
	for _ in $(seq 400); do
		[ -s "$WORK/port" ] && break
		sleep 0.05
	done
	PORT=$(cat "$WORK/port")
	[ -n "$PORT" ]
	cp "$BATS_TEST_DIRNAME/lib/raw-http.py" "$PROJ/"
	H="Host: svc.test:$PORT"
	EVIL='GET http://evil.test/smuggled HTTP/1.1\r\nHost: evil.test\r\n\r\n'
}

teardown() {
	kill "$SRV" 2>/dev/null || true
	common_teardown
}

# send BYTES: raw-http.py BYTES through the gate of a sandbox that allows svc.test:$PORT; its
# output (what came back) in $output, the sandbox's status in $status.
send() {
	run "$AISB" --keep --add-host svc.test=127.0.0.1 --allow "svc.test:$PORT" -- python3 raw-http.py "$1"
	echo "--- sent: $1"
	echo "--- got (status $status):"
	echo "$output"
	echo "--- the server read:"
	cat "$REC_LOG"
}

egress() { cat "$XDG_STATE_HOME"/aisb/sessions/*/egress.jsonl; }

@test "smuggle: a request pipelined behind a checked one never reaches the upstream (control: the first alone is answered)" {
	local first="GET http://svc.test:$PORT/first HTTP/1.1\r\n$H\r\nConnection: keep-alive\r\n\r\n"
	# control: the checked request alone is answered, and the server read exactly it
	send "$first"
	[ "$status" -eq 0 ]
	[[ "$output" == *"HTTP/1.1 200 OK"*"seen svc.test:$PORT"* ]]
	[ "$(cat "$REC_LOG")" = "GET /first host=svc.test:$PORT body=0" ]
	# the client is told that the connection ends with this answer (the server did not say so)
	[[ "$output" == *$'Connection: close\r\n'* ]]
	# the attack: a second request (another Host) in the same write, on the kept-alive connection
	: >"$REC_LOG"
	send "$first$EVIL"
	[ "$status" -eq 0 ]
	[[ "$output" == *"seen svc.test:$PORT"* ]]
	[[ "$output" != *"evil"* ]]
	[ "$(cat "$REC_LOG")" = "GET /first host=svc.test:$PORT body=0" ]
	# the same behind a body: bytes past Content-Length, and past a chunked body's end
	: >"$REC_LOG"
	send "POST http://svc.test:$PORT/cl HTTP/1.1\r\n$H\r\nContent-Length: 5\r\n\r\nhello$EVIL"
	send "POST http://svc.test:$PORT/te HTTP/1.1\r\n$H\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n$EVIL"
	[ "$(cat "$REC_LOG")" = "POST /cl host=svc.test:$PORT body=5
POST /te host=svc.test:$PORT body=5" ]
	# the log says the connection carried more than its request (never what it was)
	egress | grep -q '"reason":"bytes the client sent after its request were not forwarded (one request per connection)"'
	! egress | grep -q evil || false
}

@test "smuggle: ambiguous framing is refused with 400 before anything is dialled (control: each request framed one way is answered)" {
	local post="POST http://svc.test:$PORT/x HTTP/1.1\r\n$H\r\n" v
	# control: Content-Length alone, chunked alone
	send "${post}Content-Length: 5\r\n\r\n0\r\n\r\n"
	[[ "$output" == *"HTTP/1.1 200 OK"* ]]
	send "${post}Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
	[[ "$output" == *"HTTP/1.1 200 OK"* ]]
	[ "$(wc -l <"$REC_LOG")" -eq 2 ]
	: >"$REC_LOG"
	# the attacks (RFC 9112 6.1, 6.3, 5.1, 5.2, 3.2, 7.1); each followed by a smuggled request
	for v in \
		"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" \
		"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" \
		"Content-Length: 5\r\nContent-Length: 0\r\n\r\nhello" \
		"Content-Length: 0, 5\r\n\r\nhello" \
		"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n" \
		"Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n" \
		"Transfer_Encoding: chunked\r\n\r\n0\r\n\r\n" \
		"X-Pad: 1\r\n Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" \
		"Content-Length : 5\r\n\r\nhello" \
		"Host: evil.test\r\n\r\n" \
		"Transfer-Encoding: chunked\r\n\r\n5;ext\r\nhello\r\n0\r\n\r\n" \
		"Transfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n" \
		"Transfer-Encoding: chunked\r\n\r\n0\r\nX-Trailer: 1\r\n\r\n"; do
		send "$post$v$EVIL"
		[[ "$output" == "HTTP/1.1 400 Bad Request"* ]]
		[[ "$output" == *"aisb: "*"ambiguous"* || "$output" == *"aisb: malformed request"* ]]
	done
	send "POST http://svc.test:$PORT/x HTTP/1.0\r\n$H\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n$EVIL"
	[[ "$output" == "HTTP/1.1 400 Bad Request"*"in an HTTP/1.0 request"* ]]
	# nothing was dialled for any of them
	[ ! -s "$REC_LOG" ]
}

@test "smuggle: CONNECT to a name in brackets is refused (control: the name without them tunnels to the server)" {
	local get="GET /tunnel HTTP/1.1\r\n$H\r\n\r\n"
	# control
	send "CONNECT svc.test:$PORT HTTP/1.1\r\n$H\r\n\r\n$get"
	[[ "$output" == "HTTP/1.1 200 Connection established"*"seen svc.test:$PORT"* ]]
	[ "$(cat "$REC_LOG")" = "GET /tunnel host=svc.test:$PORT body=0" ]
	: >"$REC_LOG"
	# the attack: brackets are for IPv6 literals only; the same for absolute-form
	send "CONNECT [svc.test]:$PORT HTTP/1.1\r\n$H\r\n\r\n$get"
	[[ "$output" == "HTTP/1.1 400 Bad Request"*"brackets are for IPv6 addresses only"* ]]
	send "GET http://[svc.test]:$PORT/ HTTP/1.1\r\n$H\r\n\r\n"
	[[ "$output" == "HTTP/1.1 400 Bad Request"*"brackets are for IPv6 addresses only"* ]]
	[ ! -s "$REC_LOG" ]
}

@test "smuggle: a client that keeps connections alive gets every answer, one connection each (control for one request per connection)" {
	require_feature "curl" command -v curl
	# curl would reuse the connection for the second URL; the answer's Connection: close (added
	# by the gate: the recorder never closes) makes it open a second one, which is checked too
	run "$AISB" --add-host svc.test=127.0.0.1 --allow "svc.test:$PORT" -- \
		curl -sS -m 30 -w '%{http_code} %{num_connects}\n' -o /dev/null "http://svc.test:$PORT/a" -o /dev/null "http://svc.test:$PORT/b"
	echo "$output"
	cat "$REC_LOG"
	[ "$status" -eq 0 ]
	[ "$output" = "200 1
200 1" ]
	[ "$(cat "$REC_LOG")" = "GET /a host=svc.test:$PORT body=0
GET /b host=svc.test:$PORT body=0" ]
}
