#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/build.sh — `aisb build` against `podman build` of one Containerfile, side by side (a
# benchmark, not a test): a Debian bookworm minbase from a registry on 127.0.0.1, `apt-get
# install` of a C toolchain from the host's Debian mirror (aisb: through its gate, with the
# mirror allowed; podman: --network host), a COPY of a generated C source tree and a RUN that
# compiles and runs it. Interleaved in each round, each with a fresh store:
#   floor  the work with no builder (run_floor_cold below: untar + a chroot), the yardstick
#   cold   pull of the base from the registry + the build (aisb pull + aisb build; podman pull +
#          podman build): every step runs, apt downloads from the mirror each time
#   hit    the same build again on the warm store: a cache hit (aisb: the tag is in the store,
#          nothing runs; podman: every step from its layer cache)
#   size   the unpacked image (du -sb of aisb's rootfs tree, of `podman image mount`)
# Each sample also gives its CPU time (user+sys of every process it ran and reaped), which
# depends less on the other users of the machine than the wall time; the rounds alternate
# which tool goes first.
# Root only (podman here: rootful with runc; cgroups v1). Needs podman, runc, mmdebstrap,
# docker-registry, skopeo (all in contrib/packages.txt). The base layout is made once per day
# with tests/e2e/lib/images/mk-debian-oci.sh and kept in /var/tmp.
#   AISB_BIN=./build/aisb N=3 HITS=10 bench/build.sh
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
AISB=$(realpath -e "${AISB_BIN:-$here/build/aisb}")
N=${N:-3}
HITS=${HITS:-10}
[ "$(id -u)" -eq 0 ] || { echo "bench/build.sh: run as root (podman here builds rootful)" >&2; exit 1; }
for t in podman runc mmdebstrap docker-registry skopeo; do
	command -v "$t" >/dev/null || { echo "bench/build.sh: needs $t" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/var/tmp}/aisb-build-bench.XXXXXX")
P=(podman --root "$work/podman/root" --runroot "$work/podman/run" --storage-driver overlay
	--cgroup-manager cgroupfs --runtime runc)
cleanup() {
	"${P[@]}" image unmount -a >/dev/null 2>&1 || true
	"${P[@]}" rmi -a -f >/dev/null 2>&1 || true
	"$here/tests/e2e/lib/images/registry.sh" stop "$work/reg" 2>/dev/null || true
	chmod -R u+rwx "$work" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "# the base: Debian bookworm minbase, pushed to a registry on 127.0.0.1"
layout=$("$here/tests/e2e/lib/images/mk-debian-oci.sh" "/var/tmp/aisb-bench-debian-$(id -u)-$(date +%Y%m%d)")
port=$("$here/tests/e2e/lib/images/registry.sh" start "$work/reg")
echo '{"auths":{}}' >"$work/auth.json"
export REGISTRY_AUTH_FILE=$work/auth.json
skopeo copy -q --dest-tls-verify=false "oci:$layout:bookworm" "docker://127.0.0.1:$port/bench/debian:bookworm"
base=127.0.0.1:$port/bench/debian:bookworm

mirror=$(python3 "$here/tests/e2e/lib/images/apt-mirror.py" bookworm)
host=${mirror#*://}
host=${host%%/*}
host=${host%%:*}
addr=$(getent ahostsv4 "$host" | awk 'NR == 1 { print $1 }')
allow=(--allow "$host")
# a mirror at a non-global address is refused by the gate's rebinding check unless pinned
python3 -c 'import ipaddress, sys; sys.exit(0 if ipaddress.ip_address(sys.argv[1]).is_global else 1)' "$addr" ||
	allow+=(--add-host "$host=$addr")

echo "# the context: a generated C source tree"
ctx=$work/ctx
mkdir -p "$ctx/src"
for i in $(seq 1 24); do
	{
		echo "#include <stdio.h>"
		echo "int f$i(int x);"
		echo "int f$i(int x) { int s = 0; for (int k = 0; k < x; k++) s += k * $i % 7; return s; }"
	} >"$ctx/src/f$i.c"
done
{
	echo "#include <stdio.h>"
	for i in $(seq 1 24); do echo "int f$i(int x);"; done
	echo "int main(void) { long s = 0;"
	for i in $(seq 1 24); do echo "s += f$i(1000);"; done
	# shellcheck disable=SC2028 # C source: the backslash is the compiler's
	echo 'printf("built %ld\n", s); return 0; }'
} >"$ctx/src/main.c"
# shellcheck disable=SC2016 # make's variables, not the shell's
printf 'OBJ := $(patsubst %%.c,%%.o,$(wildcard *.c))\nhello: $(OBJ)\n\t$(CC) -o $@ $^\n%%.o: %%.c\n\t$(CC) -O2 -c -o $@ $<\n' >"$ctx/src/Makefile"
cat >"$ctx/Containerfile" <<EOF
FROM $base
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev make && rm -rf /var/lib/apt/lists/*
COPY src /src
RUN make -C /src -j2 && /src/hello
CMD ["/src/hello"]
EOF

aisb_env() { env XDG_CACHE_HOME="$work/a/cache" XDG_STATE_HOME="$work/a/state" "$@"; }
run_aisb_cold() {
	chmod -R u+rwx "$work/a" 2>/dev/null || true
	rm -rf "$work/a"
	aisb_env "$AISB" pull -q --tls-verify=false "$base" &&
		aisb_env "$AISB" build -f "$ctx/Containerfile" -t bench "${allow[@]}" "$ctx"
}
run_aisb_hit() { aisb_env "$AISB" build -f "$ctx/Containerfile" -t bench "${allow[@]}" "$ctx"; }
run_podman_cold() {
	# only this bench's private storage (--root): never `system reset`, which also touches
	# podman's host-wide network configuration
	"${P[@]}" image unmount -a >/dev/null 2>&1 || true
	"${P[@]}" rmi -a -f >/dev/null 2>&1 || true
	rm -rf "$work/podman"
	"${P[@]}" pull -q --tls-verify=false "$base" &&
		"${P[@]}" build -q --pull=never --network host -f "$ctx/Containerfile" -t localhost/bench "$ctx"
}
run_podman_hit() { "${P[@]}" build -q --pull=never --network host -f "$ctx/Containerfile" -t localhost/bench "$ctx"; }
# floor: the build's own work with no builder around it, a yardstick like bench/gate.sh's
# relay-floor: the base layout's layers untarred from the local disk (no registry, no digest),
# the context copied, both RUN lines in a plain chroot on the host's network (a mount namespace
# only for /proc and /dev; no isolation, no layer, no image). No builder can be faster than
# this, so podman_cold / floor_cold is the most any builder could be ahead of podman.
layers=$(python3 -c 'import json, sys
L = sys.argv[1]
m = json.load(open(L + "/index.json"))["manifests"][0]["digest"].split(":")[1]
for l in json.load(open(L + "/blobs/sha256/" + m))["layers"]: print(l["digest"].split(":")[1])' "$layout")
run_floor_cold() {
	local root=$work/floor d
	rm -rf "$root"
	mkdir -p "$root"
	for d in $layers; do tar -xf "$layout/blobs/sha256/$d" -C "$root" || return 1; done
	cp /etc/resolv.conf "$root/etc/resolv.conf"
	cp -a "$ctx/src" "$root/src"
	sed -n 's/^RUN //p' "$ctx/Containerfile" >"$root/steps.sh"
	# shellcheck disable=SC2016 # expanded by the inner shell, from its $1
	unshare -m --propagation private sh -ec 'mount -t proc proc "$1/proc"; mount --rbind /dev "$1/dev"
		chroot "$1" /bin/sh -ec ". /steps.sh"' sh "$root"
}

declare -A samples loads cpus
# CPU seconds (user + sys) of this shell's waited-for children so far, from `times` run in this
# shell (not in a $(...) subshell, which has no children): every process a sample ran and
# reaped (aisb and its steps; podman, buildah's runc and the containers' processes)
child_cpu() { awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%.3f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$1"; }
sample() { # name
	local s e cpu
	times >"$work/t0"
	s=${EPOCHREALTIME/./}
	"run_$1" >"$work/out" 2>&1 || { echo "bench: $1 failed:" >&2; tail -15 "$work/out" >&2; exit 1; }
	e=${EPOCHREALTIME/./}
	times >"$work/t1"
	cpu=$(echo "$(child_cpu "$work/t1") - $(child_cpu "$work/t0")" | bc -l)
	samples[$1]+="$((e - s)) "
	cpus[$1]+="$cpu "
	loads[$1]+="$(cut -d' ' -f1 /proc/loadavg) "
	printf '%-12s %9.3f s  cpu %7.2f s  load %s\n' "$1" "$(echo "($e - $s) / 1000000" | bc -l)" "$cpu" \
		"$(cut -d' ' -f1 /proc/loadavg)"
}
for round in $(seq "$N"); do
	echo "# round $round"
	sample floor_cold
	rm -rf "$work/floor"
	# alternate which tool goes first, so that neither always meets the other's writeback
	tools="aisb podman"
	[ $((round % 2)) -eq 0 ] && tools="podman aisb"
	for tool in $tools; do
		sample "${tool}_cold"
		grep -q "cache hit" "$work/out" && { echo "bench: the cold $tool build was a cache hit" >&2; exit 1; }
		[ "$tool" = aisb ] && grep -q "built " "$work/out"
		for _ in $(seq "$HITS"); do sample "${tool}_hit"; done
	done
done

# sizes of the last round's images, unpacked
tree=$(python3 -c 'import json,sys,glob
for f in glob.glob(sys.argv[1] + "/refs/*.json"):
    p = json.load(open(f))
    if p["name"] == "localhost/bench:latest": print(p["rootfs"])' "$work/a/cache/aisb")
asize=$(du -sb "$work/a/cache/aisb/rootfs/$tree" | cut -f1)
pmnt=$("${P[@]}" image mount localhost/bench)
psize=$(du -sb "$pmnt" | cut -f1)
"${P[@]}" image unmount localhost/bench >/dev/null

median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A med cmed
echo
printf '%-12s %11s %11s %8s %12s\n' column "median s" "median cpu" samples "load (min-max)"
for c in floor_cold aisb_cold podman_cold aisb_hit podman_hit; do
	med[$c]=$(median <<<"${samples[$c]}")
	cmed[$c]=$(median <<<"${cpus[$c]}")
	printf '%-12s %11.4f %11.3f %8d %12s\n' "$c" "$(echo "${med[$c]} / 1000000" | bc -l)" "${cmed[$c]}" \
		"$(wc -w <<<"${samples[$c]}")" \
		"$(tr ' ' '\n' <<<"${loads[$c]}" | grep -v '^$' | sort -n | sed -n '1p;$p' | paste -sd-)"
done
echo
printf '%-40s %8.2f   (target >= 2)\n' "podman_cold / aisb_cold (aisb faster by)" "$(echo "${med[podman_cold]} / ${med[aisb_cold]}" | bc -l)"
printf '%-40s %8.2f\n' "the same in CPU time (user+sys)" "$(echo "${cmed[podman_cold]} / ${cmed[aisb_cold]}" | bc -l)"
printf '%-40s %8.2f   (the most any builder could be ahead of podman here)\n' "podman_cold / floor_cold" \
	"$(echo "${med[podman_cold]} / ${med[floor_cold]}" | bc -l)"
printf '%-40s %8.2f   (CPU %.2f: what aisb adds to the work itself)\n' "aisb_cold / floor_cold" \
	"$(echo "${med[aisb_cold]} / ${med[floor_cold]}" | bc -l)" "$(echo "${cmed[aisb_cold]} / ${cmed[floor_cold]}" | bc -l)"
# per round: the two cold builds of a round ran back to back, so their ratio saw the same load
ratios=$(paste -d' ' <(tr ' ' '\n' <<<"${samples[podman_cold]}" | grep -v '^$') \
	<(tr ' ' '\n' <<<"${samples[aisb_cold]}" | grep -v '^$') | awk '{ printf "%.2f ", $1 / $2 }')
printf '%-40s %s\n' "podman/aisb per round" "$ratios"
printf '%-40s %8.1f ms (target <= 50 ms)\n' "aisb cache hit" "$(echo "${med[aisb_hit]} / 1000" | bc -l)"
printf '%-40s %8.1f ms\n' "podman cache hit" "$(echo "${med[podman_hit]} / 1000" | bc -l)"
printf '%-40s %8.3f   (target within 5%%: 0.95-1.05)\n' "image size aisb / podman (unpacked)" "$(echo "$asize / $psize" | bc -l)"
echo "(sizes: aisb $asize B, podman $psize B; n=$N cold, $((N * HITS)) hits; $(uname -r), $(nproc) cpus, aisb $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'))"
