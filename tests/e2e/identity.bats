#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/identity.bats — the kernel ids a sandbox runs as (issue 22): a root caller's sandbox
# is not kernel uid 0 but USERNS_ROOT_RUN_ID (src/ns/userns.h), with root's bind sources idmapped
# to it, so owner bits and RLIMIT_NPROC bind it as they bind any user; where that cannot be had
# (AISB_TEST_NO_IDMAP=1 forces it) the pid namespace's pid_max bounds its processes. Each test
# runs as root and as an ordinary user (the control: a user's sandbox is that user's uid).
load lib/common

ROOT_RUN_ID=1879048192
CANARY="aisb-identity-canary-$$"
PROBE="${AISB_E2E_DIR:-}/helpers/probe"

setup() {
	common_setup
	require_feature "python3" command -v python3
	# the caller's expected host uid of the sandbox's processes
	if is_root; then RUN_ID=$ROOT_RUN_ID; else RUN_ID=$(id -u); fi
}

teardown() {
	[ -n "${SUP:-}" ] && kill "$SUP" 2>/dev/null
	[ -n "${USR_PROBE:-}" ] && rm -rf "$USR_PROBE"
	common_teardown
}

# check_host_ids MARKER: once $PROJ/ready exists, the sandbox's process "sleep MARKER" (the
# sandbox started in the background as $SUP) has $RUN_ID as every one of its real, effective,
# saved and fs uids and gids on the host; then the sandbox is stopped
check_host_ids() {
	timeout 20 sh -c 'while [ ! -e "$1" ]; do sleep 0.05; done' _ "$PROJ/ready" || { cat "$WORK/out"; return 1; }
	local pid i
	# "ready" comes just before the exec of sleep: wait for the sleep itself (at most 20 s)
	for i in $(seq 400); do
		pid=$(pgrep -f "^sleep $1\$" | head -1)
		[ -n "$pid" ] && break
		sleep 0.05
	done
	[ -n "$pid" ] || { echo "no process 'sleep $1' after ready"; return 1; }
	awk '$1 == "Uid:" || $1 == "Gid:"' "/proc/$pid/status"
	[ "$(awk '$1 == "Uid:" {print $2 $3 $4 $5}' "/proc/$pid/status")" = "$RUN_ID$RUN_ID$RUN_ID$RUN_ID" ] || return 1
	[ "$(awk '$1 == "Gid:" {print $2 $3 $4 $5}' "/proc/$pid/status")" = "$RUN_ID$RUN_ID$RUN_ID$RUN_ID" ] || return 1
	kill "$SUP"
	wait "$SUP" || true
	SUP=
}

# bb_image: a static-busybox OCI layout (offline) as $IMG, with the static probe helper in the
# project (./probe: a busybox image has no python3)
bb_image() {
	require_feature "busybox" command -v busybox
	require_feature "tests/e2e/probe (built by make check)" test -x "$PROBE"
	"$BATS_TEST_DIRNAME/lib/images/mk-busybox-oci.sh" "$WORK/bb" v1 >/dev/null
	IMG="oci:$WORK/bb:v1"
	cp "$PROBE" "$PROJ/probe"
}

# per_ns_pid_max: Linux 6.14+, where a pid namespace has a pid_max of its own
per_ns_pid_max() {
	local rel major minor
	rel=$(uname -r)
	major=${rel%%.*}
	minor=${rel#*.}
	minor=${minor%%.*}
	require_feature "a per-namespace pid_max (Linux 6.14+; this is $rel)" \
		test "$major" -gt 6 -o \( "$major" -eq 6 -a "$minor" -ge 14 \)
}

# flood_bounded FORKER...: FORKER N (python3 forkn.py, or the probe's forkn) forks 200 (the
# control) but not 4500: refused (EAGAIN) between 3500 and 4096 forks
flood_bounded() {
	local n
	run "$@" 200
	echo "$output"
	[ "$status" -eq 0 ] && [ "$output" = "forked 200" ] || return 1
	run "$@" 4500
	echo "$output"
	[ "$status" -eq 0 ] && [[ "$output" == "failed after "*"11" ]] || return 1
	n=$(awk '{print $3}' <<<"$output")
	[ "$n" -le 4096 ] && [ "$n" -ge 3500 ]
}

forker() {
	cat >"$PROJ/forkn.py" <<'EOF'
import os, sys, time
kids = []
try:
    for _ in range(int(sys.argv[1])):
        p = os.fork()
        if p == 0:
            time.sleep(60)
            os._exit(0)
        kids.append(p)
except OSError as e:
    print("failed after", len(kids), e.errno)
else:
    print("forked", len(kids))
for k in kids:
    os.kill(k, 9)
for k in kids:
    os.waitpid(k, 0)
EOF
}

@test "identity: the sandbox's processes run as the caller's uid, a root caller's as an unprivileged one; the project's files are the sandbox's own and stay the caller's" {
	echo "from the host" >"$PROJ/mine"
	chmod 0600 "$PROJ/mine"
	mkdir "$PROJ/sub"
	chmod 0700 "$PROJ/sub"
	local marker="86400.$RANDOM$RANDOM"
	"$AISB" --net none -- sh -c "cat /proc/self/uid_map >uidmap; grep '^Groups:' /proc/self/status >groups
		cat mine >read; echo new >sub/made; mkdir sub/dir; touch ready; exec sleep $marker" >"$WORK/out" 2>&1 &
	SUP=$!
	check_host_ids "$marker"
	cat "$PROJ/uidmap"
	[ "$(awk '{print $1, $2, $3}' "$PROJ/uidmap")" = "1000 $RUN_ID 1" ]
	# no supplementary group for a root caller (its kgid 0 would open root-group files); a
	# user's stay what they were (unmapped inside, shown as the overflow gid)
	cat "$PROJ/groups"
	if is_root; then [ "$(awk '{print $2}' "$PROJ/groups")" = "" ]; fi
	# the caller's 0600 file was read, and what the sandbox made belongs to the caller on the host
	[ "$(cat "$PROJ/read")" = "from the host" ]
	[ "$(stat -c %u:%g "$PROJ/sub/made")" = "$(id -u):$(id -g)" ]
	[ "$(stat -c %u:%g "$PROJ/sub/dir")" = "$(id -u):$(id -g)" ]
	# the preview says the same
	run "$AISB" --net none --print-policy -- true
	[[ "$output" == *"host_uid=$RUN_ID"* ]]
}

@test "identity: a root caller's sandbox cannot read root-only files anywhere in the system dirs, /usr included, nor through root's group (control: world-readable ones, and the host's root, can)" {
	if ! is_root; then
		# a user's sandbox is that user: the host's own permissions apply, as they always did
		run sb -- cat /etc/shadow
		[ "$status" -ne 0 ]
		return 0
	fi
	USR_PROBE=$(mktemp -d /usr/local/share/aisb-e2e.XXXXXX)
	chmod 0755 "$USR_PROBE"
	echo "$CANARY-owner" >"$USR_PROBE/owner"
	chmod 0600 "$USR_PROBE/owner"
	echo "$CANARY-group" >"$USR_PROBE/group"
	chmod 0640 "$USR_PROBE/group"
	echo "for everyone" >"$USR_PROBE/world"
	chmod 0644 "$USR_PROBE/world"
	[ "$(stat -c %g "$USR_PROBE/group")" = 0 ]
	grep -q "$CANARY" "$USR_PROBE/owner" # control: root reads it on the host
	run sb -- cat "$USR_PROBE/owner"
	[ "$status" -ne 0 ]
	[[ "$output" != *"$CANARY"* ]]
	run sb -- cat "$USR_PROBE/group"
	[ "$status" -ne 0 ]
	[[ "$output" != *"$CANARY"* ]]
	run sb -- cat "$USR_PROBE/world"
	[ "$status" -eq 0 ]
	[ "$output" = "for everyone" ]
}

@test "identity: a fork flood stops at the process limit (4096) for every caller, a root caller's too, also where it stays kernel uid 0 (control: 200 forks succeed)" {
	forker
	flood_bounded sb -- python3 forkn.py
	if ! is_root; then
		return 0
	fi
	# kernel uid 0 is exempt from RLIMIT_NPROC: its bound is the pid namespace's pid_max
	# (Linux 6.14+; before, the run warns that the process limit is off)
	per_ns_pid_max
	local n
	run env AISB_TEST_NO_IDMAP=1 "$AISB" --net none -- sh -c 'cat /proc/self/uid_map; cat /proc/sys/kernel/pid_max; python3 forkn.py 4500'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(awk '{print $1, $2}' <<<"${lines[0]}")" = "1000 0" ]
	[ "${lines[1]}" = 4097 ]
	[[ "${lines[2]}" == "failed after "*" 11" ]]
	n=$(awk '{print $3}' <<<"${lines[2]}")
	[ "$n" -le 4096 ] && [ "$n" -ge 3500 ]
	run env AISB_TEST_NO_IDMAP=1 "$AISB" --net none --print-policy -- true
	[[ "$output" == *"limits_enforced=pidns-pid-max-only"* ]] || [[ "$output" == *"limits_enforced=cgroup"* ]]
}

@test "identity: an --image run's processes run as the caller's uid, a root caller's as an unprivileged one; the image's files are the sandbox's own inside and what it writes in a kept upper stays the caller's (control: kernel uid 0 with AISB_TEST_NO_IDMAP=1)" {
	bb_image
	local marker="86401.$RANDOM$RANDOM"
	"$AISB" --net none --image "$IMG" -- sh -c "id -u >uid; cat /proc/self/uid_map >uidmap
		stat -c %u:%a /etc/motd /bin/busybox >owners; echo x >/made; stat -c %u /made >>owners
		grep '^Groups:' /proc/self/status >groups; touch ready; exec sleep $marker" >"$WORK/out" 2>&1 &
	SUP=$!
	check_host_ids "$marker"
	cat "$PROJ/uidmap" "$PROJ/owners" "$PROJ/groups"
	# inside, the image's user is 1000 as in every run, and the image's files (root's in the
	# store) are its own: readable, the upper's new file its too
	[ "$(cat "$PROJ/uid")" = 1000 ]
	[ "$(awk '{print $1, $2, $3}' "$PROJ/uidmap")" = "1000 $RUN_ID 1" ]
	[ "$(tr '\n' ' ' <"$PROJ/owners")" = "1000:644 1000:755 1000 " ]
	if is_root; then [ "$(awk '{print $2}' "$PROJ/groups")" = "" ]; fi
	run "$AISB" --net none --image "$IMG" --print-policy -- true
	[[ "$output" == *"host_uid=$RUN_ID"* ]]
	# --keep: the upper is the session's, on disk; what the sandbox wrote there is the caller's
	run "$AISB" --net none --keep --image "$IMG" -- sh -c 'echo k >/kept; mkdir /keptdir; rm /etc/motd'
	echo "$output"
	[ "$status" -eq 0 ]
	local upper
	upper=$(find "$XDG_STATE_HOME/aisb/sessions" -path '*/overlay/upper' -type d | head -1)
	[ -n "$upper" ]
	[ "$(stat -c %u:%g "$upper/kept" "$upper/keptdir" | sort -u)" = "$(id -u):$(id -g)" ]
	if ! is_root; then
		return 0
	fi
	# the fallback: kernel uid 0, the image's files root's as before, bounded by pid_max
	run env AISB_TEST_NO_IDMAP=1 "$AISB" --net none --image "$IMG" -- sh -c 'cat /proc/self/uid_map; stat -c %u /etc/motd'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(awk '{print $1, $2}' <<<"${lines[0]}")" = "1000 0" ]
	[ "${lines[1]}" = 1000 ]
	run env AISB_TEST_NO_IDMAP=1 "$AISB" --net none --image "$IMG" --print-policy -- true
	[[ "$output" == *"host_uid=0"* ]]
	[[ "$output" == *"limits_enforced=pidns-pid-max-only"* ]] || [[ "$output" == *"limits_enforced=cgroup"* ]]
}

@test "identity: an --image run's fork flood stops at the process limit (4096) for every caller, a root caller's too (control: 200 forks succeed; kernel uid 0 with AISB_TEST_NO_IDMAP=1: pid_max)" {
	bb_image
	flood_bounded "$AISB" --net none --image "$IMG" -- ./probe forkn
	if ! is_root; then
		return 0
	fi
	run "$AISB" --net none --image "$IMG" -- cat /proc/sys/kernel/pid_max
	[ "$output" != 4097 ] # not the kernel-uid-0 bound: RLIMIT_NPROC binds
	per_ns_pid_max
	run env AISB_TEST_NO_IDMAP=1 "$AISB" --net none --image "$IMG" -- sh -c 'cat /proc/sys/kernel/pid_max; ./probe forkn 4500'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 4097 ]
	[[ "${lines[1]}" == "failed after "*" err11" ]]
}
