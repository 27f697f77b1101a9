#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/startup.sh — start-up cost of `aisb run --net none -- true` against bwrap and unshare,
# run side by side, N times each, interleaved. Prints medians and ratios. Not a test: no
# threshold, no exit status from the numbers.
#   AISB_BIN=./build/aisb N=50 bench/startup.sh
set -eu
aisb=${AISB_BIN:-$(dirname "$0")/../build/aisb}
n=${N:-50}
proj=$(mktemp -d /tmp/aisb-bench.XXXXXX)
export XDG_STATE_HOME="$proj/state"
trap 'rm -rf "$proj"' EXIT
cd "$proj"

declare -A cmds=(
	[aisb]="$aisb --net none --ephemeral-home --no-agents -- true"
	[aisb-allow]="$aisb --allow example.com --ephemeral-home --no-agents -- true"
	[bwrap]="bwrap --unshare-all --ro-bind / / --proc /proc --dev /dev true"
	[unshare]="unshare -Urmnp --fork true"
	[true]="/bin/true"
)
order=(true unshare bwrap aisb aisb-allow)
for name in "${order[@]}"; do
	# shellcheck disable=SC2086
	if ! ${cmds[$name]} >/dev/null 2>&1; then
		echo "bench: '$name' does not run here: ${cmds[$name]}" >&2
		unset "cmds[$name]"
	fi
done

declare -A samples
for _ in $(seq "$n"); do
	for name in "${order[@]}"; do
		[ -n "${cmds[$name]:-}" ] || continue
		s=$(date +%s%N)
		# shellcheck disable=SC2086
		${cmds[$name]} >/dev/null 2>&1
		e=$(date +%s%N)
		samples[$name]+="$(( (e - s) / 1000 )) "
	done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A med
printf '%-8s %12s\n' command "median (ms)"
for name in "${order[@]}"; do
	[ -n "${samples[$name]:-}" ] || continue
	med[$name]=$(median <<<"${samples[$name]}")
	printf '%-8s %12.2f\n' "$name" "$(echo "${med[$name]} / 1000" | bc -l)"
done
for ref in bwrap unshare; do
	[ -n "${med[$ref]:-}" ] && [ -n "${med[aisb]:-}" ] &&
		printf 'aisb / %-8s %6.2f\n' "$ref" "$(echo "${med[aisb]} / ${med[$ref]}" | bc -l)"
done
[ -n "${med[aisb-allow]:-}" ] && [ -n "${med[aisb]:-}" ] &&
	printf 'allow - none   %6.2f ms\n' "$(echo "(${med[aisb-allow]} - ${med[aisb]}) / 1000" | bc -l)"
echo "(n=$n, user $(id -un), $(uname -r))"
