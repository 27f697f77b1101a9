#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# paths.bats — issue 24: `make install` with the build's configured default prefix (/usr/local)
# puts each file where the system reads it: the completion in a directory bash-completion
# searches, the alias file in the one directory it sources eagerly (never /usr/local/etc), the
# AppArmor profile in /etc/apparmor.d only where AppArmor reads abi 4.0 (else only in
# PKGDATADIR), and whatever lands in /etc/apparmor.d parses with this machine's apparmor_parser
# (Debian 12: 3.0.8), so apparmor.service would not fail on it.

setup_file() {
	export DEST
	DEST=$(mktemp -d /tmp/aisb-paths.XXXXXX)
	chmod 755 "$DEST"
	# the rules below are the ones configure chose for the default prefix
	prefix=$(sed -n 's/^prefix = //p' "$AISB_BUILDDIR/Makefile")
	[ "$prefix" = /usr/local ] || { echo "the build dir is configured with prefix '$prefix', not the default /usr/local" >&2; return 1; }
	make -s -C "$AISB_BUILDDIR" install DESTDIR="$DEST" >"$DEST.log" 2>&1 ||
		{ cat "$DEST.log" >&2; return 1; }
}

teardown_file() {
	rm -rf "$DEST" "$DEST.log" "$DEST.aa4" "$DEST.aa4.log"
}

@test "paths: default prefix: completion, alias file, profile copy and binary are where the system reads them" {
	[ -x "$DEST/usr/local/bin/aisb" ]
	[ -f "$DEST/usr/local/share/bash-completion/completions/aisb" ]
	# bash-completion's compat dir (pkg-config bash-completion compatdir), not /usr/local/etc
	[ -f "$DEST$(pkg-config --variable=compatdir bash-completion)/aisb-aliases" ]
	[ -f "$DEST/etc/bash_completion.d/aisb-aliases" ]
	[ ! -e "$DEST/usr/local/etc" ]
	cmp "$DEST/usr/local/share/aisb/apparmor/aisb" "$AISB_SRCDIR/contrib/apparmor/aisb"
}

# complete_alias: a login-like bash that loads bash-completion with every directory it reads
# moved under DESTDIR (its own defaults, read from its script), defines `alias pi=aisb` first
# (as Debian's ~/.bashrc does), and prints what `pi` and `aisb` complete with
complete_alias() {
	local script=/usr/share/bash-completion/bash_completion
	[ -r "$script" ] || { echo "no $script (contrib/packages.txt: bash-completion)"; return 1; }
	# the defaults the script uses when neither variable is set
	grep -q 'compat_dir=${BASH_COMPLETION_COMPAT_DIR:-/etc/bash_completion.d}' "$script"
	grep -q 'XDG_DATA_DIRS:-/usr/local/share:/usr/share' "$script"
	PATH="$DEST/usr/local/bin:$PATH" BASH_COMPLETION_COMPAT_DIR="$DEST/etc/bash_completion.d" \
		XDG_DATA_DIRS="$DEST/usr/local/share:$DEST/usr/share" BASH_COMPLETION_USER_DIR=/nonexistent \
		bash --norc --noprofile -O expand_aliases -c "alias pi=aisb; . $script; complete -p pi; complete -p aisb"
}

@test "paths: bash-completion, reading the directories it reads by default, completes 'aisb' and its alias" {
	run complete_alias
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"complete -F "*" pi"* ]]
	[[ $output == *"complete -F "*" aisb"* ]]
}

@test "paths: control: without the alias file in the compat dir, the alias gets no completion" {
	rm "$DEST/etc/bash_completion.d/aisb-aliases"
	run complete_alias
	cp "$AISB_SRCDIR/contrib/completion/aisb-aliases" "$DEST/etc/bash_completion.d/aisb-aliases"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output != *"complete -F "*" pi"* ]]
	[[ $output == *"pi: no completion specification"* ]]
}

@test "paths: the AppArmor profile is in /etc/apparmor.d exactly where AppArmor reads abi 4.0, and everything there parses" {
	command -v apparmor_parser >/dev/null || { echo "apparmor_parser is not installed (contrib/packages.txt: apparmor)"; return 1; }
	apparmor_parser --version | head -1
	if [ -e /etc/apparmor.d/abi/4.0 ]; then
		cmp "$DEST/etc/apparmor.d/aisb" "$AISB_SRCDIR/contrib/apparmor/aisb"
	else
		[ ! -e "$DEST/etc/apparmor.d/aisb" ]
		grep -q "only in /usr/local/share/aisb/apparmor/aisb" "$DEST.log"
	fi
	# what the system would load at boot: each file installed there, with the system's includes
	local f n=0
	for f in "$DEST"/etc/apparmor.d/*; do
		[ -f "$f" ] || continue
		n=$((n + 1))
		apparmor_parser -Q -K -I /etc/apparmor.d "$f"
	done
	echo "parsed $n installed profile(s)"
}

@test "paths: control: on AppArmor 3 the profile itself does not parse (so it must not be installed there)" {
	command -v apparmor_parser >/dev/null || { echo "apparmor_parser is not installed"; return 1; }
	if [ -e /etc/apparmor.d/abi/4.0 ]; then
		# AppArmor 4: the profile is installed and must parse
		apparmor_parser -Q -K -I /etc/apparmor.d "$AISB_SRCDIR/contrib/apparmor/aisb"
	else
		run apparmor_parser -Q -K -I /etc/apparmor.d "$AISB_SRCDIR/contrib/apparmor/aisb"
		echo "$output"
		[ "$status" -ne 0 ]
		[[ $output == *"abi/4.0"* ]]
	fi
}

@test "paths: where AppArmor reads abi 4.0 (a tree that has abi/4.0), make install puts the profile in its apparmor.d" {
	mkdir -p "$DEST.aa4/etc/apparmor.d/abi"
	: >"$DEST.aa4/etc/apparmor.d/abi/4.0"
	make -s -C "$AISB_BUILDDIR" install-data-hook DESTDIR="$DEST.aa4/dest" apparmordir="$DEST.aa4/etc/apparmor.d" \
		>"$DEST.aa4.log" 2>&1 || { cat "$DEST.aa4.log"; return 1; }
	cmp "$DEST.aa4/dest$DEST.aa4/etc/apparmor.d/aisb" "$AISB_SRCDIR/contrib/apparmor/aisb"
	# and APPARMOR_PROFILE=no keeps it out even there
	rm -rf "$DEST.aa4/dest"
	make -s -C "$AISB_BUILDDIR" install-data-hook DESTDIR="$DEST.aa4/dest" apparmordir="$DEST.aa4/etc/apparmor.d" \
		APPARMOR_PROFILE=no >"$DEST.aa4.log" 2>&1
	[ ! -e "$DEST.aa4/dest$DEST.aa4/etc/apparmor.d/aisb" ]
}

@test "paths: the profile parses with AppArmor 4 (AISB_APPARMOR4_PARSER, when one is given)" {
	[ -n "${AISB_APPARMOR4_PARSER:-}" ] || skip "no AppArmor 4 parser on Debian 12 (set AISB_APPARMOR4_PARSER; docs/measurements.md has the measurement)"
	"$AISB_APPARMOR4_PARSER" --version | head -1
	"$AISB_APPARMOR4_PARSER" -Q -K -I "${AISB_APPARMOR4_INCLUDE:-/etc/apparmor.d}" "$AISB_SRCDIR/contrib/apparmor/aisb"
}
