#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# registry-auth.bats — where `aisb pull` sends registry credentials and tokens. A fake registry
# (lib/images/fake-registry.py) on 127.0.0.1 points its WWW-Authenticate realm at token servers
# on 127.0.0.2 (another host) or at another port of 127.0.0.1, over http or https, and can
# redirect blob GETs to either; its log records the Authorization header every server received.
# Each refusal is paired with the control that shows the same credentials do arrive where the
# rule allows them (docs/images.md, "Credentials").

bats_require_minimum_version 1.5.0

AISB_BIN=${AISB_BIN:-aisb}
load lib/common # require_feature
AISB=$AISB_BIN
IMG=$BATS_TEST_DIRNAME/lib/images
PY=/usr/bin/python3
PW=pw-canary-2718

setup_file() {
	export W=$BATS_FILE_TMPDIR
	"$IMG/mk-busybox-oci.sh" "$W/bb" v1 >/dev/null
}

setup() {
	require_feature openssl command -v openssl
	export HOME=$BATS_TEST_TMPDIR/home
	mkdir -p "$HOME"
	# (a private run dir has no containers/auth.json: no credentials from the caller's)
	unset AISB_BASE_TTL_DAYS REGISTRY_AUTH_FILE
	private_run_dir
	FR=$BATS_TEST_TMPDIR/fr
	N=0
}

teardown() {
	[ -f "$BATS_TEST_TMPDIR/fr.pid" ] && kill "$(cat "$BATS_TEST_TMPDIR/fr.pid")" 2>/dev/null
	private_run_dir_done
}

# start_fake VAR=VALUE...: (re)start the fake registry with these FR_* settings.
start_fake() {
	[ -f "$BATS_TEST_TMPDIR/fr.pid" ] && kill "$(cat "$BATS_TEST_TMPDIR/fr.pid")" 2>/dev/null
	mkdir -p "$FR"
	rm -f "$FR/ports" "$FR/log"
	env "$@" "$PY" "$IMG/fake-registry.py" "$W/bb" "$FR" </dev/null >"$FR/out" 2>&1 3>&- &
	echo $! >"$BATS_TEST_TMPDIR/fr.pid"
	local _
	for _ in $(seq 100); do [ -s "$FR/ports" ] && break; sleep 0.1; done
	[ -s "$FR/ports" ] || { cat "$FR/out"; return 1; }
	printf '{"auths":{"127.0.0.1:%s":{"auth":"%s"}}}' "$(port R)" "$(printf 'aisb:%s' "$PW" | base64)" \
		>"$BATS_TEST_TMPDIR/auth.json"
}

port() { tr ' ' '\n' <"$FR/ports" | sed -n "s/^$1=//p"; }

# pull ARGS...: aisb pull of the fake registry's image with the credentials, in a fresh cache (so
# every pull makes its manifest and blob requests).
pull() {
	N=$((N + 1))
	XDG_CACHE_HOME=$BATS_TEST_TMPDIR/cache$N run "$AISB" pull -q --authfile "$BATS_TEST_TMPDIR/auth.json" "$@" \
		"127.0.0.1:$(port R)/bb:v1"
	[[ "$output" != *"$PW"* ]] # never printed, whatever happens
}

BASIC="Basic $(printf 'aisb:%s' "$PW" | base64)"

# got SERVER PATH-PREFIX AUTH: the log has a request to SERVER for PATH-PREFIX... with that
# Authorization value ("-" for none).
got() { grep -q "^$1 $2[^ ]* $3\$" "$FR/log"; }
# asked SERVER PATH-PREFIX: SERVER got a request for PATH-PREFIX at all.
asked() { grep -q "^$1 $2" "$FR/log"; }

@test "registry credentials: a token realm on another host over plain http never gets them; the registry's own host does" {
	start_fake FR_REALM=other
	pull --tls-verify=false
	[ "$status" -eq 0 ] # the anonymous token still works here
	[[ "$output" == *"not sending the stored credentials for 127.0.0.1:$(port R) to its token server 'http://127.0.0.2:$(port T)': plain http to another host"* ]]
	asked T /token
	got T /token -
	! grep -q "$BASIC" "$FR/log" || false
	# control: the realm on the registry's own host (another port), plain http as the registry is
	start_fake FR_REALM=same
	pull --tls-verify=false
	[ "$status" -eq 0 ]
	got S /token "$BASIC"
	[[ "$output" != *"not sending"* ]]
}

@test "registry credentials over TLS: another host only over verified https; plain http to the same host is refused" {
	start_fake FR_TLS=1 FR_REALM=other FR_REALM_SCHEME=http
	pull --cert-dir "$FR/ca"
	[ "$status" -eq 0 ]
	got T /token -
	[[ "$output" == *"plain http to another host"* ]]
	# TLS verification off covers the registry, not an auth server on another host
	start_fake FR_TLS=1 FR_REALM=other FR_REALM_SCHEME=https
	pull --tls-verify=false
	[ "$status" -eq 0 ]
	got Ts /token -
	[[ "$output" == *"TLS verification is off"* ]]
	# the registry's own host over plain http while its TLS is verified
	start_fake FR_TLS=1 FR_REALM=same FR_REALM_SCHEME=http
	pull --cert-dir "$FR/ca"
	[ "$status" -eq 0 ]
	got S /token -
	[[ "$output" == *"plain http while TLS is verified"* ]]
	! grep -q "$BASIC" "$FR/log" || false
	# control: another host over verified https gets them (Docker Hub's auth.docker.io case)
	start_fake FR_TLS=1 FR_REALM=other FR_REALM_SCHEME=https
	pull --cert-dir "$FR/ca"
	[ "$status" -eq 0 ]
	got Ts /token "$BASIC"
}

@test "registry redirects: the bearer token never follows a blob redirect to another host or port" {
	start_fake FR_REALM=same FR_REDIRECT=other
	pull --tls-verify=false
	[ "$status" -eq 0 ]
	got R /v2/bb/blobs/ "Bearer tok-canary-3141" # control: the registry itself gets it
	asked B /blob/
	got B /blob/ -
	! grep -q "^B .*tok-canary" "$FR/log" || false
	start_fake FR_REALM=same FR_REDIRECT=sameport
	pull --tls-verify=false
	[ "$status" -eq 0 ]
	asked S /blob/
	! grep -q "^S /blob/.*tok-canary" "$FR/log" || false
}

@test "registry redirects: basic credentials never follow a blob redirect to another host" {
	start_fake FR_CHALLENGE=basic FR_REDIRECT=other
	pull --tls-verify=false
	[ "$status" -eq 0 ]
	got R /v2/bb/blobs/ "$BASIC" # control: the registry itself gets them
	asked B /blob/
	! grep -q "^B .*Basic" "$FR/log" || false
	start_fake FR_CHALLENGE=basic FR_REDIRECT=sameport
	pull --tls-verify=false
	[ "$status" -eq 0 ]
	asked S /blob/
	! grep -q "^S /blob/.*Basic" "$FR/log" || false
}
