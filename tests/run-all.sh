#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/run-all.sh — the whole test suite, after ./setup.sh has built ./build:
#   1. make check in ./build: cmocka unit tests, the e2e bats suites (as you, and as an
#      unprivileged user when run as root), the VM tests, the fuzz corpus replay;
#   2. the unit tests again in an ASan+UBSan build (./build-san).
# Set AISB_MUST_WORK=1 to turn a missing kernel feature into a failure (CI does).
# Closes with one line "tests: N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.."
top=$PWD
[ -x build/aisb ] || { echo "run-all: ./build/aisb is missing: run ./setup.sh first" >&2; exit 1; }

rc=0
make -C build -j"$(nproc)" check || rc=1
for f in build/tests/e2e/run.log build/tests/vm/*.log; do
	[ -f "$f" ] && { echo "---- $f"; cat "$f"; }
done
[ $rc -eq 0 ] || { echo "---- failing logs:"; grep -l '^FAIL\|^ERROR' build/test-suite.log >/dev/null 2>&1 && cat build/test-suite.log; }

echo "---- sanitizer build (ASan+UBSan), unit tests"
mkdir -p build-san
( cd build-san && { [ -f Makefile ] || "$top"/configure --enable-sanitizers --enable-werror >/dev/null; } &&
  make -j"$(nproc)" >/dev/null && ASAN_OPTIONS=detect_leaks=1 make check-unit ) || rc=1
[ $rc -eq 0 ] || { [ -f build-san/test-suite.log ] && cat build-san/test-suite.log; }

# Count results from automake's .trs files (unit binaries count as one each) and the e2e TAP.
pass=0 fail=0 skip=0
for trs in build/tests/unit/*.trs build-san/tests/unit/*.trs build/tests/vm/*.trs build/tests/fuzz/*.trs build/tests/install/*.trs; do
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
