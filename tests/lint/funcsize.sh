#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/lint/funcsize.sh — no function in src/ is longer than LIMIT lines (issue 25).
#
#   funcsize.sh SRCDIR        exit 1 naming every function over the limit, with file:line and length
#   funcsize.sh --self-test   prove the check catches a planted long function (and passes a short one)
#
# A function is what the house style writes: its opening brace alone at column 0 and its closing
# brace at column 0 (style.md); its length is the lines between them. A long function is where a
# reader loses the thread, and where issue 25 found the hard-to-change code: split it into named
# stages. LIMIT is 120, the bound; the code is well under it (docs/architecture.md).
set -u

LIMIT=${AISB_FUNC_LINES:-120}

check() {
	local root=$1 out
	out=$(find "$root/src" -name '*.c' | sort | while IFS= read -r f; do
		awk -v limit="$LIMIT" -v rel="${f#"$root"/}" '
			/^[A-Za-z_]/ { sig = $0 }
			/^\{/ { start = NR; name = sig; next }
			/^\}/ { if (start && NR - start - 1 > limit) {
					sub(/\(.*/, "", name); n = split(name, w, /[ *]+/)
					printf "funcsize: %s:%d: %s is %d lines (over %d): split it into named stages\n",
					       rel, start, w[n], NR - start - 1, limit }
				start = 0 }
			' "$f"
	done)
	if [ -n "$out" ]; then
		printf '%s\n' "$out" >&2
		return 1
	fi
}

self_test() {
	local t rc
	t=$(mktemp -d) || return 1
	# shellcheck disable=SC2064 # expand $t now
	trap "rm -rf '$t'" RETURN
	mkdir -p "$t/src/core"
	{ printf 'static int short_one(void)\n{\n'; for _ in $(seq "$LIMIT"); do printf '\tx++;\n'; done; printf '}\n'; } \
		>"$t/src/core/ok.c"
	if ! check "$t" 2>/dev/null; then
		echo "funcsize: self-test: a function of exactly $LIMIT lines was refused" >&2
		return 1
	fi
	{ printf 'int long_one(int a)\n{\n'; for _ in $(seq $((LIMIT + 1))); do printf '\ta++;\n'; done; printf '}\n'; } \
		>"$t/src/core/planted.c"
	check "$t" 2>"$t/err"; rc=$?
	if [ $rc -eq 0 ] || ! grep -q "src/core/planted.c:2: long_one is $((LIMIT + 1)) lines" "$t/err" ||
	   grep -q short_one "$t/err"; then
		echo "funcsize: self-test: a planted $((LIMIT + 1))-line function was not caught (or the short one was)" >&2
		return 1
	fi
	echo "funcsize: self-test ok (a $((LIMIT + 1))-line function caught, $LIMIT lines passed)"
}

case ${1:-} in
--self-test) self_test ;;
"") echo "usage: $0 SRCDIR | --self-test" >&2; exit 2 ;;
*) check "$1" && echo "funcsize: no function in src/ over $LIMIT lines" ;;
esac
