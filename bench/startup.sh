#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/startup.sh — start-up cost of `aisb run --net none -- true` against bwrap and unshare,
# run side by side, N times each, interleaved, plus the same run on a cached busybox image
# (--image; target: <= 1.1x the host-rootfs run, issue 16). Prints medians and ratios, then
# page faults per run. Not a test: no threshold, no exit status from the numbers. As the
# unprivileged user:
#   runuser -u aisb-e2e -- env AISB_BIN=$PWD/build/aisb N=50 bench/startup.sh (binary readable by it)
#   AISB_BIN=./build/aisb N=50 bench/startup.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
aisb=${AISB_BIN:-$here/../build/aisb}
n=${N:-50}
proj=$(mktemp -d /tmp/aisb-bench.XXXXXX)
export XDG_STATE_HOME="$proj/state" XDG_CACHE_HOME="$proj/cache"
trap 'rm -rf "$proj"' EXIT
# the runs' project is an empty directory: not $proj, which holds the state dir and the store,
# so that the post-run walk (gitguard) does not time a walk of the bench's own store and sessions
mkdir "$proj/project"
cd "$proj/project"
# a cached image: built locally, pulled once before timing; and the same as a local build
# (localhost/aisb-bench-bb), whose pin, like a fresh registry pin, needs no re-reading (image.c's
# fast path), while an oci: layout is a live directory that is re-read on every run
"$here/../tests/e2e/lib/images/mk-busybox-oci.sh" "$proj/bb" v1 >/dev/null &&
	"$aisb" pull -q "oci:$proj/bb:v1" >/dev/null || echo "bench: no busybox image for the --image run" >&2
echo "FROM oci:$proj/bb:v1" >"$proj/Containerfile"
"$aisb" build -f "$proj/Containerfile" -t aisb-bench-bb "$proj" >/dev/null 2>&1 ||
	echo "bench: cannot build localhost/aisb-bench-bb" >&2

declare -A cmds=(
	[aisb]="$aisb --net none --ephemeral-home --no-agents -- true"
	[aisb-allow]="$aisb --allow example.com --ephemeral-home --no-agents -- true"
	[image]="$aisb --net none --ephemeral-home --no-agents --image localhost/aisb-bench-bb -- /bin/true"
	[image-oci]="$aisb --net none --ephemeral-home --no-agents --image oci:$proj/bb:v1 -- /bin/true"
	[bwrap]="bwrap --unshare-all --ro-bind / / --proc /proc --dev /dev true"
	[unshare]="unshare -Urmnp --fork true"
	[true]="/bin/true"
)
order=(true unshare bwrap aisb aisb-allow image image-oci)
for name in "${order[@]}"; do
	# shellcheck disable=SC2086
	if ! ${cmds[$name]} >/dev/null 2>&1; then
		echo "bench: '$name' does not run here: ${cmds[$name]}" >&2
		unset "cmds[$name]"
	fi
done

declare -A samples
TIMEFORMAT='%3U %3S'
for _ in $(seq "$n"); do
	for name in "${order[@]}"; do
		[ -n "${cmds[$name]:-}" ] || continue
		# $EPOCHREALTIME (bash 5): no `date` process in the timed span (that one cost 5-10 ms
		# here and shrank every ratio towards 1)
		s=${EPOCHREALTIME/./}
		# bash's `time` (no process): user and sys of the command and the children it waited
		# for, the number that the other users of a shared machine do not move
		# shellcheck disable=SC2086
		{ time ${cmds[$name]} >/dev/null 2>&1; } 2>>"$proj/cpu-$name"
		e=${EPOCHREALTIME/./}
		samples[$name]+="$((e - s)) "
	done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A med cpu
printf '%-8s %12s %14s\n' command "median (ms)" "cpu (ms, mean)"
for name in "${order[@]}"; do
	[ -n "${samples[$name]:-}" ] || continue
	med[$name]=$(median <<<"${samples[$name]}")
	cpu[$name]=$(awk '{t += $1 + $2} END {printf "%.2f", t / NR * 1000}' "$proj/cpu-$name")
	printf '%-8s %12.2f %14s\n' "$name" "$(echo "${med[$name]} / 1000" | bc -l)" "${cpu[$name]}"
done
for ref in bwrap unshare; do
	[ -n "${med[$ref]:-}" ] && [ -n "${med[aisb]:-}" ] &&
		printf 'aisb / %-8s %6.2f\n' "$ref" "$(echo "${med[aisb]} / ${med[$ref]}" | bc -l)"
done
[ -n "${med[aisb-allow]:-}" ] && [ -n "${med[aisb]:-}" ] &&
	printf 'allow - none   %6.2f ms\n' "$(echo "(${med[aisb-allow]} - ${med[aisb]}) / 1000" | bc -l)"
[ -n "${med[image]:-}" ] && [ -n "${med[aisb]:-}" ] &&
	printf 'image / aisb   %6.2f (cached --image vs host rootfs; target <= 1.1), cpu %4.2f\n' \
		"$(echo "${med[image]} / ${med[aisb]}" | bc -l)" "$(echo "${cpu[image]} / ${cpu[aisb]}" | bc -l)"
[ -n "${med[image-oci]:-}" ] && [ -n "${med[aisb]:-}" ] &&
	printf 'image-oci / aisb %4.2f (an oci: layout, re-read each run)\n' "$(echo "${med[image-oci]} / ${med[aisb]}" | bc -l)"
# CPU of the whole process tree from perf's task-clock (every task the command forked, counted
# whether or not its parent waited for it): bash's `time` above misses what no waiting parent
# collects, and bwrap's sandbox PID 1 is such a process (measured: bwrap 2.7 ms by `time`, 7.5 ms
# by task-clock, aisb 7.4 and 7.9-8.9). Needs perf (linux-perf), run after the timing rounds.
if command -v perf >/dev/null 2>&1 && perf stat -e task-clock true >/dev/null 2>&1; then
	declare -A tc
	printf '%-10s %14s\n' command "task-clock (ms)"
	for name in "${order[@]}"; do
		[ -n "${cmds[$name]:-}" ] || continue
		# shellcheck disable=SC2086
		tc[$name]=$(perf stat -x, -r "$n" -e task-clock ${cmds[$name]} 2>&1 >/dev/null | awk -F, '/task-clock/ {printf "%.2f", $1}')
		printf '%-10s %14s\n' "$name" "${tc[$name]}"
	done
	[ -n "${tc[bwrap]:-}" ] && [ -n "${tc[aisb]:-}" ] &&
		printf 'aisb / bwrap cpu %4.2f (task-clock; target <= 1.5)\n' "$(echo "${tc[aisb]} / ${tc[bwrap]}" | bc -l)"
	[ -n "${tc[image]:-}" ] && [ -n "${tc[aisb]:-}" ] &&
		printf 'image / aisb cpu %4.2f (task-clock)\n' "$(echo "${tc[image]} / ${tc[aisb]}" | bc -l)"
fi
# Minor page faults per run (the process and the children it waited for): repeatable where
# wall time is not, and the main cost on the VMs measured (15-55 us per fault; docs/measurements.md).
if [ -x /usr/bin/time ]; then
	printf '%-10s %12s\n' command "page faults"
	for name in "${order[@]}"; do
		[ -n "${cmds[$name]:-}" ] || continue
		# shellcheck disable=SC2086
		f=$(for _ in 1 2 3; do /usr/bin/time -f %R ${cmds[$name]} 2>&1 >/dev/null | tail -1; done | sort -n | sed -n 2p)
		printf '%-10s %12s\n' "$name" "$f"
	done
fi
echo "(n=$n, user $(id -un), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg))"
