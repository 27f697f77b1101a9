#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/lint/layers.sh — every arrow points down: a module includes only its own headers and
# those of modules in lower layers (docs/architecture.md, "Layers"; issue 25).
#
#   layers.sh SRCDIR        check SRCDIR/src; exit 1 naming every upward or sideways include
#   layers.sh --self-test   prove the check catches a planted include across each layer boundary
#                           (and sideways, an unlisted module, a stale exception) and passes a
#                           clean tree
#
# `make lint` runs both modes.
set -u

# The layers, lowest first; one line per layer, the modules (directories under src/) in it.
# A file in a module may include "MOD/..." only when MOD is its own module or sits in a lower
# layer. Two modules in the same layer may not include each other: a sideways arrow is how a
# cycle starts, and if one needs the other it belongs a layer up. A directory under src/ that is
# in no layer fails the check, so a new module cannot be left out by forgetting to add it.
#   util        helpers with no aisb vocabulary (log, strbuf, dl, sha256, fdpass, ...)
#   core        the plan: the vocabulary the CLI builds and every module below it reads
#   ns          the kernel primitives: userns, caps, seccomp, mounts, procfs, cgroup, limits
#   net git rootfs          modules over the primitives: the network (nft, gate, pasta), the
#                           git check, the image store
#   agents workspace        the harness bridges (over net), the workspace clone (over git, ns)
#   build run pipeline      the orchestrators: `aisb build` after its flags (build_run(),
#                           its native RUN steps), `aisb run`'s supervisor/session/init,
#                           autophase
#   cli gen     the subcommands, which build the plan and hand it on; the programs run when
#               aisb is built (seccomp-gen compiles the tables of src/ns and src/net)
LAYERS="
util
core
ns
net git rootfs
agents workspace
build run pipeline
cli gen
"

# Upward arrows the code still has, one "FILE INCLUDE" per line, each with a comment giving the
# reason and the issue that removes it. None today: issue 25 removed the last four (core/plan.h
# -> ns/cgroup.h, core/plan.c -> workspace, ns/mount-plan.c -> agents, ns/seccomp-gen.c -> net,
# the generator now being src/gen). An exception that no longer matches an include fails the
# check, so the list only shrinks.
EXCEPTIONS=""

# layer_of MOD: the layer number of MOD (1 = lowest), empty when MOD is in no layer
layer_of() {
	local n=0 line
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		n=$((n + 1))
		case " $line " in *" $1 "*) echo "$n"; return ;; esac
	done <<<"$LAYERS"
}

# below MOD: the modules MOD may include besides itself, for the error message
below() {
	local n=0 line out="" me
	me=$(layer_of "$1")
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		n=$((n + 1))
		[ "$n" -lt "$me" ] && out+="$line "
	done <<<"$LAYERS"
	echo "${out% }"
}

is_exception() { # FILE INC
	local f i
	while read -r f i; do
		[ -n "$f" ] || continue
		[ "$f" = "$1" ] && [ "$i" = "$2" ] && return 0
	done <<<"$EXCEPTIONS"
	return 1
}

check() {
	local root=$1 src=$1/src bad=0 dir mod inc file line rest ml il used=""
	for dir in "$src"/*/; do
		dir=$(basename "$dir")
		if [ -z "$(layer_of "$dir")" ]; then
			echo "layers: src/$dir is in no layer (LAYERS in tests/lint/layers.sh): add it to the layer its includes put it in" >&2
			bad=1
		fi
	done
	# every quoted include of a module header: "mod/x.h", "../mod/x.h", "src/mod/x.h", any
	# spacing after the '#'; an include without a directory is the file's own module
	while IFS= read -r hit; do
		file=${hit%%:*}; rest=${hit#*:}; line=${rest%%:*}
		inc=${hit#*\"}; inc=${inc%%\"*}
		inc=${inc#src/}
		while [ "${inc#../}" != "$inc" ]; do inc=${inc#../}; done
		case $inc in */*) ;; *) continue ;; esac
		file=${file#"$root"/}
		mod=${file#src/}; mod=${mod%%/*}
		[ "${inc%%/*}" = "$mod" ] && continue
		ml=$(layer_of "$mod") il=$(layer_of "${inc%%/*}")
		[ -n "$ml" ] || continue # reported above
		if [ -z "$il" ]; then
			echo "layers: $file:$line: includes \"$inc\", which is in no module of LAYERS" >&2
			bad=1
			continue
		fi
		[ "$il" -lt "$ml" ] && continue
		if is_exception "$file" "$inc"; then
			used+="$file $inc"$'\n'
			continue
		fi
		if [ "$il" -eq "$ml" ]; then
			echo "layers: $file:$line: includes \"$inc\": sideways, ${inc%%/*} is in $mod's layer ($mod may include: $(below "$mod"))" >&2
		else
			echo "layers: $file:$line: includes \"$inc\": upward, ${inc%%/*} (layer $il) is above $mod (layer $ml) ($mod may include: $(below "$mod"))" >&2
		fi
		bad=1
	done < <(grep -rnE --include='*.c' --include='*.h' \
		'^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$src")
	while read -r file inc; do
		[ -n "$file" ] || continue
		if ! grep -qxF "$file $inc" <<<"$used"; then
			echo "layers: the exception '$file -> $inc' (EXCEPTIONS in tests/lint/layers.sh) matches no include: drop it" >&2
			bad=1
		fi
	done <<<"$EXCEPTIONS"
	return $bad
}

# plant CONTENT FILE and expect check to fail naming WANT (a grep -E pattern); then remove it
expect_caught() {
	local t=$1 file=$2 content=$3 want=$4 why=$5
	mkdir -p "$(dirname "$t/$file")"
	printf '%b' "$content" >"$t/$file"
	if check "$t" 2>"$t/err" || ! grep -qE "$want" "$t/err"; then
		echo "layers: self-test: $why was not caught (wanted /$want/); got:" >&2
		cat "$t/err" >&2
		return 1
	fi
	rm -f "$t/$file"
}

self_test() {
	local t line prev="" lower higher n=0 EXCEPTIONS=""
	t=$(mktemp -d) || return 1
	# shellcheck disable=SC2064 # expand $t now
	trap "rm -rf '$t'" RETURN
	# a clean tree: every module includes itself and the one below it
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		for higher in $line; do
			mkdir -p "$t/src/$higher"
			printf '#include "%s/a.h"\n#include "a.h"\n' "$higher" >"$t/src/$higher/ok.c"
			for lower in $prev; do
				printf '#include "%s/b.h"\n' "$lower" >>"$t/src/$higher/ok.c"
			done
		done
		prev=$line
	done <<<"$LAYERS"
	if ! check "$t" 2>"$t/err"; then
		echo "layers: self-test: a clean tree was refused:" >&2
		cat "$t/err" >&2
		return 1
	fi
	# one upward include across each layer boundary, from the lower layer's first module to
	# the next layer's first module, in the spellings the check must read
	prev=""
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		if [ -n "$prev" ]; then
			lower=${prev%% *} higher=${line%% *}
			n=$((n + 1))
			case $((n % 3)) in
			0) inc="$higher/x.h" ;;
			1) inc="../$higher/x.h" ;;
			2) inc="src/$higher/x.h" ;;
			esac
			expect_caught "$t" "src/$lower/planted.h" "#include <stdio.h>\n  #  include \"$inc\"\n" \
				"src/$lower/planted.h:2: includes \"$higher/x.h\": upward" \
				"an upward include $lower -> $higher" || return 1
		fi
		prev=$line
	done <<<"$LAYERS"
	# the top reaching the bottom is fine; the bottom reaching the top is not
	expect_caught "$t" "src/util/up.c" '#include "cli/args.h"\n' \
		'src/util/up.c:1: includes "cli/args.h": upward' "util -> cli" || return 1
	expect_caught "$t" "src/net/side.c" '#include "git/gitrun.h"\n' \
		'src/net/side.c:1: includes "git/gitrun.h": sideways' "a sideways include net -> git" || return 1
	mkdir -p "$t/src/newmod"
	expect_caught "$t" "src/newmod/x.c" '' 'src/newmod is in no layer' "a module in no layer" || return 1
	rmdir "$t/src/newmod"
	expect_caught "$t" "src/ns/y.c" '#include "nomod/y.h"\n' \
		'src/ns/y.c:1: includes "nomod/y.h", which is in no module' "an include of no module" || return 1
	# a listed exception lets its include through, and a stale one is refused
	printf '#include "cli/args.h"\n' >"$t/src/core/exc.c"
	EXCEPTIONS="src/core/exc.c cli/args.h"
	if ! check "$t" 2>"$t/err"; then
		echo "layers: self-test: a listed exception was refused:" >&2
		cat "$t/err" >&2
		return 1
	fi
	rm "$t/src/core/exc.c"
	expect_caught "$t" "src/core/none.c" '' "the exception 'src/core/exc.c -> cli/args.h' .* matches no include" \
		"a stale exception" || return 1
	echo "layers: self-test ok ($n upward includes across the layer boundaries, util -> cli, a sideways include, a module in no layer, an include of no module and a stale exception caught; a clean tree and a listed exception passed)"
}

case ${1:-} in
--self-test) self_test ;;
"") echo "usage: $0 SRCDIR | --self-test" >&2; exit 2 ;;
*) check "$1" && echo "layers: clean ($(grep -c . <<<"$LAYERS") layers, $(grep -c . <<<"$EXCEPTIONS") named exceptions)" ;;
esac
