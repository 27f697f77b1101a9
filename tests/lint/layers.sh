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
BELOW_CLI="core ns run net rootfs build git agents util workspace pipeline"

# The hardening primitives (issue 13): capabilities, user namespaces, seccomp. They live in
# src/ns with the sandbox that uses them most, and src/net's confined gate and resolver use the
# same ones (one way to drop privileges), so src/net may include these headers of src/ns and no
# other: the supervisor and init (src/ns) drive the network (src/net), not the reverse. They are
# leaves: they include only each other and src/util, so the net -> ns edge cannot close a cycle.
PRIMITIVES="ns/caps.h ns/userns.h ns/seccomp.h"
PRIMITIVE_FILES="caps.c caps.h userns.c userns.h seccomp.c seccomp.h seccomp-internal.h seccomp-builtin.c seccomp-compile.c"

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
	primitives "$src" || bad=1
	return $bad
}

# src/net includes of src/ns headers other than the primitives; includes in the primitives of
# anything but themselves and src/util.
primitives() {
	local src=$1 bad=0 f inc
	while IFS= read -r hit; do
		inc=${hit#*\"}; inc=${inc%%\"*}
		case " $PRIMITIVES " in
		*" $inc "*) ;;
		*) echo "layers: src/${hit#"$src"/}  (src/net may include only the hardening primitives of src/ns: $PRIMITIVES)" >&2
		   bad=1 ;;
		esac
	done < <(grep -rnE --include='*.c' --include='*.h' '^[[:space:]]*#[[:space:]]*include[[:space:]]*"ns/' "$src/net" 2>/dev/null)
	for f in $PRIMITIVE_FILES; do
		[ -f "$src/ns/$f" ] || continue
		while IFS= read -r hit; do
			inc=${hit#*\"}; inc=${inc%%\"*}
			case $inc in
			util/*) ;;
			ns/*) case " $PRIMITIVE_FILES " in *" ${inc#ns/} "*) ;; *) inc=bad ;; esac ;;
			*) inc=bad ;;
			esac
			if [ "$inc" = bad ]; then
				echo "layers: src/ns/$f:$hit  (a hardening primitive includes only the primitives and src/util)" >&2
				bad=1
			fi
		done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$src/ns/$f")
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
	printf '#include "ns/caps.h"\n' >"$t/src/net/prim.c"         # a primitive: allowed
	printf '#include "ns/sandbox.h"\n' >"$t/src/net/side.c"
	check "$t" 2>"$t/err"; rc=$?
	if [ $rc -eq 0 ] || ! grep -q 'src/net/side.c:1:' "$t/err" || grep -q 'prim.c' "$t/err"; then
		echo "layers: self-test: src/net including a non-primitive of src/ns was not caught (or a primitive was)" >&2
		return 1
	fi
	rm "$t/src/net/side.c"
	printf '#include "net/gate.h"\n' >"$t/src/ns/caps.c"
	check "$t" 2>"$t/err"; rc=$?
	if [ $rc -eq 0 ] || ! grep -q 'src/ns/caps.c:1:' "$t/err"; then
		echo "layers: self-test: a primitive including src/net was not caught" >&2
		return 1
	fi
	rm "$t/src/ns/caps.c"
	mkdir -p "$t/src/newmod"
	check "$t" 2>"$t/err"; rc=$?
	if [ $rc -eq 0 ] || ! grep -q 'src/newmod is not in BELOW_CLI' "$t/err"; then
		echo "layers: self-test: a module missing from BELOW_CLI was not caught" >&2
		return 1
	fi
	echo "layers: self-test ok (planted include, unlisted module, sideways include and a primitive's include caught; clean tree passed)"
}

case ${1:-} in
--self-test) self_test ;;
"") echo "usage: $0 SRCDIR | --self-test" >&2; exit 2 ;;
*) check "$1" && echo "layers: clean" ;;
esac
