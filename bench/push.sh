#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/push.sh — bytes and time of a push to Debian's docker-registry on 127.0.0.1: aisb's layer
# gzip (the default), zstd and none, against podman pushing the same image (issue 26).
# usage: bench/push.sh AISB [MB]   (root: podman with a private storage; MB of /usr/lib files, default 200)
# Each push goes to a fresh registry; "bytes" is the registry's blob store afterwards (du -sb).
set -eu
AISB=$(realpath "$1")
MB=${2:-200}
here=$(cd "$(dirname "$0")/.." && pwd)
IMG=$here/tests/e2e/lib/images
T=$(mktemp -d /tmp/aisb-bench-push.XXXXXX)
export XDG_CACHE_HOME=$T/cache XDG_STATE_HOME=$T/state XDG_CONFIG_HOME=$T/cfg XDG_RUNTIME_DIR=$T/run
export REGISTRY_AUTH_FILE=$T/auth.json
mkdir -p "$XDG_RUNTIME_DIR" "$T/ctx/data" && chmod 700 "$XDG_RUNTIME_DIR"
echo '{"auths":{}}' >"$REGISTRY_AUTH_FILE"
regs=()
cleanup() { for r in "${regs[@]}"; do "$IMG/registry.sh" stop "$r" || true; done; rm -rf "$T"; }
trap cleanup EXIT

# the content: real files (shared libraries compress like a typical image), about MB megabytes
python3 - "$T/ctx/data" "$MB" <<'EOS'
import os, shutil, sys
out, left, n = sys.argv[1], int(sys.argv[2]) << 20, 0
for root, dirs, files in os.walk("/usr/lib"):
    dirs.sort()
    for f in sorted(files):
        p = os.path.join(root, f)
        if os.path.islink(p) or not os.path.isfile(p) or left <= 0:
            continue
        n += 1
        shutil.copyfile(p, os.path.join(out, "%06d-%s" % (n, f)))
        left -= os.path.getsize(p)
EOS
"$IMG/mk-busybox-oci.sh" "$T/bb" v1 >/dev/null
printf 'FROM oci:%s/bb:v1\nCOPY data /data\n' "$T" >"$T/ctx/Containerfile"
echo "content: $(du -sm "$T/ctx/data" | cut -f1) MB in $(find "$T/ctx/data" -type f | wc -l) files"

fresh_registry() { # NAME -> port
	# (docker-registry reads REGISTRY_* variables as its config: REGISTRY_AUTH_FILE breaks it)
	env -u REGISTRY_AUTH_FILE "$IMG/registry.sh" start "$T/$1" >/dev/null
	regs+=("$T/$1")
	cat "$T/$1/port"
}
now() { date +%s.%N; }
report() { # WHAT REG T0 T1
	printf '%-34s %6d KiB  %6.2f s\n' "$1" $(($(du -sb "$T/$2/data" | cut -f1) >> 10)) "$(echo "$4 - $3" | bc)"
}

for fmt in gzip zstd none; do
	t0=$(now)
	"$AISB" build --compression-format "$fmt" -t "b-$fmt" "$T/ctx" >/dev/null 2>&1
	t1=$(now)
	printf '%-34s %17.2f s\n' "aisb build ($fmt)" "$(echo "$t1 - $t0" | bc)"
	p=$(fresh_registry "reg-$fmt")
	t0=$(now)
	"$AISB" push -q --tls-verify=false "b-$fmt" "127.0.0.1:$p/b:v1" >/dev/null
	t1=$(now)
	report "aisb push ($fmt layer)" "reg-$fmt" "$t0" "$t1"
done
# the uncompressed image compressed on the way (push --compression-format, podman's flag)
for fmt in gzip zstd; do
	p=$(fresh_registry "reg-none-$fmt")
	t0=$(now)
	"$AISB" push -q --tls-verify=false --compression-format "$fmt" b-none "127.0.0.1:$p/b:v1" >/dev/null
	t1=$(now)
	report "aisb push (none → $fmt)" "reg-none-$fmt" "$t0" "$t1"
done

if command -v podman >/dev/null && [ "$(id -u)" = 0 ]; then
	PM=(podman --root "$T/proot" --runroot "$T/prun" --storage-driver vfs)
	# podman gets the same image (its tar) and pushes it with its defaults (gzip), and zstd
	"${PM[@]}" pull -q --tls-verify=false "127.0.0.1:$(cat "$T/reg-none/port")/b:v1" >/dev/null
	for fmt in gzip zstd; do
		p=$(fresh_registry "pm-$fmt")
		t0=$(now)
		"${PM[@]}" push -q --tls-verify=false --compression-format "$fmt" "127.0.0.1:$(cat "$T/reg-none/port")/b:v1" \
			"127.0.0.1:$p/b:v1"
		t1=$(now)
		report "podman push ($fmt)" "pm-$fmt" "$t0" "$t1"
	done
	# the pull back: aisb from podman's gzip push, into a fresh store
	t0=$(now)
	XDG_CACHE_HOME=$T/cache2 "$AISB" pull -q --tls-verify=false "127.0.0.1:$(cat "$T/pm-gzip/port")/b:v1" >/dev/null
	t1=$(now)
	printf '%-34s %17.2f s\n' "aisb pull (podman's gzip push)" "$(echo "$t1 - $t0" | bc)"
fi
