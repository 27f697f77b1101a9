#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/pty.sh — throughput of the pty relay: `cat` of a 100 MB file inside the sandbox under
# script(1), with the terminal filter (the default) and with --tty-passthrough, interleaved, N
# times each, for text (ASCII lines with SGR colours) and for random bytes (every branch of the
# filter). Prints the median seconds and MB/s of each. Not a test: no threshold.
#   AISB_BIN=./build/aisb N=5 bench/pty.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
aisb=${AISB_BIN:-$here/../build/aisb}
n=${N:-5}
dir=$(mktemp -d /tmp/aisb-bench-pty.XXXXXX)
trap 'rm -rf "$dir"' EXIT
yes "$(printf 'the quick brown fox jumps over the lazy dog \033[31mred\033[0m 0123456789')" |
	head -c 100M >"$dir/text"
head -c 100M /dev/urandom >"$dir/random"
export XDG_STATE_HOME="$dir/state" XDG_CACHE_HOME="$dir/cache" XDG_CONFIG_HOME="$dir/config"

once() { # KIND FLAGS -> seconds
	local t0=$EPOCHREALTIME
	# shellcheck disable=SC2086
	script -qec "$aisb --net none --ephemeral-home --no-agents --accept-unenforced-limits $2 \
		--mount $dir/$1:/data/in -- cat /data/in" /dev/null >/dev/null
	awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }'
}

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

for kind in text random; do
	: >"$dir/filter.t"
	: >"$dir/pass.t"
	for _ in $(seq "$n"); do
		once "$kind" "" >>"$dir/filter.t"
		once "$kind" --tty-passthrough >>"$dir/pass.t"
	done
	f=$(median <"$dir/filter.t")
	p=$(median <"$dir/pass.t")
	awk -v k="$kind" -v f="$f" -v p="$p" 'BEGIN { printf "%-7s filter %6.2f s (%5.1f MB/s)   passthrough %6.2f s (%5.1f MB/s)   ratio %.2f\n", k, f, 104.8576 / f, p, 104.8576 / p, f / p }'
done
