#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/keygate.bats — --key-via-gate (issue 27): the sandbox holds a placeholder key, the
# gate puts the real one into the requests to the http:// model endpoint (a model stand-in,
# lib/key-mock.py, on the host's 127.0.0.1 reached with --allow-host-port), nowhere else.
# A fake pi (a shell script through --harness-from) sends the requests with curl by every path
# the gate has: plain proxy, CONNECT tunnel, transparent; the real pi CLI runs last. Every
# refusal is paired with the request that passes. The real CLIs run last, against
# lib/mock-model.py: over http://, and over https:// where the tlsgate terminates TLS
# (docs/key-via-gate-tls.md) and the mock's certificate comes from a throwaway CA
# (lib/test-ca.sh) that only aisb's caller trusts, by SSL_CERT_FILE.
# Inner commands are single-quoted on purpose: they expand inside the sandbox.
# shellcheck disable=SC2016
load lib/common
load lib/model
bats_require_minimum_version 1.5.0

LIB=${AISB_E2E_DIR:-$BATS_TEST_DIRNAME}/lib
PY=/usr/bin/python3

setup() {
	common_setup
	require_feature python3 test -x "$PY"
	require_feature curl command -v curl
	export HOME="$WORK/home"
	mkdir -p "$HOME"
	unset AI_API_TOKEN ANTHROPIC_API_KEY ANTHROPIC_AUTH_TOKEN ANTHROPIC_BASE_URL OPENAI_API_KEY
	# the real key: a canary that must never be seen inside or in aisb's state
	CANARY="sk-canary-$RANDOM$RANDOM$RANDOM$RANDOM"
	MOCK_PIDS=()
}

teardown() {
	local p
	for p in "${MOCK_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	model_stop
	common_teardown
}

# serve PORTFILE CMD...: CMD in the background (killed at teardown), until it has written its
# port to PORTFILE (the servers write it once they listen).
serve() {
	local f=$1 _
	shift
	"$@" &
	MOCK_PIDS+=($!)
	for _ in $(seq 200); do
		[ -s "$f" ] && return 0
		sleep 0.05
	done
	return 1
}

# mock NAME [TOKEN]: lib/key-mock.py on a free port of 127.0.0.1, which is in $WORK/NAME.port
# once it listens; its log is $WORK/NAME.jsonl.
mock() {
	serve "$WORK/$1.port" "$PY" "$LIB/key-mock.py" --port-file "$WORK/$1.port" --log "$WORK/$1.jsonl" \
		--expect-token "${2:-}"
	: >"$WORK/$1.jsonl"
}

# pi_config PORT [ORIGIN]: ~/.pi/agent with the model endpoint ORIGIN/v1 (http://127.0.0.1:PORT
# by default) and a literal key (the bridge makes it $AI_API_TOKEN).
pi_config() { model_pi_config "${2:-http://127.0.0.1:$1}" literal; }

# fake_pi BODY: a `pi` under $WORK/fake/bin that runs BODY (sh) inside the sandbox.
fake_pi() {
	mkdir -p "$WORK/fake/bin"
	printf '#!/bin/sh\n%s\n' "$1" >"$WORK/fake/bin/pi"
	chmod 755 "$WORK/fake/bin/pi" "$WORK/fake/bin" "$WORK/fake"
}

# The requests of the fake pi: the key by both headers, by every path of the gate, a chunked
# streaming answer and a Content-Length one; then a search for the real key inside: every
# process's environ, the home, the project. The key to look for comes in two halves, so that
# no environment inside holds it whole ($NA$NB is joined in the shell, written to /tmp only).
REQUESTS='u="http://host.aisb.internal:$MPORT/v1"
echo "token=$AI_API_TOKEN"
curl -fsS -H "Authorization: Bearer $AI_API_TOKEN" "$u/plain" && echo
curl -fsS -H "x-api-key: $AI_API_TOKEN" -d hello "$u/plain/stream" && echo
curl -fsS -p -H "Authorization: Bearer $AI_API_TOKEN" -d hello "$u/tunnel/stream" "$u/tunnel" && echo
curl -fsS --noproxy "*" -H "x-api-key: $AI_API_TOKEN" -d @/etc/services "$u/transparent" && echo
curl -fsS --noproxy "*" -H "Authorization: Bearer $AI_API_TOKEN" "$u/transparent/stream" && echo
printf %s "$NA$NB" >/tmp/needle
if grep -lFf /tmp/needle /proc/[0-9]*/environ 2>/dev/null; then echo FOUND-environ; fi
if grep -rlFf /tmp/needle "$HOME" "$PWD" 2>/dev/null; then echo FOUND-files; fi
echo searched'

# assert_keyed LOG N: N requests reached the mock, each with the real key in the header it was
# sent in, none with a placeholder.
assert_keyed() {
	[ "$(wc -l <"$1")" -eq "$2" ]
	[ "$(grep -c '"placeholder_seen": false' "$1")" -eq "$2" ]
	[ "$(grep -c -e '"bearer_ok": true' -e '"x_api_key_ok": true' "$1")" -eq "$2" ]
}

@test "keygate: --key-via-gate pi: the sandbox holds a placeholder, the model endpoint gets the real key by every gate path, streaming or not; the key is nowhere inside or in aisb's state; control: without it the sandbox holds the key" {
	mock model "$CANARY"
	PORT_model=$(cat "$WORK/model.port")
	pi_config "$PORT_model"
	fake_pi "$REQUESTS"
	local half=$((${#CANARY} / 2))
	AI_API_TOKEN=$CANARY run -0 timeout 60 "$AISB" --harness-from "$WORK/fake" --allow-host-port "$PORT_model" \
		--key-via-gate pi --env MPORT="$PORT_model" --env NA="${CANARY:0:half}" --env NB="${CANARY:half}" \
		--keep -p x </dev/null
	echo "$output"
	[[ "$output" == *"token=aisb-placeholder-"* ]]
	[[ "$output" == *'{"ok": true, "path": "/v1/plain"}'* && "$output" == *'{"ok": true, "path": "/v1/tunnel"}'* ]]
	[[ "$output" == *'{"ok": true, "path": "/v1/transparent"}'* ]]
	# the chunked streams arrived whole, by all three paths
	[ "$(grep -c '^data: part2$' <<<"$output")" -eq 3 ]
	[[ "$output" == *searched* && "$output" != *FOUND* ]]
	[[ "$output" == *'$AI_API_TOKEN holds a placeholder inside (--key-via-gate)'* ]]
	assert_keyed "$WORK/model.jsonl" 6
	grep -q '"path": "/v1/transparent", .*"body": [1-9]' "$WORK/model.jsonl"
	# the record says the key went in, and never what it is
	local d
	d=$(session_dir)
	[ "$(grep -c '"key":"added"' "$d/egress.jsonl")" -eq 5 ]
	no_trace "$CANARY" "$XDG_STATE_HOME" "$XDG_CONFIG_HOME" "$XDG_CACHE_HOME" "$PROJ" "$(run_dir)"
	[[ "$output" != *"$CANARY"* ]]
	# previews: the variable is redacted, the mode named
	AI_API_TOKEN=$CANARY run -0 "$AISB" --harness-from "$WORK/fake" --allow-host-port "$PORT_model" \
		--key-via-gate pi --dry-run -p x
	[[ "$output" == *"env:        AI_API_TOKEN=<redacted>"* ]]
	[[ "$output" == *"bridge:     pi: \$AI_API_TOKEN holds a placeholder inside (--key-via-gate)"* ]]
	[[ "$output" != *"$CANARY"* ]]
	AI_API_TOKEN=$CANARY run -0 "$AISB" --harness-from "$WORK/fake" --allow-host-port "$PORT_model" \
		--key-via-gate pi --print-policy -p x
	[[ "$output" == *"bridge_key_via_gate=AI_API_TOKEN"* && "$output" != *"$CANARY"* ]]

	# control, today's behaviour: without the mode the sandbox holds the key, and the same search
	# finds it; the mock gets it from the sandbox
	: >"$WORK/model.jsonl"
	AI_API_TOKEN=$CANARY run -0 timeout 60 "$AISB" --harness-from "$WORK/fake" --allow-host-port "$PORT_model" \
		--env MPORT="$PORT_model" --env NA="${CANARY:0:half}" --env NB="${CANARY:half}" -p x </dev/null
	[[ "$output" == *"token=$CANARY"* && "$output" == *FOUND-environ* ]]
	assert_keyed "$WORK/model.jsonl" 6
	# and the config key does what the flag does
	echo 'key_via_gate = codex, pi' >>"$XDG_CONFIG_HOME/aisb/config"
	AI_API_TOKEN=$CANARY run -0 "$AISB" --harness-from "$WORK/fake" --allow-host-port "$PORT_model" --dry-run -p x
	[[ "$output" == *"holds a placeholder inside (--key-via-gate)"* ]]
}

@test "keygate: an endpoint that quotes the key back gives the sandbox REDACTED in its place, by every path, in the head and in a body split across chunks; control: without the mode the quote is the key" {
	mock model "$CANARY"
	PORT_model=$(cat "$WORK/model.port")
	pi_config "$PORT_model"
	fake_pi 'u="http://host.aisb.internal:$MPORT/v1"
curl -fsS -D - -H "Authorization: Bearer $AI_API_TOKEN" "$u/echo"
curl -fsS -D - -p -H "x-api-key: $AI_API_TOKEN" "$u/echo/stream"
curl -fsS -D - --noproxy "*" -H "Authorization: Bearer $AI_API_TOKEN" "$u/echo/stream"'
	local mask
	mask=$(printf 'REDACTED%.0s' $(seq 8) | cut -c1-${#CANARY})
	AI_API_TOKEN=$CANARY run -0 timeout 60 "$AISB" --harness-from "$WORK/fake" --allow-host-port "$PORT_model" \
		--key-via-gate pi --env MPORT="$PORT_model" -p x </dev/null
	echo "$output"
	[[ "$output" != *"$CANARY"* ]]
	[ "$(grep -c "^X-Echo: Bearer $mask" <<<"$output")" -eq 2 ]
	[ "$(grep -c "^X-Echo: $mask" <<<"$output")" -eq 1 ]
	[ "$(grep -c "^echo:Bearer $mask:end" <<<"$output")" -eq 2 ]
	[ "$(grep -c "^echo:$mask:end" <<<"$output")" -eq 1 ]
	# the endpoint did get the key
	assert_keyed "$WORK/model.jsonl" 3
	# control: without the mode the sandbox sent the key itself, and the quote is the key
	AI_API_TOKEN=$CANARY run -0 timeout 60 "$AISB" --harness-from "$WORK/fake" --allow-host-port "$PORT_model" \
		--env MPORT="$PORT_model" -p x </dev/null
	[ "$(grep -c "^echo:.*$CANARY:end" <<<"$output")" -eq 3 ]
}

@test "keygate: a placeholder the sandbox wrote down is masked after the session and named as the placeholder, no key (an info line, no warning); control: the key itself, without the mode, is the warning" {
	mock model "$CANARY"
	PORT_model=$(cat "$WORK/model.port")
	pi_config "$PORT_model"
	fake_pi 'echo "export AI_API_TOKEN=$AI_API_TOKEN" >"$HOME/.pi/agent/snapshot.sh"; echo "secret=$SECRETX" >>"$HOME/.pi/agent/snapshot.sh"'
	local snap
	AI_API_TOKEN=$CANARY run -0 timeout 60 "$AISB" --harness-from "$WORK/fake" --allow-host-port "$PORT_model" \
		--key-via-gate pi -p x </dev/null
	echo "$output"
	[[ "$output" == *'the sandbox wrote the placeholder in $AI_API_TOKEN (--key-via-gate: no key, it worked with this session'"'"'s gate only) into 1 file of the sandbox home'* ]]
	[[ "$output" != *"warning: the sandbox wrote"* && "$output" != *"wrote the value of"* ]]
	snap=$(find "$XDG_STATE_HOME/aisb/homes" -name snapshot.sh | head -1)
	grep -q '^export AI_API_TOKEN=REDACTEDREDACTED' "$snap"
	! grep -q 'aisb-placeholder-' "$snap" || false
	# a real passed value and the placeholder in one file: the warning names the value, and the
	# placeholder as one
	AI_API_TOKEN=$CANARY run -0 timeout 60 "$AISB" --harness-from "$WORK/fake" --allow-host-port "$PORT_model" \
		--key-via-gate pi --env SECRETX=sk-passed-value-12345 -p x </dev/null
	echo "$output"
	[[ "$output" == *'warning: the sandbox wrote the value of $SECRETX, and the placeholder in $AI_API_TOKEN (--key-via-gate: no key) into 1 file'* ]]
	# control: without the mode the file holds the key, and that is the warning it always was
	AI_API_TOKEN=$CANARY run -0 timeout 60 "$AISB" --harness-from "$WORK/fake" --allow-host-port "$PORT_model" \
		-p x </dev/null
	echo "$output"
	[[ "$output" == *'warning: the sandbox wrote the value of $AI_API_TOKEN into 1 file of the sandbox home'* ]]
	[[ "$output" != *placeholder* && "$output" != *"$CANARY"* ]]
	! grep -q "$CANARY" "$snap" || false
}

# decoded_has KEY: reads the mock's /echo64 lines (FORM:TEXT) on stdin and prints each form
# whose text, decoded, holds KEY
decoded_has() {
	"$PY" -c '
import base64, sys, urllib.parse
key = sys.argv[1].encode()
for line in sys.stdin:
    form, _, text = line.strip().partition(":")
    if form.startswith("b64url-"):
        dec = base64.urlsafe_b64decode(text + "==")
    elif form.startswith("b64-"):
        dec = base64.b64decode(text + "==")
    elif form == "pct":
        dec = urllib.parse.unquote_to_bytes(text)
    else:
        continue
    if key in dec:
        print(form)
' "$1"
}

@test "keygate: an endpoint that quotes the key base64 (standard, URL-safe, each offset) or percent-encoded gives the sandbox masked forms, by every path; keyed requests ask for identity encoding; control: without the mode every form decodes to the key" {
	# a key with bytes that base64 and %XX change (+ / =)
	local key="sk-canary+/=$RANDOM$RANDOM$RANDOM" forms
	mock model "$key"
	PORT_model=$(cat "$WORK/model.port")
	pi_config "$PORT_model"
	fake_pi 'u="http://host.aisb.internal:$MPORT/v1"
curl -fsS --compressed -H "Authorization: Bearer $AI_API_TOKEN" "$u/echo64"
curl -fsS --compressed -p -H "x-api-key: $AI_API_TOKEN" "$u/echo64"
curl -fsS --compressed --noproxy "*" -H "Authorization: Bearer $AI_API_TOKEN" "$u/echo64"'
	AI_API_TOKEN=$key run -0 timeout 60 "$AISB" --harness-from "$WORK/fake" --allow-host-port "$PORT_model" \
		--key-via-gate pi --env MPORT="$PORT_model" -p x </dev/null
	echo "$output"
	[ "$(grep -c '^b64-[012]:' <<<"$output")" -eq 9 ]
	[ "$(grep -c '^b64url-[012]:' <<<"$output")" -eq 9 ]
	[ "$(grep -c '^pct:REDACTED' <<<"$output")" -eq 3 ]
	forms=$(decoded_has "$key" <<<"$output")
	[ -z "$forms" ]
	[[ "$output" != *"$key"* ]]
	assert_keyed "$WORK/model.jsonl" 3
	# curl --compressed asked for gzip, br...; the endpoint was asked for identity only
	[ "$(grep -c '"accept_encoding": "identity"' "$WORK/model.jsonl")" -eq 3 ]
	# control: without the mode the sandbox sent the key itself, and every form is the key
	: >"$WORK/model.jsonl"
	AI_API_TOKEN=$key run -0 timeout 60 "$AISB" --harness-from "$WORK/fake" --allow-host-port "$PORT_model" \
		--env MPORT="$PORT_model" -p x </dev/null
	forms=$(decoded_has "$key" <<<"$output")
	[ "$(wc -l <<<"$forms")" -eq 21 ]
	[ "$(grep -c '"accept_encoding": "identity"' "$WORK/model.jsonl")" -eq 0 ]
}

@test "keygate: the placeholder sent to another allowed host is refused through the proxy and never replaced anywhere; the endpoint gets a request without the placeholder unchanged" {
	mock model "$CANARY"
	PORT_model=$(cat "$WORK/model.port")
	mock other
	PORT_other=$(cat "$WORK/other.port")
	pi_config "$PORT_model"
	fake_pi 'o="http://host.aisb.internal:$OPORT"; m="http://host.aisb.internal:$MPORT/v1"
echo "plain:$(curl -sS -o /dev/null -w "%{http_code}" -D /tmp/h -H "Authorization: Bearer $AI_API_TOKEN" "$o/leak")"
grep -i "^X-Aisb-Denied" /tmp/h
echo "plain-xkey:$(curl -sS -o /dev/null -w "%{http_code}" -H "x-api-key: $AI_API_TOKEN" "$o/leak2")"
echo "control:$(curl -sS -o /dev/null -w "%{http_code}" -H "Authorization: Bearer sk-other" "$o/ok")"
echo "tunnel:$(curl -sS -p -o /dev/null -w "%{http_code}" -H "Authorization: Bearer $AI_API_TOKEN" "$o/tunnel")"
echo "transparent:$(curl -sS --noproxy "*" -o /dev/null -w "%{http_code}" -H "x-api-key: $AI_API_TOKEN" "$o/transparent")"
echo "own:$(curl -sS -o /dev/null -w "%{http_code}" -H "Authorization: Bearer sk-own" "$m/own")"
echo "none:$(curl -sS -o /dev/null -w "%{http_code}" "$m/none")"'
	AI_API_TOKEN=$CANARY run -0 timeout 60 "$AISB" --harness-from "$WORK/fake" --allow-host-port "$PORT_model" \
		--allow-host-port "$PORT_other" --key-via-gate pi --env MPORT="$PORT_model" --env OPORT="$PORT_other" \
		--keep -p x </dev/null
	echo "$output"
	# through the proxy, where the gate reads the head: refused before anything is dialled
	[[ "$output" == *"plain:403"* && "$output" == *"plain-xkey:403"* ]]
	[[ "$output" == *"X-Aisb-Denied: the model key's placeholder in a request to host.aisb.internal:$PORT_other, which is not its model endpoint"* ]]
	! grep -q '"/leak' "$WORK/other.jsonl" || false
	# control: the same request to the same host without the placeholder passes
	[[ "$output" == *"control:200"* ]]
	grep -q '"path": "/ok", .*"placeholder_seen": false' "$WORK/other.jsonl"
	# a tunnel or a transparent connection to another host is opaque to the gate (TLS, any
	# protocol): the placeholder arrives as it was sent, never replaced by the key
	[[ "$output" == *"tunnel:200"* && "$output" == *"transparent:200"* ]]
	grep -q '"path": "/tunnel", "bearer_ok": false, "x_api_key_ok": false, "auth_sent": true, "placeholder_seen": true' "$WORK/other.jsonl"
	grep -q '"path": "/transparent", "bearer_ok": false, "x_api_key_ok": false, "auth_sent": true, "placeholder_seen": true' "$WORK/other.jsonl"
	# the endpoint without a placeholder: as sent (the gate adds a key only where one was asked for)
	[[ "$output" == *"own:200"* && "$output" == *"none:200"* ]]
	grep -q '"path": "/v1/own", "bearer_ok": false, "x_api_key_ok": false, "auth_sent": true, "placeholder_seen": false' "$WORK/model.jsonl"
	grep -q '"path": "/v1/none", "bearer_ok": false, "x_api_key_ok": false, "auth_sent": false' "$WORK/model.jsonl"
	[ "$(wc -l <"$WORK/model.jsonl")" -eq 2 ]
	# the refusals are logged, without a value
	local d
	d=$(session_dir)
	[ "$(grep -c '"decision":"deny".*placeholder' "$d/egress.jsonl")" -ge 1 ]
	! grep -q 'aisb-placeholder-' "$d/egress.jsonl" || false
	! grep -q '"key":"added"' "$d/egress.jsonl" || false
	no_trace "$CANARY" "$XDG_STATE_HOME" "$PROJ" "$(run_dir)"
	[[ "$output" != *"$CANARY"* ]]
}

# tls_mock NAME LEAF [TOKEN]: lib/key-mock.py over HTTPS with the certificate $WORK/ca/LEAF.pem
# (lib/test-ca.sh: a throwaway CA, $WORK/ca/ca.pem), like mock NAME.
tls_mock() {
	serve "$WORK/$1.port" "$PY" "$LIB/key-mock.py" --port-file "$WORK/$1.port" --log "$WORK/$1.jsonl" \
		--expect-token "${3:-}" --tls-cert "$WORK/ca/$2.pem" --tls-key "$WORK/ca/$2.key"
	: >"$WORK/$1.jsonl"
}

# pi_tls_config PORT: ~/.pi/agent with the model endpoint https://127.0.0.1:PORT (the bridge
# makes it host.aisb.internal, the name the mock's certificate is for).
pi_tls_config() { pi_config "$1" "https://127.0.0.1:$1"; }

# The requests over https:// through both gate paths that TLS takes (CONNECT, transparent), a
# chunked stream and a Content-Length answer each; then the search for the key inside, as in
# REQUESTS, and the session CA inside; then it waits for $PWD/go (the test looks at the host
# meanwhile), at most 30 s.
TLS_REQUESTS='u="https://host.aisb.internal:$MPORT/v1"
echo "token=$AI_API_TOKEN"
curl -fsS -H "Authorization: Bearer $AI_API_TOKEN" "$u/tunnel" && echo
curl -fsS -H "x-api-key: $AI_API_TOKEN" -d hello "$u/tunnel/stream" && echo
curl -fsS --noproxy "*" -H "x-api-key: $AI_API_TOKEN" -d @/etc/services "$u/transparent" && echo
curl -fsS --noproxy "*" -H "Authorization: Bearer $AI_API_TOKEN" "$u/transparent/stream" && echo
echo "ca-certs=$(grep -c "BEGIN CERTIFICATE" "$NODE_EXTRA_CA_CERTS") bundle-has-ca=$(grep -cFf "$NODE_EXTRA_CA_CERTS" "$SSL_CERT_FILE")"
if grep -rq "PRIVATE KEY" /run/aisb; then echo FOUND-private-key; fi
printf %s "$NA$NB" >/tmp/needle
if grep -lFf /tmp/needle /proc/[0-9]*/environ 2>/dev/null; then echo FOUND-environ; fi
if grep -rlFf /tmp/needle "$HOME" "$PWD" /run/aisb 2>/dev/null; then echo FOUND-files; fi
echo searched
i=0; while [ ! -e "$PWD/go" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done'

# child_of_session COMM: the pid of the live session's child process COMM (aisb-tlsgate,
# aisb-gate: a child of its supervisor), once there (at most 30 s).
child_of_session() {
	local i sup
	for i in $(seq 600); do
		sup=$(cat "$(run_dir)"/sessions/*/supervisor "$XDG_STATE_HOME"/aisb/sessions/*/supervisor 2>/dev/null | awk 'NR == 1 {print $1}')
		[ -n "$sup" ] && ps -o pid=,comm= --ppid "$sup" | awk -v c="$1" '$2 == c {print $1; f = 1} END {exit !f}' && return 0
		sleep 0.05
	done
	return 1
}

@test "keygate: an https:// endpoint: the tlsgate terminates the sandbox's TLS with a session CA it trusts, the endpoint gets the real key over TLS by both paths, streaming or not; the key is nowhere inside, in aisb's state or in the tlsgate's memory; no CA key on disk; the tlsgate is gone after the session" {
	require_feature openssl command -v openssl
	sh "$LIB/test-ca.sh" "$WORK/ca" model host.aisb.internal
	tls_mock model model "$CANARY"
	PORT_model=$(cat "$WORK/model.port")
	pi_tls_config "$PORT_model"
	fake_pi "$TLS_REQUESTS"
	local half=$((${#CANARY} / 2)) tpid d
	# the mock's CA is the caller's trust store: the tlsgate verifies the endpoint against it
	SSL_CERT_FILE=$WORK/ca/ca.pem AI_API_TOKEN=$CANARY timeout 60 "$AISB" --harness-from "$WORK/fake" \
		--allow-host-port "$PORT_model" --key-via-gate pi --env MPORT="$PORT_model" --env NA="${CANARY:0:half}" \
		--env NB="${CANARY:half}" --keep -p x </dev/null >"$WORK/out" 2>&1 3>&- &
	MOCK_PIDS+=($!)
	tpid=$(child_of_session aisb-tlsgate)
	[ -n "$tpid" ]
	# while it runs: the run dir holds the CA's certificate, never a key
	find "$(run_dir)" -name "session-ca.pem" | grep -q .
	! grep -rl "PRIVATE KEY" "$(run_dir)" "$XDG_STATE_HOME" || false
	# the tlsgate, which parses the sandbox's TLS, holds no copy of the key (its copy of the
	# supervisor's memory lost it at its fork); control: the gate, which adds it, does. Its
	# memory is readable by root only (it is not dumpable)
	if is_root; then
		[ "$("$PY" "$LIB/mem-count.py" "$tpid" "$CANARY")" -eq 0 ]
		[ "$("$PY" "$LIB/mem-count.py" "$(child_of_session aisb-gate)" "$CANARY")" -ge 1 ]
	fi
	touch "$PROJ/go"
	wait "${MOCK_PIDS[-1]}"
	cat "$WORK/out"
	output=$(cat "$WORK/out")
	[[ "$output" == *"token=aisb-placeholder-"* ]]
	[[ "$output" == *'{"ok": true, "path": "/v1/tunnel"}'* && "$output" == *'{"ok": true, "path": "/v1/transparent"}'* ]]
	[ "$(grep -c '^data: part2$' <<<"$output")" -eq 2 ]
	[[ "$output" == *"ca-certs=1 bundle-has-ca="[1-9]* ]]
	[[ "$output" == *searched* && "$output" != *FOUND* ]]
	# the endpoint got the real key, over TLS, every time, and never a placeholder
	assert_keyed "$WORK/model.jsonl" 4
	[ "$(grep -c '"tls": true' "$WORK/model.jsonl")" -eq 4 ]
	d=$(session_dir)
	[ "$(grep -c '"key":"added".*"tls":"terminated"' "$d/egress.jsonl")" -eq 4 ]
	no_trace "$CANARY" "$XDG_STATE_HOME" "$XDG_CONFIG_HOME" "$XDG_CACHE_HOME" "$PROJ" "$(run_dir)"
	[[ "$output" != *"$CANARY"* ]]
	# after it: the tlsgate is gone, and no key file anywhere aisb writes
	! kill -0 "$tpid" 2>/dev/null || false
	! grep -rl "PRIVATE KEY" "$(run_dir)" "$XDG_STATE_HOME" || false
	# the preview names the termination and the upstream trust store (a path)
	SSL_CERT_FILE=$WORK/ca/ca.pem AI_API_TOKEN=$CANARY run -0 "$AISB" --harness-from "$WORK/fake" \
		--allow-host-port "$PORT_model" --key-via-gate pi --dry-run -p x
	[[ "$output" == *"tls:        host.aisb.internal:$PORT_model terminated by aisb's tlsgate"*"upstream verified against $WORK/ca/ca.pem"* ]]
	[[ "$output" == *"env:        SSL_CERT_FILE=/run/aisb/ca-bundle.pem"* && "$output" != *"$CANARY"* ]]
	# a trust variable the caller passed is replaced, said by name and never with its value;
	# control: without one passed, nothing is said
	[[ "$output" != *"not the value you passed"* ]]
	SSL_CERT_FILE=$WORK/ca/ca.pem AI_API_TOKEN=$CANARY run -0 "$AISB" --harness-from "$WORK/fake" \
		--allow-host-port "$PORT_model" --key-via-gate pi --env SSL_CERT_FILE="/$CANARY.pem" --dry-run -p x
	[[ "$output" == *"SSL_CERT_FILE inside names the session CA (/run/aisb/ca-bundle.pem), not the value you passed"* ]]
	[[ "$output" == *"env:        SSL_CERT_FILE=/run/aisb/ca-bundle.pem"* && "$output" != *"$CANARY"* ]]
	SSL_CERT_FILE=$WORK/ca/ca.pem AI_API_TOKEN=$CANARY run -0 "$AISB" --harness-from "$WORK/fake" \
		--allow-host-port "$PORT_model" --key-via-gate pi --print-policy -p x
	[[ "$output" == *"key_tls=host.aisb.internal:$PORT_model"* && "$output" == *"tls_upstream_trust=$WORK/ca/ca.pem"* ]]
}

# The https:// request of the fake pi, before and after the test kills the tlsgate: the first
# ($PWD/first once answered), then, after $PWD/go (at most 30 s), the same request again.
TLS_TWICE='u="https://host.aisb.internal:$MPORT/v1"
curl -fsS -H "Authorization: Bearer $AI_API_TOKEN" "$u/before" && echo
: >"$PWD/first"
i=0; while [ ! -e "$PWD/go" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
curl -fsS -H "Authorization: Bearer $AI_API_TOKEN" "$u/after"; echo "after-rc=$?"'

@test "keygate: a tlsgate killed mid-session fails closed: the next https:// request to the endpoint is refused at the gate (502, the reason in the egress log), nothing reaches the endpoint unverified or unkeyed, and aisb names it; control: the same request before the kill gets through with the real key" {
	require_feature openssl command -v openssl
	sh "$LIB/test-ca.sh" "$WORK/ca" model host.aisb.internal
	tls_mock model model "$CANARY"
	PORT_model=$(cat "$WORK/model.port")
	pi_tls_config "$PORT_model"
	fake_pi "$TLS_TWICE"
	local tpid i d
	SSL_CERT_FILE=$WORK/ca/ca.pem AI_API_TOKEN=$CANARY timeout 60 "$AISB" --harness-from "$WORK/fake" \
		--allow-host-port "$PORT_model" --key-via-gate pi --env MPORT="$PORT_model" --keep -p x \
		</dev/null >"$WORK/out" 2>&1 3>&- &
	MOCK_PIDS+=($!)
	tpid=$(child_of_session aisb-tlsgate)
	[ -n "$tpid" ]
	for i in $(seq 600); do [ -e "$PROJ/first" ] && break; sleep 0.05; done
	[ -e "$PROJ/first" ]
	kill -KILL "$tpid"
	for i in $(seq 600); do kill -0 "$tpid" 2>/dev/null || break; sleep 0.05; done
	! kill -0 "$tpid" 2>/dev/null || false
	# the gate hears the tlsgate's control socket close before the next connection comes
	for i in $(seq 600); do grep -q "TLS terminator of --key-via-gate (pid $tpid) died" "$WORK/out" && break; sleep 0.05; done
	touch "$PROJ/go"
	wait "${MOCK_PIDS[-1]}"
	cat "$WORK/out"
	output=$(cat "$WORK/out")
	# control: before the kill the request passed, keyed; after it, curl failed at the gate
	[[ "$output" == *'{"ok": true, "path": "/v1/before"}'* ]]
	[[ "$output" != *'"path": "/v1/after"'* && "$output" =~ after-rc=[1-9] ]]
	[[ "$output" == *"TLS terminator of --key-via-gate (pid $tpid) died"* ]]
	# the requests the endpoint got: the first only (the gate had dialled for the second, and
	# closed that connection before a byte of TLS: the mock logs a handshake EOF, no request)
	cat "$WORK/model.jsonl"
	grep -v '"event": "tls"' "$WORK/model.jsonl" >"$WORK/requests.jsonl" || true
	assert_keyed "$WORK/requests.jsonl" 1
	grep -q '/v1/before' "$WORK/model.jsonl"
	! grep -q '/v1/after' "$WORK/model.jsonl" || false
	d=$(session_dir)
	[ "$(grep -c '"tls":"terminated"' "$d/egress.jsonl")" -eq 1 ]
	# "is gone" once the gate has seen the control socket close; a connection that came in the
	# same wake-up finds the socket dead at the hand-over: refused as well, with that reason
	grep -qE 'the TLS terminator of the model endpoint (is gone|did not take the connection)' "$d/egress.jsonl"
	no_trace "$CANARY" "$XDG_STATE_HOME" "$PROJ" "$(run_dir)"
	[[ "$output" != *"$CANARY"* ]]
}

@test "keygate: an https:// endpoint whose certificate is for another name is refused by the tlsgate, the reason in the egress log, no request (no key) reaches it; control: the right name passes; another https host stays an opaque tunnel" {
	require_feature openssl command -v openssl
	sh "$LIB/test-ca.sh" "$WORK/ca" wrong other.test
	sh "$LIB/test-ca.sh" "$WORK/ca" model host.aisb.internal
	tls_mock bad wrong "$CANARY"
	PORT_bad=$(cat "$WORK/bad.port")
	pi_tls_config "$PORT_bad"
	fake_pi 'u="https://host.aisb.internal:$MPORT/v1"
echo "tunnel:$(curl -sS -o /dev/null -w "%{http_code}" -H "Authorization: Bearer $AI_API_TOKEN" "$u/tunnel")"
echo "transparent:$(curl -sS --noproxy "*" -o /dev/null -w "%{http_code}" -H "x-api-key: $AI_API_TOKEN" "$u/transparent")"'
	SSL_CERT_FILE=$WORK/ca/ca.pem AI_API_TOKEN=$CANARY run -0 timeout 60 "$AISB" --harness-from "$WORK/fake" \
		--allow-host-port "$PORT_bad" --key-via-gate pi --env MPORT="$PORT_bad" --keep -p x </dev/null
	echo "$output"
	[[ "$output" == *"tunnel:000"* && "$output" == *"transparent:000"* ]]
	# the tlsgate refused the certificate: no request reached the endpoint
	! grep -q '"path"' "$WORK/bad.jsonl" || false
	local d
	d=$(session_dir)
	cat "$d/egress.jsonl"
	[ "$(grep -c '"tls":"terminated".*' "$d/egress.jsonl")" -eq 2 ]
	[ "$(grep -c '"reason":"upstream certificate' "$d/egress.jsonl")" -eq 2 ]
	! grep -q '"key":"added"' "$d/egress.jsonl" || false
	[[ "$output" != *"$CANARY"* ]]
	rm -rf "$XDG_STATE_HOME/aisb/sessions"

	# control: the same with the endpoint's certificate for its name; and another https host
	# allowed (a mock with a certificate of the same CA, which the bundle inside holds: the
	# caller's SSL_CERT_FILE is its first part) is an opaque tunnel: the gate neither terminates
	# nor keys it, the placeholder arrives as sent, and the client sees the host's own
	# certificate, which the session CA alone does not verify (the endpoint's leaf it does)
	tls_mock model model "$CANARY"
	PORT_model=$(cat "$WORK/model.port")
	tls_mock other model
	PORT_other=$(cat "$WORK/other.port")
	pi_tls_config "$PORT_model"
	fake_pi 'u="https://host.aisb.internal:$MPORT/v1"; o="https://host.aisb.internal:$OPORT"
echo "tunnel:$(curl -sS -o /dev/null -w "%{http_code}" -H "Authorization: Bearer $AI_API_TOKEN" "$u/tunnel")"
echo "session-ca:$(curl -sS --cacert "$NODE_EXTRA_CA_CERTS" -o /dev/null -w "%{http_code}" "$u/session-ca")"
echo "other:$(curl -sS -o /dev/null -w "%{http_code}" -H "Authorization: Bearer $AI_API_TOKEN" "$o/other")"
echo "other-session-ca:$(curl -sS --cacert "$NODE_EXTRA_CA_CERTS" -o /dev/null -w "%{http_code}" "$o/other2")"
echo "plain:$(curl -sS -o /dev/null -w "%{http_code}" -H "Authorization: Bearer $AI_API_TOKEN" "http://host.aisb.internal:$MPORT/plain")"'
	SSL_CERT_FILE=$WORK/ca/ca.pem AI_API_TOKEN=$CANARY run -0 timeout 60 "$AISB" --harness-from "$WORK/fake" \
		--allow-host-port "$PORT_model" --allow-host-port "$PORT_other" --key-via-gate pi --env MPORT="$PORT_model" \
		--env OPORT="$PORT_other" --keep -p x </dev/null
	echo "$output"
	[[ "$output" == *"tunnel:200"* && "$output" == *"session-ca:200"* && "$output" == *"other:200"* ]]
	[[ "$output" == *"other-session-ca:000"* ]]
	# a plain http:// request through the proxy that carries the placeholder to the https://
	# endpoint is refused before any dial: the key would cross the network in clear
	[[ "$output" == *"plain:403"* ]]
	[ "$(grep -c '"bearer_ok": true' "$WORK/model.jsonl")" -eq 1 ]
	grep -q '"path": "/other", "bearer_ok": false, "x_api_key_ok": false, "auth_sent": true, "placeholder_seen": true' "$WORK/other.jsonl"
	! grep -q '"/other2"' "$WORK/other.jsonl" || false
	d=$(session_dir)
	cat "$d/egress.jsonl"
	[ "$(grep -c '"tls":"terminated"' "$d/egress.jsonl")" -eq 2 ]
	grep -q '"kind":"http".*"decision":"deny".*a plain http:// request to host.aisb.internal:'"$PORT_model"', an https:// endpoint' \
		"$d/egress.jsonl"
	! grep -q '"/plain"' "$WORK/model.jsonl" || false
	grep -q "\"port\":$PORT_other,.*\"decision\":\"allow\"" "$d/egress.jsonl"
	! grep "\"port\":$PORT_other," "$d/egress.jsonl" | grep -q '"tls"' || false
	[[ "$output" != *"$CANARY"* ]]
}

@test "keygate: an https:// endpoint on port 443 of a named host (a test network of its own): the gate checks the ClientHello's name first, then the tlsgate terminates it; the endpoint gets the real key by CONNECT and transparent" {
	require_feature openssl command -v openssl
	require_feature "unshare -Urnm" unshare -Urnm true
	require_feature ip command -v ip
	chmod 755 "$WORK"
	sh "$LIB/test-ca.sh" "$WORK/ca" api api.test
	pi_config 443 "https://api.test"
	fake_pi 'u="https://api.test/v1"
echo "tunnel:$(curl -sS -o /dev/null -w "%{http_code}" -H "Authorization: Bearer $AI_API_TOKEN" "$u/tunnel")"
echo "transparent:$(curl -sS --noproxy "*" -o /dev/null -w "%{http_code}" -H "x-api-key: $AI_API_TOKEN" "$u/transparent")"
echo "sni:$(curl -sS -k -o /dev/null -w "%{http_code}" --connect-to other.test:443:api.test:443 -H "Authorization: Bearer $AI_API_TOKEN" https://other.test/v1/sni)"'
	cat >"$WORK/net.sh" <<EOS
peer "$PY" "$LIB/key-mock.py" --bind 192.0.2.1 --port 443 --port-file "$WORK/api.port" --log "$WORK/api.jsonl" \
	--expect-token "$CANARY" --tls-cert "$WORK/ca/api.pem" --tls-key "$WORK/ca/api.key" >/dev/null 2>&1 3>&- &
for i in \$(seq 200); do [ -s "$WORK/api.port" ] && break; sleep 0.05; done
SSL_CERT_FILE="$WORK/ca/ca.pem" AI_API_TOKEN="$CANARY" timeout 60 "$AISB" --harness-from "$WORK/fake" \
	--add-host api.test=192.0.2.1 --allow api.test --key-via-gate pi --keep -p x </dev/null
EOS
	run unshare -Urnm --fork "$LIB/testnet.sh" "$WORK/net.sh"
	echo "$output"
	[[ "$output" == *"tunnel:200"* && "$output" == *"transparent:200"* ]]
	# a tunnel to the endpoint whose ClientHello names another host is refused by the gate's SNI
	# check before anything is handed over or dialled (the control: the tunnel above)
	[[ "$output" == *"sni:000"* ]]
	assert_keyed "$WORK/api.jsonl" 2
	[ "$(grep -c '"tls": true' "$WORK/api.jsonl")" -eq 2 ]
	local d
	d=$(session_dir)
	cat "$d/egress.jsonl"
	[ "$(grep -c '"host":"api.test","port":443,.*"key":"added","tls":"terminated"' "$d/egress.jsonl")" -eq 2 ]
	grep -q '"decision":"deny".*"reason":"TLS server name '"'"'other.test'"'"' differs from the checked host api.test"' "$d/egress.jsonl"
	[[ "$output" != *"$CANARY"* ]]
}

@test "keygate: --key-via-gate is refused (78) where the gate cannot add the key: an https:// endpoint without a readable upstream trust store or named by an IP address (77: a trust store without a certificate stops the tlsgate), --net full or none, an unknown harness; a -- command is not a harness" {
	mock model "$CANARY"
	PORT_model=$(cat "$WORK/model.port")
	fake_pi 'echo "token=$AI_API_TOKEN"'
	mkdir -p "$HOME/.pi/agent"
	echo '{"providers":{"gw":{"baseUrl":"https://gw.test/v1","api":"openai-completions","apiKey":"literal","models":[{"id":"m"}]}}}' \
		>"$HOME/.pi/agent/models.json"
	echo '{"defaultProvider":"gw","defaultModel":"m"}' >"$HOME/.pi/agent/settings.json"
	# an https:// endpoint is terminated by the tlsgate, which verifies it against the host's
	# trust store: one that cannot be read is refused, naming it
	SSL_CERT_FILE=$WORK/no-such.pem AI_API_TOKEN=$CANARY run -78 "$AISB" --harness-from "$WORK/fake" --allow gw.test \
		--key-via-gate pi -p x </dev/null
	[[ "$output" == *"gw.test:443"*"is https://"*"\$SSL_CERT_FILE cannot be read: '$WORK/no-such.pem'"* ]]
	[[ "$output" != *"$CANARY"* ]]
	# ... and one named by an IP address, for which a client sends no server name (the control:
	# the named endpoint below starts)
	sed 's,https://gw.test,https://192.0.2.7,' "$HOME/.pi/agent/models.json" >"$WORK/ip.json"
	cp "$HOME/.pi/agent/models.json" "$WORK/named.json"
	cp "$WORK/ip.json" "$HOME/.pi/agent/models.json"
	AI_API_TOKEN=$CANARY run -78 "$AISB" --harness-from "$WORK/fake" --allow 192.0.2.7:443 --key-via-gate pi \
		-p x </dev/null
	[[ "$output" == *"192.0.2.7:443"*"is https:// to an IP address"*"--add-host NAME=192.0.2.7"* ]]
	cp "$WORK/named.json" "$HOME/.pi/agent/models.json"
	# a trust file with no certificate in it: the tlsgate cannot start, so neither does the
	# sandbox (77, its reason)
	: >"$WORK/empty.pem"
	SSL_CERT_FILE=$WORK/empty.pem AI_API_TOKEN=$CANARY run -77 env -u SSL_CERT_DIR "$AISB" --harness-from "$WORK/fake" \
		--allow gw.test --key-via-gate pi -p x </dev/null
	[[ "$output" == *"cannot start the TLS terminator for the https:// model endpoint: no upstream trust store: cannot read certificates from '$WORK/empty.pem'"* ]]
	[[ "$output" != *"token="* && "$output" != *"$CANARY"* ]]
	# control: with a readable one the same run starts, the sandbox holding a placeholder and
	# the trust variables naming the session CA
	fake_pi 'echo "token=$AI_API_TOKEN ca=$NODE_EXTRA_CA_CERTS bundle=$SSL_CERT_FILE"; grep -c "BEGIN CERTIFICATE" "$NODE_EXTRA_CA_CERTS"'
	AI_API_TOKEN=$CANARY run -0 "$AISB" --harness-from "$WORK/fake" --allow gw.test --key-via-gate pi -p x </dev/null
	echo "$output"
	[[ "$output" == *"token=aisb-placeholder-"*" ca=/run/aisb/session-ca.pem bundle=/run/aisb/ca-bundle.pem"* ]]
	grep -qx 1 <<<"$output"
	# the refused runs stopped before anything of theirs was made: no check left pending
	[[ "$output" != *"ended without its check"* ]]
	# control: without the mode the same run starts with the key
	fake_pi 'echo "token=$AI_API_TOKEN"'
	AI_API_TOKEN=$CANARY run -0 "$AISB" --harness-from "$WORK/fake" --allow gw.test -p x </dev/null
	[[ "$output" == *"token=$CANARY"* ]]
	pi_config "$PORT_model"
	AI_API_TOKEN=$CANARY run -78 "$AISB" --harness-from "$WORK/fake" --net full --key-via-gate pi --dry-run -p x
	[[ "$output" == *"needs the gate"* || "$output" == *"--allow-host-port"* ]]
	AI_API_TOKEN=$CANARY run -78 "$AISB" --harness-from "$WORK/fake" --net none --key-via-gate pi -p x </dev/null
	[[ "$output" == *"--key-via-gate needs the gate"* ]]
	AI_API_TOKEN=$CANARY run -78 "$AISB" --harness-from "$WORK/fake" --allow-host-port "$PORT_model" --key-via-gate gemini -p x </dev/null
	[[ "$output" == *"--key-via-gate 'gemini': name a harness"* ]]
	# control: the named harness runs
	AI_API_TOKEN=$CANARY run -0 "$AISB" --harness-from "$WORK/fake" --allow-host-port "$PORT_model" --key-via-gate pi -p x </dev/null
	[[ "$output" == *"token=aisb-placeholder-"* ]]
	# another harness named: pi keeps its key (today's behaviour)
	AI_API_TOKEN=$CANARY run -0 "$AISB" --harness-from "$WORK/fake" --allow-host-port "$PORT_model" --key-via-gate claude -p x </dev/null
	[[ "$output" == *"token=$CANARY"* ]]
	# a -- command is not the harness: nothing is bridged, no key variable passed at all
	AI_API_TOKEN=$CANARY run -0 "$AISB" --allow-host-port "$PORT_model" --key-via-gate pi -- sh -c 'echo "token=${AI_API_TOKEN:-unset}"'
	[[ "$output" == *"token=unset"* ]]
}

# model_mock: lib/mock-model.py (the scripted model of agents.bats, lib/model.bash) expecting
# the canary; sets MPORT_REAL.
model_mock() {
	model_start real "$CANARY" --command 'echo "ran:$(id -u)" > agent-proof.txt'
	MPORT_REAL=$(cat "$WORK/real.port")
}

# assert_real_keyed: the tool ran, both streamed model requests carried the canary, the gate
# added it, and it is nowhere in aisb's state, the project or the output.
assert_real_keyed() {
	[[ "$output" == *MOCK-DONE* ]]
	[ "$(cat "$PROJ/agent-proof.txt")" = "ran:1000" ]
	[ "$(grep -c '"auth_ok": true' "$WORK/real.jsonl")" -ge 2 ]
	! grep -q '"auth_ok": false' "$WORK/real.jsonl" || false
	grep -q '"stream": true' "$WORK/real.jsonl"
	grep -q '"key":"added"' "$(session_dir)/egress.jsonl"
	no_trace "$CANARY" "$XDG_STATE_HOME" "$XDG_CONFIG_HOME" "$XDG_CACHE_HOME" "$PROJ" "$(run_dir)"
	[[ "$output" != *"$CANARY"* ]]
}

@test "keygate: the real codex (env_key, the plain proxy) and claude (apiKeyHelper, x-api-key) reach the model with the real key; it is nowhere in their homes or aisb's state" {
	require_feature "codex and claude from npm (.ci/run installs them)" sh -c 'command -v codex && command -v claude'
	model_mock
	git -C "$PROJ" init -q # codex exec wants a git repository
	model_codex_config "http://127.0.0.1:$MPORT_REAL" MOCK_KEY
	MOCK_KEY=$CANARY run -0 timeout 120 "$AISB" --harness codex --allow-host-port "$MPORT_REAL" --key-via-gate codex \
		--keep exec "write the proof file" </dev/null
	echo "$output"
	[[ "$output" == *'$MOCK_KEY holds a placeholder inside'* ]]
	assert_real_keyed
	rm -f "$PROJ/agent-proof.txt"
	: >"$WORK/real.jsonl"
	ANTHROPIC_BASE_URL="http://127.0.0.1:$MPORT_REAL" ANTHROPIC_API_KEY=$CANARY run -0 timeout 120 "$AISB" \
		--harness claude --allow-host-port "$MPORT_REAL" --key-via-gate claude --keep -p "write the proof file" </dev/null
	echo "$output"
	[[ "$output" == *'$AISB_ANTHROPIC_API_KEY holds a placeholder inside'* ]]
	assert_real_keyed
}

@test "keygate: the real pi CLI reaches the model with the real key through the gate; the key is nowhere in the home or aisb's state" {
	require_feature "pi from npm (.ci/run installs it)" command -v pi
	model_mock
	pi_config "$MPORT_REAL"
	AI_API_TOKEN=$CANARY run -0 timeout 120 "$AISB" --allow-host-port "$MPORT_REAL" --key-via-gate pi --keep \
		-p "write the proof file" </dev/null
	echo "$output"
	# the tool ran; its two streamed model requests (the tool call, then the answer) carried the
	# real key; pi's own files in the persistent home (sessions, settings) hold no trace of it
	assert_real_keyed
}

# tls_model_mock: lib/mock-model.py over TLS, its certificate for host.aisb.internal from a
# throwaway CA, expecting the canary; sets MPORT_TLS and CA_TLS (the CA's certificate, which
# aisb's caller trusts by SSL_CERT_FILE: the tlsgate verifies the endpoint against it; inside,
# only the session's own CA is trusted, and only for the endpoint's name).
tls_model_mock() {
	"$LIB/test-ca.sh" "$WORK/ca" model host.aisb.internal
	CA_TLS=$WORK/ca/ca.pem
	model_start real "$CANARY" --command 'echo "ran:$(id -u)" > agent-proof.txt' \
		--tls-cert "$WORK/ca/model.pem" --tls-key "$WORK/ca/model.key"
	MPORT_TLS=$(cat "$WORK/real.port")
}

# assert_tls_keyed: assert_real_keyed, and every request reached the mock over TLS, by the
# tlsgate: its hello offered http/1.1 alone (the tlsgate's, whatever the CLI offered) for
# host.aisb.internal, and the egress record says the connection was terminated and keyed.
assert_tls_keyed() {
	assert_real_keyed
	[ "$(grep -c '"auth_ok"' "$WORK/real.jsonl")" -eq "$(grep -c '"tls": true, "alpn": "http/1.1"' "$WORK/real.jsonl")" ]
	grep -q '"event": "tls", "sni": "host.aisb.internal", "alpn_offered": \["http/1.1"\], "alpn": "http/1.1"' \
		"$WORK/real.jsonl"
	! grep '"event": "tls"' "$WORK/real.jsonl" | grep -v '"alpn_offered": \["http/1.1"\]' || false
	grep '"tls":"terminated"' "$(session_dir)/egress.jsonl" | grep -q '"key":"added"'
	no_trace "$CANARY" "$HOME" "$WORK/ca"
}

@test "keygate: the real pi CLI with an https:// endpoint: the tlsgate terminates TLS, the model gets the real key; the key is nowhere in the home or aisb's state" {
	require_feature "pi from npm (.ci/run installs it)" command -v pi
	tls_model_mock
	pi_config "$MPORT_TLS" "https://host.aisb.internal:$MPORT_TLS"
	AI_API_TOKEN=$CANARY SSL_CERT_FILE=$CA_TLS run -0 timeout 120 "$AISB" --allow-host-port "$MPORT_TLS" \
		--key-via-gate pi --keep -p "write the proof file" </dev/null
	echo "$output"
	[[ "$output" == *'$AI_API_TOKEN holds a placeholder inside (--key-via-gate)'* ]]
	assert_tls_keyed
}

@test "keygate: the real codex CLI with an https:// endpoint (localhost in its config): it trusts the session CA by SSL_CERT_FILE, offers h2 and gets http/1.1; the model gets the real key, nowhere in its home or aisb's state" {
	require_feature "codex from npm (.ci/run installs it)" command -v codex
	tls_model_mock
	git -C "$PROJ" init -q
	model_codex_config "https://localhost:$MPORT_TLS" MOCK_KEY
	MOCK_KEY=$CANARY SSL_CERT_FILE=$CA_TLS run -0 timeout 120 "$AISB" --harness codex --allow-host-port "$MPORT_TLS" \
		--key-via-gate codex --keep exec "write the proof file" </dev/null
	echo "$output"
	[[ "$output" == *'$MOCK_KEY holds a placeholder inside'* ]]
	# codex's own hello offers h2 (docs/key-via-gate-tls.md, question 5): none reached the mock
	! grep -q '"alpn_offered": \["h2"' "$WORK/real.jsonl" || false
	assert_tls_keyed
}

@test "keygate: the real claude CLI with an https:// endpoint (ANTHROPIC_BASE_URL on 127.0.0.1): the tlsgate terminates TLS, x-api-key gets the real key; it is nowhere in its home or aisb's state" {
	require_feature "claude from npm (.ci/run installs it)" command -v claude
	tls_model_mock
	ANTHROPIC_BASE_URL="https://127.0.0.1:$MPORT_TLS" ANTHROPIC_API_KEY=$CANARY SSL_CERT_FILE=$CA_TLS run -0 \
		timeout 120 "$AISB" --harness claude --allow-host-port "$MPORT_TLS" --key-via-gate claude --keep \
		-p "write the proof file" </dev/null
	echo "$output"
	[[ "$output" == *'$AISB_ANTHROPIC_API_KEY holds a placeholder inside'* ]]
	assert_tls_keyed
}
