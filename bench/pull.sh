#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/pull.sh — pull+unpack speed (a benchmark, not a test).
#
# Builds one gzip layer from local files (default: /usr/lib/python3.11 /usr/share/doc
# /usr/share/perl /usr/share/zoneinfo — many small files, like a Debian minbase), serves it from
# Debian's docker-registry on 127.0.0.1, and compares, as medians of N runs with a fresh store
# each time:
#   aisb pull oci:DIR             unpack only (blob import + verify + libarchive unpack)
#   aisb pull 127.0.0.1:PORT/...  registry pull + verify + unpack
#   skopeo copy + umoci unpack    the same registry pull with Debian's tools
#   tar -xzf                      the same layer, the floor
# BENCH_PATHS overrides the directories; BENCH_TAR=FILE.tar uses a prepared rootfs tar instead
# (e.g. `mmdebstrap --variant=minbase bookworm debian.tar` made beforehand). No network but 127.0.0.1.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
AISB=${AISB_BIN:-$here/build/aisb}
N=${N:-3}
PY=/usr/bin/python3
work=$(mktemp -d "${TMPDIR:-/tmp}/aisb-bench.XXXXXX")
cleanup() {
	"$here/tests/e2e/lib/images/registry.sh" stop "$work/reg" 2>/dev/null || true
	chmod -R u+rwx "$work" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
for t in skopeo umoci docker-registry; do
	command -v "$t" >/dev/null || { echo "bench/pull.sh: needs $t" >&2; exit 1; }
done

now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timeit() { # name cmd... ; prints seconds
	local s e
	s=$(now)
	"$@" >/dev/null 2>&1 || { echo "bench: '$*' failed" >&2; exit 1; }
	e=$(now)
	echo "$e - $s" | bc -l
}

echo "# preparing the layer"
if [ -n "${BENCH_TAR:-}" ]; then
	cp "$BENCH_TAR" "$work/layer.tar"
else
	# shellcheck disable=SC2086
	tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --ignore-failed-read -C / \
		-cf "$work/layer.tar" ${BENCH_PATHS:-usr/lib/python3.11 usr/share/doc usr/share/perl usr/share/zoneinfo} 2>/dev/null
fi
gzip -n -6 <"$work/layer.tar" >"$work/layer.tar.gz"
entries=$(tar -tf "$work/layer.tar" | wc -l)
echo "# layer: $(du -m "$work/layer.tar" | cut -f1) MB tar, $(du -m "$work/layer.tar.gz" | cut -f1) MB gzip, $entries entries"
$PY "$here/tests/e2e/lib/images/oci-layout.py" "$work/oci" --tag bench "$work/layer.tar.gz" >/dev/null
port=$("$here/tests/e2e/lib/images/registry.sh" start "$work/reg")
echo '{"auths":{}}' >"$work/auth.json"
REGISTRY_AUTH_FILE=$work/auth.json skopeo copy -q --dest-tls-verify=false "oci:$work/oci:bench" \
	"docker://127.0.0.1:$port/bench:1"

run_tar() { rm -rf "$work/x"; mkdir "$work/x"; tar -xzf "$work/layer.tar.gz" -C "$work/x"; }
run_aisb_local() { chmod -R u+rwx "$work/c" 2>/dev/null; rm -rf "$work/c"; XDG_CACHE_HOME=$work/c "$AISB" pull -q "oci:$work/oci:bench"; }
run_aisb_reg() {
	chmod -R u+rwx "$work/c" 2>/dev/null; rm -rf "$work/c"
	XDG_CACHE_HOME=$work/c "$AISB" pull -q --tls-verify=false "127.0.0.1:$port/bench:1"
}
run_skopeo_umoci() {
	rm -rf "$work/sk" "$work/bundle"
	REGISTRY_AUTH_FILE=$work/auth.json skopeo copy -q --src-tls-verify=false "docker://127.0.0.1:$port/bench:1" \
		"oci:$work/sk:bench" && umoci unpack --rootless --image "$work/sk:bench" "$work/bundle"
}

declare -A med
for b in tar aisb_local aisb_reg skopeo_umoci; do
	for _ in $(seq "$N"); do timeit "run_$b"; done | median >"$work/$b.t"
	med[$b]=$(cat "$work/$b.t")
	printf '%-14s %8.3f s (median of %d)\n' "$b" "${med[$b]}" "$N"
done
printf 'ratio tar/aisb_local (unpack vs tar, >= 0.9 wanted): %.2f\n' "$(echo "${med[tar]} / ${med[aisb_local]}" | bc -l)"
printf 'ratio tar/aisb_reg   (pull+unpack vs tar):           %.2f\n' "$(echo "${med[tar]} / ${med[aisb_reg]}" | bc -l)"
printf 'ratio skopeo+umoci/aisb_reg (> 1: aisb faster):      %.2f\n' "$(echo "${med[skopeo_umoci]} / ${med[aisb_reg]}" | bc -l)"
