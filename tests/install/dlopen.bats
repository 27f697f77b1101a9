#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# dlopen.bats — the .note.dlopen ELF notes (src/util/dl.h) name exactly the libraries aisb
# dlopen()s, and debian/dlopen-deps turns them into the package's dependencies.

AISB=$AISB_BUILDDIR/aisb

@test "dlopen notes: one FDO note of type 0x407c0c0a per library doctor loads, with valid JSON" {
	run readelf -W -n "$AISB"
	echo "$output"
	notes=$(grep -o 'FDO [^(]*(0x407c0c0a)' <<<"$output" | wc -l)
	# the sonames in the notes are the ones `aisb doctor` loads (its "libs" line lists the dl tables)
	got=$(readelf -W -p .note.dlopen "$AISB" | sed -n 's/^ *\[ *[0-9a-f]*\]  \(\[.*\]\)$/\1/p' |
		python3 -c 'import json,sys
for l in sys.stdin:
    for n in json.loads(l):
        assert set(n) >= {"feature", "description", "priority", "soname"}, n
        assert n["priority"] in ("required", "recommended", "suggested"), n
        print(*n["soname"])' | sort)
	# a library with two tables (libcrypto: the digests and the tlsgate's X509 part) has a note each
	tables=$(wc -l <<<"$got")
	got=$(sort -u <<<"$got")
	want=$("$AISB" doctor 2>/dev/null | grep -E '^(ok|warn|FAIL) +libs' | grep -oE 'lib[a-z0-9_+-]+\.so\.[0-9]+' | sort)
	echo "notes: $got"; echo "doctor: $want"
	[ -n "$want" ]
	[ "$got" = "$want" ]
	[ "$notes" -eq "$tables" ]
	[ "$tables" -gt "$(wc -l <<<"$want")" ] # the control: the two libcrypto tables are two notes
}

@test "dlopen notes: debian/dlopen-deps maps them to packages (Depends for required)" {
	command -v dpkg-query >/dev/null || skip "not a dpkg system"
	run "$AISB_SRCDIR/debian/dlopen-deps" "$AISB"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"dlopen:Depends="*"libnftnl11 (>= "* ]]
	[[ $output == *"libcurl4 (>= "* ]]
	# control: a binary without notes is an error, not an empty dependency list
	run "$AISB_SRCDIR/debian/dlopen-deps" /bin/true
	[ "$status" -ne 0 ]
	[[ $output == *"no .note.dlopen notes"* ]]
}
