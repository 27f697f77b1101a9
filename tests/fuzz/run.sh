#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/fuzz/run.sh — replay every fuzz target over its corpus (make check runs this).
set -u
dir=$(cd "$(dirname "$0")" && pwd)
bdir=${AISB_FUZZ_BUILDDIR:-$PWD/tests/fuzz}
rc=0 n=0
for t in "$bdir"/fuzz-*; do
	[ -x "$t" ] || continue
	case "$t" in *.o|*.c|*-libfuzzer) continue ;; esac
	name=$(basename "$t")
	corpus=$(sed -n 's/^ \* corpus: //p' "$dir/$name.c" 2>/dev/null)
	[ -n "$corpus" ] || corpus=${name#fuzz-}
	n=$((n + 1))
	set -- "$dir/corpus/$corpus"
	# shellcheck disable=SC2013 # each " * also:" line names one directory, one word
	for c in $(sed -n 's/^ \* also: //p' "$dir/$name.c"); do set -- "$@" "$dir/corpus/$c"; done
	if "$t" "$@"; then
		echo "ok $n $name"
	else
		echo "not ok $n $name"
		rc=1
	fi
done
echo "1..$n"
[ "$n" -gt 0 ] || { echo "no fuzz target was built" >&2; exit 1; }
exit $rc
