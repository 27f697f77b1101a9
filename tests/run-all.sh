#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/run-all.sh — the whole test suite, after ./setup.sh has built ./build:
#   1. make check in ./build: cmocka unit tests, the e2e bats suites (as you, and as an
#      unprivileged user when run as root), the VM tests, the fuzz corpus replay;
#   2. the unit tests again in an ASan+UBSan build (./build-san), built and run in the
#      background from the start, at a lower priority (it shares nothing with step 1 but the
#      source tree, which neither writes; docs/testing.md). A job that has not ended after
#      AISB_SAN_TIMEOUT s (default 2400) is killed and counted as a failure.
# Set AISB_MUST_WORK=1 to turn a missing kernel feature into a failure (CI does).
# Closes with one line "tests: N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.."
top=$PWD
[ -x build/aisb ] || { echo "run-all: ./build/aisb is missing: run ./setup.sh first" >&2; exit 1; }

rc=0
t0=$(date +%s)
mkdir -p build-san
# timeout signals its whole process group (make and the compilers) when the bound is reached
nice -n 10 timeout -k 30 "${AISB_SAN_TIMEOUT:-2400}" bash -c '
	cd build-san && { [ -f Makefile ] || "$1"/configure --enable-sanitizers --enable-werror >/dev/null; } &&
		make -j"$(nproc)" >/dev/null && ASAN_OPTIONS=detect_leaks=1 make check-unit' _ "$top" >build-san/run-all.log 2>&1 &
san=$!

make -C build -j"$(nproc)" check || rc=1
echo "---- make check: $(($(date +%s) - t0)) s"
for f in build/tests/e2e/run.log build/tests/vm/*.log build/tests/containers/*.log; do
	[ -f "$f" ] && { echo "---- $f"; cat "$f"; }
done
[ $rc -eq 0 ] || { echo "---- failing logs:"; grep -l '^FAIL\|^ERROR' build/test-suite.log >/dev/null 2>&1 && cat build/test-suite.log; }

echo "---- sanitizer build (ASan+UBSan), unit tests"
wait "$san"
case $? in
0) ;;
124 | 137) echo "run-all: the sanitizer job ran over ${AISB_SAN_TIMEOUT:-2400} s: killed, a failure"; rc=1 ;;
*) rc=1 ;;
esac
echo "---- sanitizer job done: $(($(date +%s) - t0)) s since the start"
cat build-san/run-all.log
[ $rc -eq 0 ] || { [ -f build-san/test-suite.log ] && cat build-san/test-suite.log; }

# Count results from automake's .trs files (unit binaries count as one each) and the e2e TAP.
pass=0 fail=0 skip=0
for trs in build/tests/unit/*.trs build-san/tests/unit/*.trs build/tests/vm/*.trs build/tests/fuzz/*.trs build/tests/install/*.trs \
	build/tests/containers/*.trs; do
	[ -f "$trs" ] || continue
	case "$(sed -n 's/^:test-result: //p' "$trs" | head -1)" in
	PASS) pass=$((pass + 1)) ;; SKIP) skip=$((skip + 1)) ;; *) fail=$((fail + 1)) ;;
	esac
done
if [ -f build/tests/e2e/run.log ]; then
	line=$(grep -E '^e2e: [0-9]+ passed' build/tests/e2e/run.log | tail -1)
	if [ -n "$line" ]; then
		set -- $line
		pass=$((pass + $2)) fail=$((fail + $4)) skip=$((skip + $6))
	else
		fail=$((fail + 1))
	fi
else
	fail=$((fail + 1))
fi
[ $rc -eq 0 ] || [ $fail -gt 0 ] || fail=1
echo "tests: $pass passed, $fail failed, $skip skipped"
[ $rc -eq 0 ] && [ $fail -eq 0 ]
