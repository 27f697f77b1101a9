#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/fuzz/long.sh — the long fuzzing run (`make fuzz-long`; docs/fuzzing.md)
#
# Runs every libFuzzer target that `make fuzz` built until it has done AISB_FUZZ_LONG_RUNS
# inputs (default 10,000,000) or AISB_FUZZ_LONG_SECONDS of wall time (default 3600 per target),
# whichever comes first, at nice 19, AISB_FUZZ_LONG_JOBS targets at a time (default 1; the
# machine is 2 cores). AISB_FUZZ_LONG_ONLY="unpack http" runs only those targets. Each target
# works on a copy of its seed corpus under $TMPDIR/aisb-fuzz-long/NAME (the checked-in corpus is
# only read), with its crash, leak, timeout and OOM inputs written there as crash-*, leak-*,
# timeout-*, oom-*. A target's line says how many runs in how many seconds, and whether it
# stopped on its run count, its time budget, or a finding; the run exits 1 if any target found
# something. AISB_FUZZ_LONG_MERGE=1 merges what each run found into the checked-in corpus
# (-merge=1 keeps only inputs that add coverage).
#
# The gate's parsers also run as NAME-seccomp, under the gate's own seccomp filter
# (tests/fuzz/gate-seccomp.c): a system call outside it stops the run with exit 86 and the input
# in hex in the log, which this turns back into crash-seccomp-* beside the others. Their corpus
# stays in memory (libFuzzer cannot write under that filter), so "corpus" counts the seeds only.
#
# A finding is fixed in the code and its input added to tests/fuzz/corpus/NAME/, which `make
# check` replays (tests/fuzz/run.sh); the numbers go to docs/measurements.md.
set -u
dir=$(cd "$(dirname "$0")" && pwd)
bdir=${AISB_FUZZ_BUILDDIR:-$PWD/tests/fuzz}
runs=${AISB_FUZZ_LONG_RUNS:-10000000}
secs=${AISB_FUZZ_LONG_SECONDS:-3600}
jobs=${AISB_FUZZ_LONG_JOBS:-1}
only=${AISB_FUZZ_LONG_ONLY:-}
work=${TMPDIR:-/tmp}/aisb-fuzz-long
mkdir -p "$work"

targets=
for t in "$bdir"/fuzz-*-libfuzzer; do
	[ -x "$t" ] || continue
	name=$(basename "$t" -libfuzzer)
	name=${name#fuzz-}
	if [ -n "$only" ]; then
		case " $only " in *" $name "*) ;; *) continue ;; esac
	fi
	targets="$targets $name"
done
[ -n "$targets" ] || { echo "fuzz-long: no target built in $bdir (run make fuzz)" >&2; exit 1; }

# one target: its corpus dirs (the " * corpus:" and " * also:" lines of its source), a copy to
# work on, the run, and one line of result in $work/NAME.result
run_one() {
	name=$1
	base=${name%-seccomp}
	t=$bdir/fuzz-$name-libfuzzer
	src=$dir/fuzz-$base.c
	corpus=$(sed -n 's/^ \* corpus: //p' "$src" 2>/dev/null)
	[ -n "$corpus" ] || corpus=$base
	w=$work/$name
	rm -rf "$w"
	mkdir -p "$w/corpus"
	# shellcheck disable=SC2013 # each " * also:" line names one directory, one word
	for c in $corpus $(sed -n 's/^ \* also: //p' "$src"); do
		cp "$dir/corpus/$c"/* "$w/corpus/" 2>/dev/null
	done
	if [ "$base" != "$name" ]; then
		# under the gate's filter: seeds as files, no corpus dir (tests/fuzz/gate-seccomp.c)
		set -- -seed_inputs="$(for f in "$w/corpus"/*; do echo "$f"; done | paste -sd, -)"
	else
		set -- "$w/corpus"
	fi
	s=$(date +%s)
	nice -n 19 "$t" -runs="$runs" -max_total_time="$secs" -timeout=25 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$w/" "$@" >"$w/log" 2>&1
	rc=$?
	el=$(($(date +%s) - s))
	# a stop by the gate's filter: its input is in the log, in hex
	hex=$(sed -n 's/^seccomp-crash-hex: //p' "$w/log" | head -1)
	if [ -n "$hex" ]; then
		python3 -c 'import sys; sys.stdout.buffer.write(bytes.fromhex(sys.argv[1]))' "$hex" \
			>"$w/crash-seccomp-$(echo "$hex" | sha1sum | cut -c1-12)"
	fi
	done_runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$w/log" | tail -1)
	found=
	for f in "$w"/crash-* "$w"/leak-* "$w"/timeout-* "$w"/oom-* "$w"/slow-unit-*; do
		[ -e "$f" ] && found="$found$(basename "$f") "
	done
	if [ -n "$found" ] || [ "$rc" -ne 0 ]; then
		why="FOUND (exit $rc): $found$(grep -m1 '^fuzz: the gate' "$w/log")"
	elif [ "${done_runs:-0}" -ge "$runs" ]; then
		why="reached $runs runs"
	else
		why="time budget of $secs s"
	fi
	echo "$name: ${done_runs:-?} runs in $el s ($(( ${done_runs:-0} / (el > 0 ? el : 1) ))/s), corpus $(find "$w/corpus" -type f | wc -l) inputs, $why" \
		>"$w.result"
	cat "$w.result"
	if [ "${AISB_FUZZ_LONG_MERGE:-0}" = 1 ] && [ -z "$found" ] && [ "$base" = "$name" ]; then
		"$t" -merge=1 "$dir/corpus/$corpus" "$w/corpus" >"$w/merge.log" 2>&1
	fi
}

echo "fuzz-long: $(echo "$targets" | wc -w) targets, up to $runs runs or $secs s each, $jobs at a time, in $work"
lane=0
for l in $(seq 1 "$jobs"); do
	(
		i=0
		for name in $targets; do
			[ $((i % jobs)) -eq $((l - 1)) ] && run_one "$name"
			i=$((i + 1))
		done
	) &
	lane=$((lane + 1))
done
wait
rc=0
for name in $targets; do
	grep -q FOUND "$work/$name.result" 2>/dev/null && rc=1
	[ -f "$work/$name.result" ] || rc=1
done
echo "fuzz-long: done; results in $work/*.result"
exit $rc
