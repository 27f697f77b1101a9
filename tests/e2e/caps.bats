#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/caps.bats — the workload's capability sets read back from outside with libcap
# (cli/capview.h), in `aisb inspect` of a live session and in `aisb doctor --deep`.

load lib/common

setup() { common_setup; }
teardown() {
	for p in ${BG_PIDS:-}; do kill -9 "$p" 2>/dev/null || true; done
	common_teardown
}

# the comm of the first child of the live session's init: "sleep" once the workload exec'd
workload_is() {
	local f
	f=$(session_dir)/init
	[ -s "$f" ] && [ "$(ps -o comm= --ppid "$(cat "$f")" | head -1)" = "$1" ]
}

wait_for() {
	local _
	for _ in $(seq 100); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

@test "caps: inspect of a live session reads the workload's sets back with libcap: all empty" {
	"$AISB" --net none --no-cwd -- sleep 30 >/dev/null 2>&1 3>&- &
	BG_PIDS=$!
	wait_for workload_is sleep
	id=$(session_ids)
	run "$AISB" inspect "$id"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"caps:       '=' (effective, permitted, inheritable empty); ambient empty; bounding empty (libcap read-back of workload pid "* ]]
	# the pid named is the host's sleep, the session's workload
	w=$(sed -n 's/.*workload pid \([0-9]*\)).*/\1/p' <<<"$output")
	[ "$(cat "/proc/$w/comm")" = sleep ]
	# and agrees with the kernel's own view
	grep -qE '^CapEff:\s+0+$' "/proc/$w/status"
	grep -qE '^CapBnd:\s+0+$' "/proc/$w/status"
	# no start-up cost: the run itself never loads libcap (the supervisor's and init's maps)
	! grep -q 'libcap\.so' "/proc/$BG_PIDS/maps" || false
	! grep -q 'libcap\.so' "/proc/$(cat "$(session_dir "$id")/init")/maps" || false
	run "$AISB" inspect --json "$id"
	[ "$(jq -r .capabilities.none <<<"$output")" = true ]
	[ "$(jq -r .capabilities.workload_pid <<<"$output")" = "$w" ]
	kill "$BG_PIDS"
	wait "$BG_PIDS" || true
	BG_PIDS=
}

@test "caps: inspect reads the workload, not init, which still holds capabilities (control)" {
	# init (PID 1 inside) keeps its capabilities in the sandbox's user namespace; had inspect
	# looked at it, it would have named them. tests/unit/test-capview.c proves the read-back
	# names held capabilities (a process in a fresh user namespace reads back as '=ep').
	"$AISB" --net none --no-cwd -- sleep 30 >/dev/null 2>&1 3>&- &
	BG_PIDS=$!
	wait_for workload_is sleep
	id=$(session_ids)
	init=$(cat "$(session_dir "$id")/init")
	grep ^Cap "/proc/$init/status"
	grep -qE '^CapBnd:\s+0*[1-9a-f]' "/proc/$init/status"
	run "$AISB" inspect "$id"
	[[ $output == *"caps:       '='"*"bounding empty"* ]]
	[[ $output != *"workload pid $init)"* ]]
	kill "$BG_PIDS"
	wait "$BG_PIDS" || true
	BG_PIDS=
}

@test "caps: doctor --deep reads a real sandbox's workload back from outside" {
	run "$AISB" doctor --deep
	echo "$output"
	[[ $output == *"ok   caps       read back from outside (libcap): '=' (effective, permitted, inheritable empty); ambient empty; bounding empty"* ]]
	# it left no session behind
	[ -z "$(ls "$XDG_STATE_HOME/aisb/sessions" 2>/dev/null)" ]
}
