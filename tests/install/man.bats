#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# man.bats — every subcommand has a man page, and every flag its parser's table has (run: the
# option table in src/cli/args.c; the others: src/cli/commands.c) is documented there. A flag
# added without docs fails here. The flags are read from the binary (`aisb __complete SUB -`
# lists a subcommand's whole table), the pages from the build (scdoc's output).

AISB=$AISB_BUILDDIR/aisb

subcommands() { "$AISB" __complete '' | grep -v '^-'; }

# flags_of SUB: the long and short flags of SUB's table, one per line
flags_of() { "$AISB" __complete "$1" -; }

# harnesses: the names of the harness table's rows (src/agents/harness.c), as --harness offers them
harnesses() { "$AISB" __complete --harness '' | grep -vx shell; }

# undocumented PAGE FLAG...: prints the flags PAGE has no term for. A harness's switch
# (--no-NAME-config, one per row of the harness table, made from the row) is documented by the
# page's one generic term *--no-*_HARNESS_*-config*, so that adding a harness touches no page.
undocumented() {
	local page=$1 f h
	shift
	for f in "$@"; do
		# scdoc renders *--flag* as \fB--flag\fR
		grep -qF "\\fB$f\\fR" "$page" && continue
		h=${f#--no-}
		h=${h%-config}
		if [ "$f" = "--no-$h-config" ] && harnesses | grep -qx -- "$h" &&
			grep -qF '\fB--no-\fR\fIHARNESS\fR\fB-config\fR' "$page"; then
			continue
		fi
		echo "$f"
	done
}

@test "man: aisb(1) names every subcommand, and each has its page" {
	local s missing=""
	for s in $(subcommands); do
		[ -f "$AISB_BUILDDIR/man/aisb-$s.1" ] || missing+=" aisb-$s.1"
		grep -qF "\\fBaisb-$s\\fR(1)" "$AISB_BUILDDIR/man/aisb.1" || missing+=" $s-in-aisb.1"
	done
	echo "missing:$missing"
	[ -z "$missing" ]
}

@test "man: every flag of every subcommand's table is in its man page" {
	local s out="" n=0
	for s in $(subcommands); do
		mapfile -t flags < <(flags_of "$s")
		n=$((n + ${#flags[@]}))
		miss=$(undocumented "$AISB_BUILDDIR/man/aisb-$s.1" "${flags[@]}")
		[ -z "$miss" ] || out+=" aisb-$s.1:"$(echo $miss)
	done
	echo "undocumented:$out"
	[ -z "$out" ]
	# the tables are not empty (a broken __complete would pass the loop above)
	[ "$n" -gt 50 ]
}

@test "man: run's page covers exactly the option table's flags (src/cli/args.c)" {
	mapfile -t flags < <(flags_of run)
	# the option table is what `aisb --help` prints; both must agree with the page
	mapfile -t help < <("$AISB" --help | grep -oE '^  --[a-z][a-z-]*' | sed 's/^  //')
	[ "${#flags[@]}" -eq "${#help[@]}" ]
	[ -z "$(undocumented "$AISB_BUILDDIR/man/aisb-run.1" "${help[@]}")" ]
}

@test "man: a flag in a subcommand's --help that its table lacks is drift" {
	local s out="" f
	for s in $(subcommands); do
		for f in $("$AISB" "$s" --help | grep -oE -- '--[a-z][a-z-]*' | sort -u); do
			flags_of "$s" | grep -qx -- "$f" || out+=" $s:$f"
		done
	done
	echo "in --help but not in the table:$out"
	[ -z "$out" ]
}

@test "man: the check fails for a page that lacks a flag (control)" {
	local page=$BATS_TEST_TMPDIR/aisb-run.1
	grep -vF '\fB--keep\fR' "$AISB_BUILDDIR/man/aisb-run.1" >"$page"
	mapfile -t flags < <(flags_of run)
	[ "$(undocumented "$page" "${flags[@]}")" = "--keep" ]
}

@test "man: every harness's switch is in run's table, and the generic term covers only those (control)" {
	local page=$BATS_TEST_TMPDIR/aisb-run.1 h want=()
	mapfile -t hs < <(harnesses)
	[ "${#hs[@]}" -ge 3 ]
	for h in "${hs[@]}"; do
		flags_of run | grep -qx -- "--no-$h-config"
		want+=("--no-$h-config")
	done
	# the term covers the table's harnesses, not a name outside it, nor a flag of another shape
	[ -z "$(undocumented "$AISB_BUILDDIR/man/aisb-run.1" --no-pi-config)" ]
	[ "$(undocumented "$AISB_BUILDDIR/man/aisb-run.1" --no-gemini-config --no-shell-config)" = \
		"$(printf '%s\n' --no-gemini-config --no-shell-config)" ]
	# without the term (and the page's own mentions of a switch), every harness's switch is undocumented
	grep -vF '\fB--no-\fR\fIHARNESS\fR\fB-config\fR' "$AISB_BUILDDIR/man/aisb-run.1" |
		sed 's/\\fB--no-[a-z]*-config\\fR//g' >"$page"
	[ "$(undocumented "$page" "${want[@]}")" = "$(printf '%s\n' "${want[@]}")" ]
}
