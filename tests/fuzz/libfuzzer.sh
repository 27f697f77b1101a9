#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/fuzz/libfuzzer.sh — `make fuzz` still builds every libFuzzer target, and each one runs
# (make check runs this; issue 28: the rule had stopped linking and nobody noticed).
#
# Builds the targets in the build directory ($AISB_BUILDDIR, or the current one), then runs each
# over its seed corpus (tests/fuzz/corpus/NAME and its " * also:" dirs, read-only: new inputs go
# to a scratch dir) and then for AISB_FUZZ_CHECK_RUNS (default 300) mutated inputs. A crash, a
# sanitizer report or a leak fails the test. The gate's parsers' -seccomp targets run under the
# gate's filter; each must first be stopped by a system call outside it (the self-test). Without clang or its libFuzzer runtime the test is
# skipped (exit 77) and says why; with AISB_MUST_WORK=1 that is a failure.
set -u
dir=$(cd "$(dirname "$0")" && pwd)
bdir=${AISB_BUILDDIR:-$PWD}
runs=${AISB_FUZZ_CHECK_RUNS:-300}

missing() {
	echo "libfuzzer: $1" >&2
	[ "${AISB_MUST_WORK:-0}" = 1 ] && exit 1
	exit 77
}
command -v clang >/dev/null 2>&1 || missing "clang is not installed (contrib/packages.txt: clang)"
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n);\nint LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' >"$probe/p.c"
clang -fsanitize=fuzzer "$probe/p.c" -o "$probe/p" 2>"$probe/err" ||
	missing "clang cannot link -fsanitize=fuzzer (contrib/packages.txt: libclang-rt-dev): $(head -1 "$probe/err")"

s=$(date +%s)
if ! make -C "$bdir" -s fuzz >"$probe/make.log" 2>&1; then
	tail -40 "$probe/make.log"
	echo "not ok 1 make fuzz"
	echo "1..1"
	exit 1
fi
echo "# make fuzz: $(($(date +%s) - s)) s"
rc=0 n=1
echo "ok 1 make fuzz"
for t in "$bdir"/tests/fuzz/fuzz-*-libfuzzer; do
	name=$(basename "$t" -libfuzzer)
	base=${name%-seccomp}
	src="$dir/$base.c"
	corpus=$(sed -n 's/^ \* corpus: //p' "$src" 2>/dev/null)
	[ -n "$corpus" ] || corpus=${base#fuzz-}
	set -- "$dir/corpus/$corpus"
	# shellcheck disable=SC2013 # each " * also:" line names one directory, one word
	for c in $(sed -n 's/^ \* also: //p' "$src"); do set -- "$@" "$dir/corpus/$c"; done
	n=$((n + 1))
	scratch="$probe/$name"
	mkdir -p "$scratch"
	if [ "$base" != "$name" ]; then
		# under the gate's filter (tests/fuzz/gate-seccomp.c): the seeds as files, no corpus
		# dir (libFuzzer would write into it); first the refusal, a call outside the list must
		# stop the run, then the same target fuzzing as the others do
		seeds=$(for d in "$@"; do for f in "$d"/*; do echo "$f"; done; done | paste -sd, -)
		AISB_FUZZ_SECCOMP_SELFTEST=1 "$t" -runs=1000 -seed_inputs="$seeds" >"$scratch.self" 2>&1
		st=$?
		if [ "$st" -ne 86 ] || ! grep -q "the gate would be killed here" "$scratch.self"; then
			tail -20 "$scratch.self"
			echo "not ok $n $name: a system call outside the gate's filter did not stop it (exit $st)"
			rc=1
			continue
		fi
		set -- -seed_inputs="$seeds"
	else
		# the seeds first (-runs counts only the mutations after them), then $runs mutations,
		# with the scratch dir first so that what libFuzzer writes never lands in the source tree
		set -- "$scratch" "$@"
	fi
	if "$t" -runs="$runs" -seed=1 -max_total_time=120 -artifact_prefix="$scratch/" "$@" \
		>"$scratch.log" 2>&1; then
		echo "ok $n $name ($(grep -o 'Done [0-9]* runs in [0-9]* second' "$scratch.log" | tail -1))"
	else
		tail -30 "$scratch.log"
		echo "not ok $n $name"
		rc=1
	fi
done
echo "1..$n"
[ "$n" -gt 1 ] || { echo "libfuzzer: make fuzz built no target" >&2; exit 1; }
exit $rc
