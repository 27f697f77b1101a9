#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/lint/layers.sh — layers point down only: no module below the CLI includes a src/cli header.
#
#   layers.sh SRCDIR        check SRCDIR/src; exit 1 naming every upward include
#   layers.sh --self-test   prove the check catches a planted include (and passes a clean tree)
#
# The plan is the core's vocabulary (src/core/plan.h); the CLI builds it and the modules below
# execute it (docs/architecture.md). `make lint` runs both modes.
set -u

# the modules below the CLI (issue 13): every directory under src/ but src/cli, the only one
# that may include src/cli headers. A directory that is in neither list fails the check, so a new
# module cannot be left out by forgetting to add it here.
BELOW_CLI="core ns net rootfs build git agents util workspace pipeline"

check() {
	local src=$1/src bad=0 dir hits
	for dir in "$src"/*/; do
		dir=$(basename "$dir")
		[ "$dir" = cli ] && continue
		case " $BELOW_CLI " in
		*" $dir "*) ;;
		*) echo "layers: src/$dir is not in BELOW_CLI (tests/lint/layers.sh): add it, or make it part of src/cli" >&2
		   bad=1 ;;
		esac
	done
	for dir in $BELOW_CLI; do
		[ -d "$src/$dir" ] || continue
		# "cli/x.h", "../cli/x.h", "src/cli/x.h", with any spacing after the '#'
		hits=$(grep -rnE --include='*.c' --include='*.h' \
			'^[[:space:]]*#[[:space:]]*include[[:space:]]*"((\.\./)*|src/)cli/' "$src/$dir") || true
		if [ -n "$hits" ]; then
			printf '%s\n' "$hits" | sed "s|^$src/|layers: src/|; s|\$|  (below the CLI: include core/ or a lower module instead)|" >&2
			bad=1
		fi
	done
	return $bad
}

self_test() {
	local t rc
	t=$(mktemp -d) || return 1
	# shellcheck disable=SC2064 # expand $t now
	trap "rm -rf '$t'" RETURN
	mkdir -p "$t/src/cli" "$t/src/ns" "$t/src/net"
	printf '#include "cli/args.h"\n' >"$t/src/cli/ok.c"          # the CLI may include itself
	printf '#include "core/plan.h"\n' >"$t/src/ns/ok.c"
	if ! check "$t" 2>/dev/null; then
		echo "layers: self-test: a clean tree was refused" >&2
		return 1
	fi
	printf '#include <stdio.h>\n  #  include "../cli/plan.h"\n' >"$t/src/net/planted.h"
	check "$t" 2>"$t/err"; rc=$?
	if [ $rc -eq 0 ] || ! grep -q 'src/net/planted.h:2:' "$t/err"; then
		echo "layers: self-test: a planted include in src/net was not caught" >&2
		return 1
	fi
	rm "$t/src/net/planted.h"
	mkdir -p "$t/src/newmod"
	check "$t" 2>"$t/err"; rc=$?
	if [ $rc -eq 0 ] || ! grep -q 'src/newmod is not in BELOW_CLI' "$t/err"; then
		echo "layers: self-test: a module missing from BELOW_CLI was not caught" >&2
		return 1
	fi
	echo "layers: self-test ok (planted include and unlisted module caught, clean tree passed)"
}

case ${1:-} in
--self-test) self_test ;;
"") echo "usage: $0 SRCDIR | --self-test" >&2; exit 2 ;;
*) check "$1" && echo "layers: clean" ;;
esac
