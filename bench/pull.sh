#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/pull.sh — pull+unpack speed against tar and skopeo+umoci (a benchmark, not a test).
#
# Builds one layer from local files (default: /usr/lib/python3.11 /usr/share/doc
# /usr/share/perl /usr/share/zoneinfo — many small files, like a Debian minbase), gzip and zstd,
# serves it from Debian's docker-registry on 127.0.0.1, and times, interleaved in each of N
# rounds (so load from other work hits every column alike), with a fresh store each time:
#   tar_gz         tar -xzf of the gzip layer (the floor: gzip and tar run as two processes)
#   tar_zst        tar --zstd -xf of the zstd layer
#   curl_tar_zst   curl of the zstd blob from the registry | tee FILE FIFO(sha256sum) | tar --zstd -x:
#                  the registry pull's work by tools, the floor for aisb_reg_zst
#   aisb_oci       aisb pull oci:DIR (gzip): import + verify + unpack
#   aisb_oci_zst   the same, zstd layer
#   aisb_reg       aisb pull 127.0.0.1:PORT/... (gzip): download + verify + unpack
#   aisb_reg_zst   the same, zstd layer
#   skopeo_umoci   skopeo copy of the same registry image + umoci unpack --rootless
#   before_*       with AISB_BEFORE=BINARY, the two gzip pulls and the zstd oci: pull by that binary too (A/B)
# Prints every sample, then one table of medians and the ratios the targets are stated in.
#   AISB_BIN=./build/aisb N=5 bench/pull.sh
#   BENCH_PATHS="usr/share/doc" ...  other directories;  BENCH_TAR=FILE.tar  a prepared rootfs tar
#   ONLY="tar_gz aisb_oci"           a subset of the columns
# No network but 127.0.0.1. Wrap it in `flock /tmp/bench.lock` on a shared machine.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
AISB=$(realpath -e "${AISB_BIN:-$here/build/aisb}")
BEFORE=${AISB_BEFORE:+$(realpath -e "$AISB_BEFORE")}
N=${N:-3}
PY=/usr/bin/python3
work=$(mktemp -d "${TMPDIR:-/tmp}/aisb-bench.XXXXXX")
cleanup() {
	"$here/tests/e2e/lib/images/registry.sh" stop "$work/reg" 2>/dev/null || true
	chmod -R u+rwx "$work" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
for t in skopeo umoci docker-registry zstd; do
	command -v "$t" >/dev/null || { echo "bench/pull.sh: needs $t" >&2; exit 1; }
done

echo "# preparing the layer"
if [ -n "${BENCH_TAR:-}" ]; then
	cp "$BENCH_TAR" "$work/layer.tar"
else
	# shellcheck disable=SC2086
	tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --ignore-failed-read -C / \
		-cf "$work/layer.tar" ${BENCH_PATHS:-usr/lib/python3.11 usr/share/doc usr/share/perl usr/share/zoneinfo} 2>/dev/null
fi
gzip -n -6 <"$work/layer.tar" >"$work/layer.tar.gz"
zstd -q -3 <"$work/layer.tar" >"$work/layer.tar.zst"
entries=$(tar -tf "$work/layer.tar" | wc -l)
echo "# layer: $(du -m "$work/layer.tar" | cut -f1) MB tar, $(du -m "$work/layer.tar.gz" | cut -f1) MB gzip," \
	"$(du -m "$work/layer.tar.zst" | cut -f1) MB zstd, $entries entries"
$PY "$here/tests/e2e/lib/images/oci-layout.py" "$work/oci" --tag bench "$work/layer.tar.gz" >/dev/null
$PY "$here/tests/e2e/lib/images/oci-layout.py" "$work/ocizst" --tag bench "$work/layer.tar.zst" >/dev/null
port=$("$here/tests/e2e/lib/images/registry.sh" start "$work/reg")
echo '{"auths":{}}' >"$work/auth.json"
REGISTRY_AUTH_FILE=$work/auth.json skopeo copy -q --dest-tls-verify=false "oci:$work/oci:bench" \
	"docker://127.0.0.1:$port/bench:1"
REGISTRY_AUTH_FILE=$work/auth.json skopeo copy -q --dest-tls-verify=false "oci:$work/ocizst:bench" \
	"docker://127.0.0.1:$port/benchzst:1"
rmstore() { chmod -R u+rwx "$work/c" 2>/dev/null || true; rm -rf "$work/c"; }
# the zstd layer's blob as the registry serves it (skopeo may have rewritten the manifest)
zst_digest=$(curl -sSf -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
	-H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
	"http://127.0.0.1:$port/v2/benchzst/manifests/1" | $PY -c 'import json, sys; print(json.load(sys.stdin)["layers"][0]["digest"])')

run_tar_gz() { rm -rf "$work/x"; mkdir "$work/x"; tar -xzf "$work/layer.tar.gz" -C "$work/x"; }
run_tar_zst() { rm -rf "$work/x"; mkdir "$work/x"; tar --zstd -xf "$work/layer.tar.zst" -C "$work/x"; }
run_aisb_oci() { rmstore; XDG_CACHE_HOME=$work/c "${1:-$AISB}" pull -q "oci:$work/oci:bench"; }
run_aisb_oci_zst() { rmstore; XDG_CACHE_HOME=$work/c "$AISB" pull -q "oci:$work/ocizst:bench"; }
run_aisb_reg() { rmstore; XDG_CACHE_HOME=$work/c "${1:-$AISB}" pull -q --tls-verify=false "127.0.0.1:$port/bench:1"; }
run_aisb_reg_zst() { rmstore; XDG_CACHE_HOME=$work/c "${1:-$AISB}" pull -q --tls-verify=false "127.0.0.1:$port/benchzst:1"; }
run_before_oci_zst() { rmstore; XDG_CACHE_HOME=$work/c "$BEFORE" pull -q "oci:$work/ocizst:bench"; }
run_before_oci() { run_aisb_oci "$BEFORE"; }
run_before_reg() { run_aisb_reg "$BEFORE"; }
# the registry floor: a registry pull's work done by tools in one pipeline, each its own
# process: the blob downloaded (curl), stored and digested (tee into a file and into sha256sum),
# decompressed and unpacked (tar --zstd), with no verification before use and no store
run_curl_tar_zst() {
	rm -rf "$work/x" "$work/blob" "$work/fifo"
	mkdir "$work/x"
	mkfifo "$work/fifo"
	sha256sum <"$work/fifo" >"$work/blob.sha" &
	local sp=$!
	curl -sSf "http://127.0.0.1:$port/v2/benchzst/blobs/$zst_digest" | tee "$work/blob" "$work/fifo" |
		tar --zstd -xf - -C "$work/x" || return 1
	wait "$sp" && [ "sha256:$(cut -d' ' -f1 "$work/blob.sha")" = "$zst_digest" ]
}
run_skopeo_umoci() {
	rm -rf "$work/sk" "$work/bundle"
	REGISTRY_AUTH_FILE=$work/auth.json skopeo copy -q --src-tls-verify=false "docker://127.0.0.1:$port/bench:1" \
		"oci:$work/sk:bench" && umoci unpack --rootless --image "$work/sk:bench" "$work/bundle"
}

read -ra cols <<<"${ONLY:-tar_gz tar_zst curl_tar_zst aisb_oci aisb_oci_zst aisb_reg aisb_reg_zst skopeo_umoci}"
[ -n "$BEFORE" ] && [ -z "${ONLY:-}" ] && cols+=(before_oci before_reg before_oci_zst)
declare -A samples loads cpus
TIMEFORMAT='%U %S'
for round in $(seq "$N"); do
	for b in "${cols[@]}"; do
		sync # the previous column's dirty pages are not this one's cost
		s=${EPOCHREALTIME/./}
		# bash's `time`: user+sys of everything the column ran (all threads and children),
		# which a loaded machine changes much less than the wall time
		{ time "run_$b" >/dev/null 2>"$work/err"; } 2>"$work/cpu" ||
			{ echo "bench: $b failed: $(tail -3 "$work/err")" >&2; exit 1; }
		e=${EPOCHREALTIME/./}
		cpu=$(awk '{printf "%.3f", $1 + $2}' "$work/cpu")
		samples[$b]+="$((e - s)) "
		cpus[$b]+="$cpu "
		loads[$b]+="$(cut -d' ' -f1 /proc/loadavg) "
		printf 'round %d %-14s %8.3f s  cpu %6.3f s  load %s\n' "$round" "$b" "$(echo "($e - $s) / 1000000" | bc -l)" \
			"$cpu" "$(cut -d' ' -f1 /proc/loadavg)"
	done
done
rmstore
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A med cmed
echo
printf '%-14s %10s %10s %12s\n' column "median s" "cpu s" "load (min-max)"
for b in "${cols[@]}"; do
	med[$b]=$(median <<<"${samples[$b]}")
	cmed[$b]=$(median <<<"${cpus[$b]}")
	printf '%-14s %10.3f %10.3f %12s\n' "$b" "$(echo "${med[$b]} / 1000000" | bc -l)" "${cmed[$b]}" \
		"$(tr ' ' '\n' <<<"${loads[$b]}" | grep -v '^$' | sort -n | sed -n '1p;$p' | paste -sd-)"
done
ratio() { # label a b target
	[ -n "${med[$2]:-}" ] && [ -n "${med[$3]:-}" ] &&
		printf '%-44s %6.2f %9.2f   (target %s)\n' "$1" "$(echo "${med[$2]} / ${med[$3]}" | bc -l)" \
			"$(echo "${cmed[$2]} / ${cmed[$3]}" | bc -l)" "$4"
	return 0
}
echo
printf '%-44s %6s %9s\n' ratio wall cpu
ratio "aisb_reg / tar_gz (pull vs tar -xzf)" aisb_reg tar_gz "<= 1.15"
ratio "skopeo_umoci / aisb_reg (aisb faster by)" skopeo_umoci aisb_reg ">= 2"
ratio "aisb_oci / tar_gz (unpack from a layout)" aisb_oci tar_gz "<= 1.0"
ratio "aisb_oci_zst / tar_zst (zstd)" aisb_oci_zst tar_zst "<= 1.0"
ratio "aisb_reg_zst / tar_zst (zstd, registry)" aisb_reg_zst tar_zst "<= 1.0"
ratio "aisb_reg_zst / curl_tar_zst (registry floor)" aisb_reg_zst curl_tar_zst "-"
ratio "curl_tar_zst / tar_zst (what the registry adds)" curl_tar_zst tar_zst "-"
ratio "before_oci_zst / aisb_oci_zst (speed-up)" before_oci_zst aisb_oci_zst "-"
ratio "before_reg / aisb_reg (speed-up)" before_reg aisb_reg "-"
ratio "before_oci / aisb_oci (speed-up)" before_oci aisb_oci "-"
echo "(n=$N, user $(id -un), $(uname -r), $(nproc) cpus, aisb $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'))"
