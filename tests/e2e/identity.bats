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
	timeout 20 sh -c 'while [ ! -e "$1" ]; do sleep 0.05; done' _ "$PROJ/ready"
	local pid
	pid=$(pgrep -f "^sleep $marker\$" | head -1)
	[ -n "$pid" ]
	awk '$1 == "Uid:" || $1 == "Gid:"' "/proc/$pid/status"
	# every one of real, effective, saved and fs ids, on the host
	[ "$(awk '$1 == "Uid:" {print $2 $3 $4 $5}' "/proc/$pid/status")" = "$RUN_ID$RUN_ID$RUN_ID$RUN_ID" ]
	[ "$(awk '$1 == "Gid:" {print $2 $3 $4 $5}' "/proc/$pid/status")" = "$RUN_ID$RUN_ID$RUN_ID$RUN_ID" ]
	kill "$SUP"
	wait "$SUP" || true
	SUP=
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
	run sb -- python3 forkn.py 200
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "forked 200" ]
	run sb -- python3 forkn.py 4500
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == "failed after "*" 11" ]]
	local n
	n=$(awk '{print $3}' <<<"$output")
	[ "$n" -le 4096 ] && [ "$n" -ge 3500 ]
	if ! is_root; then
		return 0
	fi
	# kernel uid 0 is exempt from RLIMIT_NPROC: its bound is the pid namespace's pid_max
	# (Linux 6.14+; before, the run warns that the process limit is off)
	local rel major minor
	rel=$(uname -r)
	major=${rel%%.*}
	minor=${rel#*.}
	minor=${minor%%.*}
	require_feature "a per-namespace pid_max (Linux 6.14+; this is $rel)" \
		test "$major" -gt 6 -o \( "$major" -eq 6 -a "$minor" -ge 14 \)
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
