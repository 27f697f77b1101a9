#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck disable=SC2016 # single quotes: literal $ in expected output and inner sh -c
# tests/e2e/build.bats — `aisb build`: the recipe subset, the built-in recipe, context checks.
#
# The recipe subset and its refusals, the context checks, the native builder (busybox and a
# Debian minbase image, RUN through the gate to the host's apt mirror) and --builder podman.
load lib/common
bats_require_minimum_version 1.5.0

setup() { common_setup; }
teardown() {
	podman_cleanup
	[ -z "${SRV:-}" ] || kill "$SRV" 2>/dev/null || true
	common_teardown
}

# nothing_written: no state or cache dir was created by aisb, and the config dir holds only the
# config the suites write (common_setup)
nothing_written() {
	[ ! -e "$WORK/state" ] && [ ! -e "$WORK/cache" ] &&
		[ "$(find "$WORK/config" -mindepth 1 | sort | tr '\n' ' ')" = "$WORK/config/aisb $WORK/config/aisb/config " ]
}

@test "build: --print-containerfile prints the built-in recipe and touches nothing" {
	run "$AISB" build --print-containerfile
	[ "$status" -eq 0 ]
	[[ "$output" == *"FROM docker.io/library/ubuntu:24.04"* ]]
	[[ "$output" == *"git curl jq build-essential python3"* ]]
	[[ "$output" == *"ARG NODE_VERSION=22."* ]]
	[[ "$output" == *"SHASUMS256.txt"* ]]
	[[ "$output" == *"sha256sum -c node.sha256"* ]]
	[[ "$output" == *'npm install -g "@mariozechner/pi-coding-agent@${PI_VERSION}"'* ]]
	nothing_written
	[ -z "$(ls -A "$PROJ")" ]
}

@test "build: --install adds packages; a name that is not a package is refused (78)" {
	run "$AISB" build --print-containerfile --install ripgrep --install tmux
	[ "$status" -eq 0 ]
	[[ "$output" == *"python3 xz-utils fd-find ripgrep ripgrep tmux;"* ]]
	run "$AISB" build --print-containerfile --install 'jq;id'
	[ "$status" -eq 78 ]
	[[ "$output" == *"--install 'jq;id': not a Debian package name"* ]]
	[[ "$output" != *"FROM"* ]]
}

@test "build: -f prints that file with --print-containerfile; --install with -f is a usage error" {
	printf 'FROM debian:bookworm\nRUN true\n' > Containerfile
	run "$AISB" build -f Containerfile --print-containerfile
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'FROM debian:bookworm\nRUN true')" ]
	run "$AISB" build -f Containerfile --install jq --print-containerfile
	[ "$status" -eq 2 ]
}

@test "build: an unsupported instruction is refused by line; the supported file is accepted" {
	printf 'FROM debian:bookworm\nRUN true\nADD https://example.invalid/x /x\n' > bad
	run "$AISB" build -f bad --dry-run
	[ "$status" -eq 78 ]
	[[ "$output" == *"bad:3: ADD is not supported"* ]]
	# control: the same file with the subset's COPY passes the checks
	printf 'x\n' > x
	printf 'FROM debian:bookworm\nRUN true\nCOPY x /x\n' > good
	run "$AISB" build -f good --dry-run
	[ "$status" -eq 0 ]
	[[ "$output" == *"step 2/2 line 3 COPY 'x' -> '/x'"* ]]
	nothing_written
}

@test "build: multi-stage, COPY --from and the escape directive are refused by line" {
	printf 'FROM debian AS b\n' > f1
	run "$AISB" build -f f1 --dry-run
	[ "$status" -eq 78 ]
	[[ "$output" == *"f1:1: FROM ... AS: multi-stage builds are not supported"* ]]
	printf 'FROM debian\nCOPY --from=b /x /x\n' > f2
	run "$AISB" build -f f2 --dry-run
	[ "$status" -eq 78 ]
	[[ "$output" == *"f2:2: COPY --from"* ]]
	printf '# escape=`\nFROM debian\n' > f3
	run "$AISB" build -f f3 --dry-run
	[ "$status" -eq 78 ]
	[[ "$output" == *"f3:1:"*"escape"* ]]
}

@test "build: ARG, ENV, WORKDIR and --build-arg are evaluated; an undeclared build arg is refused" {
	cat > Containerfile <<-'EOF'
	ARG TAG=bookworm
	FROM debian:${TAG}
	ARG DIR=/opt/app
	ENV APP_HOME=$DIR
	WORKDIR $APP_HOME
	RUN echo "$DIR"
	EOF
	run "$AISB" build -f Containerfile --dry-run --build-arg TAG=trixie --build-arg DIR=/srv
	[ "$status" -eq 0 ]
	[[ "$output" == *"from: debian:trixie (line 2)"* ]]
	[[ "$output" == *"line 5 WORKDIR '/srv'"* ]]
	[[ "$output" == *"[user root, cwd /srv] '/bin/sh' '-c' 'echo \"\$DIR\"'"* ]]
	[[ "$output" == *"build-arg: DIR"* ]]
	[[ "$output" != *"/srv'"*"build-arg: DIR=/srv"* ]]
	run "$AISB" build -f Containerfile --dry-run --build-arg NOPE=1
	[ "$status" -eq 78 ]
	[[ "$output" == *"--build-arg NOPE is not declared by an ARG"* ]]
	run "$AISB" build -f Containerfile --dry-run --build-arg TAG
	[ "$status" -eq 2 ]
}

@test "build: a COPY source missing from the context, or left out by .containerignore, is refused" {
	mkdir -p app && printf 'a\n' > app/a.txt && printf 's\n' > app/secret.key
	printf 'FROM debian\nCOPY app/secret.key /k\n' > Containerfile
	# control: present
	run "$AISB" build -f Containerfile --dry-run
	[ "$status" -eq 0 ]
	printf 'app/*.key\n' > .containerignore
	run "$AISB" build -f Containerfile --dry-run
	[ "$status" -eq 78 ]
	[[ "$output" == *"line 2: COPY source 'app/secret.key' is not in the build context"* ]]
	printf 'FROM debian\nCOPY missing /m\n' > Containerfile
	run "$AISB" build -f Containerfile --dry-run
	[ "$status" -eq 78 ]
	[[ "$output" == *"COPY source 'missing'"* ]]
}

@test "build: the context can be another directory; COPY may not climb out of it" {
	mkdir -p ctx && printf 'x\n' > ctx/x
	printf 'FROM debian\nCOPY x /x\n' > Containerfile
	run "$AISB" build -f Containerfile --dry-run ctx
	[ "$status" -eq 0 ]
	[[ "$output" == *"context: ctx"* ]]
	printf 'FROM debian\nCOPY ../Containerfile /x\n' > ctx/Containerfile
	run "$AISB" build -f ctx/Containerfile --dry-run ctx
	[ "$status" -eq 78 ]
	[[ "$output" == *"outside the build context"* ]]
}

@test "build: with no -f the context's Containerfile (else Dockerfile) is built, as podman does; --default builds the built-in recipe" {
	printf 'FROM debian\nRUN true\n' > Containerfile
	run "$AISB" build --dry-run
	[ "$status" -eq 0 ]
	[[ "$output" == *"recipe: ./Containerfile"*"from: debian (line 1)"* ]]
	# a Dockerfile is the fallback, and CONTEXT is where both are looked for
	mkdir ctx
	printf 'FROM alpine\n' > ctx/Dockerfile
	run "$AISB" build --dry-run ctx
	[ "$status" -eq 0 ]
	[[ "$output" == *"recipe: ctx/Dockerfile"*"from: alpine (line 1)"* ]]
	# the built-in recipe is explicit
	run "$AISB" build --dry-run --default
	[ "$status" -eq 0 ]
	[[ "$output" == *"recipe: (built-in recipe)"*"from: docker.io/library/ubuntu:24.04"* ]]
	[[ "$output" == *"network: none for RUN (loopback only); the built-in recipe needs --allow archive.ubuntu.com"* ]]
	run "$AISB" build --dry-run --default --allow nodejs.org --add-host nodejs.org=192.0.2.7
	[ "$status" -eq 0 ]
	[[ "$output" == *"network: the gate, for the entries below"*"allow: nodejs.org"*"add-host: nodejs.org=192.0.2.7"* ]]
	# --install only makes sense for the built-in recipe: refused where the Containerfile is built
	run "$AISB" build --dry-run --install jq
	[ "$status" -eq 2 ]
	[[ "$output" == *"pass --default"* ]]
	run "$AISB" build --dry-run --default --install jq
	[ "$status" -eq 0 ]
	run "$AISB" build --dry-run --default -f Containerfile
	[ "$status" -eq 2 ]
	# a context with neither file still builds the built-in recipe
	rm Containerfile
	run "$AISB" build --dry-run
	[ "$status" -eq 0 ]
	[[ "$output" == *"recipe: (built-in recipe)"* ]]
}

@test "build: usage errors exit 2" {
	run "$AISB" build --builder docker --dry-run
	[ "$status" -eq 2 ]
	run "$AISB" build --no-such-flag
	[ "$status" -eq 2 ]
	run "$AISB" build a b
	[ "$status" -eq 2 ]
	run "$AISB" build --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--print-containerfile"* ]]
}

# mk_oci_busybox DIR: a one-layer static-busybox OCI layout tagged "latest", made with tar,
# gzip and sha256sum only.
mk_oci_busybox() {
	local out=$1 r="$WORK/bbr" t arch diff ld lsz cd csz md msz
	mkdir -p "$r/bin" "$r/etc" "$r/tmp" "$out/blobs/sha256"
	cp "$(command -v busybox)" "$r/bin/busybox"
	for t in sh cat echo ls id rm chown touch hostname; do ln -s busybox "$r/bin/$t"; done
	echo "root:x:0:0:root:/root:/bin/sh" >"$r/etc/passwd"
	echo "from the base" >"$r/etc/motd"
	tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$r" -cf "$WORK/l.tar" .
	diff=$(sha256sum <"$WORK/l.tar" | cut -d' ' -f1)
	gzip -n <"$WORK/l.tar" >"$WORK/l.tgz"
	ld=$(sha256sum <"$WORK/l.tgz" | cut -d' ' -f1)
	lsz=$(stat -c %s "$WORK/l.tgz")
	cp "$WORK/l.tgz" "$out/blobs/sha256/$ld"
	case "$(uname -m)" in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; *) arch=$(uname -m) ;; esac
	printf '{"architecture":"%s","os":"linux","config":{"Env":["PATH=/bin"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
		"$arch" "$diff" >"$WORK/c.json"
	cd=$(sha256sum <"$WORK/c.json" | cut -d' ' -f1)
	csz=$(stat -c %s "$WORK/c.json")
	cp "$WORK/c.json" "$out/blobs/sha256/$cd"
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' \
		"$cd" "$csz" "$ld" "$lsz" >"$WORK/m.json"
	md=$(sha256sum <"$WORK/m.json" | cut -d' ' -f1)
	msz=$(stat -c %s "$WORK/m.json")
	cp "$WORK/m.json" "$out/blobs/sha256/$md"
	printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"org.opencontainers.image.ref.name":"latest"}}]}' \
		"$md" "$msz" >"$out/index.json"
	printf '{"imageLayoutVersion":"1.0.0"}' >"$out/oci-layout"
}

@test "build: native: a RUN step and an --image run are process-bounded for every caller: a root caller's run as host uid 1879048192, bound by RLIMIT_NPROC; at kernel uid 0 (AISB_TEST_NO_IDMAP=1) by their pid namespace's pid_max (issue 22)" {
	require_feature "busybox" command -v busybox
	mk_oci_busybox "$WORK/bb"
	printf 'FROM oci:%s:latest\nRUN cat /proc/self/uid_map >/uidmap; cat /proc/sys/kernel/pid_max >/pidmax; cat /proc/self/limits >/limits\n' "$WORK/bb" >Containerfile
	local id
	if [ "$(id -u)" -eq 0 ]; then id=1879048192; else id=$(id -u); fi
	run "$AISB" build -f Containerfile -t pidmax-demo .
	[ "$status" -eq 0 ]
	[[ "$output" != *"kernel uid 0"* ]]
	run "$AISB" run --net none --image localhost/pidmax-demo -- sh -c 'cat /uidmap /pidmax; cat /proc/self/uid_map; cat /proc/sys/kernel/pid_max; cat /limits /proc/self/limits'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(awk '{print $1, $2, $3}' <<<"${lines[0]}")" = "0 $id 1" ]    # the step: root inside
	[ "$(awk '{print $1, $2, $3}' <<<"${lines[2]}")" = "1000 $id 1" ] # the run
	[ "${lines[1]}" != 4097 ] && [ "${lines[3]}" != 4097 ]
	# RLIMIT_NPROC 4096 in the step and in the run (no cgroups here) or cgroups
	[ "$(grep -c '^Max processes *4096 *4096' <<<"$output")" -eq 2 ] ||
		! "$AISB" doctor 2>/dev/null | grep -q '^warn cgroup'
	if [ "$(id -u)" -ne 0 ]; then
		return 0
	fi
	# kernel uid 0, which RLIMIT_NPROC does not bind: the step and the run get pid_max (in a
	# store of their own: the same recipe would be a cache hit)
	local rel=$(uname -r) major minor
	major=${rel%%.*} minor=${rel#*.} minor=${minor%%.*}
	require_feature "a per-namespace pid_max (Linux 6.14+; this is $rel)" \
		test "$major" -gt 6 -o \( "$major" -eq 6 -a "$minor" -ge 14 \)
	run env AISB_TEST_NO_IDMAP=1 AISB_STORE="$WORK/store0" "$AISB" build -f Containerfile -t pidmax-demo .
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"RUN steps run as kernel uid 0 ("*"AISB_TEST_NO_IDMAP=1"*"): their processes are bounded by their pid namespace's pid_max"* ]]
	run env AISB_TEST_NO_IDMAP=1 AISB_STORE="$WORK/store0" "$AISB" run --net none --image localhost/pidmax-demo -- sh -c 'cat /uidmap /pidmax; cat /proc/self/uid_map; cat /proc/sys/kernel/pid_max'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(awk '{print $1, $2}' <<<"${lines[0]}")" = "0 0" ]
	[ "${lines[1]}" = 4097 ] # the step
	[ "$(awk '{print $1, $2}' <<<"${lines[2]}")" = "1000 0" ]
	[ "${lines[3]}" = 4097 ] # the run
}

# layer_of STORE NAME: the last layer's digest of the pin NAME in STORE; layer_blob: its file
layer_of() {
	python3 -c 'import json,sys,glob
for f in glob.glob(sys.argv[1] + "/refs/*.json"):
    p = json.load(open(f))
    if p["name"] == sys.argv[2]:
        m = json.load(open(sys.argv[1] + "/blobs/sha256/" + p["digest"].split(":")[1]))
        print(m["layers"][-1]["digest"])' "$1" "$2"
}

@test "build: native: a root caller's RUN step off kernel uid 0 writes the very layer it wrote at kernel uid 0: the same digest, every entry owned by 0 in the layer and the image's tree the caller's (control: AISB_TEST_NO_IDMAP=1)" {
	require_feature "busybox" command -v busybox
	mk_oci_busybox "$WORK/bb"
	# what a step makes as root: dirs, a private file, a setuid one, a symlink, a copy-up of a
	# base file; times pinned (a whiteout's cannot be: it is the step's clock)
	cat > Containerfile <<-EOF
	FROM oci:$WORK/bb:latest
	RUN cat /proc/self/uid_map && mkdir -p /made/sub && echo f > /made/f && chmod 600 /made/f && echo s > /made/suid && chmod 4755 /made/suid && ln -s f /made/l && echo more >> /etc/passwd && busybox touch -h -t 200001010000 /made/l /made/f /made/suid /made/sub /made /etc/passwd /etc /
	EOF
	local m digest=()
	for m in 1 0; do
		run env AISB_TEST_NO_IDMAP=$m AISB_STORE="$WORK/store$m" "$AISB" build -f Containerfile -t same .
		echo "$output"
		[ "$status" -eq 0 ]
		if [ "$(id -u)" -eq 0 ] && [ "$m" = 0 ]; then
			grep -Eq '^ *0 +1879048192 +1 *$' <<<"$output"
		elif [ "$(id -u)" -eq 0 ]; then
			grep -Eq '^ *0 +0 +1 *$' <<<"$output"
		fi
		digest[$m]=$(layer_of "$WORK/store$m" localhost/same:latest)
		[[ "${digest[$m]}" == sha256:* ]]
	done
	echo "layer at kernel uid 0 ${digest[1]}, off it ${digest[0]}"
	[ "${digest[0]}" = "${digest[1]}" ]
	# the layer records root's files as root's
	tar -tv --numeric-owner -f "$WORK/store0/blobs/sha256/${digest[0]#sha256:}" >"$WORK/list"
	cat "$WORK/list"
	grep -q ' made/f$' "$WORK/list"
	[ "$(awk '{print $2}' "$WORK/list" | sort -u)" = "0/0" ]
	# the image's tree, made from the step's upper, is the caller's on the host, as before
	local tree
	tree=$(python3 -c 'import json,sys,glob
for f in glob.glob(sys.argv[1] + "/refs/*.json"):
    p = json.load(open(f))
    if p["name"] == "localhost/same:latest": print(sys.argv[1] + "/rootfs/" + p["rootfs"])' "$WORK/store0")
	[ -d "$tree/made" ]
	[ "$(find "$tree/made" "$tree/etc/passwd" -printf '%U:%G\n' | sort -u)" = "$(id -u):$(id -g)" ]
	[ "$(stat -c %a "$tree/made/f")" = 600 ]
}

@test "build: native: FROM an OCI layout with ENV, WORKDIR and COPY; aisb run sees them; cache hit; a change rebuilds" {
	require_feature "busybox" command -v busybox
	mk_oci_busybox "$WORK/bb"
	printf 'hello native\n' > greeting.txt
	mkdir -p sub && printf 'deep\n' > sub/d.txt
	cat > Containerfile <<-EOF
	FROM oci:$WORK/bb:latest
	ENV GREETING=hi PATH=/opt/x:\$PATH
	WORKDIR /app
	COPY greeting.txt ./
	COPY sub /app/sub/
	CMD ["cat", "/app/greeting.txt"]
	EOF
	run "$AISB" build -f Containerfile -t native-demo .
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "localhost/native-demo:latest" ]
	[[ "$output" == *"step 3/3 line 5 COPY"* ]]
	run "$AISB" run --net none --image localhost/native-demo -- sh -c 'cat /app/greeting.txt /app/sub/d.txt; echo "G=$GREETING P=$PATH"'
	[ "$status" -eq 0 ]
	[[ "$output" == *"hello native"* ]]
	[[ "$output" == *"deep"* ]]
	[[ "$output" == *"G=hi P=/opt/x:/bin"* ]]
	# images lists the tag, not the build cache's internal entry; -a shows both (podman's -a)
	run "$AISB" images
	[[ "$output" == *"localhost/native-demo:latest"* ]]
	[[ "$output" != *"localhost/aisb-build:"* ]]
	n=$((${#lines[@]} - 1)) # the base (oci:...) and the tag
	run "$AISB" images -a
	[[ "$output" == *"localhost/native-demo:latest"* && "$output" == *"localhost/aisb-build:"* ]]
	run "$AISB" images --format '{{.Repository}}|{{.Tag}}'
	[ "${#lines[@]}" -eq "$n" ]
	[[ "$output" == *"localhost/native-demo|latest"* && "$output" == *"oci:$WORK/bb|latest"* ]]
	run "$AISB" images -q
	[ "${#lines[@]}" -eq "$n" ]
	[[ "${lines[0]}" == sha256:* ]]
	# unchanged, and without -f (./Containerfile, as podman reads it): a cache hit that runs nothing
	run "$AISB" build -t native-demo .
	[ "$status" -eq 0 ]
	[[ "$output" == *"cache hit"* ]]
	[[ "$output" != *"step 1/3"* ]]
	# a changed context file: a new image under the same name
	printf 'changed\n' > greeting.txt
	run "$AISB" build -f Containerfile -t native-demo .
	[ "$status" -eq 0 ]
	[[ "$output" != *"cache hit"* ]]
	run "$AISB" run --net none --image localhost/native-demo -- cat /app/greeting.txt
	[ "${lines[0]}" = "changed" ]
}

# digest_of STORE NAME: the manifest digest the pin NAME in STORE has
digest_of() {
	AISB_STORE="$1" "$AISB" images --format '{{.Name}} {{.Digest}}' | awk -v n="$2" '$1 == n { print $2 }'
}

# created_of STORE NAME: the image config's "created" of the pin NAME in STORE
created_of() {
	local c
	c=$(AISB_STORE="$1" "$AISB" inspect "$2" | sed -n 's/^ *"config_digest":"sha256:\([0-9a-f]*\)".*/\1/p')
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["created"])' "$1/blobs/sha256/$c"
}

# next_second: returns once the clock's second has moved on (bounded: 3 s)
next_second() {
	local s i
	s=$(date +%s)
	for i in $(seq 300); do
		[ "$(date +%s)" != "$s" ] && return 0
		sleep 0.01
	done
	return 1
}

@test "build: native: a rebuild of an unchanged context is byte for byte the same image (manifest, config, layer); SOURCE_DATE_EPOCH clamps the times and --timestamp sets them; a changed file is another digest" {
	require_feature "busybox" command -v busybox
	mk_oci_busybox "$WORK/bb"
	printf 'hello\n' > greeting.txt
	mkdir -p sub && printf 'deep\n' > sub/d.txt
	touch -d @1600000000 greeting.txt # the context's own time, kept
	cat > Containerfile <<-EOF
	FROM oci:$WORK/bb:latest
	ENV GREETING=hi
	WORKDIR /app
	COPY greeting.txt ./
	COPY sub /app/sub/
	RUN mkdir -p /made && echo made > /made/f
	CMD ["cat", "/app/greeting.txt"]
	EOF
	local d1 d2 l
	# two stores: in one the second build would be a cache hit; a second apart, so that the
	# build's clock is not what makes them equal
	AISB_STORE="$WORK/s1" "$AISB" build -f Containerfile -t rep .
	next_second
	AISB_STORE="$WORK/s2" "$AISB" build -f Containerfile -t rep .
	d1=$(digest_of "$WORK/s1" localhost/rep:latest)
	d2=$(digest_of "$WORK/s2" localhost/rep:latest)
	echo "first $d1, second $d2"
	[[ "$d1" == sha256:* ]]
	[ "$d1" = "$d2" ]
	cmp "$WORK/s1/blobs/sha256/${d1#sha256:}" "$WORK/s2/blobs/sha256/${d2#sha256:}"
	# the layer: the context's mtime kept, what the build wrote at 0; created 0
	l=$(layer_of "$WORK/s1" localhost/rep:latest)
	tar -tvz --full-time -f "$WORK/s1/blobs/sha256/${l#sha256:}" >"$WORK/list"
	cat "$WORK/list"
	grep -Eq ' 2020-09-13 12:26:40 app/greeting.txt$' "$WORK/list"
	grep -Eq ' 1970-01-01 00:00:00 made/f$' "$WORK/list"
	grep -Eq ' 1970-01-01 00:00:00 app/$' "$WORK/list"
	[ "$(created_of "$WORK/s1" localhost/rep)" = 1970-01-01T00:00:00Z ]
	# SOURCE_DATE_EPOCH: created from it, a newer mtime clamped to it, an older one kept; the
	# same again a second later
	for s in 3 4; do
		next_second
		AISB_STORE="$WORK/s$s" SOURCE_DATE_EPOCH=1700000000 "$AISB" build -f Containerfile -t rep .
	done
	d1=$(digest_of "$WORK/s3" localhost/rep:latest)
	[ "$d1" = "$(digest_of "$WORK/s4" localhost/rep:latest)" ]
	[ "$d1" != "$d2" ]
	l=$(layer_of "$WORK/s3" localhost/rep:latest)
	tar -tvz --full-time -f "$WORK/s3/blobs/sha256/${l#sha256:}" >"$WORK/list"
	grep -Eq ' 2020-09-13 12:26:40 app/greeting.txt$' "$WORK/list"
	grep -Eq ' 2023-11-14 22:13:20 made/f$' "$WORK/list"
	[ "$(created_of "$WORK/s3" localhost/rep)" = 2023-11-14T22:13:20Z ]
	# --timestamp (podman's): every mtime and created; it wins over SOURCE_DATE_EPOCH
	AISB_STORE="$WORK/s5" SOURCE_DATE_EPOCH=1700000000 "$AISB" build --timestamp 1000000000 -f Containerfile -t rep .
	l=$(layer_of "$WORK/s5" localhost/rep:latest)
	tar -tvz --full-time -f "$WORK/s5/blobs/sha256/${l#sha256:}" >"$WORK/list"
	[ "$(awk '{print $4, $5}' "$WORK/list" | sort -u)" = "2001-09-09 01:46:40" ]
	[ "$(created_of "$WORK/s5" localhost/rep)" = 2001-09-09T01:46:40Z ]
	# a malformed SOURCE_DATE_EPOCH is refused, never ignored (the control: the builds above)
	run env AISB_STORE="$WORK/s6" SOURCE_DATE_EPOCH=yesterday "$AISB" build -f Containerfile -t rep .
	[ "$status" -eq 2 ]
	[[ "$output" == *"SOURCE_DATE_EPOCH='yesterday' is not seconds since 1970-01-01 UTC"* ]]
	run "$AISB" build --timestamp -1 -f Containerfile .
	[ "$status" -eq 2 ]
	# --builder podman cannot honour --timestamp: refused before podman runs
	run env AISB_STORE="$WORK/s6" "$AISB" build --builder podman --timestamp 0 -f Containerfile -t rep .
	[ "$status" -eq 78 ]
	[[ "$output" == *"--timestamp is the native builder's"* ]]
	# the control: a changed file (same size, same mtime) is another layer, another digest
	printf 'HELLO\n' > greeting.txt
	touch -d @1600000000 greeting.txt
	AISB_STORE="$WORK/s2" "$AISB" build -f Containerfile -t rep .
	d1=$(digest_of "$WORK/s2" localhost/rep:latest)
	echo "changed: $d1"
	[[ "$d1" == sha256:* ]]
	[ "$d1" != "$d2" ]
	run env AISB_STORE="$WORK/s2" "$AISB" run --net none --image localhost/rep -- cat /app/greeting.txt /made/f
	[ "${lines[0]}" = "HELLO" ] && [ "${lines[1]}" = "made" ]
}

@test "build: native: RUN runs as fakeroot without network; deletions become whiteouts; a failing RUN names its line" {
	require_feature "busybox" command -v busybox
	mk_oci_busybox "$WORK/bb"
	cat > Containerfile <<-EOF
	FROM oci:$WORK/bb:latest
	RUN echo "uid=\$(id -u) host=\$(hostname)" > /ran.txt && chown 123:456 /ran.txt && rm /etc/motd
	RUN ["sh", "-c", "cat /ran.txt /proc/self/limits"]
	EOF
	run "$AISB" build -f Containerfile -t native-run .
	[ "$status" -eq 0 ]
	# the degraded process limit of aisb run applies to each step
	[[ "$output" =~ Max\ processes\ +4096\ +4096 ]]
	[[ "$output" == *"step 1/2 line 2 RUN"* ]]
	[[ "$output" == *"uid=0 host=aisb-build"* ]]
	[[ "$output" == *"(1 whiteouts)"* ]]
	[ -n "$(find "$XDG_STATE_HOME/aisb" -name 'build-*.log' -size +0)" ]
	run "$AISB" run --net none --image localhost/native-run -- sh -c 'cat /ran.txt; cat /etc/motd 2>&1 || echo motd-gone'
	[ "$status" -eq 0 ]
	[[ "$output" == *"uid=0 host=aisb-build"* ]]
	[[ "$output" == *"motd-gone"* ]]
	# control: the base itself still has the file the build deleted
	printf 'FROM oci:%s/bb:latest\nRUN cat /etc/motd\n' "$WORK" > Base
	run "$AISB" build -f Base .
	[ "$status" -eq 0 ]
	[[ "$output" == *"from the base"* ]]
	# the build's allowlist is checked before anything runs: a bad entry, and an IP entry (which
	# would need pasta), are refused by name; nothing was built for them
	run "$AISB" build -f Containerfile --allow 'exa mple.org' .
	[ "$status" -eq 78 ]
	[[ "$output" == *"exa mple.org"* ]]
	run "$AISB" build -f Containerfile --allow 192.0.2.1 .
	[ "$status" -eq 78 ]
	[[ "$output" == *"IP and CIDR --allow entries need pasta"* ]]
	[[ "$output" != *"step 1/2"* ]]
	# a failing RUN: its line and exit code, and the store unchanged
	before=$(find "$XDG_CACHE_HOME/aisb/refs" -mindepth 1 | sort)
	printf 'FROM oci:%s/bb:latest\nRUN true\nRUN echo about to fail; exit 7\n' "$WORK" > Fail
	run "$AISB" build -f Fail -t native-fail .
	[ "$status" -eq 125 ]
	[[ "$output" == *"line 3: RUN exited 7; nothing was stored"* ]]
	[ "$(find "$XDG_CACHE_HOME/aisb/refs" -mindepth 1 | sort)" = "$before" ]
	[ -z "$(find "$XDG_CACHE_HOME/aisb/tmp" -mindepth 1)" ]
	# and a bad recipe is still reported before anything runs
	printf 'FROM debian\nVOLUME /x\n' > Bad
	run "$AISB" build -f Bad
	[ "$status" -eq 78 ]
	[[ "$output" == *"Bad:2: VOLUME is not supported"* ]]
}

@test "build: native: USER applies to the RUN steps after it; an unknown USER is refused by line" {
	require_feature "busybox" command -v busybox
	mk_oci_busybox "$WORK/bb"
	cat > Containerfile <<-EOF
	FROM oci:$WORK/bb:latest
	RUN echo "app:x:1000:1000::/home/app:/bin/sh" >> /etc/passwd && echo "app:x:1000:" > /etc/group
	USER app
	RUN echo "as \$(id -u):\$(id -g) home=\$HOME"; chown 0:0 /etc/motd 2>/dev/null && echo chowned || echo chown-refused
	USER 4242:7
	RUN echo "as \$(id -u):\$(id -g)"
	USER root
	RUN echo "as \$(id -u)"; chown 123:456 /etc/motd && echo chowned; busybox mkdir -p /usr/local/lib/node_modules/@s/p && echo '{"name":"@s/p","version":"1.2.3"}' > /usr/local/lib/node_modules/@s/p/package.json
	USER app
	EOF
	run "$AISB" build -f Containerfile -t native-user .
	[ "$status" -eq 0 ]
	[[ "$output" == *"step 2/4 line 4 RUN as USER app (uid 1000, gid 1000)"* ]]
	# the USER's ids and home; no fakeroot for it: its chown fails as it would under Docker
	[[ "$output" == *"as 1000:1000 home=/home/app"* ]]
	[[ "$output" == *"chown-refused"* ]]
	[[ "$output" == *"as 4242:7"* ]]
	# control: a root step's chown "succeeds" (fakeroot)
	[[ "$output" == *"as 0"*"chowned"* ]]
	# a global npm package is in the manifest (the image has no dpkg: only that line)
	run --separate-stderr "$AISB" run --net none --no-cwd --image native-user -- cat /etc/aisb/manifest.txt
	[ "$status" -eq 0 ]
	[ "$output" = "npm:@s/p 1.2.3" ]
	# an unknown name: refused with its line, nothing stored
	printf 'FROM oci:%s/bb:latest\nUSER nosuch\nRUN true\n' "$WORK" > Bad
	run "$AISB" build -f Bad -t native-user-bad .
	[ "$status" -eq 125 ]
	[[ "$output" == *"line 3: USER 'nosuch': no such user or group in the image's /etc/passwd"* ]]
	[ ! -e "$XDG_CACHE_HOME/aisb/refs/localhost/native-user-bad" ]
	[ -z "$(find "$XDG_CACHE_HOME/aisb/tmp" -mindepth 1)" ]
}

# tree_of NAME: the unpacked tree of the pin NAME in the store
tree_of() {
	python3 -c 'import json,sys,glob
for f in glob.glob(sys.argv[1] + "/refs/*.json"):
    p = json.load(open(f))
    if p["name"] == sys.argv[2]: print(sys.argv[1] + "/rootfs/" + p["rootfs"])' "$XDG_CACHE_HOME/aisb" "$1"
}

@test "build: native: the image's tree links the base's unchanged files; what RUN changed or deleted never reaches the base's tree" {
	require_feature "busybox" command -v busybox
	mk_oci_busybox "$WORK/bb"
	run "$AISB" pull -q "oci:$WORK/bb:latest"
	[ "$status" -eq 0 ]
	base=$(tree_of "oci:$WORK/bb:latest")
	[ -f "$base/etc/passwd" ]
	cat > Containerfile <<-EOF
	FROM oci:$WORK/bb:latest
	RUN echo appended >> /etc/passwd && rm /etc/motd && echo new > /new.txt
	EOF
	run "$AISB" build -f Containerfile -t linked .
	[ "$status" -eq 0 ]
	img=$(tree_of localhost/linked:latest)
	[ -n "$img" ] && [ "$img" != "$base" ]
	# an unchanged file is the same inode in both trees (the base's layers were not unpacked again)
	[ "$(stat -c %i "$img/bin/busybox")" = "$(stat -c %i "$base/bin/busybox")" ]
	# a changed file is a new inode in the image; the base keeps its content
	[ "$(stat -c %i "$img/etc/passwd")" != "$(stat -c %i "$base/etc/passwd")" ]
	grep -q appended "$img/etc/passwd"
	! grep -q appended "$base/etc/passwd" || false
	# a deleted one is gone from the image only; a new one is in the image only
	[ ! -e "$img/etc/motd" ] && [ "$(cat "$base/etc/motd")" = "from the base" ]
	[ -f "$img/new.txt" ] && [ ! -e "$base/new.txt" ]
	# and the image runs as built
	run "$AISB" run --net none --image localhost/linked -- sh -c 'cat /new.txt; cat /etc/motd 2>&1 || echo motd-gone'
	[ "$status" -eq 0 ]
	[[ "$output" == *"new"*"motd-gone"* ]]
}

@test "build: native: the image's tree made from the upper is the tree unpacked from its layer blob (whiteouts, opaque dirs, hardlinks, modes, xattrs)" {
	require_feature "busybox" command -v busybox
	mk_oci_busybox "$WORK/bb"
	# a base with what the second build replaces: a dir with files, a dir, a file, a symlink to a dir
	cat > Rich <<-EOF
	FROM oci:$WORK/bb:latest
	RUN for a in mkdir ln chmod mkfifo; do busybox ln -s busybox /bin/\$a; done && mkdir -p /etc/conf.d /opt/dtof /opt/gone /usr/lib && echo x > /opt/gone/x && echo a > /etc/conf.d/a && echo b > /etc/conf.d/b && echo i > /opt/dtof/inner && echo f > /opt/ftod && echo l > /usr/lib/liba && ln -s usr/lib /lib
	EOF
	run "$AISB" build -f Rich -t rich .
	[ "$status" -eq 0 ]
	# whiteouts (a file, a dir), opaque dirs (one over a symlink), a dir that became a file and the
	# reverse, a copy-up (overlay's origin xattr on the upper file), hardlinks (new files, and to a
	# copied-up one), setuid, sticky and private modes, a fifo, a symlink, an old mtime
	cat > Containerfile <<-'EOF'
	FROM localhost/rich:latest
	RUN set -e; rm /etc/motd; rm -rf /opt/gone; rm -rf /etc/conf.d; mkdir /etc/conf.d; echo new > /etc/conf.d/new; rm -rf /opt/dtof; echo file > /opt/dtof; rm /opt/ftod; mkdir /opt/ftod; echo in > /opt/ftod/in; rm /lib; mkdir /lib; echo own > /lib/own; echo more >> /etc/passwd; echo h > /h1; ln /h1 /h2; mkdir -p /deep/a/b; ln /h1 /deep/a/b/h3; ln /etc/passwd /passwd2; echo s > /suid; chmod 4755 /suid; mkdir /sticky; chmod 1777 /sticky; echo p > /priv; chmod 600 /priv; mkfifo /fifo; ln -s /etc/passwd /sym; echo o > /old; touch -t 202001020304 /old; chmod 750 /opt
	EOF
	run "$AISB" build -f Containerfile -t fromupper .
	[ "$status" -eq 0 ]
	[[ "$output" == *"(2 whiteouts)"* ]]
	built=$(tree_of localhost/fromupper:latest)
	rich=$(tree_of localhost/rich:latest)
	[ -n "$built" ] && [ -n "$rich" ]
	# the same image unpacked from its blobs alone, in another store (every layer by the unpacker)
	run "$AISB" save localhost/fromupper:latest -o "$WORK/img.tar"
	[ "$status" -eq 0 ]
	run env AISB_STORE="$WORK/store2" "$AISB" pull -q "oci-archive:$WORK/img.tar"
	[ "$status" -eq 0 ]
	# (the archive's recorded name and the oci-archive: pin are two pins of the one tree)
	unpacked=$(python3 -c 'import json,sys,glob
for f in glob.glob(sys.argv[1] + "/refs/*.json"):
    print(sys.argv[1] + "/rootfs/" + json.load(open(f))["rootfs"])' "$WORK/store2" | sort -u)
	[ "$(printf '%s\n' "$unpacked" | wc -l)" -eq 1 ]
	[ -d "$unpacked/etc" ]
	python3 "$BATS_TEST_DIRNAME/lib/tree-describe.py" "$built" > "$WORK/built.txt"
	python3 "$BATS_TEST_DIRNAME/lib/tree-describe.py" "$unpacked" > "$WORK/unpacked.txt"
	diff "$WORK/built.txt" "$WORK/unpacked.txt"
	# what the listings say: the unpacker's rules, in both
	grep -q '^deep/a/b/h3 0100644 .* -$' "$WORK/built.txt"
	grep -q '^h1 0100644 .* deep/a/b/h3$' "$WORK/built.txt"
	grep -q '^h2 0100644 .* deep/a/b/h3$' "$WORK/built.txt"
	grep -q '^passwd2 0100644 .* etc/passwd$' "$WORK/built.txt"
	grep -q '^suid 0100755 ' "$WORK/built.txt"
	grep -q '^sticky 0041777 ' "$WORK/built.txt"
	grep -q '^priv 0100600 ' "$WORK/built.txt"
	grep -q '^opt 0040750 ' "$WORK/built.txt"
	grep -q '^fifo 001' "$WORK/built.txt"
	grep -q '^lib 0040755 ' "$WORK/built.txt" && grep -q '^lib/own ' "$WORK/built.txt"
	grep -q '^etc/conf.d/new ' "$WORK/built.txt"
	grep -q '^opt/dtof 0100644 ' "$WORK/built.txt" && grep -q '^opt/ftod/in ' "$WORK/built.txt"
	! grep -qE '^(etc/motd|etc/conf.d/a|opt/dtof/inner|lib/liba) ' "$WORK/built.txt" || false
	! grep -q '\[[^]]' "$WORK/built.txt" || false # no xattr (overlay's origin was on the upper file)
	# control: the comparison tells trees apart (the base is not the image)
	python3 "$BATS_TEST_DIRNAME/lib/tree-describe.py" "$rich" > "$WORK/rich.txt"
	! diff -q "$WORK/rich.txt" "$WORK/built.txt" >/dev/null || false
	# the built image runs as built
	run "$AISB" run --net none --image localhost/fromupper -- sh -c 'cat /h2 /lib/own /etc/conf.d/new'
	[ "$status" -eq 0 ]
	[[ "$output" == *"h"*"own"*"new"* ]]
}

# mirror_host URL: the host part of an http(s) URL
mirror_host() { local h=${1#*://}; h=${h%%/*}; echo "${h%%:*}"; }

@test "build: native: RUN apt-get update && apt-get install -y jq through the gate to the host's apt mirror" {
	require_feature mmdebstrap command -v mmdebstrap
	require_feature "a bookworm source in the apt configuration" python3 "$BATS_TEST_DIRNAME/lib/images/apt-mirror.py" bookworm
	local layout mirror host addr before
	local -a pin=()
	layout=$("$BATS_TEST_DIRNAME/lib/images/mk-debian-oci.sh" "$(debian_cache)")
	[ -f "$layout/index.json" ]
	# the mirror this host uses, read now (the minbase image's sources.list names the same one)
	mirror=$(python3 "$BATS_TEST_DIRNAME/lib/images/apt-mirror.py" bookworm)
	host=$(mirror_host "$mirror")
	addr=$(getent ahostsv4 "$host" | awk 'NR == 1 { print $1 }')
	[ -n "$host" ] && [ -n "$addr" ]
	# a mirror at a non-global address (this farm's is in 203.0.113.0/24) is refused by the
	# gate's rebinding check unless pinned, as the user would pin it
	if ! python3 -c 'import ipaddress, sys; sys.exit(0 if ipaddress.ip_address(sys.argv[1]).is_global else 1)' "$addr"; then
		pin=(--add-host "$host=$addr")
	fi
	cat > Containerfile <<-EOF
	FROM oci:$layout:bookworm
	RUN apt-get update && apt-get install -y --no-install-recommends jq
	CMD ["jq", "--version"]
	EOF
	mkdir -p "$XDG_CACHE_HOME/aisb/refs"
	before=$(find "$XDG_CACHE_HOME/aisb/refs" -mindepth 1 -path '*aisb-build*' | sort)
	# refusal: no --allow, no network: the RUN fails, names its line, and nothing is stored
	run "$AISB" build -f Containerfile -t jq-demo .
	[ "$status" -eq 125 ]
	[[ "$output" == *"line 2: RUN exited 100; nothing was stored"* ]]
	[ "$(find "$XDG_CACHE_HOME/aisb/refs" -mindepth 1 -path '*aisb-build*' | sort)" = "$before" ]
	# refusal: another name allowed, the mirror is not: denied at the gate, and said with the fix
	run "$AISB" build -f Containerfile -t jq-demo --allow other.aisb.test .
	[ "$status" -eq 125 ]
	[[ "$output" == *"denied"*"$host:80"*"--allow $host"* ]]
	grep -q "\"host\":\"$host\".*\"decision\":\"deny\"" "$XDG_STATE_HOME"/aisb/build-*.egress.jsonl
	# control: the mirror allowed: apt-get works through the gate (proxy variables set for RUN)
	run "$AISB" build -f Containerfile -t jq-demo --allow "$host" "${pin[@]}" .
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "localhost/jq-demo:latest" ]
	[[ "$output" == *"Setting up jq"* ]]
	[[ "$output" != *"denied"* ]]
	grep -q "\"host\":\"$host\",\"port\":80,.*\"decision\":\"allow\"" "$XDG_STATE_HOME"/aisb/build-*.egress.jsonl
	# the image works at once under the name given to -t (a short name finds the local build
	# first); jq is in the manifest; the build's proxy settings are not in it
	run --separate-stderr "$AISB" run --net none --no-cwd --image jq-demo
	[ "$status" -eq 0 ]
	[[ "$output" == "jq-1."* ]]
	[[ "$stderr" == *"jq-demo: the local build localhost/jq-demo:latest"* ]]
	# a local name that was never built is an error, never a registry request
	run "$AISB" run --net none --no-cwd --image localhost/jq-nosuch -- true
	[ "$status" -eq 125 ]
	[[ "$output" == *"localhost/jq-nosuch:latest: no such local image"* ]]
	run "$AISB" run --net none --no-cwd --image localhost/jq-demo -- grep "^jq " /etc/aisb/manifest.txt
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "jq 1."* ]]
	# the build's proxy variables and resolver are not in the image. Read from the store, not
	# through aisb run, which drops proxy variables from an image's env and binds its own
	# resolv.conf: the image config, and the unpacked tree's /etc/resolv.conf
	read -r cfg tree < <(python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(p["config"].split(":")[1], p["rootfs"])' \
		"$(grep -l '"localhost/jq-demo:latest"' "$XDG_CACHE_HOME"/aisb/refs/*.json)")
	grep -q '"Env"' "$XDG_CACHE_HOME/aisb/blobs/sha256/$cfg"
	! grep -qi 'proxy' "$XDG_CACHE_HOME/aisb/blobs/sha256/$cfg" || false
	[ -d "$XDG_CACHE_HOME/aisb/rootfs/$tree/etc" ]
	! grep -qs '127.0.0.53' "$XDG_CACHE_HOME/aisb/rootfs/$tree/etc/resolv.conf" || false
	# unchanged: a cache hit that runs nothing, even without the allowlist
	run "$AISB" build -f Containerfile -t jq-demo .
	[ "$status" -eq 0 ]
	[[ "$output" == *"cache hit"* ]]
	[[ "$output" != *"apt"* ]]
}

# ---- --allow with either builder: a server on the host's 127.0.0.1 (svc.test pinned to it) ----

# http_srv: a python http.server on 127.0.0.1:$PORT (SRV, killed by teardown) answering
# "hello from the host"; waits until it answers (bounded).
http_srv() {
	local dir="$WORK/srv"
	mkdir -p "$dir"
	echo "hello from the host" >"$dir/index.html"
	PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	python3 -m http.server "$PORT" --bind 127.0.0.1 --directory "$dir" >/dev/null 2>&1 3>&- &
	SRV=$!
	for _ in $(seq 200); do
		python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' \
			"http://127.0.0.1:$PORT/" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "the test server on 127.0.0.1:$PORT did not answer" >&2
	return 1
}

# allow_pair BUILDER FROM: svc.test (pinned to 127.0.0.1) allowed; a RUN that fetches from it
# answers, and the same RUN for other.test (pinned too, not allowed) is refused at the gate,
# said with the fix and logged; nothing is stored for it.
allow_pair() {
	local builder=$1 from=$2 before
	local -a net=(--add-host svc.test=127.0.0.1 --add-host other.test=127.0.0.1 --allow "svc.test:$PORT")
	printf 'FROM %s\nRUN busybox wget -q -O - http://svc.test:%s/ && busybox wget -q -O /got http://svc.test:%s/\n' \
		"$from" "$PORT" "$PORT" >ok
	printf 'FROM %s\nRUN busybox wget -q -O - http://other.test:%s/\n' "$from" "$PORT" >bad
	# control: the allowed host answers through the gate, and the answer is in the image
	run "$AISB" build --builder "$builder" -f ok -t "allow-$builder-$$" "${net[@]}" .
	[ "$status" -eq 0 ]
	[[ "$output" == *"hello from the host"* ]]
	[ "${lines[-1]}" = "localhost/allow-$builder-$$:latest" ]
	grep -q "\"host\":\"svc.test\",\"port\":$PORT,.*\"decision\":\"allow\"" "$XDG_STATE_HOME"/aisb/build-*.egress.jsonl
	run --separate-stderr "$AISB" run --net none --no-cwd --image "allow-$builder-$$" -- cat /got
	[ "$status" -eq 0 ]
	[ "$output" = "hello from the host" ]
	# refusal: another host, not allowed: denied at the gate, said with the flag that allows it
	mkdir -p "$XDG_CACHE_HOME/aisb/refs"
	before=$(find "$XDG_CACHE_HOME/aisb/refs" -mindepth 1 | sort)
	run "$AISB" build --builder "$builder" -f bad -t "deny-$builder-$$" "${net[@]}" .
	[ "$status" -eq 125 ]
	[[ "$output" != *"hello from the host"* ]]
	[[ "$output" == *"denied"*"other.test:$PORT"*"--allow other.test:$PORT"* ]]
	grep -q "\"host\":\"other.test\",\"port\":$PORT,.*\"decision\":\"deny\"" "$XDG_STATE_HOME"/aisb/build-*.egress.jsonl
	[ "$(find "$XDG_CACHE_HOME/aisb/refs" -mindepth 1 | sort)" = "$before" ]
}

@test "build: native: --allow lets RUN reach the allowed host (on 127.0.0.1); another host is refused" {
	require_feature "busybox" command -v busybox
	require_feature "python3" command -v python3
	http_srv
	mk_oci_busybox "$WORK/bb"
	allow_pair native "oci:$WORK/bb:latest"
}

# ---- --builder podman (needs podman; `apt-get install podman runc`) ----

# podman_base: imports a static-busybox rootfs into the caller's podman storage as $BB.
podman_base() {
	local r="$WORK/bbroot" t
	mkdir -p "$r/bin" "$r/etc" "$r/tmp"
	cp "$(command -v busybox)" "$r/bin/busybox"
	for t in sh cat echo ls id mkdir chown true false; do ln -s busybox "$r/bin/$t"; done
	echo "root:x:0:0:root:/root:/bin/sh" >"$r/etc/passwd"
	echo "root:x:0:" >"$r/etc/group"
	tar -C "$r" -cf "$WORK/bb.tar" .
	BB="localhost/aisb-e2e-bb:$$-$RANDOM"
	podman import -q "$WORK/bb.tar" "$BB" >/dev/null
	BB_DIGEST=$(podman image inspect --format '{{.Digest}}' "$BB")
}

# podman_cleanup: removes $BB and every image built on it (teardown, also after a failure)
podman_cleanup() {
	local ids
	[ -n "${BB:-}" ] || return 0
	ids=$(podman images -q --filter "label=aisb.base-digest=$BB_DIGEST" 2>/dev/null)
	# shellcheck disable=SC2086 # one image id per word
	[ -n "$ids" ] && podman rmi -f $ids >/dev/null 2>&1
	podman rmi -f "$BB" >/dev/null 2>&1 || true
}

@test "build: --builder podman builds an image aisb run uses; unchanged is a cache hit; a change rebuilds" {
	require_feature "podman (apt-get install podman runc)" command -v podman
	require_feature "busybox" command -v busybox
	podman_base
	printf 'hello from context\n' > greeting.txt
	cat > Containerfile <<-EOF
	FROM $BB
	ARG MSG=default
	ENV APP_MSG=\$MSG
	WORKDIR /app
	COPY greeting.txt ./
	RUN echo "built with \$MSG" > /app/built.txt && chown 123:456 /app/built.txt
	EOF
	name="e2e-demo-$$"
	run "$AISB" build --builder podman -f Containerfile -t "$name" --build-arg MSG=hi .
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "localhost/$name:latest" ]
	[[ "$output" == *"RUN steps get no network (--network=none)"* ]]
	run "$AISB" run --net none --image "localhost/$name" -- sh -c 'cat /app/greeting.txt /app/built.txt; echo "APP_MSG=$APP_MSG"'
	[ "$status" -eq 0 ]
	[[ "$output" == *"hello from context"* ]]
	[[ "$output" == *"built with hi"* ]]
	[[ "$output" == *"APP_MSG=hi"* ]]
	# unchanged: a cache hit that runs nothing
	run "$AISB" build --builder podman -f Containerfile -t "$name" --build-arg MSG=hi .
	[ "$status" -eq 0 ]
	[[ "$output" == *"cache hit"* ]]
	[[ "$output" != *"STEP"* ]]
	# a changed context file: rebuilt
	printf 'changed\n' > greeting.txt
	run "$AISB" build --builder podman -f Containerfile -t "$name" --build-arg MSG=hi .
	[ "$status" -eq 0 ]
	[[ "$output" != *"cache hit"* ]]
	run "$AISB" run --net none --image "localhost/$name" -- cat /app/greeting.txt
	[ "${lines[0]}" = "changed" ]
}

@test "build: --builder podman: a failing RUN fails the build and leaves the store unchanged" {
	require_feature "podman (apt-get install podman runc)" command -v podman
	require_feature "busybox" command -v busybox
	podman_base
	printf 'FROM %s\nRUN true\nRUN exit 3\n' "$BB" > Containerfile
	before=$(find "$XDG_CACHE_HOME/aisb/refs" -mindepth 1 2>/dev/null | sort)
	run "$AISB" build --builder podman -f Containerfile -t "bad-$$" .
	[ "$status" -eq 125 ]
	[[ "$output" == *"RUN exit 3"* ]]
	[[ "$output" == *"podman build failed (exit 3); nothing was imported"* ]]
	[ "$(find "$XDG_CACHE_HOME/aisb/refs" -mindepth 1 2>/dev/null | sort)" = "$before" ]
	[ -z "$(find "$XDG_CACHE_HOME/aisb/tmp" -mindepth 1 2>/dev/null)" ]
}

@test "build: --builder podman --allow: RUN behind aisb's gate, as with the native builder: the allowed host answers, another is refused" {
	require_feature "podman (apt-get install podman runc)" command -v podman
	require_feature "busybox" command -v busybox
	require_feature "python3" command -v python3
	http_srv
	podman_base
	allow_pair podman "$BB"
	[[ "$output" == *"RUN steps reach the network through aisb's gate"* ]]
	# the gate's proxy variables reached RUN only, not the image's config
	local id
	id=$(podman images -q --filter "label=aisb.base-digest=$BB_DIGEST" | head -1)
	[ -n "$id" ]
	run podman image inspect --format '{{.Config.Env}}' "$id"
	[ "$status" -eq 0 ]
	[[ "$output" != *"proxy"* && "$output" != *"3128"* ]]
}

@test "build: --builder podman without --allow: RUN steps are offline, as the native builder's; the same recipe with --allow reaches the host (control)" {
	require_feature "podman (apt-get install podman runc)" command -v podman
	require_feature "busybox" command -v busybox
	require_feature "python3" command -v python3
	http_srv
	podman_base
	printf 'FROM %s\nRUN busybox wget -q -O - http://svc.test:%s/\n' "$BB" "$PORT" >probe
	# refusal: no --allow (and no --add-host, which starts the gate too): no network for RUN at all
	# (podman's own network would be an exit no policy limits)
	run "$AISB" build --builder podman -f probe -t "offline-$$" .
	[ "$status" -ne 0 ]
	[[ "$output" == *"RUN steps get no network (--network=none"* ]]
	[[ "$output" != *"hello from the host"* ]]
	# control: the same recipe, its host named and allowed: the answer arrives through aisb's gate
	run "$AISB" build --builder podman -f probe -t "online-$$" --add-host svc.test=127.0.0.1 --allow "svc.test:$PORT" .
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"hello from the host"* ]]
}

@test "build: --builder podman --allow as the user: where rootless podman's user namespace cannot be found, refused (78) with the fix" {
	is_root && skip "a root caller's podman is rootful: it joins the netns without a user namespace"
	require_feature "podman (apt-get install podman runc)" command -v podman
	require_feature "busybox" command -v busybox
	require_feature "python3" command -v python3
	http_srv
	podman_base
	printf 'FROM %s\nRUN busybox wget -q -O - http://svc.test:%s/\n' "$BB" "$PORT" >ok
	# a podman whose `unshare` fails, everything else the real one
	mkdir -p "$WORK/fakebin"
	printf '#!/bin/sh\n[ "$1" = unshare ] && { echo "podman unshare: refused by the test" >&2; exit 125; }\nexec %s "$@"\n' \
		"$(command -v podman)" >"$WORK/fakebin/podman"
	chmod +x "$WORK/fakebin/podman"
	run env PATH="$WORK/fakebin:$PATH" "$AISB" build --builder podman -f ok --add-host svc.test=127.0.0.1 --allow "svc.test:$PORT" .
	[ "$status" -eq 78 ]
	[[ "$output" == *"rootless podman's user namespace cannot be found"*"use the native builder"* ]]
	[[ "$output" != *"hello from the host"* ]]
	# control: the real podman, same recipe and flags
	run "$AISB" build --builder podman -f ok --add-host svc.test=127.0.0.1 --allow "svc.test:$PORT" .
	[ "$status" -eq 0 ]
	[[ "$output" == *"hello from the host"* ]]
}

@test "build: where user namespaces are denied, --builder native refuses (77); the default falls back to podman with RUN offline" {
	require_feature "podman (apt-get install podman runc)" command -v podman
	require_feature "busybox" command -v busybox
	local deny="$AISB_E2E_DIR/helpers/deny-userns"
	require_feature "tests/e2e/deny-userns (built by make check)" test -x "$deny"
	# the helper denies exactly user namespaces
	run "$deny" unshare -U true
	[ "$status" -ne 0 ]
	run "$deny" true
	[ "$status" -eq 0 ]
	podman_base
	cat > Containerfile <<-EOF
	FROM $BB
	RUN cat /proc/net/dev
	EOF
	# the native builder, chosen: refuses with the cause, nothing built
	run "$deny" "$AISB" build --builder native -f Containerfile -t "fb-$$" .
	[ "$status" -eq 77 ]
	[[ "$output" == *"the native builder cannot run here: cannot create a user namespace"* ]]
	[[ "$output" != *"podman instead"* ]]
	# an allowlist needs aisb's gate: no fallback either
	run "$deny" "$AISB" build --allow example.org -f Containerfile -t "fb-$$" .
	[ "$status" -eq 77 ]
	[[ "$output" == *"--allow, --allow-file and --add-host need it"* ]]
	# the default: podman instead, said, with RUN offline (only lo)
	run "$deny" "$AISB" build -f Containerfile -t "fb-$$" .
	[[ "$output" == *"the native builder cannot run here: cannot create a user namespace"*"building with podman instead, RUN steps offline"* ]]
	# rootless podman needs a user namespace too; it may join the one its pause process keeps
	# (then it works), else it fails and the build with it, naming podman
	if is_root || [ "$status" -eq 0 ]; then
		[ "$status" -eq 0 ]
		[[ "$output" == *"RUN steps get no network (--network=none)"* ]]
		# the interfaces of the RUN's netns (/proc/net/dev; rootless podman's /sys is the host's)
		[ "$(grep -cE '^ *[a-z0-9]+: +[0-9]' <<<"$output")" -eq 1 ]
		grep -qE '^ *lo: +[0-9]' <<<"$output"
		[ "${lines[-1]}" = "localhost/fb-$$:latest" ]
		run "$AISB" run --net none --no-cwd --image "fb-$$" -- true
		[ "$status" -eq 0 ]
	else
		[[ "$output" == *"podman "*" failed"* ]]
	fi
}
