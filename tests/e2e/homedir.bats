#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/homedir.bats — one rule for aisb's own directories (util/homedir.h): with HOME unset
# or unusable, run, doctor, images and pull all use the passwd home; no "//" in printed paths.

load lib/common

setup() {
	common_setup
	unset XDG_STATE_HOME XDG_CACHE_HOME XDG_CONFIG_HOME
	PWHOME=$(getent passwd "$(id -un)" | cut -d: -f6)
}

teardown() { common_teardown; }

# with_home VALUE CMD...: CMD with HOME=VALUE, or without HOME for "unset"
with_home() {
	local h=$1
	shift
	if [ "$h" = unset ]; then
		env -u HOME "$@"
	else
		env HOME="$h" "$@"
	fi
}

@test "home: HOME unset, missing or unwritable: run, doctor, images and pull all use the passwd home" {
	[ -d "$PWHOME" ] && [ -w "$PWHOME" ] || skip "the passwd home '$PWHOME' is not a writable directory"
	local homes=(unset "/nonexistent-aisb-$$")
	is_root || homes+=(/) # / is not writable for a user (root may write it: then it is a home)
	for h in "${homes[@]}"; do
		run with_home "$h" "$AISB" --net none --dry-run -- true
		[ "$status" -eq 0 ]
		[[ "$output" == *"home:       $PWHOME/.local/state/aisb/homes/default -> /home/sandbox"* ]]
		run with_home "$h" "$AISB" --net none -- true
		[ "$status" -eq 0 ]
		run with_home "$h" "$AISB" doctor
		[[ "$output" == *"ok   dirs       state dir $PWHOME/.local/state/aisb and cache dir $PWHOME/.cache/aisb are writable"* ]]
		run with_home "$h" "$AISB" images
		[ "$status" -eq 0 ]
		# pull reaches the store in the same place (a missing layout fails after that, naming it)
		run with_home "$h" "$AISB" pull "oci:$WORK/no-such-layout"
		[[ "$output" != *"cannot find the image store"* ]]
		[[ "$output" != *"/nonexistent-aisb"* ]]
	done
	[ ! -e "/nonexistent-aisb-$$" ]
}

@test "home: a usable HOME is used as it is, and printed paths have no '//'" {
	mkdir -p "$WORK/h"
	run env HOME="$WORK//h//" "$AISB" --net none --dry-run -- true
	[ "$status" -eq 0 ]
	[[ "$output" == *"home:       $WORK/h/.local/state/aisb/homes/default"* ]]
	[[ "$output" != *"//"* ]]
	run env HOME="$WORK//h//" "$AISB" doctor
	[[ "$output" == *"state dir $WORK/h/.local/state/aisb and cache dir $WORK/h/.cache/aisb are writable"* ]]
	[[ "$(grep dirs <<<"$output")" != *"//"* ]]
	# XDG variables still win over any home
	run env HOME="$WORK/h" XDG_STATE_HOME="$WORK/st" "$AISB" --net none --dry-run -- true
	[[ "$output" == *"home:       $WORK/st/aisb/homes/default"* ]]
}
