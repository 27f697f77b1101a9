#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/lifecycle.bats — limits on a host without cgroup delegation, ps/inspect/logs/clean
# round trips, SIGKILL of the supervisor, doctor. (Enforcement itself: tests/vm/run.sh.)
load lib/common

setup() { common_setup; }
teardown() {
	# Stop anything a failed test left running, by pid only.
	for p in ${BG_PIDS:-}; do kill -9 "$p" 2>/dev/null || true; done
	common_teardown
}

# True when this host has no delegated cgroup v2 subtree for us (the doctor's verdict).
no_delegation() { "$AISB" doctor 2>/dev/null | grep -q '^warn cgroup'; }

# pids of processes whose command line contains the word $1. One grep over every cmdline; the
# pattern is bracketed so that grep's own command line does not match it.
pids_with() {
	local tok=$1 f
	grep -law -e "${tok:0:1}[${tok:1:1}]${tok:2}" /proc/[0-9]*/cmdline 2>/dev/null |
		while read -r f; do f=${f#/proc/}; echo "${f%/cmdline}"; done
	return 0
}
no_pids_with() { [ -z "$(pids_with "$1")" ]; }
some_session_live() { "$AISB" ps 2>/dev/null | grep -q ' live '; }
init_has_child() {
	local f
	f=$(session_dir)/init
	[ -s "$f" ] && pgrep -P "$(cat "$f")" >/dev/null
}

# wait_for CMD...: up to 10 s.
wait_for() {
	local _
	for _ in $(seq 100); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

@test "limits: an explicit --memory on a host without delegation is refused (78) with the fix" {
	no_delegation || skip "this host delegates cgroup v2: enforcement is tested, not refusal"
	run sb --no-cwd --memory 512M -- true
	[ "$status" -eq 78 ]
	[[ "$output" == *"cannot enforce the memory limit"* ]]
	if [ -e /run/.containerenv ] && [ "$(stat -f -c %T /dev)" = tmpfs ]; then
		# inside a podman container (tests/fresh-machine.sh): what to ask of the engine
		[[ "$output" == *"--cgroupns=private --cgroups=split (podman)"* ]]
		[[ "$output" != *"systemd.unified_cgroup_hierarchy"* ]]
	else
		[[ "$output" == *"systemd-run --user --scope -p Delegate=yes"* ]]
	fi
	[[ "$output" == *"aisb doctor"* ]]
	run sb --no-cwd --pids 64 -- true
	[ "$status" -eq 78 ]
	run sb --no-cwd --cpus 1.5 -- true
	[ "$status" -eq 78 ]
	# control: the same run without the limit works
	run sb --no-cwd -- true
	[ "$status" -eq 0 ]
}

@test "limits: a default run warns exactly once; --memory max --pids max does not warn" {
	no_delegation || skip "this host delegates cgroup v2"
	rm -f "$XDG_CONFIG_HOME/aisb/config" # common_setup acknowledges the warning away
	run sb --no-cwd -- echo hi
	[ "$status" -eq 0 ]
	[ "$(grep -c 'not enforced' <<<"$output")" -eq 1 ]
	[[ "$output" == *"hi"* ]]
	run sb --no-cwd --memory max --pids max -- echo hi
	[ "$status" -eq 0 ]
	[ "$(grep -c 'not enforced' <<<"$output")" -eq 0 ]
	# acknowledged once in config: quiet, and still degraded (not silently "enforced")
	echo "accept_unenforced_limits = true" >"$XDG_CONFIG_HOME/aisb/config"
	run sb --no-cwd -- echo hi
	[ "$(grep -c 'not enforced' <<<"$output")" -eq 0 ]
	run sb --no-cwd --print-policy -- true
	[[ "$output" =~ limits_enforced=(no|rlimit-nproc-only) ]]
}

@test "limits: previews (--dry-run, --print-policy, --print-ruleset) print no run-time warning; the run does" {
	no_delegation || skip "this host delegates cgroup v2"
	rm -f "$XDG_CONFIG_HOME/aisb/config" # common_setup acknowledges the warning away
	for flag in --dry-run --print-policy --print-ruleset; do
		run "$AISB" --no-cwd --allow example.com "$flag" -- true
		[ "$status" -eq 0 ]
		[[ "$output" != *"aisb: warning"* ]]
	done
	# the plan still says it: a preview does not hide that the limits are off
	run sb --no-cwd --dry-run -- true
	[[ "$output" == *"NOT enforced"* ]]
	# control: the same settings, run, warn once
	run "$AISB" --no-cwd --allow example.com -- true
	[ "$status" -eq 0 ]
	[ "$(grep -c 'aisb: warning: resource limits are not enforced' <<<"$output")" -eq 1 ]
}

@test "limits: without cgroups every run gets RLIMIT_NPROC=4096 inside, a root caller's too (its sandbox is not uid 0); one left at uid 0 gets the pid namespace's pid_max" {
	no_delegation || skip "this host delegates cgroup v2"
	rm -f "$XDG_CONFIG_HOME/aisb/config"
	run sb --no-cwd -- grep '^Max processes' /proc/self/limits
	[ "$status" -eq 0 ]
	[[ "$output" =~ Max\ processes\ +4096\ +4096 ]]
	[[ "$output" == *"processes are capped by RLIMIT_NPROC=4096 only"* ]]
	if is_root; then
		# kernel uid 0 (AISB_TEST_NO_IDMAP=1: no remap), which RLIMIT_NPROC does not bind
		run env AISB_TEST_NO_IDMAP=1 "$AISB" --net none --no-cwd -- cat /proc/sys/kernel/pid_max
		[ "$status" -eq 0 ]
		[[ "$output" == *"processes are capped by the pid namespace's pid_max (4096 processes) only"* ]]
		[ "${lines[-1]}" = 4097 ]
	fi
}

@test "limits: a tighter rlimit of the caller is kept, never refused or raised (prlimit --nproc)" {
	require_feature prlimit command -v prlimit
	# attack: the caller runs aisb under a tighter process limit than aisb's 4096 (it was 77,
	# "cannot set the process rlimit": raising a hard limit needs CAP_SYS_RESOURCE)
	run prlimit --nproc=200:200 "$AISB" --no-cwd --net none -- grep '^Max processes' /proc/self/limits
	[ "$status" -eq 0 ]
	[[ "$output" =~ Max\ processes\ +200\ +200\  ]]
	# a soft limit alone: the soft one is kept, the hard one is aisb's (a root caller's too: its
	# sandbox is not uid 0, which RLIMIT_NPROC would not bind)
	run prlimit --nproc=150: "$AISB" --no-cwd --net none -- grep '^Max processes' /proc/self/limits
	[ "$status" -eq 0 ]
	[[ "$output" =~ Max\ processes\ +150\ +4096 ]]
	# the preview says which limit the sandbox gets
	if no_delegation && ! is_root; then
		run prlimit --nproc=200:200 "$AISB" --no-cwd --net none --dry-run -- true
		[[ "$output" == *"RLIMIT_NPROC=200 (the caller's tighter limit, kept; aisb's would be 4096)"* ]]
	fi
	# control: without the outer limit the sandbox gets aisb's own (non-root) or the inherited one
	run "$AISB" --no-cwd --net none -- grep '^Max processes' /proc/self/limits
	[ "$status" -eq 0 ]
	[[ "$output" != *"Max processes             200 "* ]]
	is_root || [[ "$output" =~ Max\ processes\ +4096\ +4096 ]]
}

@test "limits: invalid values are 78 naming the setting; config and env keys work" {
	run sb --no-cwd --memory lots -- true
	[ "$status" -eq 78 ]
	[[ "$output" == *"invalid --memory 'lots'"* ]]
	run sb --no-cwd --cpus 0 -- true
	[ "$status" -eq 78 ]
	run sb --no-cwd --pids 1 -- true
	[ "$status" -eq 78 ]
	run sb --no-cwd --print-policy -- true
	[ "$status" -eq 0 ]
	[[ "$output" == *"memory_max=4294967296"* ]]
	[[ "$output" == *"pids_max=4096"* ]]
	[[ "$output" == *"cpu_max=max 100000"* ]]
	run sb --no-cwd --memory max --pids max --print-policy -- true
	[[ "$output" == *"memory_max=0"* ]]
	[[ "$output" == *"limits_enforced=none"* ]]
	if no_delegation; then
		# a config key is as explicit as a flag: refused the same way
		mkdir -p "$XDG_CONFIG_HOME/aisb"
		echo "memory = 1G" >"$XDG_CONFIG_HOME/aisb/config"
		run sb --no-cwd -- true
		[ "$status" -eq 78 ]
		[[ "$output" == *"cannot enforce the memory limit"* ]]
		rm "$XDG_CONFIG_HOME/aisb/config"
		AISB_PIDS=100 run sb --no-cwd -- true
		[ "$status" -eq 78 ]
	else
		run sb --no-cwd --memory 1.5g --pids 99 --cpus 0.5 --print-policy -- true
		[[ "$output" == *"memory_max=1610612736"* ]]
		[[ "$output" == *"cpu_max=50000 100000"* ]]
	fi
}

@test "lifecycle: ps, inspect, logs and clean --all round trip on a live session" {
	"$AISB" --net none --no-cwd -- sh -c 'sleep 30; true' "lc-live-$$" >/dev/null 2>&1 3>&- &
	BG_PIDS=$!
	wait_for some_session_live
	run "$AISB" ps
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "ID"*"PID"*"NET"*"AGE"*"PROJECT" ]]
	id=$(awk 'NR==2 {print $1}' <<<"$output")
	[ -n "$id" ]
	[[ "${lines[1]}" == *"$BG_PIDS"*"live"*"host"*"none"* ]]

	run "$AISB" inspect "$id"
	[ "$status" -eq 0 ]
	[[ "$output" == *"state:      live (supervisor pid $BG_PIDS"* ]]
	[[ "$output" == *"limits:"* ]]
	run "$AISB" inspect "$id" --json
	[ "$status" -eq 0 ]
	[ "$(jq -r .state <<<"$output")" = live ]
	[ "$(jq -r .plan.net <<<"$output")" = none ]
	[ "$(jq -r .supervisor_pid <<<"$output")" = "$BG_PIDS" ]

	run "$AISB" logs "$id"
	[ "$status" -eq 0 ]
	[[ "$output" == *"# session $id"* ]]

	# plain clean keeps live sessions
	run "$AISB" clean
	[ "$status" -eq 0 ]
	[[ "$output" == *"1 live session left running"* ]]
	[ -d "$(session_dir "$id")" ]

	run "$AISB" clean --all
	[ "$status" -eq 0 ]
	[[ "$output" == *"stopped session $id"* ]]
	wait "$BG_PIDS" || true
	BG_PIDS=
	[ -z "$(session_ids)" ]
	[ -z "$(pids_with "lc-live-$$")" ]
	run "$AISB" ps -a
	[ "${#lines[@]}" -eq 1 ]
	# the finished run's record stays in sessions.log
	run "$AISB" logs "$id"
	[ "$status" -eq 0 ]
	[[ "$output" == *"\"id\":\"$id\""* ]]
	[[ "$output" == *"\"exit\":143"* ]]
}

@test "lifecycle: --keep leaves an ended session that ps -a, inspect and clean see" {
	run sb --no-cwd --keep -- sh -c 'exit 3'
	[ "$status" -eq 3 ]
	id=$(session_ids)
	[ -n "$id" ]
	run "$AISB" ps
	[ "${#lines[@]}" -eq 1 ]
	run "$AISB" ps -a
	[[ "$output" == *"$id"*"ended"* ]]
	run "$AISB" inspect "$id"
	[[ "$output" == *"state:      ended"* ]]
	run "$AISB" logs "$id"
	[[ "$output" == *"\"exit\":3"* ]]
	run "$AISB" clean
	[[ "$output" == *"removed session $id"* ]]
	[ -z "$(session_ids)" ]
	# unknown ids and refs
	run "$AISB" inspect 0123456789ab
	[ "$status" -eq 1 ]
	[[ "$output" == *"no session or image"* ]]
	run "$AISB" logs ../etc
	[ "$status" -eq 2 ]
}

@test "lifecycle: clean --volumes removes unused homes and keeps a live session's" {
	run sb --no-cwd -- true
	[ -d "$XDG_STATE_HOME/aisb/homes/default" ]
	mkdir -p "$XDG_STATE_HOME/aisb/homes/other"
	run "$AISB" clean --volumes=oth*
	[ "$status" -eq 0 ]
	[[ "$output" == *"removed home other"* ]]
	[ -d "$XDG_STATE_HOME/aisb/homes/default" ]
	"$AISB" --net none --no-cwd -- sh -c 'sleep 30; true' "lc-vol-$$" >/dev/null 2>&1 3>&- &
	BG_PIDS=$!
	wait_for some_session_live
	run "$AISB" clean --volumes
	[[ "$output" == *"kept home default: used by live session"* ]]
	[ -d "$XDG_STATE_HOME/aisb/homes/default" ]
	run "$AISB" clean --all --volumes
	[[ "$output" == *"removed home default"* ]]
	wait "$BG_PIDS" || true
	BG_PIDS=
	[ ! -d "$XDG_STATE_HOME/aisb/homes/default" ]
}

@test "lifecycle: SIGKILL of the supervisor during a run leaves no process or mount; clean removes the dir" {
	local tok=lc-kill-$$ sid
	"$AISB" --net none --no-cwd -- sh -c 'sleep 60; true' "$tok" >/dev/null 2>&1 3>&- &
	BG_PIDS=$!
	# the workload runs: init has a child
	wait_for init_has_child
	sid=$(session_ids)
	[ -n "$(pids_with "$tok")" ]
	kill -9 "$BG_PIDS"
	wait "$BG_PIDS" || true
	BG_PIDS=
	wait_for no_pids_with "$tok"
	[ -z "$(pids_with "$tok")" ]
	# The sandbox's mounts lived in its own mount namespace, which died with its last process:
	# nothing of the session is mounted on the host.
	[ -n "$sid" ]
	run grep -q -e "$sid" -e "$tok" /proc/self/mountinfo
	[ "$status" -eq 1 ]
	run "$AISB" ps -a
	[[ "$output" == *"ended"* ]]
	# the generated /etc files outlived the killed supervisor on the run dir's tmpfs
	[ -f "$(run_dir)/sessions/$sid/etc/passwd" ]
	run "$AISB" clean
	[[ "$output" == *"removed session"* ]]
	[ -z "$(session_ids)" ]
	[ ! -e "$(run_dir)/sessions/$sid" ]
}

# etc_dir_of ID: the generated /etc files' directory that session ID's plan.json names
etc_dir_of() { sed -n 's/^ *"etc_dir": *"\(.*\)",*$/\1/p' "$(session_dir "$1")/plan.json"; }

@test "lifecycle: the generated /etc files are on the caller's tmpfs run dir, gone at exit; a run dir that is not the caller's own is not used" {
	local rt id
	rt=$(mktemp -d /dev/shm/aisb-e2e-rt.XXXXXX)
	export XDG_RUNTIME_DIR=$rt
	run sb --no-cwd --keep -- sh -c 'grep ^sandbox: /etc/passwd; grep -c localhost /etc/hosts'
	[ "$status" -eq 0 ]
	[[ "$output" == "sandbox:x:1000:1000:"* ]]
	id=$(session_ids)
	[ "$(etc_dir_of "$id")" = "$rt/aisb/$id" ]
	# nothing of it on the disk, and the run dir's copy is gone even for a kept session
	[ ! -e "$XDG_STATE_HOME/aisb/sessions/$id/etc" ]
	[ ! -e "$rt/aisb/$id" ]
	[ "$(stat -c %a "$rt/aisb")" = 700 ]
	"$AISB" clean >/dev/null
	# attack: the run dir planted as a symlink to a directory of the attacker's choice; it is not
	# followed (nothing lands there), the session dir is used, the run works
	rmdir "$rt/aisb"
	mkdir "$WORK/elsewhere"
	ln -s "$WORK/elsewhere" "$rt/aisb"
	run sb --no-cwd --keep -- grep ^sandbox: /etc/passwd
	[ "$status" -eq 0 ]
	[[ "$output" == "sandbox:x:1000:1000:"* ]]
	id=$(session_ids)
	[ "$(etc_dir_of "$id")" = "$XDG_STATE_HOME/aisb/sessions/$id/etc" ]
	[ -z "$(ls -A "$WORK/elsewhere")" ]
	"$AISB" clean >/dev/null
	# a run dir others may enter (0755) is not used either
	rm "$rt/aisb"
	mkdir -m 755 "$rt/aisb"
	run sb --no-cwd --keep -- true
	id=$(session_ids)
	[ "$(etc_dir_of "$id")" = "$XDG_STATE_HOME/aisb/sessions/$id/etc" ]
	[ -z "$(ls -A "$rt/aisb")" ]
	"$AISB" clean >/dev/null
	# a full run dir (a container's small /dev/shm): the run goes on with the session dir and
	# leaves nothing half-written there (root only: it mounts a tmpfs with room for 4 inodes)
	if is_root; then
		mkdir -m 700 "$WORK/rt-full"
		mount -t tmpfs -o nr_inodes=4,mode=0700 none "$WORK/rt-full"
		XDG_RUNTIME_DIR=$WORK/rt-full run sb --no-cwd --keep -- grep ^sandbox: /etc/passwd
		local kept_status=$status kept_output=$output kept_left kept_etc
		kept_left=$(ls -A "$WORK/rt-full/aisb" 2>&1)
		id=$(session_ids)
		kept_etc=$(etc_dir_of "$id")
		"$AISB" clean >/dev/null
		# the same for a session dir that fills the run dir (not kept: it is made there first)
		XDG_RUNTIME_DIR=$WORK/rt-full run sb --no-cwd -- grep ^sandbox: /etc/passwd
		local full_status=$status full_output=$output full_left
		full_left=$(ls -A "$WORK/rt-full/aisb/sessions" 2>&1)
		umount "$WORK/rt-full"
		[ "$kept_status" -eq 0 ]
		[[ "$kept_output" == "sandbox:x:1000:1000:"* ]]
		[ -z "$kept_left" ]
		[ "$kept_etc" = "$XDG_STATE_HOME/aisb/sessions/$id/etc" ]
		[ "$full_status" -eq 0 ]
		[[ "$full_output" == "sandbox:x:1000:1000:"* ]]
		[ -z "$full_left" ]
		[ -z "$(session_ids)" ]
	fi
	# nor one that is not on tmpfs (no gain there): the work dir is on the disk
	mkdir -m 700 "$WORK/rt-disk"
	XDG_RUNTIME_DIR=$WORK/rt-disk run sb --no-cwd --keep -- true
	id=$(session_ids)
	[ "$(etc_dir_of "$id")" = "$XDG_STATE_HOME/aisb/sessions/$id/etc" ]
	"$AISB" clean >/dev/null
	rm -rf "$rt"
}

# listed_live ID: aisb ps lists session ID as live, and inspect agrees.
listed_live() {
	run "$AISB" ps
	[[ "$output" == *"$1"*live* ]] || return 1
	run "$AISB" inspect "$1" --json
	[ "$(jq -r .state <<<"$output")" = live ]
}

# stop_bg: kill the background aisb and reap it.
stop_bg() {
	kill "$BG_PIDS"
	wait "$BG_PIDS" || true
	BG_PIDS=
}

@test "lifecycle: a live session's dir is on the caller's tmpfs run dir, gone at exit; a kept one is on the disk; a run dir that is not the caller's own is neither used nor read" {
	local rd id
	rd=$(run_dir)
	# the preview says where each goes
	run sb --no-cwd --dry-run -- true
	[[ "$output" == *"state:      $rd/sessions/<id> on tmpfs (else $XDG_STATE_HOME/aisb/sessions/<id>; removed at exit)"* ]]
	run sb --no-cwd --keep --dry-run -- true
	[[ "$output" == *"state:      $XDG_STATE_HOME/aisb/sessions/<id> (kept at exit)"* ]]
	"$AISB" --net none --no-cwd -- sh -c 'sleep 30; true' >/dev/null 2>&1 3>&- &
	BG_PIDS=$!
	wait_for some_session_live
	id=$(session_ids)
	[ -n "$id" ]
	# on the tmpfs, with its generated /etc files; nothing of it on the disk
	[ "$(session_dir "$id")" = "$rd/sessions/$id" ]
	[ "$(stat -f -c %T "$rd/sessions/$id")" = tmpfs ]
	[ -f "$rd/sessions/$id/plan.json" ] && [ -s "$rd/sessions/$id/supervisor" ] && [ -s "$rd/sessions/$id/init" ]
	[ -f "$rd/sessions/$id/etc/passwd" ]
	[ "$(etc_dir_of "$id")" = "$rd/sessions/$id/etc" ]
	[ "$(stat -c %a "$rd/sessions/$id")" = 700 ]
	[ -z "$(ls -A "$XDG_STATE_HOME/aisb/sessions")" ]
	# the readers find it there
	listed_live "$id"
	stop_bg
	# gone at exit, its line in sessions.log on the disk
	[ ! -e "$rd/sessions/$id" ]
	grep -q "\"id\":\"$id\"" "$XDG_STATE_HOME/aisb/sessions.log"
	# a kept session is on the disk (it outlives a reboot), its /etc files on the tmpfs only while it runs
	run sb --no-cwd --keep -- true
	[ "$status" -eq 0 ]
	id=$(session_ids)
	[ "$(session_dir "$id")" = "$XDG_STATE_HOME/aisb/sessions/$id" ]
	[ -z "$(ls -A "$rd/sessions")" ]
	"$AISB" clean >/dev/null
	[ -z "$(session_ids)" ]
	# attack: the run dir replaced by a symlink to a directory holding a forged live session
	# (another supervisor's pid and start time): the run does not use it, ps does not list it
	mkdir -p "$WORK/forged/sessions/aaaaaaaaaaaa"
	echo '{"net":"none"}' >"$WORK/forged/sessions/aaaaaaaaaaaa/plan.json"
	echo "$$ $(awk '{print $22}' /proc/$$/stat)" >"$WORK/forged/sessions/aaaaaaaaaaaa/supervisor"
	rm -rf "$rd"
	ln -s "$WORK/forged" "$rd"
	run "$AISB" ps -a
	[[ "$output" != *aaaaaaaaaaaa* ]]
	run sb --no-cwd -- sh -c 'grep -c ^sandbox: /etc/passwd'
	[ "$status" -eq 0 ]
	[ "$output" = 1 ]
	[ "$(ls "$WORK/forged/sessions")" = aaaaaaaaaaaa ]
	[ -z "$(ls -A "$XDG_STATE_HOME/aisb/sessions")" ]
	# control: the same forged dir as the caller's own 0700 run dir is listed (and is live)
	rm "$rd"
	mv "$WORK/forged" "$rd"
	chmod 700 "$rd"
	run "$AISB" ps
	[[ "$output" == *aaaaaaaaaaaa*live* ]]
	# a run dir others may enter (0755): neither listed nor used; the session goes to the disk
	chmod 755 "$rd"
	run "$AISB" ps -a
	[[ "$output" != *aaaaaaaaaaaa* ]]
	"$AISB" --net none --no-cwd -- sh -c 'sleep 30; true' >/dev/null 2>&1 3>&- &
	BG_PIDS=$!
	wait_for some_session_live
	id=$(ls "$XDG_STATE_HOME/aisb/sessions")
	[ -n "$id" ]
	[ "$(ls "$rd/sessions")" = aaaaaaaaaaaa ]
	stop_bg
	[ -z "$(ls -A "$XDG_STATE_HOME/aisb/sessions")" ]
	# a session started where XDG_RUNTIME_DIR is unset (sudo, cron: /dev/shm/aisb-UID) is listed
	# and inspected from a shell that has it set (not `clean --all`: it would stop this user's
	# other sessions there too)
	env -u XDG_RUNTIME_DIR "$AISB" --net none --no-cwd -- sh -c 'sleep 30; true' "lc-other-env-$$" >/dev/null 2>&1 3>&- &
	BG_PIDS=$!
	wait_for some_session_live
	id=$(ls "/dev/shm/aisb-$(id -u)/sessions" | while read -r i; do
		grep -q "lc-other-env-$$" "/dev/shm/aisb-$(id -u)/sessions/$i/plan.json" 2>/dev/null && echo "$i"; done)
	[ -n "$id" ]
	listed_live "$id"
	stop_bg
	[ ! -e "/dev/shm/aisb-$(id -u)/sessions/$id" ]
}

@test "lifecycle: SIGKILL of the supervisor during startup leaves nothing, at any moment" {
	local tok d
	for d in 0 0.002 0.005 0.01 0.02 0.05 0.1; do
		tok=lc-start-$$-${d/./}
		"$AISB" --net none --no-cwd -- sh -c 'sleep 60; true' "$tok" >/dev/null 2>&1 3>&- &
		BG_PIDS=$!
		sleep "$d"
		kill -9 "$BG_PIDS"
		wait "$BG_PIDS" || true
		BG_PIDS=
		wait_for no_pids_with "$tok"
		[ -z "$(pids_with "$tok")" ]
	done
	run "$AISB" clean
	[ "$status" -eq 0 ]
	[ -z "$(session_ids)" ]
	# nor anything in the run dir (this test's own, lib/common.bash) but the empty sessions/
	[ -z "$(ls -A "$XDG_RUNTIME_DIR/aisb" 2>/dev/null | grep -vx sessions)" ]
	[ -z "$(ls -A "$XDG_RUNTIME_DIR/aisb/sessions" 2>/dev/null)" ]
}

@test "lifecycle: SIGKILL of a --net full supervisor leaves no pasta" {
	require_feature "pasta" command -v pasta
	local tok=lc-pasta-$$ helpers p
	"$AISB" --net full --no-cwd -- sh -c 'sleep 60; true' "$tok" >/dev/null 2>&1 3>&- &
	BG_PIDS=$!
	wait_for init_has_child
	helpers=$(pgrep -P "$BG_PIDS" -x 'pasta|pasta.avx2|passt|passt.avx2' || true)
	[ -n "$helpers" ]
	kill -9 "$BG_PIDS"
	wait "$BG_PIDS" || true
	BG_PIDS=
	wait_for no_pids_with "$tok"
	for p in $helpers; do
		wait_for test ! -e "/proc/$p"
		[ ! -e "/proc/$p" ]
	done
	run "$AISB" clean
	[ -z "$(session_ids)" ]
}

@test "doctor: one line per check, a fix under every non-ok line, exit code matches" {
	run "$AISB" doctor
	local n_fail
	n_fail=$(grep -c '^FAIL' <<<"$output" || true)
	if [ "$n_fail" -eq 0 ]; then [ "$status" -eq 0 ]; else [ "$status" -eq 1 ]; fi
	for c in userns max_userns seccomp proc overlay nft pasta cgroup subuid dirs; do
		grep -qE "^(ok  |warn|FAIL) $c " <<<"$output"
	done
	# every warn/FAIL line but the "not checked" ones is followed by a fix line
	awk '/^(warn|FAIL) / && !/not checked/ {want=1; next} want {if ($0 !~ /fix: /) exit 1; want=0} END {exit want}' <<<"$output"
	if no_delegation; then
		[[ "$output" == *"warn cgroup"*"fix: "* ]]
	fi
}

@test "doctor --deep: runs real sandboxes" {
	run "$AISB" doctor --deep
	[[ "$output" == *"-- deep: real sandboxes --"* ]]
	[[ "$output" == *"ok   run "* ]]
	[[ "$output" == *"ok   hardening "* ]]
	[ "$status" -eq 0 ]
}

@test "limits: /tmp, /dev/shm and /run inside are shares of the memory limit whether or not cgroups enforce it (issue 22)" {
	# the default limit is 4 GiB (src/ns/cgroup.h); half the RAM at most each
	local ram lim=$((4 << 30)) half
	ram=$(($(awk '/^MemTotal:/ { print $2 }' /proc/meminfo) * 1024))
	half=$((ram / 2))
	cap() { local n=$1; [ "$n" -gt "$half" ] && n=$half; echo "$n"; }
	run sb --no-cwd -- sh -c 'df -B1 --output=size /tmp /dev/shm /run | tail -3 | tr -d " " | tr "\n" " "'
	[ "$status" -eq 0 ]
	read -r t s r <<<"$output"
	[ "$t" -eq "$(cap $((lim / 2)))" ]
	[ "$s" -eq "$(cap $((lim / 4)))" ]
	[ "$r" -eq "$(cap $((lim / 8)))" ]
	[ $((t + s + r)) -le "$lim" ]
	# filling one is ENOSPC to the writer, not the host's memory: /run, the smallest
	run sb --no-cwd -- sh -c 'head -c $((600 << 20)) /dev/zero >/run/fill; echo "rc=$?"'
	[[ "$output" == *"No space left on device"* ]]
	[[ "$output" == *"rc=1"* ]]
	# control: what fits is written
	run sb --no-cwd -- sh -c 'head -c $((100 << 20)) /dev/zero >/run/fill && echo ok'
	[ "$status" -eq 0 ]
	[[ "$output" == *ok* ]]
}
