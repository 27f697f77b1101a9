#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# push.bats — the registry flags on `aisb build` and `aisb run --image`, digest runs without a
# registry, `aisb push`, `aisb save`/`aisb load`, and the fleet workflow (build, push, fresh
# store, pull by digest, run), against Debian's docker-registry on 127.0.0.1 (plain HTTP, and TLS
# from a CA made here with htpasswd basic auth) and a token-server front (lib/images/proxy.py
# token). Every refusal is paired with the control that passes. Never any address but 127.0.0.1.
# shellcheck disable=SC2016

bats_require_minimum_version 1.5.0

AISB_BIN=${AISB_BIN:-aisb}
load lib/common # require_feature, need
AISB=$AISB_BIN
IMG=$BATS_TEST_DIRNAME/lib/images
PY=/usr/bin/python3

setup_file() {
	export W=$BATS_FILE_TMPDIR
	"$IMG/mk-busybox-oci.sh" "$W/bb" v1 >"$W/bb.digest"
	# a second image whose digest no registry and no store here has (the "not in the store" case)
	$PY "$IMG/craft-layer.py" setuid "$W/extra.tar"
	cp -r "$W/bb" "$W/bb2"
	$PY "$IMG/oci-layout.py" "$W/bb2" --tag v1 --cmd /bin/sh \
		"$(find "$W/bb/blobs/sha256" -type f -printf '%s %p\n' | sort -n | tail -1 | cut -d' ' -f2)" \
		"$W/extra.tar" >"$W/bb2.digest" 2>/dev/null || true
	if command -v docker-registry >/dev/null && command -v skopeo >/dev/null; then
		"$IMG/registry.sh" start "$W/plain" >/dev/null
		"$IMG/registry.sh" start "$W/tls" tls >/dev/null
		echo '{"auths":{}}' >"$W/skopeo-auth.json"
		REGISTRY_AUTH_FILE=$W/skopeo-auth.json skopeo copy -q --dest-tls-verify=false "oci:$W/bb:v1" \
			"docker://127.0.0.1:$(cat "$W/plain/port")/bb:v1"
		REGISTRY_AUTH_FILE=$W/skopeo-auth.json skopeo copy -q --dest-cert-dir "$W/tls/ca" \
			--dest-creds "aisb:$(cat "$W/tls/password")" "oci:$W/bb:v1" \
			"docker://127.0.0.1:$(cat "$W/tls/port")/bb:v1"
	fi
}

teardown_file() {
	"$IMG/registry.sh" stop "$BATS_FILE_TMPDIR/plain" || true
	"$IMG/registry.sh" stop "$BATS_FILE_TMPDIR/tls" || true
}

setup() {
	common_setup
	W=$BATS_FILE_TMPDIR
	export HOME=$WORK/home
	mkdir -p "$HOME"
	unset AISB_BASE_TTL_DAYS REGISTRY_AUTH_FILE AISB_STORE
	need docker-registry skopeo
	PLAIN=127.0.0.1:$(cat "$W/plain/port")
	TLS=127.0.0.1:$(cat "$W/tls/port")
	PW=$(cat "$W/tls/password")
	printf '{"auths":{"%s":{"auth":"%s"}}}' "$TLS" "$(printf 'aisb:%s' "$PW" | base64)" >"$WORK/good.json"
	printf '{"auths":{"%s":{"auth":"%s"}}}' "$TLS" "$(printf 'aisb:wrong-canary-1618' | base64)" >"$WORK/bad.json"
	printf 'FROM %s/bb:v1\nCOPY marker /marker\n' "$PLAIN" >"$PROJ/Plain"
	printf 'FROM %s/bb:v1\nCOPY marker /marker\n' "$TLS" >"$PROJ/Tls"
	echo fleet-marker >"$PROJ/marker"
}

teardown() {
	"$IMG/registry.sh" stop "$WORK/reg" 2>/dev/null || true
	[ -f "$WORK/proxy.pid" ] && kill "$(cat "$WORK/proxy.pid")" 2>/dev/null
	common_teardown
}

# no secret anywhere in what aisb printed
clean() { [[ "$output" != *"$PW"* && "$output" != *wrong-canary* && "$output" != *tok-p* ]]; }

sbimg() { "$AISB" run --no-cwd "$@"; }

# start_proxy MODE: lib/images/proxy.py MODE in front of the plain registry; prints its port
start_proxy() {
	$PY "$IMG/proxy.py" "$1" "$(cat "$W/plain/port")" "$WORK/proxy" </dev/null >"$WORK/proxy.out" 2>&1 3>&- &
	echo $! >"$WORK/proxy.pid"
	for _ in $(seq 50); do [ -s "$WORK/proxy" ] && break; sleep 0.1; done
	cat "$WORK/proxy"
}


skopeo() { REGISTRY_AUTH_FILE=$W/skopeo-auth.json command skopeo "$@"; }

# ---- the registry flags on run --image and build ----

@test "run --image: a plain-HTTP registry needs --tls-verify=false; with it the image runs" {
	run sbimg --image "$PLAIN/bb:v1" -- /bin/cat /etc/motd
	[ "$status" -eq 125 ]
	[[ "$output" == *"needs --tls-verify=false"* ]]
	run --separate-stderr sbimg --tls-verify=false --image "$PLAIN/bb:v1" -- /bin/cat /etc/motd
	[ "$status" -eq 0 ]
	[ "$output" = "hello from the image" ]
	# a bad value is refused before anything is fetched
	run sbimg --tls-verify=maybe --image "$PLAIN/bb:v1" -- /bin/true
	[ "$status" -eq 78 ]
	[[ "$output" == *"--tls-verify takes true or false, not 'maybe'"* ]]
}

@test "run --image: --cert-dir and --authfile for a TLS registry with basic auth; credentials never printed" {
	run sbimg --authfile "$WORK/good.json" --image "$TLS/bb:v1" -- /bin/true
	[ "$status" -eq 125 ]
	[[ "$output" == *"is not trusted"*"--cert-dir"* ]]
	run sbimg --cert-dir "$W/tls/ca" --image "$TLS/bb:v1" -- /bin/true
	[ "$status" -eq 125 ]
	[[ "$output" == *"requires a login and no credentials"* ]]
	run sbimg --cert-dir "$W/tls/ca" --authfile "$WORK/bad.json" --image "$TLS/bb:v1" -- /bin/true
	[ "$status" -eq 125 ]
	[[ "$output" == *"denied access"*"with the stored credentials"* ]]
	clean
	# control: the same run with the right credentials
	run --separate-stderr sbimg --verbose --cert-dir "$W/tls/ca" --authfile "$WORK/good.json" --image "$TLS/bb:v1" \
		-- /bin/cat /etc/motd
	[ "$status" -eq 0 ]
	[ "$output" = "hello from the image" ]
	[[ "$stderr" != *"$PW"* ]]
}

@test "build FROM a registry: --tls-verify=false, --cert-dir and --authfile as pull has them" {
	run "$AISB" build -t plainb -f Plain .
	[ "$status" -ne 0 ]
	[[ "$output" == *"needs --tls-verify=false"* ]]
	run "$AISB" build --tls-verify=false -t plainb -f Plain .
	[ "$status" -eq 0 ]
	run "$AISB" build --authfile "$WORK/good.json" -t tlsb -f Tls .
	[ "$status" -ne 0 ]
	[[ "$output" == *"is not trusted"*"--cert-dir"* ]]
	run "$AISB" build --cert-dir "$W/tls/ca" -t tlsb -f Tls .
	[ "$status" -ne 0 ]
	[[ "$output" == *"requires a login"* ]]
	run "$AISB" build --cert-dir "$W/tls/ca" --authfile "$WORK/bad.json" -t tlsb -f Tls .
	[ "$status" -ne 0 ]
	[[ "$output" == *"denied access"* ]]
	clean
	run "$AISB" build --cert-dir "$W/tls/ca" --authfile "$WORK/good.json" -t tlsb -f Tls .
	[ "$status" -eq 0 ]
	clean
	run --separate-stderr sbimg --image tlsb -- /bin/cat /marker
	[ "$status" -eq 0 ]
	[ "$output" = fleet-marker ]
	# the podman builder would not see the flags: refused rather than ignored
	run "$AISB" build --builder podman --tls-verify=false -t pb -f Plain .
	[ "$status" -eq 78 ]
	[[ "$output" == *"apply to the native builder"* ]]
	run "$AISB" build --tls-verify=sometimes -t x -f Plain .
	[ "$status" -eq 2 ]
}

# ---- digest runs without a registry ----

@test "run --image REPO@sha256:D from the store needs no registry; a digest not in the store names aisb pull" {
	d=$WORK/reg
	port=$("$IMG/registry.sh" start "$d")
	REGISTRY_AUTH_FILE=$W/skopeo-auth.json skopeo copy -q --dest-tls-verify=false "oci:$W/bb:v1" \
		"docker://127.0.0.1:$port/off:v1"
	run "$AISB" pull -q --tls-verify=false "127.0.0.1:$port/off:v1"
	[ "$status" -eq 0 ]
	digest=$output
	# an image index (as Docker Hub's multi-platform images are) naming this manifest for the
	# host's platform, pulled by the index's digest
	case $(uname -m) in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; *) arch=$(uname -m) ;; esac
	size=$(stat -c %s "$W/bb/blobs/sha256/${digest#sha256:}")
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"platform":{"architecture":"%s","os":"linux"}}]}' \
		"$digest" "$size" "$arch" >"$WORK/index.json"
	curl -sf -X PUT -H 'Content-Type: application/vnd.oci.image.index.v1+json' --data-binary @"$WORK/index.json" \
		"http://127.0.0.1:$port/v2/off/manifests/multi"
	index=sha256:$(sha256sum <"$WORK/index.json" | cut -d' ' -f1)
	run "$AISB" pull -q --tls-verify=false "127.0.0.1:$port/off@$index"
	[ "$status" -eq 0 ]
	[ "$output" = "$digest" ] # the host's member
	"$IMG/registry.sh" stop "$d"
	# stopped: the index digest runs from its pin
	run --separate-stderr sbimg --image "127.0.0.1:$port/off@$index" -- /bin/cat /etc/motd
	[ "$status" -eq 0 ]
	[ "$output" = "hello from the image" ]
	# stopped: the digest (pulled under the tag) runs from the store
	run --separate-stderr sbimg --image "127.0.0.1:$port/off@$digest" -- /bin/cat /etc/motd
	[ "$status" -eq 0 ]
	[ "$output" = "hello from the image" ]
	# the tag with a stale pin: the pin, said so
	AISB_BASE_TTL_DAYS=0 run sbimg --image "127.0.0.1:$port/off:v1" -- /bin/cat /etc/motd
	[ "$status" -eq 0 ]
	[[ "$output" == *"registry unreachable: using the pinned digest $digest"*"hello from the image"* ]]
	# control: a digest the store does not have fails, naming the fix
	other=$(cat "$W/bb2.digest")
	[ -n "$other" ] && [ "$other" != "$digest" ]
	run sbimg --image "127.0.0.1:$port/off@$other" -- /bin/true
	[ "$status" -eq 125 ]
	[[ "$output" == *"is not in the image store and its registry cannot be reached: run 'aisb pull 127.0.0.1:$port/off@$other'"* ]]
}

# ---- push ----

# blob uploads (POST .../blobs/uploads/ without mount=, and the PUT that ends each) in LOG
uploads() { grep -c '"\(POST /v2/[^ ]*/blobs/uploads/ \|PUT /v2/[^ ]*/blobs/uploads/\)' "$1" || true; }
mounts() { grep -c '"POST /v2/[^ ]*/blobs/uploads/?mount=' "$1" || true; }

@test "push: byte-for-byte digests; a second push sends no blob; another repository mounts them" {
	run "$AISB" pull -q "oci:$W/bb:v1"
	[ "$status" -eq 0 ]
	digest=$output
	before=$(uploads "$W/plain/log")
	run --separate-stderr "$AISB" push --tls-verify=false "oci:$W/bb:v1" "$PLAIN/pushed:v1"
	[ "$status" -eq 0 ]
	[ "$output" = "$digest" ]
	[[ "$stderr" == *"2 blob(s) sent"* ]]
	[ $(($(uploads "$W/plain/log") - before)) -eq 4 ] # config and layer: POST + PUT each
	# the registry serves the same manifest and config (skopeo reads it independently)
	run --separate-stderr skopeo inspect --raw --tls-verify=false "docker://$PLAIN/pushed:v1"
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	[ "$(printf '%s' "$output" | sha256sum | cut -d' ' -f1)" = "${digest#sha256:}" ]
	cfg=$(tr -d '\n' <"$W/bb/blobs/sha256/${digest#sha256:}" | sed 's/.*"config":{[^}]*"digest":"\([^"]*\)".*/\1/')
	run --separate-stderr skopeo inspect --raw --config --tls-verify=false "docker://$PLAIN/pushed:v1"
	[ "$(printf '%s' "$output" | sha256sum | cut -d' ' -f1)" = "${cfg#sha256:}" ]
	# again: HEAD finds every blob, nothing is sent
	before=$(uploads "$W/plain/log")
	run --separate-stderr "$AISB" push --tls-verify=false "oci:$W/bb:v1" "$PLAIN/pushed:v1"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"0 blob(s) sent (0.0 MB), 2 already there"* ]]
	[ "$(uploads "$W/plain/log")" -eq "$before" ]
	# an image pulled from this registry pushed to another repository: mounted, not sent
	run "$AISB" pull -q --tls-verify=false "$PLAIN/pushed:v1"
	[ "$status" -eq 0 ]
	m0=$(mounts "$W/plain/log")
	run --separate-stderr "$AISB" push --tls-verify=false "$PLAIN/pushed:v1" "$PLAIN/copy:v1"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"0 blob(s) sent"*"2 mounted from pushed"* ]]
	[ $(($(mounts "$W/plain/log") - m0)) -eq 2 ]
	[ "$(uploads "$W/plain/log")" -eq "$before" ]
	run "$AISB" pull -q --tls-verify=false "$PLAIN/copy:v1"
	[ "$output" = "$digest" ]
}

# layer_of REF: the manifest's last layer descriptor as "MEDIATYPE DIGEST"
layer_of() {
	local d
	d=$("$AISB" inspect "$1" | sed -n 's/^  "digest":"\(sha256:[0-9a-f]*\)",*/\1/p')
	$PY -c 'import json,sys; l=json.load(open(sys.argv[1]))["layers"][-1]; print(l["mediaType"], l["digest"])' \
		"$XDG_CACHE_HOME/aisb/blobs/sha256/${d#sha256:}"
}

@test "build: the layer is gzip by default (a header without time or name), zstd on request; skopeo copy keeps the digest; podman pulls and runs it" {
	cd "$PROJ"
	run "$AISB" build --tls-verify=false -t gz -f Plain .
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	read -r mt L1 < <(layer_of gz)
	[ "$mt" = application/vnd.oci.image.layer.v1.tar+gzip ]
	# a gzip header without time or name (bytes 4-7: mtime 0; flags 0)
	[ "$(od -An -tx1 -N10 "$XDG_CACHE_HOME/aisb/blobs/sha256/${L1#sha256:}" | tr -d ' ')" = 1f8b0800000000000003 ]
	# (the same tar gives the same compressed bytes: test_round_trip_and_stable in
	# tests/unit/test-build-compress.c; a rebuild in a fresh store makes the same tar:
	# build.bats "... byte for byte the same image ...")
	# pushed, then copied by skopeo into an OCI layout: the same manifest digest (nothing to recompress)
	run --separate-stderr "$AISB" push --tls-verify=false gz "$PLAIN/gz:v1"
	[ "$status" -eq 0 ]
	D=$output
	run --separate-stderr skopeo copy -q --src-tls-verify=false "docker://$PLAIN/gz:v1" "oci:$WORK/lay:gz"
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	run --separate-stderr skopeo inspect --format '{{.Digest}}' "oci:$WORK/lay:gz"
	[ "$output" = "$D" ]
	[ -f "$WORK/lay/blobs/sha256/${L1#sha256:}" ]
	# zstd on request, podman's flag; it pulls into a fresh store and runs
	run "$AISB" build --tls-verify=false --compression-format zstd -t zs -f Plain .
	[ "$status" -eq 0 ]
	read -r mt L2 < <(layer_of zs)
	[ "$mt" = application/vnd.oci.image.layer.v1.tar+zstd ]
	[ "$L2" != "$L1" ]
	run --separate-stderr "$AISB" push --tls-verify=false zs "$PLAIN/zs:v1"
	[ "$status" -eq 0 ]
	XDG_CACHE_HOME=$WORK/cache3 run --separate-stderr sbimg --tls-verify=false --image "$PLAIN/zs:v1" -- /bin/cat /marker
	[ "$output" = fleet-marker ]
	# refusal: a level the format does not have; control: none stores the tar as it is
	run "$AISB" build --tls-verify=false --compression-level 12 -t bad -f Plain .
	[ "$status" -eq 2 ]
	[[ "$output" == *"--compression-level 12 does not fit --compression-format gzip"* ]]
	run "$AISB" build --tls-verify=false --compression-format none -t raw -f Plain .
	[ "$status" -eq 0 ]
	read -r mt L3 < <(layer_of raw)
	[ "$mt" = application/vnd.oci.image.layer.v1.tar ]
	# podman: in the root run only (a private storage needs root here, the user has no subuids;
	# the limits root can set: docs/machine-facts.md)
	[ "$(id -u)" = 0 ] || return 0
	need podman
	local pm=(podman --root "$WORK/proot" --runroot "$WORK/prun" --storage-driver vfs)
	"${pm[@]}" pull -q --tls-verify=false "$PLAIN/gz:v1" >/dev/null
	run "${pm[@]}" run --rm --network none --ulimit nofile=20000:20000 --ulimit nproc=32768:32768 "$PLAIN/gz:v1" /bin/cat /marker
	echo "$output"
	[ "$output" = fleet-marker ]
	"${pm[@]}" pull -q --tls-verify=false "$PLAIN/zs:v1" >/dev/null
	run "${pm[@]}" run --rm --network none --ulimit nofile=20000:20000 --ulimit nproc=32768:32768 "$PLAIN/zs:v1" /bin/cat /marker
	[ "$output" = fleet-marker ]
}

@test "round trip: aisb build -> push -> podman pull -> podman push -> aisb pull, and skopeo registry to registry: the same contents always, the same layer digests where the tool keeps the blobs" {
	# root only: podman with a private storage needs root here (the user run has no subuids)
	[ "$(id -u)" = 0 ] || skip "podman with a private storage root needs root here (the user run has no subuids)"
	need podman
	cd "$PROJ"
	run --separate-stderr "$AISB" build --tls-verify=false -t rt -f Plain .
	[ "$status" -eq 0 ]
	read -r _ L1 < <(layer_of rt)
	run --separate-stderr "$AISB" push --tls-verify=false rt "$PLAIN/rt:v1"
	[ "$status" -eq 0 ]
	D=$output
	# skopeo, registry to registry: nothing recompressed, the manifest digest kept
	run --separate-stderr skopeo copy -q --src-tls-verify=false --dest-tls-verify=false \
		"docker://$PLAIN/rt:v1" "docker://$PLAIN/rt-skopeo:v1"
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	[ "$(skopeo inspect --tls-verify=false --format '{{.Digest}}' "docker://$PLAIN/rt-skopeo:v1")" = "$D" ]
	# podman pulls it, runs it, pushes it back under another name (its own manifest and
	# compression choices); aisb pulls that and runs the same bytes
	local pm=(podman --root "$WORK/proot" --runroot "$WORK/prun" --storage-driver vfs)
	"${pm[@]}" pull -q --tls-verify=false "$PLAIN/rt:v1" >/dev/null
	run "${pm[@]}" run --rm --network none --ulimit nofile=20000:20000 --ulimit nproc=32768:32768 "$PLAIN/rt:v1" /bin/cat /marker
	[ "$output" = fleet-marker ]
	"${pm[@]}" push -q --tls-verify=false "$PLAIN/rt:v1" "$PLAIN/rt-podman:v1"
	XDG_CACHE_HOME=$WORK/cache-rt run --separate-stderr "$AISB" pull -q --tls-verify=false "$PLAIN/rt-podman:v1"
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	XDG_CACHE_HOME=$WORK/cache-rt run --separate-stderr sbimg --tls-verify=false --net none --image "$PLAIN/rt-podman:v1" -- /bin/cat /marker
	[ "$output" = fleet-marker ]
	# the layer aisb built: podman 4.3 pushes the gzip blob it pulled as it is (the same digest)
	run remote_layers "$PLAIN/rt-podman:v1"
	echo "$output"
	[[ "$output" == *"$L1"* ]]
	# and aisb pulls the skopeo copy into a fresh store with the digest it pushed
	XDG_CACHE_HOME=$WORK/cache-rt2 run --separate-stderr "$AISB" pull -q --tls-verify=false "$PLAIN/rt-skopeo:v1"
	[ "$status" -eq 0 ]
	[ "$output" = "$D" ]
}

@test "round trip by archive: aisb save -> podman load -> run -> podman save (oci-archive) -> aisb load -> run: the same contents, podman's name kept" {
	[ "$(id -u)" = 0 ] || skip "podman with a private storage root needs root here (the user run has no subuids)"
	need podman
	cd "$PROJ"
	run --separate-stderr "$AISB" build --tls-verify=false -t arc -f Plain .
	[ "$status" -eq 0 ]
	run --separate-stderr "$AISB" save localhost/arc -o "$WORK/arc.tar"
	[ "$status" -eq 0 ]
	D=$output
	# skopeo reads aisb's archive with the store's manifest digest
	[ "$(skopeo inspect --format '{{.Digest}}' "oci-archive:$WORK/arc.tar")" = "$D" ]
	local pm=(podman --root "$WORK/proot" --runroot "$WORK/prun" --storage-driver vfs)
	run "${pm[@]}" load -q -i "$WORK/arc.tar"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run "${pm[@]}" run --rm --network none --ulimit nofile=20000:20000 --ulimit nproc=32768:32768 localhost/arc:latest /bin/cat /marker
	[ "$output" = fleet-marker ]
	"${pm[@]}" tag localhost/arc:latest example.com/team/arc:v2
	"${pm[@]}" save -q --format oci-archive -o "$WORK/back.tar" example.com/team/arc:v2
	XDG_CACHE_HOME=$WORK/cache-arc run --separate-stderr "$AISB" load -i "$WORK/back.tar"
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	[[ "$stderr" == *"example.com/team/arc:v2"* ]]
	XDG_CACHE_HOME=$WORK/cache-arc run --separate-stderr sbimg --net none --image example.com/team/arc:v2 -- /bin/cat /marker
	[ "$output" = fleet-marker ]
}

# remote_layers REF: "MEDIATYPE DIGEST" of each layer of the registry's manifest for REF
remote_layers() {
	skopeo inspect --raw --tls-verify=false "docker://$1" |
		$PY -c 'import json,sys; [print(l["mediaType"], l["digest"]) for l in json.load(sys.stdin)["layers"]]'
}

@test "push: --compression-format gzip|zstd compresses an image stored uncompressed on the way (a new manifest, the registry's media types and digests); without it the layers go as stored" {
	cd "$PROJ"
	run "$AISB" build --tls-verify=false --compression-format none -t raw -f Plain .
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	read -r mt L0 < <(layer_of raw)
	[ "$mt" = application/vnd.oci.image.layer.v1.tar ]
	P=$("$AISB" images --format '{{.Name}} {{.Digest}}' | awk '$1 == "localhost/raw:latest" { print $2 }')
	# without the flag: as stored, the pin's digest
	run --separate-stderr "$AISB" push --tls-verify=false raw "$PLAIN/raw:as-is"
	[ "$status" -eq 0 ]
	[ "$output" = "$P" ]
	[ "$(remote_layers "$PLAIN/raw:as-is" | tail -1)" = "application/vnd.oci.image.layer.v1.tar $L0" ]
	# gzip: a new manifest; the base's layer (gzip already) stays, the build's is compressed
	run --separate-stderr "$AISB" push --tls-verify=false --compression-format gzip raw "$PLAIN/raw:gz"
	echo "$stderr"
	[ "$status" -eq 0 ]
	G=$output
	[[ "$G" == sha256:* && "$G" != "$P" ]]
	[[ "$stderr" == *"1 uncompressed layer(s) compressed with gzip"* ]]
	[ "$(skopeo inspect --tls-verify=false --format '{{.Digest}}' "docker://$PLAIN/raw:gz")" = "$G" ]
	remote_layers "$PLAIN/raw:as-is" >"$WORK/as-is"
	remote_layers "$PLAIN/raw:gz" >"$WORK/gz"
	cat "$WORK/gz"
	[ "$(head -1 "$WORK/gz")" = "$(head -1 "$WORK/as-is")" ]
	read -r mt LG < <(tail -1 "$WORK/gz")
	[ "$mt" = application/vnd.oci.image.layer.v1.tar+gzip ]
	[ "$LG" != "$L0" ]
	# the blob is what its digest says, and it is the stored tar compressed
	skopeo copy -q --src-tls-verify=false "docker://$PLAIN/raw:gz" "oci:$WORK/lay:gz"
	[ "$(sha256sum <"$WORK/lay/blobs/sha256/${LG#sha256:}" | cut -d' ' -f1)" = "${LG#sha256:}" ]
	zcat "$WORK/lay/blobs/sha256/${LG#sha256:}" | cmp - "$XDG_CACHE_HOME/aisb/blobs/sha256/${L0#sha256:}"
	# the same push again: the same bytes, the same digest
	run --separate-stderr "$AISB" push --tls-verify=false --compression-format gzip raw "$PLAIN/raw:gz2"
	[ "$output" = "$G" ]
	# pulled back into a fresh store, it runs with the same contents
	XDG_CACHE_HOME=$WORK/cache4 run --separate-stderr sbimg --tls-verify=false --image "$PLAIN/raw:gz" -- /bin/cat /marker
	[ "$output" = fleet-marker ]
	# zstd, and its level
	run --separate-stderr "$AISB" push --tls-verify=false --compression-format zstd --compression-level 9 raw "$PLAIN/raw:zs"
	[ "$status" -eq 0 ]
	[[ "$output" != "$G" && "$output" != "$P" ]]
	[[ "$(remote_layers "$PLAIN/raw:zs" | tail -1)" == "application/vnd.oci.image.layer.v1.tar+zstd "* ]]
	XDG_CACHE_HOME=$WORK/cache5 run --separate-stderr sbimg --tls-verify=false --image "$PLAIN/raw:zs" -- /bin/cat /marker
	[ "$output" = fleet-marker ]
	# usage errors (the controls: the pushes above)
	run "$AISB" push --tls-verify=false --compression-format none raw "$PLAIN/raw:x"
	[ "$status" -eq 2 ]
	[[ "$output" == *"use gzip or zstd"* ]]
	run "$AISB" push --tls-verify=false --compression-level 5 raw "$PLAIN/raw:x"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--compression-level needs --compression-format"* ]]
	run "$AISB" push --tls-verify=false --compression-format gzip --compression-level 12 raw "$PLAIN/raw:x"
	[ "$status" -eq 2 ]
	# an image compressed already: nothing to do, the pin's digest
	run --separate-stderr "$AISB" build --tls-verify=false -t gzb -f Plain .
	Z=$("$AISB" images --format '{{.Name}} {{.Digest}}' | awk '$1 == "localhost/gzb:latest" { print $2 }')
	run --separate-stderr "$AISB" push --tls-verify=false --compression-format gzip gzb "$PLAIN/gzb:v1"
	[ "$status" -eq 0 ]
	[ "$output" = "$Z" ]
	[[ "$stderr" == *"(none was: the layers go as stored)"* ]]
}

@test "push: TLS + basic auth from the auth files; refused without or with wrong credentials, never printed" {
	run "$AISB" pull -q "oci:$W/bb:v1"
	run "$AISB" push "oci:$W/bb:v1" "$TLS/pushb:v1"
	[ "$status" -eq 125 ]
	[[ "$output" == *"is not trusted"*"--cert-dir"* ]]
	run "$AISB" push --cert-dir "$W/tls/ca" "oci:$W/bb:v1" "$TLS/pushb:v1"
	[ "$status" -eq 125 ]
	[[ "$output" == *"requires a login and no credentials"* ]]
	run "$AISB" push -v --cert-dir "$W/tls/ca" --authfile "$WORK/bad.json" "oci:$W/bb:v1" "$TLS/pushb:v1"
	[ "$status" -eq 125 ]
	[[ "$output" == *"denied push to 'pushb' with the stored credentials"* ]]
	clean
	# control: $REGISTRY_AUTH_FILE, the file pull reads too
	REGISTRY_AUTH_FILE=$WORK/good.json run "$AISB" push -v --cert-dir "$W/tls/ca" "oci:$W/bb:v1" "$TLS/pushb:v1"
	[ "$status" -eq 0 ]
	[[ "$output" == *"$(cat "$W/bb.digest")"* ]]
	clean
	! grep -q "$PW" "$W/tls/log" || false
}

@test "push: bearer token flow asks for a push scope with the stored credentials; a wrong password is refused" {
	export PROXY_PASSWORD=tokpw-canary-4242
	port=$(start_proxy token)
	printf '{"auths":{"127.0.0.1:%s":{"auth":"%s"}}}' "$port" "$(printf 'aisb:nope-canary-77' | base64)" >"$WORK/tbad.json"
	printf '{"auths":{"127.0.0.1:%s":{"auth":"%s"}}}' "$port" "$(printf 'aisb:%s' "$PROXY_PASSWORD" | base64)" >"$WORK/tgood.json"
	run "$AISB" pull -q "oci:$W/bb:v1"
	run "$AISB" push --tls-verify=false --authfile "$WORK/tbad.json" "oci:$W/bb:v1" "127.0.0.1:$port/tok:v1"
	[ "$status" -eq 125 ]
	[[ "$output" == *"refused the stored credentials for a push token of 'tok'"* ]]
	[[ "$output" != *nope-canary* ]]
	run --separate-stderr "$AISB" push --tls-verify=false --authfile "$WORK/tgood.json" "oci:$W/bb:v1" "127.0.0.1:$port/tok:v1"
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat "$W/bb.digest")" ]
	[[ "$stderr" != *"$PROXY_PASSWORD"* && "$stderr" != *tok-push* ]]
	grep -q '^GET /token?scope=repository%3Atok%3Apull%2Cpush&service=test' "$WORK/proxy.log"
	grep -q '^PUT /v2/tok/manifests/v1 tok-push$' "$WORK/proxy.log"
	# control for the scope: a pull with the same credentials asks for pull only
	export AISB_STORE=$WORK/fresh
	run "$AISB" pull -q --tls-verify=false --authfile "$WORK/tgood.json" "127.0.0.1:$port/tok:v1"
	[ "$status" -eq 0 ]
	grep -q '^GET /token?scope=repository%3Atok%3Apull&service=test' "$WORK/proxy.log"
}

@test "push: an upload location on another origin is refused; the registry's own is used (control)" {
	run "$AISB" pull -q "oci:$W/bb:v1"
	port=$(start_proxy relocate)
	run "$AISB" push --tls-verify=false "oci:$W/bb:v1" "127.0.0.1:$port/reloc:v1"
	[ "$status" -eq 125 ]
	[[ "$output" == *"sent an upload location on another origin: refused"* ]]
	! grep -q '^PUT ' "$WORK/proxy.log" || false
	kill "$(cat "$WORK/proxy.pid")"
	rm -f "$WORK/proxy" "$WORK/proxy.log"
	port=$(start_proxy forward)
	run "$AISB" push --tls-verify=false "oci:$W/bb:v1" "127.0.0.1:$port/reloc:v1"
	[ "$status" -eq 0 ]
	grep -q '^PUT /v2/reloc/blobs/uploads/' "$WORK/proxy.log"
}

@test "push: 503s are retried with backoff (each request, and an upload from its start); a registry that stays down fails" {
	run "$AISB" pull -q "oci:$W/bb:v1"
	port=$(start_proxy flaky)
	run --separate-stderr "$AISB" push --tls-verify=false "oci:$W/bb:v1" "127.0.0.1:$port/flaky:v1"
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	[ "$output" = "$(cat "$W/bb.digest")" ]
	[ "$(grep -c '^PUT /v2/flaky/blobs/uploads/' "$WORK/proxy.log")" -eq 3 ] # 503, then the two blobs
	[ "$(grep -c '^PUT /v2/flaky/manifests/v1' "$WORK/proxy.log")" -eq 2 ]
	kill "$(cat "$WORK/proxy.pid")"
	rm -f "$WORK/proxy" "$WORK/proxy.log"
	port=$(start_proxy down)
	run "$AISB" push --tls-verify=false "oci:$W/bb:v1" "127.0.0.1:$port/flaky:v1"
	[ "$status" -eq 125 ]
	[[ "$output" == *"answered HTTP 503 (after 3 attempts)"* ]]
	[ "$(grep -c '^HEAD ' "$WORK/proxy.log")" -eq 3 ]
}

@test "push: a progress line only on a terminal" {
	need script
	run "$AISB" pull -q "oci:$W/bb:v1"
	run script -qec "'$AISB' push --tls-verify=false 'oci:$W/bb:v1' '$PLAIN/prog:v1'" /dev/null
	[ "$status" -eq 0 ]
	[[ "$output" == *" MB"*"/"*" MB"* ]]
	# control: without a terminal (and into another repository, so blobs are sent again)
	run --separate-stderr "$AISB" push --tls-verify=false "oci:$W/bb:v1" "$PLAIN/prog2:v1"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"2 blob(s) sent"* && "$stderr" != *$'\r'* ]]
}

@test "push: a bad destination or an image not in the store is refused; --help works (control)" {
	run "$AISB" push "oci:$W/bb:v1" "$PLAIN/x@$(cat "$W/bb.digest")"
	[ "$status" -eq 78 ]
	run "$AISB" push "oci:$W/bb:v1" "oci:$WORK/out"
	[ "$status" -eq 78 ]
	run "$AISB" push "oci:$W/bb:v1" "$PLAIN/x:v1"
	[ "$status" -eq 125 ]
	[[ "$output" == *"no image 'oci:$W/bb:v1' in the store"* ]]
	run "$AISB" push --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"aisb push"* ]]
}

# ---- save / load ----

@test "save/load: an OCI archive round trip keeps the manifest and config digests and every byte" {
	run "$AISB" pull -q --tls-verify=false "$PLAIN/bb:v1"
	[ "$status" -eq 0 ]
	digest=$output
	run "$AISB" save "$PLAIN/bb:v1" -o "$WORK/bb.tar"
	[ "$status" -eq 0 ]
	[ "$output" = "$digest" ]
	tar tf "$WORK/bb.tar" | grep -qx oci-layout
	# skopeo reads it as an oci-archive (interoperable) with the same digest
	run --separate-stderr skopeo inspect --format '{{.Digest}}' "oci-archive:$WORK/bb.tar"
	[ "$output" = "$digest" ]
	export AISB_STORE=$WORK/store2
	run --separate-stderr "$AISB" load -i "$WORK/bb.tar"
	[ "$status" -eq 0 ]
	[ "$output" = "$digest" ]
	run "$AISB" images --format '{{.Name}} {{.Digest}}'
	[ "$output" = "$PLAIN/bb:v1 $digest" ]
	# manifest, config and layer: the same bytes in both stores
	for b in "$XDG_CACHE_HOME"/aisb/blobs/sha256/*; do
		cmp "$b" "$WORK/store2/blobs/sha256/$(basename "$b")"
	done
	[ "$(ls "$XDG_CACHE_HOME/aisb/blobs/sha256" | wc -l)" -eq 3 ]
	# the loaded image runs
	run --separate-stderr sbimg --image "$PLAIN/bb:v1" -- /bin/cat /etc/motd
	[ "$status" -eq 0 ]
	[ "$output" = "hello from the image" ]
	# save again from the loaded store: the same archive, byte for byte
	run "$AISB" save "$PLAIN/bb:v1" -o "$WORK/bb2.tar"
	cmp "$WORK/bb.tar" "$WORK/bb2.tar"
}

@test "load: a corrupted archive is refused and leaves nothing pinned; the intact one loads (control)" {
	run "$AISB" pull -q "oci:$W/bb:v1"
	run "$AISB" save "oci:$W/bb:v1" -o "$WORK/bb.tar"
	[ "$status" -eq 0 ]
	cp "$WORK/bb.tar" "$WORK/bad.tar"
	# flip one byte in the middle of the layer (the largest member)
	off=$($PY -c 'import tarfile,sys; t=tarfile.open(sys.argv[1]); m=max(t.getmembers(), key=lambda m: m.size); print(m.offset_data + m.size//2)' "$WORK/bad.tar")
	$PY -c 'import sys; p,o=sys.argv[1],int(sys.argv[2]); f=open(p,"r+b"); f.seek(o); b=f.read(1); f.seek(o); f.write(bytes([b[0]^0xff]))' "$WORK/bad.tar" "$off"
	export AISB_STORE=$WORK/store2
	run "$AISB" load -i "$WORK/bad.tar"
	[ "$status" -ne 0 ]
	[[ "$output" == *"hashes to"*"refused"* ]]
	[ -z "$(ls -A "$WORK/store2/refs")" ]
	run --separate-stderr "$AISB" load -i "$WORK/bb.tar"
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat "$W/bb.digest")" ]
	# a name that is not a registry reference stays the archive's
	run "$AISB" images --format '{{.Name}}'
	[ "$output" = "oci-archive:$WORK/bb.tar" ]
	run "$AISB" save nope:v1 -o "$WORK/x.tar"
	[ "$status" -ne 0 ]
	[ ! -e "$WORK/x.tar" ]
}

@test "load: a docker save archive (podman's default format) loads under its RepoTags name and runs" {
	skopeo copy -q "oci:$W/bb:v1" "docker-archive:$WORK/d.tar:example.com/team/bb:v1"
	run --separate-stderr "$AISB" load -i "$WORK/d.tar"
	[ "$status" -eq 0 ]
	[[ "$output" == sha256:* ]]
	run "$AISB" images --format '{{.Name}}'
	[ "$output" = example.com/team/bb:v1 ]
	run --separate-stderr sbimg --image example.com/team/bb:v1 -- /bin/cat /etc/motd
	[ "$status" -eq 0 ]
	[ "$output" = "hello from the image" ]
	# control: a tar that is neither is refused and pins nothing
	tar cf "$WORK/none.tar" -C "$PROJ" marker
	run "$AISB" load -i "$WORK/none.tar"
	[ "$status" -eq 78 ]
	[[ "$output" == *"not an OCI archive"* ]]
	[ "$("$AISB" images --format '{{.Name}}')" = example.com/team/bb:v1 ]
}

# ---- the fleet workflow (docs/images.md, "A fleet: build once, pull by digest") ----

@test "fleet: build -> push -> fresh store -> pull by digest -> run, as documented" {
	run "$AISB" build --tls-verify=false -t agent:1 -f Plain .
	[ "$status" -eq 0 ]
	run --separate-stderr "$AISB" push --tls-verify=false agent:1 "$PLAIN/fleet/agent:1"
	[ "$status" -eq 0 ]
	digest=$output
	[[ "$digest" == sha256:* ]]
	# a CI runner: nothing of the builder's store
	export AISB_STORE=$WORK/runner-store
	run "$AISB" pull -q --tls-verify=false "$PLAIN/fleet/agent@$digest"
	[ "$status" -eq 0 ]
	[ "$output" = "$digest" ]
	run --separate-stderr sbimg --image "$PLAIN/fleet/agent@$digest" -- /bin/cat /marker
	[ "$status" -eq 0 ]
	[ "$output" = fleet-marker ]
	# the same bytes as the build: the runner's store holds the builder's manifest
	cmp "$WORK/runner-store/blobs/sha256/${digest#sha256:}" "$XDG_CACHE_HOME/aisb/blobs/sha256/${digest#sha256:}"
	# control: a digest the registry does not have fails the pull
	run "$AISB" pull -q --tls-verify=false "$PLAIN/fleet/agent@$(cat "$W/bb2.digest")"
	[ "$status" -eq 125 ]
}
