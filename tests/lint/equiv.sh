#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/lint/equiv.sh — a restructure changes no plan and no ruleset: run an old and a new aisb
# with --dry-run, --print-ruleset and --print-policy over generated argument sets (net modes,
# --allow lists, limits, mounts, env names, harnesses, and arguments both must refuse) and diff
# stdout, stderr and the exit status byte for byte (issue 25).
#
#   equiv.sh OLD_AISB NEW_AISB     e.g. an aisb built from main before the change, and build/aisb
#
# Both run in the same fixed project and state paths (wiped before each run), so the outputs are
# comparable; the binaries' own paths are replaced by AISB_BIN in case either prints its location.
# Not part of `make lint` (it needs a second binary); prints one line per differing run and a
# summary, exit 1 when any differs.
set -u

[ $# -eq 2 ] || { echo "usage: $0 OLD_AISB NEW_AISB" >&2; exit 2; }
old=$(realpath "$1") new=$(realpath "$2")
for b in "$old" "$new"; do
	[ -x "$b" ] || { echo "equiv: '$b' is not an executable" >&2; exit 2; }
done
w=$(mktemp -d /tmp/aisb-equiv.XXXXXX) || exit 1
# shellcheck disable=SC2064 # expand $w now
trap "rm -rf '$w'" EXIT
mkdir -p "$w/out/old" "$w/out/new" "$w/data"
printf 'example.com\n*.example.org:443\n# a comment\n192.0.2.7\n' >"$w/allow.txt"
printf 'FROM_FILE=value-from-file\nOTHER=x\n' >"$w/env.txt"
chmod 0600 "$w/env.txt"
printf 'hello\n' >"$w/data/file"

# The extras combined with each net mode: one argument set per line, split on spaces.
extras=(
	""
	"--allow example.com"
	"--allow example.com --allow *.example.org --allow api.example.net:8443"
	"--allow 192.0.2.1 --allow 10.0.0.0/8 --allow 2001:db8::/32"
	"--allow-file $w/allow.txt"
	"--allow example.com --add-host example.com=192.0.2.9"
	"--allow-host-port 8080 --publish 127.0.0.1:9000:80"
	"--allow example.com --proxy 127.0.0.1:3128"
	"--pids 100 --cpus 2"
	"--memory 1G"
	"--mount $w/data:/srv/data --mount $w/data/file:/srv/f:rw"
	"--read-only --workdir /work --writable-git"
	"--no-cwd --ephemeral-home --no-agents"
	"--env FOO=bar --env HOME_NOT_SECRET --env-file $w/env.txt"
	"--allow-ptrace --container-proc"
	"--harness shell"
	"--harness codex --allow example.com"
	"--pi-token-env MY_KEY"
	"--allow 'not a host'"
	"--env 1BAD=x"
	"--pids 0 --cpus -1"
)
modes=(none allow full)
# --net allow with no entry is refused: give every allow run one, so its extras are what varies
declare -A base=([none]="" [allow]="--allow base.example" [full]="")
prints=(--dry-run --print-ruleset --print-policy)

run_one() { # BIN OUTDIR NAME ARGS...
	local bin=$1 dir=$2 name=$3 rc
	shift 3
	rm -rf "$w/state" "$w/project"
	mkdir -p "$w/state" "$w/project"
	(cd "$w/project" && env -i PATH=/usr/bin:/bin HOME="$w/home" USER="$(id -un)" TERM=xterm \
		LANG=C.UTF-8 HOME_NOT_SECRET=visible XDG_STATE_HOME="$w/state" XDG_RUNTIME_DIR="$w/run" \
		"$bin" "$@" >"$dir/$name.out" 2>"$dir/$name.err" </dev/null)
	rc=$?
	echo "$rc" >"$dir/$name.rc"
	sed -i "s|$bin|AISB_BIN|g" "$dir/$name.out" "$dir/$name.err"
}

n=0 same=0 differ=0
mkdir -p "$w/home" "$w/run"
chmod 0700 "$w/run"
for mode in "${modes[@]}"; do
	for extra in "${extras[@]}"; do
		# --net none refuses every network flag: one such set shows it, the rest would repeat it
		case "$mode $extra" in
		"none "*--allow-file* | "none "*--add-host* | "none "*--publish* | "none "*--proxy* | \
		"none "*"--allow "*"--allow "*) continue ;;
		esac
		for print in "${prints[@]}"; do
			n=$((n + 1))
			# shellcheck disable=SC2086 # an argument set is split on spaces on purpose
			eval "set -- --net $mode ${base[$mode]} $extra $print -- true"
			run_one "$old" "$w/out/old" "$n" "$@"
			run_one "$new" "$w/out/new" "$n" "$@"
			if cmp -s "$w/out/old/$n.out" "$w/out/new/$n.out" &&
				cmp -s "$w/out/old/$n.err" "$w/out/new/$n.err" &&
				cmp -s "$w/out/old/$n.rc" "$w/out/new/$n.rc"; then
				same=$((same + 1))
			else
				differ=$((differ + 1))
				echo "equiv: differs: aisb $*" >&2
				diff -u "$w/out/old/$n.out" "$w/out/new/$n.out" | head -20 >&2
				diff -u "$w/out/old/$n.err" "$w/out/new/$n.err" | head -10 >&2
				diff -u "$w/out/old/$n.rc" "$w/out/new/$n.rc" >&2
			fi
		done
	done
done
rcs=$(cat "$w"/out/new/*.rc | sort -n | uniq -c | awk '{printf "%s%s x exit %s", (NR > 1 ? ", " : ""), $1, $2}')
bytes=$(cat "$w"/out/new/*.out | wc -c)
echo "equiv: $n runs (${#modes[@]} net modes x up to ${#extras[@]} argument sets x ${#prints[@]} outputs): $same identical, $differ differ; new: $rcs; $bytes bytes of stdout compared"
[ "$differ" -eq 0 ]
