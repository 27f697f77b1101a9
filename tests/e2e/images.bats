#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# images.bats — `aisb pull/images/rmi/inspect/update` against real local components: OCI layouts
# built by lib/images/*.sh and *.py, Debian's docker-registry on 127.0.0.1 (plain HTTP, and TLS from
# a test CA with htpasswd basic auth), skopeo to push, and a small HTTP front (proxy.py) for the
# bearer-token flow and truncated downloads. Never any address but 127.0.0.1.
# Inner commands are single-quoted on purpose: they expand inside the sandbox.
# shellcheck disable=SC2016,SC2030,SC2031

bats_require_minimum_version 1.5.0

AISB_BIN=${AISB_BIN:-aisb}
load lib/common # require_feature, need
AISB=$AISB_BIN

IMG=$BATS_TEST_DIRNAME/lib/images
PY=/usr/bin/python3

biggest_blob() { # LAYOUT -> path of its largest blob (the busybox layer)
	find "$1/blobs/sha256" -type f -printf '%s %p\n' | sort -n | tail -1 | cut -d' ' -f2
}

setup_file() {
	export W=$BATS_FILE_TMPDIR
	"$IMG/mk-busybox-oci.sh" "$W/bb" v1 >"$W/bb.digest"
	# a second, different image for update tests (busybox + one more layer)
	$PY "$IMG/craft-layer.py" setuid "$W/extra.tar"
	cp -r "$W/bb" "$W/bb2"
	$PY "$IMG/oci-layout.py" "$W/bb2" --tag v1 --cmd /bin/sh \
		"$(biggest_blob "$W/bb")" "$W/extra.tar" >/dev/null 2>&1 || true
	if command -v docker-registry >/dev/null && command -v skopeo >/dev/null; then
		"$IMG/registry.sh" start "$W/plain" >/dev/null
		"$IMG/registry.sh" start "$W/tls" tls >/dev/null
	fi
}

teardown_file() {
	"$IMG/registry.sh" stop "$BATS_FILE_TMPDIR/plain" || true
	"$IMG/registry.sh" stop "$BATS_FILE_TMPDIR/tls" || true
}

setup() {
	W=$BATS_FILE_TMPDIR
	export XDG_CACHE_HOME=$BATS_TEST_TMPDIR/cache
	export HOME=$BATS_TEST_TMPDIR/home
	mkdir -p "$HOME"
	# (a private run dir has no containers/auth.json: no credentials from the caller's)
	unset AISB_BASE_TTL_DAYS REGISTRY_AUTH_FILE
	private_run_dir
	STORE=$XDG_CACHE_HOME/aisb
}

teardown() {
	# a test's own registry (the pins test) and proxies never outlive it, even when it fails
	"$IMG/registry.sh" stop "$BATS_TEST_TMPDIR/reg" 2>/dev/null || true
	for f in "$BATS_TEST_TMPDIR"/proxy-*.pid; do
		[ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
	done
	private_run_dir_done
}

plain() { cat "$W/plain/port"; }
tlsport() { cat "$W/tls/port"; }

skopeo() {
	[ -f "$W/skopeo-auth.json" ] || echo '{"auths":{}}' >"$W/skopeo-auth.json"
	REGISTRY_AUTH_FILE=$W/skopeo-auth.json command skopeo "$@"
}

push_plain() { # SRC-LAYOUT:TAG NAME:TAG
	skopeo copy -q --dest-tls-verify=false "oci:$1" "docker://127.0.0.1:$(plain)/$2"
}

count() { # PATTERN LOG
	grep -c -- "$1" "$2" || true
}

store_is_empty() {
	[ -z "$(ls -A "$STORE/refs")" ] || { echo "refs: $(ls "$STORE/refs")"; return 1; }
	[ -z "$(ls -A "$STORE/rootfs")" ] || { echo "rootfs left"; return 1; }
	[ -z "$(ls -A "$STORE/tmp")" ] || { echo "tmp left: $(ls "$STORE/tmp")"; return 1; }
	[ -z "$(ls -A "$STORE/blobs/sha256")" ] || { echo "blobs left: $(ls "$STORE/blobs/sha256")"; return 1; }
}

rootfs_of() {
	"$AISB" inspect "$1" | sed -n 's/.*"rootfs":"\(.*\)",*/\1/p'
}

size_of() { # NAME -> the unpacked Size `aisb images` shows for it, in bytes
	"$AISB" images --format json | $PY -c 'import json,sys; print(next(i["Size"] for i in json.load(sys.stdin) if i["Name"] == sys.argv[1]))' "$1"
}

pulled_size() { # REF -> the Size of REF pulled into a store of its own
	AISB_STORE=$BATS_TEST_TMPDIR/size-store "$AISB" pull -q "$1" >/dev/null
	AISB_STORE=$BATS_TEST_TMPDIR/size-store size_of "$1"
}

start_proxy() { # MODE -> port
	local f=$BATS_TEST_TMPDIR/proxy-$1
	$PY "$IMG/proxy.py" "$1" "$(plain)" "$f" </dev/null >"$f.out" 2>&1 3>&- &
	echo $! >"$f.pid"
	for _ in $(seq 50); do [ -s "$f" ] && break; sleep 0.1; done
	cat "$f"
}

stop_proxy() {
	kill "$(cat "$BATS_TEST_TMPDIR/proxy-$1.pid")" 2>/dev/null || true
}

# ---- references ----

@test "a bad reference is exit 78; a good one pulls (control)" {
	for ref in 'UPPER/case' 'x@sha256:12' 'a b' 'ubuntu:' 'http://x/y' 'oci:'; do
		run "$AISB" pull "$ref"
		[ "$status" -eq 78 ] || { echo "$ref: $status $output"; false; }
		[[ "$output" == *"not an image reference"* ]]
	done
	run "$AISB" pull "oci:$W/bb:v1"
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat "$W/bb.digest")" ] || [[ "$output" == *"$(cat "$W/bb.digest")"* ]]
}

# ---- offline sources ----

@test "oci: layout by tag: images, inspect, rmi" {
	run "$AISB" pull -q "oci:$W/bb:v1"
	[ "$status" -eq 0 ]
	run "$AISB" images
	[ "$status" -eq 0 ]
	[[ "$output" == *"oci:$W/bb:v1"*"$(cat "$W/bb.digest")"* ]]
	run "$AISB" inspect "oci:$W/bb:v1"
	[ "$status" -eq 0 ]
	[[ "$output" == *'"IMAGE_VAR=from-image"'* ]]
	[[ "$output" == *'"WorkingDir":"/work"'* ]]
	root=$(rootfs_of "oci:$W/bb:v1")
	[ -x "$root/bin/busybox" ]
	[ "$(cat "$root/etc/motd")" = "hello from the image" ]
	run "$AISB" rmi "oci:$W/bb:v1"
	[ "$status" -eq 0 ]
	store_is_empty
	run "$AISB" inspect "oci:$W/bb:v1"
	[ "$status" -ne 0 ]
	# an unknown tag in a layout is a clear error
	run "$AISB" pull "oci:$W/bb:nope"
	[ "$status" -eq 125 ]
	[[ "$output" == *"no image tagged 'nope'"* ]]
}

@test "the busybox layout is reproducible" {
	"$IMG/mk-busybox-oci.sh" "$BATS_TEST_TMPDIR/again" v1 >"$BATS_TEST_TMPDIR/d"
	[ "$(cat "$BATS_TEST_TMPDIR/d")" = "$(cat "$W/bb.digest")" ]
}

@test "oci-archive: and docker-archive: sources" {
	tar -C "$W/bb" -cf "$BATS_TEST_TMPDIR/bb-oci.tar" .
	run "$AISB" pull -q "oci-archive:$BATS_TEST_TMPDIR/bb-oci.tar:v1"
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat "$W/bb.digest")" ]
	need skopeo
	skopeo copy -q "oci:$W/bb:v1" "docker-archive:$BATS_TEST_TMPDIR/bb-docker.tar:bb:v1"
	run "$AISB" pull -q "docker-archive:$BATS_TEST_TMPDIR/bb-docker.tar"
	[ "$status" -eq 0 ]
	root=$(rootfs_of "docker-archive:$BATS_TEST_TMPDIR/bb-docker.tar")
	[ -x "$root/bin/busybox" ]
	run "$AISB" inspect "docker-archive:$BATS_TEST_TMPDIR/bb-docker.tar"
	[[ "$output" == *'"IMAGE_VAR=from-image"'* ]]
}

# podman on a private storage of this test (vfs: no mounts; rootless works here without subuids
# for these root-owned busybox files)
pm() {
	podman --root "$BATS_TEST_TMPDIR/proot" --runroot "$BATS_TEST_TMPDIR/prun" --storage-driver vfs "$@"
}

pm_add() { # LAYOUT:TAG NAME -> the layout's image in pm's storage as NAME (skopeo: `podman pull
	# oci:DIR` would name it after DIR, which has capitals here)
	skopeo copy -q "oci:$1" "containers-storage:[vfs@$BATS_TEST_TMPDIR/proot+$BATS_TEST_TMPDIR/prun]$2"
}

@test "load: podman's oci-archive is pinned under the name it records (podman 4.3: the whole name in ref.name) and runs by it; Size is the pulled image's" {
	need podman skopeo
	local t=$BATS_TEST_TMPDIR want
	pm_add "$W/bb:v1" example.com/team/bb:v1
	pm save -q --format oci-archive -o "$t/o.tar" example.com/team/bb:v1
	# measured: podman 4.3 writes ref.name = the whole name and no io.containerd.image.name
	tar -xOf "$t/o.tar" index.json | grep -q '"annotations":{"org.opencontainers.image.ref.name":"example.com/team/bb:v1"}'
	run --separate-stderr "$AISB" load -i "$t/o.tar"
	echo "$output $stderr"
	[ "$status" -eq 0 ]
	[[ "$output" == sha256:* ]]
	[[ "$stderr" == *"loaded example.com/team/bb:v1: $output"* ]]
	run "$AISB" images --format '{{.Name}}'
	[ "$output" = example.com/team/bb:v1 ]
	want=$(pulled_size "oci:$W/bb:v1")
	[ "$want" -gt 0 ]
	[ "$(size_of example.com/team/bb:v1)" = "$want" ]
	# a second load (the tree is there: nothing unpacked, nothing counted) keeps the size
	"$AISB" load -q -i "$t/o.tar" >/dev/null
	[ "$(size_of example.com/team/bb:v1)" = "$want" ]
	image_run_available
	run --separate-stderr "$AISB" run --no-cwd --net none --image example.com/team/bb:v1 -- /bin/cat /etc/motd
	[ "$status" -eq 0 ]
	[ "$output" = "hello from the image" ]
	# a pull of the file pins it under the file's name and the recorded one
	export AISB_STORE=$t/pullstore
	run "$AISB" pull -q "oci-archive:$t/o.tar"
	[ "$status" -eq 0 ]
	run "$AISB" images --format '{{.Name}}'
	[ "$output" = "example.com/team/bb:v1
oci-archive:$t/o.tar" ]
}

@test "load: podman save -m (docker-archive) of two images with three tags pins every name; Size right on a second load" {
	need podman skopeo
	local t=$BATS_TEST_TMPDIR d1 d2
	pm_add "$W/bb:v1" example.com/team/bb:v1
	pm tag example.com/team/bb:v1 localhost/bb:a
	pm_add "$W/bb2:v1" 127.0.0.1:5000/x/bb2:b
	pm save -q -m -o "$t/d.tar" example.com/team/bb:v1 localhost/bb:a 127.0.0.1:5000/x/bb2:b
	# what podman records: one manifest.json entry per image, every tag in its RepoTags
	tar -xOf "$t/d.tar" manifest.json | $PY -c 'import json,sys; m=json.load(sys.stdin); print(sorted(sorted(e["RepoTags"]) for e in m))' >"$t/tags"
	[ "$(cat "$t/tags")" = "[['127.0.0.1:5000/x/bb2:b'], ['example.com/team/bb:v1', 'localhost/bb:a']]" ]
	run --separate-stderr "$AISB" load -i "$t/d.tar"
	echo "$output $stderr"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 2 ] # one digest per image
	run "$AISB" images --format '{{.Name}} {{.Digest}}'
	echo "$output"
	[ "${#lines[@]}" -eq 3 ]
	d1=$("$AISB" images --format '{{.Name}} {{.Digest}}' | sed -n 's|^example.com/team/bb:v1 ||p')
	d2=$("$AISB" images --format '{{.Name}} {{.Digest}}' | sed -n 's|^127.0.0.1:5000/x/bb2:b ||p')
	[[ "$d1" == sha256:* ]] && [[ "$d2" == sha256:* ]] && [ "$d1" != "$d2" ]
	[[ "$output" == *"localhost/bb:a $d1"* ]]
	[ "$(size_of example.com/team/bb:v1)" = "$(pulled_size "oci:$W/bb:v1")" ]
	[ "$(size_of localhost/bb:a)" = "$(size_of example.com/team/bb:v1)" ]
	[ "$(size_of 127.0.0.1:5000/x/bb2:b)" = "$(pulled_size "oci:$W/bb2:v1")" ]
	# the second load finds every tree made: it said 0 B before
	"$AISB" load -q -i "$t/d.tar" >/dev/null
	[ "$(size_of localhost/bb:a)" = "$(pulled_size "oci:$W/bb:v1")" ]
	[ "$(size_of 127.0.0.1:5000/x/bb2:b)" = "$(pulled_size "oci:$W/bb2:v1")" ]
	image_run_available
	# localhost/bb:a is what podman calls a local image: the short name finds it, as a local build
	run --separate-stderr "$AISB" run --no-cwd --net none --image bb:a -- /bin/cat /etc/motd
	[ "$status" -eq 0 ]
	[ "$output" = "hello from the image" ]
	run --separate-stderr "$AISB" run --no-cwd --net none --image 127.0.0.1:5000/x/bb2:b -- /bin/true
	[ "$status" -eq 0 ]
	# control: a pull of the file takes one image, and this one has two
	run "$AISB" pull -q "docker-archive:$t/d.tar"
	[ "$status" -eq 78 ]
	[[ "$output" == *"holds 2 images: 'aisb load -i FILE' loads each under its names"* ]]
}

@test "load: an archive that records no name is pinned as oci-archive:FILE and says so; a name of another digest is skipped, said" {
	need skopeo
	local t=$BATS_TEST_TMPDIR other
	# skopeo writes the bare tag in ref.name: a tag, not an image name
	skopeo copy -q "oci:$W/bb:v1" "oci-archive:$t/tag.tar:v1"
	run --separate-stderr "$AISB" load -i "$t/tag.tar"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"records no registry name for image $output: pinned as oci-archive:$t/tag.tar"* ]]
	[ "$("$AISB" images --format '{{.Name}}')" = "oci-archive:$t/tag.tar" ]
	# a recorded NAME@DIGEST of another image is not this image's name
	other=sha256:$(printf '%064d' 0)
	mkdir "$t/lay"
	tar -C "$t/lay" -xf "$t/tag.tar"
	$PY - "$t/lay/index.json" "example.com/x@$other" <<-'EOF'
		import json, sys
		p, name = sys.argv[1], sys.argv[2]
		i = json.load(open(p))
		i["manifests"][0]["annotations"] = {"io.containerd.image.name": name}
		json.dump(i, open(p, "w"))
	EOF
	tar -C "$t/lay" -cf "$t/lie.tar" .
	export AISB_STORE=$t/store2
	run --separate-stderr "$AISB" load -i "$t/lie.tar"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"ignoring the recorded name 'example.com/x@$other' (not a registry reference of this image)"* ]]
	[ "$("$AISB" images --format '{{.Name}}')" = "oci-archive:$t/lie.tar" ]
}

# ---- hostile layers ----

pull_crafted() { # KIND [ARG] -> runs aisb pull on a one-layer layout with that layer
	local d=$BATS_TEST_TMPDIR/crafted-$1
	$PY "$IMG/craft-layer.py" "$1" "$BATS_TEST_TMPDIR/$1.tar" "${2:-}"
	$PY "$IMG/oci-layout.py" "$d" --tag t "$BATS_TEST_TMPDIR/$1.tar" >/dev/null
	run "$AISB" pull -q "oci:$d:t"
}

@test "a layer with ../ is refused and leaves nothing" {
	pull_crafted dotdot
	[ "$status" -eq 125 ]
	[[ "$output" == *"'../escaped-dotdot' contains '..'"*"layer refused"* ]]
	store_is_empty
	[ ! -e "$STORE/escaped-dotdot" ] && [ ! -e "$STORE/tmp/escaped-dotdot" ]
}

@test "a layer with an absolute path is refused" {
	pull_crafted abspath
	[ "$status" -eq 125 ]
	[[ "$output" == *"is an absolute path"* ]]
	store_is_empty
}

@test "writing through an absolute symlink out of the root is refused" {
	mkdir -p "$BATS_TEST_TMPDIR/outside"
	pull_crafted symlink "$BATS_TEST_TMPDIR/outside"
	[ "$status" -eq 125 ]
	[[ "$output" == *"'esc/escaped-symlink' reaches outside the root through a symlink"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/outside/escaped-symlink" ]
	store_is_empty
}

@test "a hardlink escaping the root is refused" {
	echo secret >"$BATS_TEST_TMPDIR/hostfile"
	pull_crafted hardlink "$BATS_TEST_TMPDIR/hostfile"
	[ "$status" -eq 125 ]
	[[ "$output" == *"'hl' is a hardlink to a path outside the root"* ]]
	[ "$(stat -c %h "$BATS_TEST_TMPDIR/hostfile")" -eq 1 ]
	store_is_empty
}

@test "a layer deeper than 128 levels is refused, named by its limit; 128 levels pull (control)" {
	pull_crafted deep 129
	[ "$status" -eq 125 ]
	[[ "$output" == *"lies too deep below the root: over the unpack limit of 128 directory levels: layer refused"* ]]
	store_is_empty
	# a symlinked directory cannot hide the depth: l -> 100 levels, then 40 more through it
	pull_crafted deepsym
	[ "$status" -eq 125 ]
	[[ "$output" == *"(through a symlinked directory): over the unpack limit of 128 directory levels"* ]]
	store_is_empty
	pull_crafted deep 128
	[ "$status" -eq 0 ]
	root=$(rootfs_of "oci:$BATS_TEST_TMPDIR/crafted-deep:t")
	[ -f "$root/$(printf 'd/%.0s' $(seq 127))f" ]
}

@test "device nodes are skipped and counted; setuid bits are cleared" {
	pull_crafted device
	[ "$status" -eq 0 ]
	[[ "$output" == *"skipped 1 device node"* ]]
	root=$(rootfs_of "oci:$BATS_TEST_TMPDIR/crafted-device:t")
	[ -f "$root/ok" ]
	[ ! -e "$root/dev/evil" ]
	pull_crafted setuid
	[ "$status" -eq 0 ]
	[[ "$output" == *"cleared setuid/setgid bits on 1 file"* ]]
	root=$(rootfs_of "oci:$BATS_TEST_TMPDIR/crafted-setuid:t")
	[ "$(stat -c %a "$root/bin/suid")" = 755 ]
}

@test "whiteouts and opaque directories delete across layers" {
	$PY "$IMG/craft-layer.py" lower "$BATS_TEST_TMPDIR/lower.tar"
	$PY "$IMG/craft-layer.py" upper "$BATS_TEST_TMPDIR/upper.tar"
	gzip -n "$BATS_TEST_TMPDIR/upper.tar"
	$PY "$IMG/oci-layout.py" "$BATS_TEST_TMPDIR/wh" --tag t "$BATS_TEST_TMPDIR/lower.tar" \
		"$BATS_TEST_TMPDIR/upper.tar.gz" >/dev/null
	run "$AISB" pull -q "oci:$BATS_TEST_TMPDIR/wh:t"
	[ "$status" -eq 0 ]
	root=$(rootfs_of "oci:$BATS_TEST_TMPDIR/wh:t")
	[ -f "$root/a/keep" ] && [ ! -e "$root/a/gone" ]
	[ ! -e "$root/b/old" ] && [ ! -e "$root/b/sub" ] && [ -f "$root/b/new" ]
	[ -f "$root/c.txt" ]
	[ -z "$(find "$root" -name '.wh.*')" ]
}

# ---- registries ----

@test "registry: a multi-layer image with whiteouts (later layers fetched ahead) gives the layout's tree; one GET per blob" {
	need docker-registry skopeo
	$PY "$IMG/craft-layer.py" lower "$BATS_TEST_TMPDIR/lower.tar"
	$PY "$IMG/craft-layer.py" upper "$BATS_TEST_TMPDIR/upper.tar"
	gzip -n "$BATS_TEST_TMPDIR/upper.tar"
	# busybox under the two: three layers, the last two downloaded while the first unpacks
	$PY "$IMG/oci-layout.py" "$BATS_TEST_TMPDIR/wh" --tag t "$(biggest_blob "$W/bb")" "$BATS_TEST_TMPDIR/lower.tar" \
		"$BATS_TEST_TMPDIR/upper.tar.gz" >/dev/null
	push_plain "$BATS_TEST_TMPDIR/wh:t" wh3:t
	run "$AISB" pull -q --tls-verify=false "127.0.0.1:$(plain)/wh3:t"
	[ "$status" -eq 0 ]
	root=$(rootfs_of "127.0.0.1:$(plain)/wh3:t")
	[ -x "$root/bin/busybox" ]
	[ -f "$root/a/keep" ] && [ ! -e "$root/a/gone" ]
	[ ! -e "$root/b/old" ] && [ ! -e "$root/b/sub" ] && [ -f "$root/b/new" ]
	[ -z "$(find "$root" -name '.wh.*')" ]
	for b in $(find "$BATS_TEST_TMPDIR/wh/blobs/sha256" -type f -size +1k -printf '%f\n'); do
		[ "$(count "GET /v2/wh3/blobs/sha256:$b" "$W/plain/log")" -le 1 ] || { echo "blob $b fetched twice"; false; }
	done
	# control: the same image from its layout (no registry, layers in turn) is the same tree
	run "$AISB" pull -q "oci:$BATS_TEST_TMPDIR/wh:t"
	[ "$status" -eq 0 ]
	diff -r --no-dereference "$root" "$(rootfs_of "oci:$BATS_TEST_TMPDIR/wh:t")"
}

@test "registry (plain HTTP): pull by tag and by digest; plain HTTP only with --tls-verify=false" {
	need docker-registry skopeo
	push_plain "$W/bb:v1" tagdig:v1
	run "$AISB" pull -q "127.0.0.1:$(plain)/tagdig:v1"
	[ "$status" -eq 125 ]
	[[ "$output" == *"needs --tls-verify=false"* ]]
	run "$AISB" pull -q --tls-verify=false "127.0.0.1:$(plain)/tagdig:v1"
	[ "$status" -eq 0 ]
	digest=$output
	[ "$digest" = "$(cat "$W/bb.digest")" ]
	run "$AISB" pull -q --tls-verify=false "127.0.0.1:$(plain)/tagdig@$digest"
	[ "$status" -eq 0 ]
	[ "$output" = "$digest" ]
	run "$AISB" images
	[[ "$output" == *"127.0.0.1:$(plain)/tagdig:v1 "* ]]
	[[ "$output" == *"127.0.0.1:$(plain)/tagdig@$digest"* ]]
	# an unknown tag
	run "$AISB" pull -q --tls-verify=false "127.0.0.1:$(plain)/tagdig:nope"
	[ "$status" -eq 125 ]
	[[ "$output" == *"no manifest 'nope'"* ]]
}

@test "registry (TLS + basic auth): wrong CA and auth failures are clear; credentials never printed" {
	need docker-registry skopeo
	pw=$(cat "$W/tls/password")
	skopeo copy -q --dest-cert-dir "$W/tls/ca" --dest-creds "aisb:$pw" "oci:$W/bb:v1" \
		"docker://127.0.0.1:$(tlsport)/auth:v1"
	ref=127.0.0.1:$(tlsport)/auth:v1
	run "$AISB" pull -q "$ref"
	[ "$status" -eq 125 ]
	[[ "$output" == *"TLS certificate of registry 127.0.0.1:$(tlsport) is not trusted"*"--cert-dir"* ]]
	run "$AISB" pull -q --cert-dir "$W/tls/ca" "$ref"
	[ "$status" -eq 125 ]
	[[ "$output" == *"requires a login and no credentials"* ]]
	mkdir -p "$BATS_TEST_TMPDIR/run/containers"
	printf '{"auths":{"127.0.0.1:%s":{"auth":"%s"}}}' "$(tlsport)" "$(printf 'aisb:wrong-canary' | base64)" \
		>"$BATS_TEST_TMPDIR/bad.json"
	run "$AISB" pull -v --cert-dir "$W/tls/ca" --authfile "$BATS_TEST_TMPDIR/bad.json" "$ref"
	[ "$status" -eq 125 ]
	[[ "$output" == *"denied access to 'auth' with the stored credentials"* ]]
	[[ "$output" != *wrong-canary* ]]
	# control: the right credentials from $XDG_RUNTIME_DIR/containers/auth.json
	printf '{"auths":{"127.0.0.1:%s":{"auth":"%s"}}}' "$(tlsport)" "$(printf 'aisb:%s' "$pw" | base64)" \
		>"$BATS_TEST_TMPDIR/run/containers/auth.json"
	XDG_RUNTIME_DIR=$BATS_TEST_TMPDIR/run run "$AISB" pull -v --cert-dir "$W/tls/ca" "$ref"
	[ "$status" -eq 0 ]
	[[ "$output" == *"$(cat "$W/bb.digest")"* ]]
	[[ "$output" != *"$pw"* ]]
}

@test "registry: a progress line only on a terminal" {
	need docker-registry skopeo script
	push_plain "$W/bb:v1" progress:v1
	run script -qec "'$AISB' pull --tls-verify=false 127.0.0.1:$(plain)/progress:v1" /dev/null
	[ "$status" -eq 0 ]
	[[ "$output" == *" MB"* ]]
	# control: the same pull into a fresh store without a terminal draws nothing
	export XDG_CACHE_HOME=$BATS_TEST_TMPDIR/cache2
	run "$AISB" pull --tls-verify=false "127.0.0.1:$(plain)/progress:v1"
	[ "$status" -eq 0 ]
	[[ "$output" != *" MB"* ]]
}

@test "registry: anonymous bearer-token flow" {
	need docker-registry skopeo
	push_plain "$W/bb:v1" bb:v1
	port=$(start_proxy bearer)
	run "$AISB" pull -q --tls-verify=false "127.0.0.1:$port/bb:v1"
	stop_proxy bearer
	[ "$status" -eq 0 ]
	grep -q '^GET /token?scope=repository%3Abb%3Apull&service=test' "$BATS_TEST_TMPDIR/proxy-bearer.log"
}

# Pushes the busybox image as NAME:v1, flips the byte at Python index INDEX of its layer in the
# registry's storage, pulls (expects a refusal naming the digest and an empty store), restores
# the blob and pulls again (the control). Layers stream into the unpack while they download.
pull_corrupted() { # NAME INDEX
	need docker-registry skopeo
	push_plain "$W/bb:v1" "$1:v1"
	layer=$(basename "$(biggest_blob "$W/bb")")
	data=$W/plain/data/docker/registry/v2/blobs/sha256/${layer:0:2}/$layer/data
	cp "$data" "$BATS_TEST_TMPDIR/orig"
	$PY -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b['"$2"']^=0xff; open(p,"wb").write(b)' "$data"
	run "$AISB" pull -q --tls-verify=false "127.0.0.1:$(plain)/$1:v1"
	cp "$BATS_TEST_TMPDIR/orig" "$data"
	[ "$status" -eq 125 ]
	[[ "$output" == *"blob sha256:$layer: content hashes to"*"refused (corrupted or tampered)"* ]]
	store_is_empty
	run "$AISB" pull -q --tls-verify=false "127.0.0.1:$(plain)/$1:v1"
	[ "$status" -eq 0 ]
	[ -x "$(rootfs_of "127.0.0.1:$(plain)/$1:v1")/bin/busybox" ]
}

@test "a corrupted blob is refused and leaves nothing; restored, it pulls (control)" {
	pull_corrupted corrupt 'len(b)//2'
}

@test "a blob corrupted in its last byte, after its unpack finished, is refused and leaves nothing; restored, it pulls (control)" {
	# the gzip trailer comes after the tar's end: the tree is complete before the digest
	# fails, and must still go
	pull_corrupted corrupt-end -1
}

@test "oci: a layout whose layer is corrupted is refused and leaves nothing; restored, it pulls (control)" {
	cp -r "$W/bb" "$BATS_TEST_TMPDIR/bb"
	blob=$(biggest_blob "$BATS_TEST_TMPDIR/bb")
	cp "$blob" "$BATS_TEST_TMPDIR/orig"
	chmod u+w "$blob"
	$PY -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[len(b)//2]^=0xff; open(p,"wb").write(b)' "$blob"
	run "$AISB" pull -q "oci:$BATS_TEST_TMPDIR/bb:v1"
	[ "$status" -eq 125 ]
	[[ "$output" == *"blob sha256:$(basename "$blob"): content hashes to"*"refused"* ]]
	store_is_empty
	cp "$BATS_TEST_TMPDIR/orig" "$blob"
	run "$AISB" pull -q "oci:$BATS_TEST_TMPDIR/bb:v1"
	[ "$status" -eq 0 ]
}

@test "a zstd layer pulls from a layout and from the registry, the same tree as its gzip twin" {
	need docker-registry skopeo zstd
	layer=$(biggest_blob "$W/bb")
	gzip -dc <"$layer" | zstd -q -3 >"$BATS_TEST_TMPDIR/layer.tar.zst"
	$PY "$IMG/oci-layout.py" "$BATS_TEST_TMPDIR/zst" --tag v1 --cmd /bin/sh "$BATS_TEST_TMPDIR/layer.tar.zst" >/dev/null
	run "$AISB" pull -q "oci:$BATS_TEST_TMPDIR/zst:v1"
	[ "$status" -eq 0 ]
	push_plain "$BATS_TEST_TMPDIR/zst:v1" zst:v1
	run "$AISB" pull -q --tls-verify=false "127.0.0.1:$(plain)/zst:v1"
	[ "$status" -eq 0 ]
	run "$AISB" pull -q "oci:$W/bb:v1"
	[ "$status" -eq 0 ]
	zroot=$(rootfs_of "127.0.0.1:$(plain)/zst:v1")
	groot=$(rootfs_of "oci:$W/bb:v1")
	[ -x "$zroot/bin/busybox" ]
	diff -r --no-dereference "$zroot" "$groot"
}

@test "every layer media type of the image and distribution specs pulls from the registry, the same tree; a foreign layer's urls are never followed; an unknown type is refused" {
	need docker-registry zstd
	local t=$BATS_TEST_TMPDIR layer mt kind lay n=0 ref root groot
	layer=$(biggest_blob "$W/bb")
	gzip -dc <"$layer" >"$t/layer.tar"
	cp "$layer" "$t/layer.tar.gz"
	zstd -q -3 <"$t/layer.tar" >"$t/layer.tar.zst"
	for kind in tar tar.gz tar.zst; do
		$PY "$IMG/oci-layout.py" "$t/$kind" --tag v1 --cmd /bin/sh "$t/layer.$kind" >/dev/null
	done
	run "$AISB" pull -q "oci:$W/bb:v1"
	[ "$status" -eq 0 ]
	groot=$(rootfs_of "oci:$W/bb:v1")
	# LAYOUT MEDIA-TYPE [--docker]: the blobs as they are, the manifest naming the type
	while read -r lay mt docker; do
		n=$((n + 1))
		ref=127.0.0.1:$(plain)/mt$n:v1
		$PY "$IMG/reg-put.py" "$t/$lay" v1 "$ref" --layer-type "$mt" $docker >/dev/null
		run "$AISB" pull -q --tls-verify=false "$ref"
		echo "$mt: $status $output"
		[ "$status" -eq 0 ]
		root=$(rootfs_of "$ref")
		[ -x "$root/bin/busybox" ]
		diff -r --no-dereference "$root" "$groot"
	done <<-EOF
	tar application/vnd.oci.image.layer.v1.tar
	tar.gz application/vnd.oci.image.layer.v1.tar+gzip
	tar.zst application/vnd.oci.image.layer.v1.tar+zstd
	tar application/vnd.oci.image.layer.nondistributable.v1.tar
	tar.gz application/vnd.oci.image.layer.nondistributable.v1.tar+gzip
	tar.zst application/vnd.oci.image.layer.nondistributable.v1.tar+zstd
	tar application/vnd.docker.image.rootfs.diff.tar --docker
	tar.gz application/vnd.docker.image.rootfs.diff.tar.gzip --docker
	EOF
	# Docker's foreign layer (Windows base layers, licensed content): its "urls" are other places
	# the blob MAY come from (image spec, descriptor.md); aisb asks the registry only, so a
	# foreign layer the registry holds pulls (the URL, a port nothing listens on, is never
	# asked: the pull succeeds), and one it lacks is refused naming the reason
	# (a registry of its own: docker-registry refuses layer urls unless its config allows them)
	local uport
	uport=$("$IMG/registry.sh" start "$BATS_TEST_TMPDIR/reg" urls)
	ref=127.0.0.1:$uport/mtforeign:v1
	$PY "$IMG/reg-put.py" "$t/tar.gz" v1 "$ref" --docker --urls "http://127.0.0.1:9/foreign-layer" \
		--layer-type application/vnd.docker.image.rootfs.foreign.diff.tar.gzip >/dev/null
	run "$AISB" pull -q --tls-verify=false "$ref"
	echo "foreign: $status $output"
	[ "$status" -eq 0 ]
	diff -r --no-dereference "$(rootfs_of "$ref")" "$groot"
	ref=127.0.0.1:$uport/mtforeign-away:v1
	$PY "$IMG/reg-put.py" "$t/tar.gz" v1 "$ref" --docker --urls "http://127.0.0.1:9/foreign-layer" --no-layers \
		--layer-type application/vnd.docker.image.rootfs.foreign.diff.tar.gzip >/dev/null
	XDG_CACHE_HOME=$t/fresh run "$AISB" pull -q --tls-verify=false "$ref"
	echo "foreign, not on the registry: $status $output"
	[ "$status" -eq 125 ]
	[[ "$output" == *"is missing on registry 127.0.0.1:$uport: it is a foreign layer whose manifest lists other URLs for it, and aisb fetches layers from the registry only"* ]]
	# refusal: a type no spec defines
	$PY "$IMG/reg-put.py" "$t/tar.gz" v1 "127.0.0.1:$(plain)/mtbad:v1" --layer-type application/vnd.example.layer >/dev/null
	run "$AISB" pull -q --tls-verify=false "127.0.0.1:$(plain)/mtbad:v1"
	[ "$status" -eq 78 ]
	[[ "$output" == *"a layer has an unsupported media type"* ]]
}

@test "podman pulls the uncompressed Docker layer type and runs it; aisb pulls podman's v2s2 push of it" {
	need docker-registry podman
	[ "$(id -u)" = 0 ] || skip "podman with a private storage root needs root here (the user run has no subuids)"
	local t=$BATS_TEST_TMPDIR ref id pm
	gzip -dc <"$(biggest_blob "$W/bb")" >"$t/layer.tar"
	$PY "$IMG/oci-layout.py" "$t/lay" --tag v1 --cmd /bin/sh "$t/layer.tar" >/dev/null
	ref=127.0.0.1:$(plain)/v2s2:v1
	$PY "$IMG/reg-put.py" "$t/lay" v1 "$ref" --layer-type application/vnd.docker.image.rootfs.diff.tar --docker >/dev/null
	# (root here lacks CAP_SYS_RESOURCE: podman run needs the lower limits, docs/machine-facts.md)
	pm=(podman --root "$t/proot" --runroot "$t/prun" --storage-driver vfs)
	"${pm[@]}" pull -q --tls-verify=false "$ref" >"$t/id"
	run "${pm[@]}" run --rm --network none --ulimit nofile=20000:20000 --ulimit nproc=32768:32768 "$(cat "$t/id")" /bin/busybox echo podman-ran
	echo "$output"
	[ "$output" = podman-ran ]
	"${pm[@]}" push -q --format v2s2 --tls-verify=false "$(cat "$t/id")" "127.0.0.1:$(plain)/v2s2back:v1"
	run "$AISB" pull -q --tls-verify=false "127.0.0.1:$(plain)/v2s2back:v1"
	echo "$output"
	[ "$status" -eq 0 ]
	run "$AISB" run --no-cwd --net none --image "127.0.0.1:$(plain)/v2s2back:v1" -- /bin/busybox echo aisb-ran
	echo "$output"
	[ "${lines[-1]}" = aisb-ran ]
}

@test "a layer whose uncompressed bytes are not the config's diff_id is refused and leaves no tree; the true one pulls (control)" {
	local t=$BATS_TEST_TMPDIR
	$PY "$IMG/oci-layout.py" "$t/lie" --tag v1 --cmd /bin/sh --wrong-diff-id "$(biggest_blob "$W/bb")" >/dev/null
	run "$AISB" pull -q "oci:$t/lie:v1"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"the image config's diff_id says sha256:"* ]]
	store_is_empty
	$PY "$IMG/oci-layout.py" "$t/true" --tag v1 --cmd /bin/sh "$(biggest_blob "$W/bb")" >/dev/null
	run "$AISB" pull -q "oci:$t/true:v1"
	[ "$status" -eq 0 ]
}

@test "a truncated download is retried, then refused, and leaves nothing" {
	need docker-registry skopeo
	push_plain "$W/bb:v1" bb:v1
	port=$(start_proxy truncate)
	run "$AISB" pull -q --tls-verify=false "127.0.0.1:$port/bb:v1"
	stop_proxy truncate
	[ "$status" -eq 125 ]
	[[ "$output" == *"download truncated (after 3 attempts): refused"* ]]
	store_is_empty
}

@test "two concurrent pulls download each blob once" {
	need docker-registry skopeo
	push_plain "$W/bb:v1" conc:v1
	layer=$(basename "$(biggest_blob "$W/bb")")
	before=$(count "GET /v2/conc/blobs/sha256:$layer" "$W/plain/log")
	"$AISB" pull -q --tls-verify=false "127.0.0.1:$(plain)/conc:v1" >"$BATS_TEST_TMPDIR/o1" 2>&1 &
	p1=$!
	"$AISB" pull -q --tls-verify=false "127.0.0.1:$(plain)/conc:v1" >"$BATS_TEST_TMPDIR/o2" 2>&1 &
	p2=$!
	wait $p1
	wait $p2
	after=$(count "GET /v2/conc/blobs/sha256:$layer" "$W/plain/log")
	[ $((after - before)) -eq 1 ]
	[ "$(cat "$BATS_TEST_TMPDIR/o1")" = "$(cat "$W/bb.digest")" ]
	[ "$(cat "$BATS_TEST_TMPDIR/o2")" = "$(cat "$W/bb.digest")" ]
}

@test "pins: a pull asks the registry each time (one manifest read, no blob again); a run within the TTL asks nothing; offline uses the pin and says so" {
	need docker-registry skopeo
	# a registry of its own, so it can be stopped
	d=$BATS_TEST_TMPDIR/reg
	port=$("$IMG/registry.sh" start "$d")
	skopeo copy -q --dest-tls-verify=false "oci:$W/bb:v1" "docker://127.0.0.1:$port/ttl:v1"
	ref=127.0.0.1:$port/ttl:v1
	m() { count "GET /v2/ttl/manifests/v1" "$d/log"; }
	run "$AISB" pull -q --tls-verify=false "$ref"
	[ "$status" -eq 0 ]
	[ "$(m)" -eq 1 ]
	# an explicit pull re-resolves the tag (as podman's does), however fresh its pin
	run "$AISB" pull -q --tls-verify=false "$ref"
	[ "$status" -eq 0 ]
	[ "$(m)" -eq 2 ]
	[ "$(count "GET /v2/ttl/blobs/" "$d/log")" -eq 2 ] # config + layer, once
	# the run path within the TTL: the pin, no request (after the counts: the run of the
	# layout stores the same blobs)
	image_run_available
	run --separate-stderr "$AISB" run --no-cwd --net none --image "$ref" -- /bin/true
	[ "$status" -eq 0 ]
	[ "$(m)" -eq 2 ]
	AISB_BASE_TTL_DAYS=-1 run --separate-stderr "$AISB" run --no-cwd --net none --image "$ref" -- /bin/true
	[ "$status" -eq 0 ]
	[ "$(m)" -eq 2 ]
	AISB_BASE_TTL_DAYS=soon run "$AISB" pull -q --tls-verify=false "$ref"
	[ "$status" -eq 78 ]
	"$IMG/registry.sh" stop "$d"
	run "$AISB" pull -q --tls-verify=false "$ref"
	[ "$status" -eq 0 ]
	[[ "$output" == *"registry unreachable: using the pinned digest $(cat "$W/bb.digest")"* ]]
}

@test "pull of a tag that moved on the registry moves the pin and says so; an unmoved tag (control) and a digest say nothing" {
	need docker-registry skopeo
	push_plain "$W/bb:v1" mv:v1
	ref=127.0.0.1:$(plain)/mv:v1
	run --separate-stderr "$AISB" pull -q --tls-verify=false "$ref"
	[ "$status" -eq 0 ]
	old=$output
	# control: the tag did not move: the same digest, no word of moving
	run --separate-stderr "$AISB" pull --tls-verify=false "$ref"
	[ "$status" -eq 0 ]
	[ "$output" = "$old" ]
	[[ "$stderr" != *moved* ]]
	push_plain "$W/bb2:v1" mv:v1
	run --separate-stderr "$AISB" pull -q --tls-verify=false "$ref"
	echo "$output $stderr"
	[ "$status" -eq 0 ]
	new=$output
	[[ "$new" == sha256:* ]] && [ "$new" != "$old" ]
	# said even with -q, once
	[ "$(grep -c moved <<<"$stderr")" -eq 1 ]
	[[ "$stderr" == *"aisb: $ref moved from $old to $new: the pin follows it"* ]]
	[ "$("$AISB" images --format '{{.Name}} {{.Digest}}')" = "$ref $new" ]
	[ "$(size_of "$ref")" -gt 0 ]
	# pulled again: nothing moves any more
	run --separate-stderr "$AISB" pull -q --tls-verify=false "$ref"
	[ "$output" = "$new" ]
	[[ "$stderr" != *moved* ]]
	# a digest never moves: the old one is what NAME@DIGEST pins, the tag's pin stays the new one
	run --separate-stderr "$AISB" pull -q --tls-verify=false "127.0.0.1:$(plain)/mv@$old"
	[ "$status" -eq 0 ]
	[ "$output" = "$old" ]
	[ -z "$stderr" ]
	run --separate-stderr "$AISB" pull -q --tls-verify=false "127.0.0.1:$(plain)/mv@$old"
	[ "$output" = "$old" ]
	[ -z "$stderr" ]
	run "$AISB" inspect "$ref"
	[[ "$output" == *"\"digest\":\"$new\""* ]]
}

@test "update --check shows pinned vs upstream and changes nothing; update moves the pin" {
	need docker-registry skopeo
	push_plain "$W/bb:v1" upd:v1
	ref=127.0.0.1:$(plain)/upd:v1
	run "$AISB" pull -q --tls-verify=false "$ref"
	[ "$status" -eq 0 ]
	old=$output
	run "$AISB" update --check --tls-verify=false "$ref"
	[ "$status" -eq 0 ]
	[[ "$output" == *"pinned $old"*"upstream $old"*up-to-date* ]]
	push_plain "$W/bb2:v1" upd:v1
	run "$AISB" update --check --tls-verify=false "$ref"
	[ "$status" -eq 0 ]
	[[ "$output" == *update-available* ]]
	run "$AISB" inspect "$ref"
	[[ "$output" == *"\"digest\":\"$old\""* ]]
	run "$AISB" update --tls-verify=false "$ref"
	[ "$status" -eq 0 ]
	[[ "$output" == *updated* ]]
	run "$AISB" inspect "$ref"
	[[ "$output" != *"\"digest\":\"$old\""* ]]
}

# ---- run --image ----

image_run_available() {
	run "$AISB" run --no-cwd --image "oci:$W/bb:v1" -- /bin/true
	if [[ "$output" == *"not available yet"* ]]; then
		[ "${AISB_MUST_WORK:-0}" = 1 ] && { echo "aisb run --image is not wired"; return 1; }
		skip "aisb run --image is not wired in this build"
	fi
}

@test "run --image: a bad reference is exit 78" {
	image_run_available
	run --separate-stderr "$AISB" run --no-cwd --image 'Bad Ref' -- /bin/true
	[ "$status" -eq 78 ]
}

@test "run --image: runs on the image; its Env and WorkingDir apply; writes do not reach the store" {
	image_run_available
	run --separate-stderr "$AISB" run --no-cwd --image "oci:$W/bb:v1" -- /bin/sh -c \
		'cat /etc/motd; echo $IMAGE_VAR; pwd; id -u; echo x >/etc/motd && echo wrote; rm -rf /usr && echo rmdir-ok'
	[ "$status" -eq 0 ]
	[[ "$output" == *"hello from the image"*"from-image"*"/work"*1000*wrote*rmdir-ok* ]]
	root=$(rootfs_of "oci:$W/bb:v1")
	[ "$(cat "$root/etc/motd")" = "hello from the image" ]
	[ -d "$root/usr" ]
	# the user's --env wins over the image's; the image never sets HOME
	run --separate-stderr "$AISB" run --no-cwd --env IMAGE_VAR=mine --image "oci:$W/bb:v1" -- /bin/sh -c 'echo $IMAGE_VAR $HOME'
	[ "$status" -eq 0 ]
	[ "$output" = "mine /home/sandbox" ]
	# no command: the image's Cmd (/bin/sh) reads stdin
	run --separate-stderr sh -c "echo 'echo via-cmd' | '$AISB' run --no-cwd --image 'oci:$W/bb:v1'"
	[ "$status" -eq 0 ]
	[ "$output" = via-cmd ]
}

@test "run: image = REF in the user config, and a bad one there is exit 78" {
	image_run_available
	export XDG_CONFIG_HOME=$BATS_TEST_TMPDIR/config
	mkdir -p "$XDG_CONFIG_HOME/aisb"
	echo "image = oci:$W/bb:v1" >"$XDG_CONFIG_HOME/aisb/config"
	run --separate-stderr "$AISB" run --no-cwd -- /bin/cat /etc/motd
	[ "$status" -eq 0 ]
	[ "$output" = "hello from the image" ]
	echo "image = Not A Ref" >"$XDG_CONFIG_HOME/aisb/config"
	run "$AISB" run --no-cwd -- /bin/true
	[ "$status" -eq 78 ]
}

@test "run --image --ephemeral: the upper is a tmpfs; the project is still read-write" {
	image_run_available
	mkdir -p "$BATS_TEST_TMPDIR/proj"
	cd "$BATS_TEST_TMPDIR/proj"
	run --separate-stderr "$AISB" run --ephemeral --image "oci:$W/bb:v1" -- /bin/sh -c 'echo y >/etc/new && cat /etc/new && echo p >out.txt'
	[ "$status" -eq 0 ]
	[ "$output" = y ]
	[ "$(cat "$BATS_TEST_TMPDIR/proj/out.txt")" = p ]
	root=$(rootfs_of "oci:$W/bb:v1")
	[ ! -e "$root/etc/new" ]
}

@test "run --image: a session that is not kept writes the image root to a bounded tmpfs, nothing to the state dir's disk; full is ENOSPC inside and the run goes on" {
	image_run_available
	export XDG_STATE_HOME=$BATS_TEST_TMPDIR/state
	mkdir -p "$BATS_TEST_TMPDIR/proj"
	cd "$BATS_TEST_TMPDIR/proj"
	# the default bound is half the memory limit (4 GiB), below half the RAM
	run --separate-stderr "$AISB" run --image "oci:$W/bb:v1" -- /bin/sh -c 'echo $(($(stat -f -c "%b*%S" /)))'
	[ "$status" -eq 0 ]
	ram=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024))
	want=$((2 << 30))
	if [ "$want" -le $((ram / 2)) ]; then
		[ "$output" = "$want" ]
	else # half the RAM, in whole pages (rounded either way: tmpfs rounds size= up)
		[ "$output" -ge $((ram / 2 / 4096 * 4096)) ] && [ "$output" -le $(((ram / 2 + 4095) / 4096 * 4096)) ]
	fi
	# the tmpfs upper keeps overlayfs's user xattrs (this kernel's tmpfs has them, 6.6+): a
	# directory of the image removed and made again (EIO on 6.1's tmpfs, tests/vm/guest.sh)
	run --separate-stderr "$AISB" run --image "oci:$W/bb:v1" -- /bin/sh -c 'rm -rf /usr && mkdir /usr && echo new >/usr/f && cat /usr/f'
	[ "$status" -eq 0 ]
	[ "$output" = new ]
	run "$AISB" run --image "oci:$W/bb:v1" --dry-run -- true
	[[ "$output" == *"upper on a tmpfs of half the memory limit (thrown away at exit)"* ]]
	# while the sandbox runs, its session dir holds no overlay dirs (the upper is in memory)
	AISB_TEST_UPPER_SIZE=4M "$AISB" run --image "oci:$W/bb:v1" -- /bin/sh -c '
		echo small >/small && cat /small
		dd if=/dev/zero of=/big bs=64k count=128 2>&1; echo "dd=$?"
		: >ready; while [ ! -e go ]; do sleep 0.05; done' >out.txt 2>&1 &
	pid=$!
	for _ in $(seq 200); do [ -e ready ] && break; sleep 0.05; done
	[ -e ready ]
	sess=$(session_dir)
	[ -f "$sess/plan.json" ]
	[ ! -e "$sess/overlay" ]
	# and the session itself is on the run dir's tmpfs: nothing of it in the state dir
	[ -d "$XDG_STATE_HOME/aisb/sessions" ] && [ -z "$(ls -A "$XDG_STATE_HOME/aisb/sessions")" ]
	: >go
	wait "$pid"
	cat out.txt
	grep -qx small out.txt
	grep -q "No space left on device" out.txt
	grep -qx "dd=1" out.txt
	# the host side is fine: the run ended normally, its session dir is gone, the store unchanged
	[ -d "$XDG_STATE_HOME/aisb/sessions" ] && [ -z "$(ls -A "$XDG_STATE_HOME/aisb/sessions")" ]
	[ -z "$(session_dirs)" ]
	root=$(rootfs_of "oci:$W/bb:v1")
	[ ! -e "$root/big" ] && [ ! -e "$root/small" ]
	run --separate-stderr "$AISB" run --image "oci:$W/bb:v1" -- /bin/sh -c 'ls /big /small 2>&1; echo next-run'
	[ "$status" -eq 0 ]
	[[ "$output" == *next-run ]]
	[[ "$output" != */big$'\n'* ]]
}

@test "run --image --keep: the upper is on disk, not bounded by the tmpfs, synced, and survives the run (control)" {
	image_run_available
	export XDG_STATE_HOME=$BATS_TEST_TMPDIR/state
	mkdir -p "$BATS_TEST_TMPDIR/proj"
	cd "$BATS_TEST_TMPDIR/proj"
	run --separate-stderr env AISB_TEST_UPPER_SIZE=4M "$AISB" run --keep --image "oci:$W/bb:v1" -- /bin/sh -c '
		dd if=/dev/zero of=/big bs=64k count=128 2>/dev/null; echo "dd=$?"
		grep " / overlay " /proc/self/mounts'
	[ "$status" -eq 0 ]
	[[ "$output" == "dd=0"*" / overlay "* ]]
	[[ "$output" != *volatile* ]]
	sess=$(sed -n 's/^aisb: session kept: //p' <<<"$stderr")
	[ -d "$sess" ]
	[ "$(stat -c %s "$sess/overlay/upper/big")" -eq $((128 * 65536)) ]
	root=$(rootfs_of "oci:$W/bb:v1")
	[ ! -e "$root/big" ]
	"$AISB" clean --all >/dev/null 2>&1
	[ ! -e "$sess" ]
}

@test "run --image without overlay (AISB_TEST_NO_OVERLAY=1): read-only root, tmpfs to write, announced once" {
	image_run_available
	mkdir -p "$BATS_TEST_TMPDIR/proj"
	cd "$BATS_TEST_TMPDIR/proj"
	run --separate-stderr env AISB_TEST_NO_OVERLAY=1 "$AISB" run --image "oci:$W/bb:v1" -- /bin/sh -c '
		cat /etc/motd
		echo x >/etc/motd 2>/dev/null && echo WROTE-ETC
		echo x >/new 2>/dev/null && echo WROTE-ROOT
		mkdir /usr/x 2>/dev/null && echo WROTE-USR
		echo t >/tmp/t && cat /tmp/t
		echo r >/run/r && cat /run/r
		echo v >/var/tmp/v && cat /var/tmp/v
		echo h >"$HOME/h" && cat "$HOME/h"
		echo p >p.txt && cat p.txt'
	[ "$status" -eq 0 ]
	[ "$output" = "hello from the image
t
r
v
h
p" ]
	[ "$(grep -c 'overlayfs with userxattr cannot be mounted' <<<"$stderr")" -eq 1 ]
	[ "$(cat "$BATS_TEST_TMPDIR/proj/p.txt")" = p ]
	root=$(rootfs_of "oci:$W/bb:v1")
	[ "$(cat "$root/etc/motd")" = "hello from the image" ]
	[ ! -e "$root/new" ] && [ ! -e "$root/tmp/t" ] && [ ! -e "$root/var/tmp/v" ]
	# the same fallback with the store under /tmp (a HOME or XDG_CACHE_HOME there, common in CI):
	# the hook refuses where the kernel would, after the upper's tmpfs went onto /tmp, and the
	# image is still found (it was opened before)
	local tmpstore
	tmpstore=$(mktemp -d /tmp/aisb-e2e-store.XXXXXX)
	run --separate-stderr env AISB_TEST_NO_OVERLAY=1 XDG_CACHE_HOME="$tmpstore" "$AISB" run --image "oci:$W/bb:v1" \
		-- /bin/sh -c 'cat /etc/motd; echo x >/new 2>/dev/null && echo WROTE-ROOT; true'
	rm -rf "$tmpstore"
	echo "$stderr"
	[ "$status" -eq 0 ]
	[ "$output" = "hello from the image" ]
	# control: without the hook the overlay is used, / is writable and nothing is announced
	run --separate-stderr "$AISB" run --image "oci:$W/bb:v1" -- /bin/sh -c 'echo x >/new && echo WROTE-ROOT'
	[ "$status" -eq 0 ]
	[ "$output" = WROTE-ROOT ]
	[[ "$stderr" != *"overlayfs with userxattr"* ]]
	[ ! -e "$root/new" ]
}

@test "run --image runs a registry image by tag and by digest" {
	image_run_available
	need docker-registry skopeo
	push_plain "$W/bb:v1" runimg:v1
	digest=$(cat "$W/bb.digest")
	# the run path has no --tls-verify flag: a plain-HTTP registry is reached through a pin made by pull
	run "$AISB" pull -q --tls-verify=false "127.0.0.1:$(plain)/runimg:v1"
	[ "$status" -eq 0 ]
	run --separate-stderr "$AISB" run --no-cwd --image "127.0.0.1:$(plain)/runimg:v1" -- /bin/cat /etc/motd
	[ "$status" -eq 0 ]
	[ "$output" = "hello from the image" ]
	run "$AISB" pull -q --tls-verify=false "127.0.0.1:$(plain)/runimg@$digest"
	run --separate-stderr "$AISB" run --no-cwd --image "127.0.0.1:$(plain)/runimg@$digest" -- /bin/cat /etc/motd
	[ "$status" -eq 0 ]
	[ "$output" = "hello from the image" ]
}

# The Debian minbase image is built once per e2e run (run.sh's AISB_E2E_WORK, shared by the root
# and the unprivileged pass, which reuses root's layout) or, when bats is run directly, once a day
# per user under /var/tmp. The mirror is the host's own apt mirror, read from its apt configuration.
@test "a Debian minbase image (mmdebstrap from the host's apt mirror) is pushed, pulled and run" {
	image_run_available
	need docker-registry skopeo
	require_feature mmdebstrap command -v mmdebstrap
	require_feature "a bookworm source in the apt configuration" $PY "$IMG/apt-mirror.py" bookworm
	layout=$("$IMG/mk-debian-oci.sh" "$(debian_cache)")
	[ -f "$layout/index.json" ]
	push_plain "$layout:bookworm" debian:minbase
	run "$AISB" pull -q --tls-verify=false "127.0.0.1:$(plain)/debian:minbase"
	[ "$status" -eq 0 ]
	run --separate-stderr "$AISB" run --no-cwd --image "127.0.0.1:$(plain)/debian:minbase" -- \
		/bin/sh -c 'cat /etc/debian_version; apt-get --version | head -1; id -un'
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" =~ ^12\.[0-9]+$ ]]
	[[ "${lines[1]}" == "apt 2."* ]]
	[ "${lines[2]}" = sandbox ]
}
