#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/core.bats — the core sandbox of issue 2, end to end: filesystem, identity,
# hardening, environment, exit codes, argument parsing, config precedence, bad input.
#
# Every refusal is paired with a control where the same probe succeeds because policy allows
# it there (on the host, in the project, with the lifting flag), so a test cannot pass just
# because the probe itself is broken. The terminal tests live in pty.bats.
# Inner commands are single-quoted on purpose: they expand inside the sandbox.
# shellcheck disable=SC2016
load lib/common
bats_require_minimum_version 1.5.0

# The sandbox's PATH is /usr/local/bin:/usr/bin:...; use the same python3 on the host side (a
# python3 earlier on the caller's PATH may be a slow shim, e.g. pyenv's).
PY=/usr/bin/python3
[ -x "$PY" ] || PY=/usr/local/bin/python3
have_python() { [ -x "$PY" ]; }

setup() {
	common_setup
	CANARY="aisb-canary-$RANDOM$RANDOM-$$"
}

teardown() {
	[ -n "${HOST_PID:-}" ] && kill "$HOST_PID" 2>/dev/null
	[ -n "${HOME_CANARY:-}" ] && rm -f "$HOME_CANARY"
	[ -n "${OPT_PROBE:-}" ] && rm -rf "$OPT_PROBE"
	common_teardown
}

# no_session_left: the state dir holds no session directory.
no_session_left() {
	local left
	left=$(ls -A "$XDG_STATE_HOME/aisb/sessions" 2>/dev/null || true)
	[ -z "$left" ] || { echo "session dirs left behind: $left"; return 1; }
}

# wait_for_file PATH: up to 10 s for PATH to appear.
wait_for_file() {
	local _
	for _ in $(seq 100); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	echo "timed out waiting for $1"
	return 1
}

# status_field FILE FIELD: the first value of "Field:" in a /proc status file, stripped.
status_field() { awk -v f="$2:" '$1 == f { print $2; exit }' "$1"; }

# ---- filesystem ------------------------------------------------------------------------------

@test "fs: a canary in the caller's home is invisible while one in the project is readable" {
	HOME_CANARY="$HOME/.aisb-e2e-canary-$$"
	echo "$CANARY" >"$HOME_CANARY" || skip "cannot write to \$HOME ($HOME)"
	echo "$CANARY" >"$PROJ/canary"
	# control: the same read works on the host
	[ "$(cat "$HOME_CANARY")" = "$CANARY" ]
	run sb -- cat "$HOME_CANARY"
	[ "$status" -ne 0 ]
	[[ "$output" != *"$CANARY"* ]]
	run sb -- sh -c "ls -A '$HOME' 2>&1; grep -rs '$CANARY' /home /root /var /mnt /srv /media 2>/dev/null | grep -v '^$PROJ/'"
	[[ "$output" != *"$CANARY"* ]]
	run sb -- cat "$PROJ/canary"
	[ "$status" -eq 0 ]
	[ "$output" = "$CANARY" ]
}

@test "fs: a write outside the project fails; one inside lands on the host owned by the caller" {
	# outside: the project's parent (writable on the host), /etc, the root
	run sb -- sh -c "echo x > '$WORK/escape'"
	[ "$status" -ne 0 ]
	[ ! -e "$WORK/escape" ]
	run sb -- sh -c 'echo x > /etc/aisb-escape'
	[ "$status" -ne 0 ]
	run sb -- sh -c 'echo x > /aisb-escape'
	[ "$status" -ne 0 ]
	# control: the same write on the host works
	echo x >"$WORK/escape"
	[ -f "$WORK/escape" ]
	# inside the project
	run sb -- sh -c 'echo inside > written; mkdir -p sub && echo deep > sub/f'
	[ "$status" -eq 0 ]
	[ "$(cat "$PROJ/written")" = inside ]
	[ "$(cat "$PROJ/sub/f")" = deep ]
	[ "$(stat -c %u:%g "$PROJ/written")" = "$(id -u):$(id -g)" ]
	[ "$(stat -c %u:%g "$PROJ/sub")" = "$(id -u):$(id -g)" ]
}

@test "fs: /tmp inside is private: a write there never reaches the host's /tmp" {
	run sb -- sh -c "echo x > /tmp/$CANARY && cat /tmp/$CANARY"
	[ "$status" -eq 0 ]
	[ "$output" = x ]
	[ ! -e "/tmp/$CANARY" ]
}

@test "fs: the root is the host's system dirs read-only, without /root, /run or host devices" {
	run sb -- sh -c 'test -x /bin/sh && test -r /usr/bin/env && echo sys-ok'
	[ "$output" = sys-ok ]
	run sb -- sh -c 'touch /usr/aisb-x; echo usr=$?; touch /etc/aisb-x; echo etc=$?'
	[[ "$output" == *"usr=1"* ]]
	[[ "$output" == *"etc=1"* ]]
	run sb -- sh -c 'ls -A /root 2>/dev/null | wc -l; ls -A /run | wc -l; test -e /dev/net/tun && echo tun; ls /dev'
	[ "${lines[0]}" -eq 0 ]
	[ "${lines[1]}" -eq 0 ]
	[[ "$output" != *tun* ]]
	[[ "$output" == *null* ]]
	[[ "$output" == *urandom* ]]
	[[ "$output" != *sda* ]]
	[[ "$output" != *mem* ]]
	# generated identity files, not the host's
	run sb -- sh -c 'cat /etc/passwd; id -un; echo $HOME'
	[[ "$output" == *"sandbox:x:1000:1000"* ]]
	[ "${lines[-2]}" = sandbox ]
	[ "${lines[-1]}" = /home/sandbox ]
	if [ "$(id -u)" -ne 0 ]; then
		[[ "$output" != *"$(id -un):x:$(id -u)"* ]]
	fi
	# generated name files: no resolver with --net none, localhost resolves
	run sb -- sh -c 'cat /etc/resolv.conf; getent hosts localhost'
	[ "$status" -eq 0 ]
	[[ "$output" != *nameserver* ]]
	[[ "$output" == *127.0.0.1* || "$output" == *::1* ]]
}

@test "fs: root-only host files stay unreadable inside, also when the caller is root" {
	# The sandbox's uid maps to the caller; for root that is host uid 0, whose owner bits would
	# open every root-only file on the read-only system dirs.
	run sb -- sh -c 'cat /etc/shadow; ls /etc/ssl/private 2>/dev/null; true'
	[[ "$output" != *'root:'* ]]
	if ! is_root; then
		return 0
	fi
	# control: the host's root reads them
	grep -q '^root:' /etc/shadow
	# a root-only file outside /etc, in a bound system dir (/opt)
	[ -d /opt ] || skip "no /opt on this host"
	OPT_PROBE=$(mktemp -d /opt/aisb-e2e.XXXXXX)
	chmod 0700 "$OPT_PROBE"
	echo "$CANARY" >"$OPT_PROBE/secret"
	chmod 0600 "$OPT_PROBE/secret"
	[ "$(cat "$OPT_PROBE/secret")" = "$CANARY" ]
	# both ways of hiding them: /etc and /opt idmapped so every owner reads as nobody (where the
	# kernel allows it), and the walk that masks each root-only entry (AISB_TEST_NO_IDMAP=1)
	for hook in 0 1; do
		run env AISB_TEST_NO_IDMAP=$hook "$AISB" --net none -- cat /etc/shadow
		[[ "$output" != *'root:'* ]]
		run env AISB_TEST_NO_IDMAP=$hook "$AISB" --net none -- cat "$OPT_PROBE/secret"
		[ "$status" -ne 0 ]
		[[ "$output" != *"$CANARY"* ]]
		run env AISB_TEST_NO_IDMAP=$hook "$AISB" --net none -- ls "$OPT_PROBE"
		[[ "$output" != *secret* ]]
		# control: what everyone may read stays readable
		run env AISB_TEST_NO_IDMAP=$hook "$AISB" --net none -- sh -c 'grep -c "^root:x:0:0:" /etc/passwd; cat /etc/hostname'
		[ "$status" -eq 0 ]
		[ "${lines[0]}" = 1 ]
		[ "${lines[1]}" = "$(cat /etc/hostname)" ]
		# which way was taken: the owner of /etc/shadow as the sandbox sees it
		run env AISB_TEST_NO_IDMAP=$hook "$AISB" --net none -- stat -c %u /etc/shadow
		if [ "$hook" = 1 ]; then
			[ "$output" != 65534 ] # masked: the /dev/null bound over it
		elif [ "${AISB_MUST_WORK:-0}" = 1 ] && [ "$(stat -f -c %T /etc)" != overlayfs ]; then
			# CI: the kernel and filesystems allow idmapped mounts, so the walk must not be
			# what ran (it is the slower fallback). Not in a container (tests/fresh-machine.sh):
			# an overlayfs /etc cannot be idmapped (measured on 6.18), the walk is expected there
			[ "$output" = 65534 ]
		else
			echo "# idmapped system dirs: $([ "$output" = 65534 ] && echo yes || echo "no (the walk)")" >&3
		fi
	done
}

@test "fs: the project is mounted at its own path, and the command starts there" {
	run sb -- pwd
	[ "$status" -eq 0 ]
	[ "$output" = "$PROJ" ]
}

@test "fs: a project path with spaces and a colon is mounted at its own path" {
	mkdir -p "$WORK/my proj:1"
	cd "$WORK/my proj:1"
	run sb -- sh -c 'pwd; echo x > f'
	[ "$status" -eq 0 ]
	[ "$output" = "$WORK/my proj:1" ]
	[ -f "$WORK/my proj:1/f" ]
}

@test "fs: a project under a sandbox-owned path (/tmp) is relocated to /project, announced" {
	local t
	t=$(mktemp -d /tmp/aisb-e2e-proj.XXXXXX)
	echo "$CANARY" >"$t/f"
	cd "$t"
	run sb -- sh -c 'pwd; cat f; echo new > g'
	cd "$PROJ"
	local g
	g=$(cat "$t/g" 2>/dev/null)
	rm -rf "$t"
	[ "$status" -eq 0 ]
	[[ "$output" == *"/project"* ]]  # announced on stderr and pwd
	[[ "$output" == *"$CANARY"* ]]
	[ "$(sb -- true 2>&1)" = "" ]    # control: no announcement at a path of its own
	[ "$g" = new ]
}

@test "fs: --workdir puts the project elsewhere; a sandbox-owned --workdir is refused" {
	echo "$CANARY" >f
	run sb --workdir /work/x -- sh -c 'pwd; cat f; test -e "$0" && echo own-path-visible; true' "$PROJ"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = /work/x ]
	[ "${lines[1]}" = "$CANARY" ]
	[[ "$output" != *own-path-visible* ]]
	run sb --workdir /usr/x -- true
	[ "$status" -eq 78 ]
	[[ "$output" == *"/usr/x"* ]]
	no_session_left
}

@test "fs: --no-cwd mounts nothing and starts in the home; without it, a cwd holding \$HOME is refused" {
	echo "$CANARY" >f
	run sb --no-cwd -- sh -c 'pwd; ls "$0" 2>&1; cat "$0/f"' "$PROJ"
	[ "${lines[0]}" = /home/sandbox ]
	[[ "$output" != *"$CANARY"* ]]
	# a fake home around the cwd: refused unless --no-cwd
	mkdir -p "$WORK/fakehome/p"
	cd "$WORK/fakehome"
	run env HOME="$WORK/fakehome" "$AISB" --net none -- true
	[ "$status" -eq 78 ]
	[[ "$output" == *"$WORK/fakehome"* ]]
	run env HOME="$WORK/fakehome" "$AISB" --net none --no-cwd -- true
	[ "$status" -eq 0 ]
	cd "$WORK/fakehome/p"
	run env HOME="$WORK/fakehome" "$AISB" --net none -- pwd
	[ "$status" -eq 0 ]
	[ "$output" = "$WORK/fakehome/p" ]
}

@test "fs: --read-only makes the project readable but not writable" {
	echo "$CANARY" >f
	run sb --read-only -- sh -c 'cat f; echo x > g'
	[ "$status" -ne 0 ]
	[ "${lines[0]}" = "$CANARY" ]
	[ ! -e g ]
	run sb -- sh -c 'echo x > g'    # control
	[ "$status" -eq 0 ]
	[ -f g ]
}

@test "fs: --mount is read-only by default, writable with :rw, and lands at DST" {
	mkdir -p "$WORK/data"
	echo "$CANARY" >"$WORK/data/f"
	run sb --mount "$WORK/data" -- sh -c "cat '$WORK/data/f'; echo x > '$WORK/data/g'"
	[ "$status" -ne 0 ]
	[ "${lines[0]}" = "$CANARY" ]
	[ ! -e "$WORK/data/g" ]
	run sb --mount "$WORK/data:/data:ro" -- sh -c 'cat /data/f; echo x > /data/g'
	[ "$status" -ne 0 ]
	[ "${lines[0]}" = "$CANARY" ]
	[ ! -e "$WORK/data/g" ]
	run sb --mount "$WORK/data:/data:rw" -- sh -c 'cat /data/f; echo x > /data/g'
	[ "$status" -eq 0 ]
	[ "$(cat "$WORK/data/g")" = x ]
	[ "$(stat -c %u "$WORK/data/g")" = "$(id -u)" ]
	# a mode without DST: at its own path
	run sb --mount "$WORK/data:rw" -- sh -c "echo y > '$WORK/data/h'"
	[ "$status" -eq 0 ]
	[ "$(cat "$WORK/data/h")" = y ]
	# a single file
	run sb --mount "$WORK/data/f:/etcx/f" -- cat /etcx/f
	[ "$status" -eq 0 ]
	[ "$output" = "$CANARY" ]
}

@test "fs: --mount onto a sandbox-owned destination or from a forbidden source is refused" {
	mkdir -p "$WORK/data"
	local dst
	for dst in /usr/x /etc/x /tmp/x /home/sandbox /home/sandbox/x /proc/x /dev/x /run/x /root/x /; do
		run sb --mount "$WORK/data:$dst" -- true
		[ "$status" -eq 78 ] || { echo "dst $dst: status $status: $output"; return 1; }
		[[ "$output" == *"$dst"* ]]
		[ "${#lines[@]}" -eq 1 ]
	done
	for src in /proc /sys /dev /run; do
		run sb --mount "$src:/hostx" -- true
		[ "$status" -eq 78 ] || { echo "src $src: status $status: $output"; return 1; }
		[[ "$output" == *"$src"* ]]
	done
	no_session_left
	run sb --mount "$WORK/data:/data" -- true    # control
	[ "$status" -eq 0 ]
}

@test "fs: a mount spec with an unknown mode suffix is refused, not used as part of DST" {
	# 'SRC:/data:rx' (a typo of :ro) once mounted at '/data:rx'.
	mkdir -p "$WORK/data"
	run sb --mount "$WORK/data:/data:rx" -- true
	[ "$status" -eq 78 ]
	[[ "$output" == *"rx"* ]]
	no_session_left
}

@test "fs: .git/hooks and .git/config are read-only and cannot be renamed aside; --writable-git lifts it" {
	require_feature git command -v git
	git init -q .
	echo 'echo hi' >.git/hooks/post-checkout
	run sb -- sh -c '
		echo evil > .git/hooks/pre-commit && echo W1
		echo evil >> .git/hooks/post-checkout && echo W2
		mv .git/hooks .git/hooks.aside && echo R1
		mv .git .git.aside && echo R2
		echo "[core]" >> .git/config && echo W3
		mv .git/config .git/config.aside && echo R3
		rm -rf .git/hooks 2>/dev/null; test -d .git/hooks && echo still-there
		true'
	[ "$status" -eq 0 ]
	[[ "$output" != *W1* && "$output" != *W2* && "$output" != *W3* ]]
	[[ "$output" != *R1* && "$output" != *R2* && "$output" != *R3* ]]
	[[ "$output" == *still-there* ]]
	[ ! -e .git/hooks/pre-commit ]
	[ "$(cat .git/hooks/post-checkout)" = 'echo hi' ]
	[ -d .git ] && [ ! -e .git.aside ] && [ ! -e .git/hooks.aside ]
	# control: the rest of the repository works (commit writes objects and refs)
	echo x >tracked
	run sb -- sh -c 'git add tracked && git -c user.name=t -c user.email=t@e commit -q -m t && echo committed'
	[ "$status" -eq 0 ]
	[[ "$output" == *committed* ]]
	[ "$(git log --format=%s)" = t ]
	# control: --writable-git lets the same writes through
	run sb --writable-git -- sh -c 'echo evil > .git/hooks/pre-commit && echo "# x" >> .git/config && echo W'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = W ]
	# ... and named, not moved, after the run (tests/e2e/gitguard.bats)
	[[ "$output" == *"LEFT IN PLACE (--writable-git)"*"/.git/hooks/pre-commit'"* ]]
	[ "$(cat .git/hooks/pre-commit)" = evil ]
}

@test "fs: submodule git dirs (.git/modules) are read-only; a missing .git/config cannot be created" {
	require_feature git command -v git
	git init -q .
	mkdir -p .git/modules/sub/hooks
	rm -f .git/config
	run sb -- sh -c '
		echo evil > .git/modules/sub/hooks/pre-commit && echo WROTE1
		echo "[core]" > .git/modules/sub/config && echo WROTE2
		echo "[core]" > .git/config && echo WROTE3
		echo ok > .git/description && echo CONTROL
		true'
	[[ "$output" != *WROTE* ]]
	[[ "$output" == *CONTROL* ]]
	[ ! -e .git/modules/sub/hooks/pre-commit ]
	[ ! -s .git/config ]
	run sb --writable-git -- sh -c 'echo evil > .git/modules/sub/hooks/pre-commit && echo WROTE1'    # control
	[ "${lines[0]}" = WROTE1 ]
	[[ "$output" == *"LEFT IN PLACE (--writable-git)"* ]]
}

@test "fs: a symlinked .git/hooks or .git/config refuses the run unless --writable-git" {
	require_feature git command -v git
	git init -q .
	mv .git/hooks "$WORK/hooks-real"
	ln -s "$WORK/hooks-real" .git/hooks
	run sb -- true
	[ "$status" -eq 78 ]
	[[ "$output" == *".git/hooks"* ]]
	run sb --writable-git -- true    # control
	[ "$status" -eq 0 ]
	rm .git/hooks
	mkdir .git/hooks
	mv .git/config "$WORK/config-real"
	ln -s "$WORK/config-real" .git/config
	run sb -- true
	[ "$status" -eq 78 ]
	[[ "$output" == *".git/config"* ]]
	no_session_left
}

@test "fs: a .git symlink cannot be replaced by a directory of hooks" {
	# Known gap: when .git is a symlink (to a gitdir elsewhere), neither the link nor its
	# parent is pinned, so the sandbox can swap in a .git of its own whose hooks and config
	# run on the host the next time the user runs git there. aisb only warns.
	require_feature git command -v git
	git init -q "$WORK/real"
	ln -s "$WORK/real/.git" .git
	run sb -- sh -c 'rm .git && mkdir -p .git/hooks && echo evil > .git/hooks/post-checkout && echo SWAPPED; true'
	echo "$output"
	[[ "$output" != *SWAPPED* ]]
	[ -L .git ]
}

@test "fs: a worktree's .git file is read-only" {
	require_feature git command -v git
	mkdir "$WORK/repo"
	git -C "$WORK/repo" init -q
	git -C "$WORK/repo" -c user.name=t -c user.email=t@e commit -q --allow-empty -m init
	git -C "$WORK/repo" worktree add -q "$PROJ/wt" 2>/dev/null
	cd "$PROJ/wt"
	local before
	before=$(cat .git)
	run sb -- sh -c 'echo "gitdir: /tmp/evil" > .git && echo WROTE; mv .git .git.aside && echo RENAMED; true'
	[[ "$output" != *WROTE* && "$output" != *RENAMED* ]]
	[ "$(cat .git)" = "$before" ]
	run sb --writable-git -- sh -c 'echo "gitdir: /tmp/evil" > .git && echo WROTE'    # control
	[ "${lines[0]}" = WROTE ]
	[[ "$output" == *"LEFT IN PLACE (--writable-git)"*"/wt/.git'"* ]]
}

@test "fs: ~/.agents is readable but not writable; --agents-dir and --no-agents" {
	local fh="$WORK/fakehome"
	mkdir -p "$fh/.agents"
	echo "$CANARY" >"$fh/.agents/skill.md"
	run env HOME="$fh" "$AISB" --net none -- sh -c 'cat ~/.agents/skill.md; echo x > ~/.agents/new && echo WROTE; echo y >> ~/.agents/skill.md && echo APPENDED; true'
	[ "${lines[0]}" = "$CANARY" ]
	[[ "$output" != *WROTE* && "$output" != *APPENDED* ]]
	[ ! -e "$fh/.agents/new" ]
	[ "$(cat "$fh/.agents/skill.md")" = "$CANARY" ]
	# control: the rest of the home is writable
	run env HOME="$fh" "$AISB" --net none -- sh -c 'echo x > ~/new && echo WROTE'
	[ "$output" = WROTE ]
	# --agents-dir names another directory, read-only as well
	mkdir -p "$WORK/agents2"
	echo other >"$WORK/agents2/a"
	run sb --agents-dir "$WORK/agents2" -- sh -c 'cat ~/.agents/a; touch ~/.agents/b && echo WROTE; true'
	[ "${lines[0]}" = other ]
	[[ "$output" != *WROTE* ]]
	# --no-agents: nothing there
	run env HOME="$fh" "$AISB" --net none --no-agents -- sh -c 'cat ~/.agents/skill.md'
	[ "$status" -ne 0 ]
	[[ "$output" != *"$CANARY"* ]]
}

@test "fs: \$XDG_RUNTIME_DIR is never exposed, as a mount or as the project" {
	mkdir -p "$WORK/rt/p" "$WORK/other"
	run env XDG_RUNTIME_DIR="$WORK/rt" "$AISB" --net none --mount "$WORK/rt:/rt" -- true
	[ "$status" -eq 78 ]
	[[ "$output" == *"$WORK/rt"* ]]
	run env XDG_RUNTIME_DIR="$WORK/rt" "$AISB" --net none --mount "$WORK:/w" -- true
	[ "$status" -eq 78 ]    # a parent of it, too
	cd "$WORK/rt/p"
	run env XDG_RUNTIME_DIR="$WORK/rt" "$AISB" --net none -- true
	[ "$status" -eq 78 ]
	cd "$PROJ"
	no_session_left
	run env XDG_RUNTIME_DIR="$WORK/rt" "$AISB" --net none --mount "$WORK/other:/o" -- sh -c "test -d /o && ! test -e '$WORK/rt' && echo OK"
	[ "$output" = OK ]    # control
}

@test "fs: a symlink planted in the persistent home never redirects the ~/.agents mount" {
	mkdir -p "$WORK/agents"
	echo "$CANARY" >"$WORK/agents/a"
	run sb --no-agents -- sh -c "ln -s /tmp/elsewhere ~/.agents && mkdir -p /tmp/elsewhere && echo planted"
	[ "$output" = planted ]
	run sb --agents-dir "$WORK/agents" -- sh -c 'cat /home/sandbox/.agents/a; ls /tmp/elsewhere 2>&1'
	echo "status $status: $output"
	# Either the run fails closed (naming the mount point) or the agents dir is where it belongs.
	if [ "$status" -ne 0 ]; then
		[[ "$output" == *".agents"* ]]
		[[ "$output" != *"$CANARY"* ]]
	else
		[ "${lines[0]}" = "$CANARY" ]
	fi
	[ "$(readlink "$XDG_STATE_HOME/aisb/homes/default/.agents")" = /tmp/elsewhere ]
	[ ! -e /tmp/elsewhere/a ]
}

@test "fs: the home persists between runs; --ephemeral-home starts empty and keeps nothing" {
	run sb -- sh -c "echo $CANARY > ~/persist"
	[ "$status" -eq 0 ]
	run sb -- cat /home/sandbox/persist
	[ "$output" = "$CANARY" ]
	[ "$(cat "$XDG_STATE_HOME/aisb/homes/default/persist")" = "$CANARY" ]
	run sb --ephemeral-home -- sh -c 'cat ~/persist; echo eph > ~/eph; cat ~/eph'
	[[ "$output" != *"$CANARY"* ]]
	[[ "$output" == *eph* ]]
	run sb -- sh -c 'cat ~/eph'
	[ "$status" -ne 0 ]
	run sb --ephemeral-home -- sh -c 'cat ~/eph'
	[ "$status" -ne 0 ]
}

# ---- processes, identity, hardening ---------------------------------------------------------

@test "proc: /proc shows only the sandbox's processes" {
	local mark=$((RANDOM + 40000))
	sleep "$mark" 3>&- &
	HOST_PID=$!
	# control: the host sees the marker process (once the fork has exec'd sleep)
	local _
	for _ in $(seq 50); do
		grep -qs "$mark" /proc/"$HOST_PID"/cmdline && break
		sleep 0.1
	done
	grep -qs "$mark" /proc/"$HOST_PID"/cmdline
	run sb -- sh -c 'for f in /proc/[0-9]*/cmdline; do tr "\0" " " < $f; echo; done; echo self=$$'
	[ "$status" -eq 0 ]
	[[ "$output" != *"sleep $mark"* ]]
	# the sandbox's own processes are there: this shell, and few others
	[[ "$output" == *"for f in"* ]]
	local n
	n=$(sb -- sh -c 'ls -d /proc/[0-9]* | wc -l')
	[ "$n" -le 6 ]
	run sb -- sh -c "test -e /proc/$HOST_PID/cmdline && grep -q $mark /proc/$HOST_PID/cmdline && echo seen"
	[[ "$output" != *seen* ]]
}

@test "proc: the command runs as uid 1000 with no capabilities and no_new_privs" {
	run sb -- cat /proc/self/status
	[ "$status" -eq 0 ]
	local st="$BATS_TEST_TMPDIR/st"
	printf '%s\n' "$output" >"$st"
	[ "$(status_field "$st" CapEff)" = 0000000000000000 ]
	[ "$(status_field "$st" CapPrm)" = 0000000000000000 ]
	[ "$(status_field "$st" CapInh)" = 0000000000000000 ]
	[ "$(status_field "$st" CapBnd)" = 0000000000000000 ]
	[ "$(status_field "$st" CapAmb)" = 0000000000000000 ]
	[ "$(status_field "$st" NoNewPrivs)" = 1 ]
	[ "$(status_field "$st" Seccomp)" = 2 ]
	[ "$(status_field "$st" Uid)" = 1000 ]
	# control: the host's values differ (a full bounding set; root also has effective caps).
	# (NoNewPrivs may already be 1 on the host, e.g. in a container started with it.)
	[ "$(status_field /proc/self/status CapBnd)" != 0000000000000000 ]
	if is_root; then
		[ "$(status_field /proc/self/status CapEff)" != 0000000000000000 ]
	fi
}

@test "proc: unshare -U and mount fail inside (they work on the host)" {
	require_feature "unprivileged user namespaces" unshare -U true
	require_feature "mount in a user namespace" unshare -Urm mount -t tmpfs none /tmp
	run sb -- unshare -U true
	[ "$status" -ne 0 ]
	run sb -- unshare -Urm true
	[ "$status" -ne 0 ]
	run sb -- cat /proc/sys/user/max_user_namespaces
	[ "$output" = 0 ]
	run sb -- sh -c 'mkdir -p /tmp/m && mount -t tmpfs none /tmp/m'
	[ "$status" -ne 0 ]
	# a mount syscall without the mount(8) uid check: EPERM from seccomp
	require_feature "python3 in /usr" have_python
	run sb -- python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
os.makedirs("/tmp/m", exist_ok=True)
r = libc.mount(b"none", b"/tmp/m", b"tmpfs", 0, None)
print(r, ctypes.get_errno())'
	[ "$output" = "-1 1" ]
}

@test "proc: ptrace is denied; --allow-ptrace allows it" {
	require_feature "python3 in /usr" have_python
	local probe='import ctypes; libc = ctypes.CDLL(None, use_errno=True); print(libc.ptrace(0, 0, 0, 0), ctypes.get_errno())'
	run sb -- python3 -c "$probe"
	[ "$output" = "-1 1" ]
	run sb --allow-ptrace -- python3 -c "$probe"
	[ "$output" = "0 0" ]
	# even with --allow-ptrace, the sandbox's init (capable inside the user namespace, no
	# seccomp) cannot be attached to or read: only the command's own children can
	cat >att.py <<'EOF'
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
def attach(pid):
    ctypes.set_errno(0)
    r = libc.ptrace(16, pid, 0, 0)    # PTRACE_ATTACH
    e = ctypes.get_errno()
    if r == 0:
        os.waitpid(pid, 0)
        libc.ptrace(17, pid, 0, 0)    # PTRACE_DETACH
    return "ok" if r == 0 else "err%d" % e
child = os.fork()
if child == 0:
    time.sleep(5)
    os._exit(0)
print("child", attach(child), "init", attach(1))
os.kill(child, 9)
try:
    open("/proc/1/environ").read(); print("environ readable")
except OSError as e:
    print("environ err%d" % e.errno)
EOF
	run sb --allow-ptrace -- python3 att.py
	[ "${lines[0]}" = "child ok init err1" ]
	# EACCES, or ENOENT where hidepid=invisible hides PID 1 altogether
	[[ "${lines[1]}" == "environ err13" || "${lines[1]}" == "environ err2" ]]
	run sb -- python3 att.py
	[ "${lines[0]}" = "child err1 init err1" ]
	if command -v strace >/dev/null; then
		run sb -- strace -o /dev/null true
		[ "$status" -ne 0 ]
		run sb --allow-ptrace -- strace -o /dev/null true
		[ "$status" -eq 0 ]
	fi
}

@test "proc: file descriptors above 2 do not leak into the sandbox" {
	run sb -- sh -c 'ls /proc/self/fd' 7<"$PROJ" 8>"$WORK/fd8"
	[ "$status" -eq 0 ]
	[[ " ${output//$'\n'/ } " != *" 7 "* ]]
	[[ " ${output//$'\n'/ } " != *" 8 "* ]]
	# control: the same probe on the host sees them
	run sh -c 'ls /proc/self/fd' 7<"$PROJ" 8>"$WORK/fd8"
	[[ " ${output//$'\n'/ } " == *" 7 "* ]]
}

@test "proc: the seccomp deny list is loaded (keyctl, io_uring, setns, personality, clone3)" {
	require_feature "python3 in /usr" have_python
	require_feature "x86_64 (syscall numbers below)" test "$(uname -m)" = x86_64
	cat >sc.py <<'EOF'
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(name, nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    print(name, "ok" if r >= 0 else "err%d" % ctypes.get_errno())
params = ctypes.create_string_buffer(120)
call("keyctl", 250, 0, -3, 0)               # KEYCTL_GET_KEYRING_ID, session keyring
call("io_uring_setup", 425, 1, ctypes.addressof(params))
call("setns", 308, -1, 0)                   # EBADF when allowed
call("personality_default", 135, 0)
call("personality_rie", 135, 0x0400000)     # READ_IMPLIES_EXEC
call("clone3", 435, 0, 0)                   # EINVAL when allowed (size 0)
EOF
	run "$PY" sc.py
	local host=$output
	run sb -- python3 sc.py
	[ "$status" -eq 0 ]
	echo "host: $host"
	echo "sandbox: $output"
	[[ "$output" == *"keyctl err1"* ]]
	[[ "$output" == *"io_uring_setup err1"* ]]
	[[ "$output" == *"setns err1"* ]]
	[[ "$output" == *"personality_rie err1"* ]]
	[[ "$output" == *"clone3 err38"* ]]
	# control: the default personality is allowed inside; the host gets past the filter
	[[ "$output" == *"personality_default ok"* ]]
	[[ "$host" == *"setns err9"* ]]
	[[ "$host" == *"clone3 err22"* ]]
	[[ "$host" == *"personality_rie ok"* ]]
}

@test "proc: the sandbox has its own hostname, and cannot change it" {
	run sb -- sh -c 'cat /proc/sys/kernel/hostname; hostname other 2>/dev/null && echo CHANGED; true'
	[ "$output" = aisb ]
	[ "$(cat /proc/sys/kernel/hostname)" != other ]
}

@test "proc: the command leads its own session (setsid)" {
	# field 6 of /proc/PID/stat is the session id; $$ of a sh -c is its own pid
	run sb -- sh -c 'set -- $(cat /proc/$$/stat); [ "$6" = "$$" ] && echo LEADER'
	[ "$output" = LEADER ]
	run sh -c 'set -- $(cat /proc/$$/stat); [ "$6" = "$$" ] && echo LEADER'    # control
	[ "$output" != LEADER ]
}

@test "proc: nothing outlives a supervisor killed with SIGKILL" {
	local mark=$((RANDOM + 20000))
	"$AISB" --net none -- sh -c "touch ready; exec sleep $mark" 3>&- &
	local pid=$!
	wait_for_file ready
	local _
	for _ in $(seq 50); do
		pgrep -f "^sleep $mark\$" >/dev/null && break
		sleep 0.1
	done
	# control: the sandboxed sleep is visible from the host while aisb lives
	pgrep -f "^sleep $mark\$"
	kill -KILL "$pid"
	wait "$pid" || true
	for _ in $(seq 50); do
		pgrep -f "^sleep $mark\$" >/dev/null || break
		sleep 0.1
	done
	run pgrep -f "^sleep $mark\$"
	[ "$status" -ne 0 ]
}

# ---- network ---------------------------------------------------------------------------------

@test "net: --net none has only lo, and a host 127.0.0.1 server is unreachable (loopback inside works)" {
	require_feature "python3 in /usr" have_python
	run sb --net none -- cat /proc/net/dev
	[ "$status" -eq 0 ]
	local ifs
	ifs=$(printf '%s\n' "$output" | awk -F: 'NR > 2 { gsub(/ /, "", $1); print $1 }' | sort | tr '\n' ' ')
	[ "$ifs" = "lo " ]
	# a server on the host's 127.0.0.1
	local port
	port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	"$PY" -c "
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $port)); s.listen(8)
while True:
    c, _ = s.accept(); c.sendall(b'hello\n'); c.close()" >/dev/null 2>&1 3>&- &
	HOST_PID=$!
	local probe="import socket, sys
try:
    c = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=2); print(c.recv(16).decode().strip())
except OSError as e:
    print('refused', e.errno)"
	local _
	for _ in $(seq 50); do "$PY" -c "$probe" "$port" | grep -q hello && break; sleep 0.1; done
	# control: reachable from the host
	run "$PY" -c "$probe" "$port"
	[ "$output" = hello ]
	run sb --net none -- python3 -c "$probe" "$port"
	[[ "$output" == refused* ]]
	# control: the sandbox's own loopback works
	run sb --net none -- python3 -c "
import socket, threading
s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1)
def srv():
    c, _ = s.accept(); c.sendall(b'inner'); c.close()
threading.Thread(target=srv).start()
c = socket.create_connection(s.getsockname(), timeout=2); print(c.recv(16).decode())"
	[ "$output" = inner ]
}

# ---- environment -----------------------------------------------------------------------------

@test "env: only TERM LANG LC_ALL LC_CTYPE TZ pass from the host" {
	run env AISB_E2E_CANARY="$CANARY" SSH_AUTH_SOCK=/x/agent TERM=xterm-e2e LANG=C.UTF-8 LC_ALL=C.UTF-8 \
		LC_CTYPE=C.UTF-8 TZ=UTC0 "$AISB" --net none -- env
	[ "$status" -eq 0 ]
	[[ "$output" != *"$CANARY"* ]]
	[[ "$output" != *SSH_AUTH_SOCK* ]]
	[[ "$output" != *AISB_E2E_CANARY* ]]
	[[ "$output" == *"TERM=xterm-e2e"* ]]
	[[ "$output" == *"LANG=C.UTF-8"* ]]
	[[ "$output" == *"LC_ALL=C.UTF-8"* ]]
	[[ "$output" == *"LC_CTYPE=C.UTF-8"* ]]
	[[ "$output" == *"TZ=UTC0"* ]]
	[[ "$output" == *"HOME=/home/sandbox"* ]]
	local host_vars
	host_vars=$(printf '%s\n' "$output" | cut -d= -f1 | sort | tr '\n' ' ')
	echo "inside: $host_vars"
	local v
	for v in $host_vars; do
		case $v in
		TERM | LANG | LC_ALL | LC_CTYPE | TZ | HOME | USER | LOGNAME | PATH | SHELL | container | PWD | SHLVL | _) ;;
		*) echo "unexpected variable inside: $v"; return 1 ;;
		esac
	done
}

@test "env: --env NAME=VALUE and --env NAME reach the command; an unset NAME exits 78" {
	run sb --env "E2E_A=$CANARY" -- printenv E2E_A
	[ "$status" -eq 0 ]
	[ "$output" = "$CANARY" ]
	run env E2E_B="$CANARY-b" "$AISB" --net none --env E2E_B -- printenv E2E_B
	[ "$status" -eq 0 ]
	[ "$output" = "$CANARY-b" ]
	unset E2E_UNSET_XYZ
	run sb --env E2E_UNSET_XYZ -- true
	[ "$status" -eq 78 ]
	[[ "$output" == *E2E_UNSET_XYZ* ]]
	no_session_left
}

@test "env: values with newlines, quotes, '=', '\$' and backslashes arrive intact" {
	local v
	v=$(printf 'a\nb=c "d" '"'"'e'"'"' $HOME \\ `x`')
	run sb --env "E2E_V=$v" -- printenv E2E_V
	[ "$status" -eq 0 ]
	[ "$output" = "$v" ]
	run env E2E_W="$v" "$AISB" --net none --env E2E_W -- printenv E2E_W
	[ "$output" = "$v" ]
}

@test "env: --env-file is refused unless 0600, and works at 0600" {
	printf 'E2E_F=%s\n# comment\nexport E2E_G="quoted"\n' "$CANARY" >"$WORK/envf"
	chmod 0644 "$WORK/envf"
	run sb --env-file "$WORK/envf" -- printenv E2E_F
	[ "$status" -eq 78 ]
	[[ "$output" == *"$WORK/envf"* ]]
	[[ "$output" != *"$CANARY"* ]]
	no_session_left
	chmod 0640 "$WORK/envf"
	run sb --env-file "$WORK/envf" -- true
	[ "$status" -eq 78 ]
	chmod 0600 "$WORK/envf"
	run sb --env-file "$WORK/envf" -- sh -c 'echo "$E2E_F"; echo "$E2E_G"'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$CANARY" ]
	[ "${lines[1]}" = quoted ]
	# a malformed line is refused without echoing it
	printf 'this line holds %s and no equals sign\n' "$CANARY" >"$WORK/envf"
	run sb --env-file "$WORK/envf" -- true
	[ "$status" -eq 78 ]
	[[ "$output" != *"$CANARY"* ]]
}

@test "env: a canary value never appears in --dry-run, --print-policy, the session log, plan.json or errors" {
	local v="$CANARY-secret"
	printf 'E2E_FILE=%s-file\n' "$CANARY" >"$WORK/envf"
	chmod 600 "$WORK/envf"
	# control: it does reach the command
	run env E2E_HOSTV="$CANARY-host" "$AISB" --net none --keep --env "E2E_S=$v" --env E2E_HOSTV \
		--env-file "$WORK/envf" -- sh -c 'echo "$E2E_S $E2E_HOSTV $E2E_FILE"'
	[ "$status" -eq 0 ]
	[[ "$output" == *"$v $CANARY-host $CANARY-file"* ]]
	# the kept session dir and the log
	local sess
	sess=$(ls -d "$XDG_STATE_HOME"/aisb/sessions/*/)
	[ -f "$sess/plan.json" ]
	grep -q E2E_S "$sess/plan.json"    # names are recorded
	run grep -rl "$CANARY" "$XDG_STATE_HOME"
	[ "$status" -ne 0 ]
	[ -s "$XDG_STATE_HOME/aisb/sessions.log" ]
	# previews
	run env E2E_HOSTV="$CANARY-host" "$AISB" --net none --dry-run --env "E2E_S=$v" --env E2E_HOSTV \
		--env-file "$WORK/envf" -- true
	[ "$status" -eq 0 ]
	[[ "$output" == *E2E_S* ]]
	[[ "$output" != *"$CANARY"* ]]
	run sb --print-policy --env "E2E_S=$v" --env-file "$WORK/envf"
	[ "$status" -eq 0 ]
	[[ "$output" == *E2E_S* ]]
	[[ "$output" != *"$CANARY"* ]]
	# failing runs
	run -127 sb --env "E2E_S=$v" -- /nonexistent/cmd
	[[ "$output" != *"$CANARY"* ]]
	run sb --env "E2E_S=$v" --mount "$WORK/nonexistent" -- true
	[ "$status" -eq 78 ]
	[[ "$output" != *"$CANARY"* ]]
	run sb --env "E2E_S=$v" --env "BAD NAME=$v" -- true
	[ "$status" -eq 78 ]
	[[ "$output" != *"$CANARY"* ]]
	run sb --env "E2E_S=$v" -- sh -c 'exit 3'
	[ "$status" -eq 3 ]
	[[ "$output" != *"$CANARY"* ]]
	run grep -rl "$CANARY" "$XDG_STATE_HOME"
	[ "$status" -ne 0 ]
}

# ---- exit codes ------------------------------------------------------------------------------

@test "exit: the command's exit code propagates (0, 1, 42)" {
	local c
	for c in 0 1 42 255; do
		run sb -- sh -c "exit $c"
		[ "$status" -eq "$c" ] || { echo "exit $c gave $status"; return 1; }
	done
	run sb -- false
	[ "$status" -eq 1 ]
}

@test "exit: a signal gives 128+N, and a signal sent to aisb reaches the command" {
	run sb -- sh -c 'kill -TERM $$'
	[ "$status" -eq 143 ]
	run sb -- sh -c 'kill -KILL $$'
	[ "$status" -eq 137 ]
	run sb -- sh -c 'kill -INT $$'
	[ "$status" -eq 130 ]
	# forwarded: SIGTERM to the supervisor ends the sleep inside
	# (aisb itself in the background, not the sb function: $! must be aisb's pid)
	"$AISB" --net none -- sh -c 'touch ready; exec sleep 30' 3>&- &
	local pid=$! rc=0 t0=$SECONDS
	wait_for_file ready
	kill -TERM "$pid"
	wait "$pid" || rc=$?
	[ "$rc" -eq 143 ]
	[ $((SECONDS - t0)) -lt 10 ]
	# a trapped signal: the command decides its own exit code
	rm -f ready
	"$AISB" --net none -- sh -c 'trap "exit 9" USR1; touch ready; sleep 30 & wait' 3>&- &
	pid=$!
	rc=0
	wait_for_file ready
	kill -USR1 "$pid"
	wait "$pid" || rc=$?
	[ "$rc" -eq 9 ]
}

@test "exit: command not found is 127, not executable is 126, each with a message" {
	run -127 sb -- aisb-e2e-no-such-command
	[[ "$output" == *aisb-e2e-no-such-command* ]]
	run -127 sb -- /nonexistent/x
	[[ "$output" == */nonexistent/x* ]]
	echo 'echo hi' >script.sh
	chmod 0644 script.sh
	run sb -- ./script.sh
	[ "$status" -eq 126 ]
	[[ "$output" == *script.sh* ]]
	run sb -- "$PROJ"    # a directory
	[ "$status" -eq 126 ]
	chmod 0755 script.sh    # control
	run sb -- ./script.sh
	[ "$status" -eq 0 ]
	[ "$output" = hi ]
	no_session_left
}

@test "exit: pipes and redirects work without a tty" {
	run sh -c "printf 'a\nb\n' | '$AISB' --net none -- sort -r"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'b\na')" ]
	sb -- sh -c 'echo out; echo err >&2' >"$WORK/o" 2>"$WORK/e"
	[ "$(cat "$WORK/o")" = out ]
	[ "$(cat "$WORK/e")" = err ]
}

@test "exit: the command's end ends the sandbox: background children, closed pipes, zombies" {
	# a background child inside does not keep aisb (or its stdout) alive
	local t0=$SECONDS
	run sb -- sh -c 'sleep 60 & echo started'
	[ "$status" -eq 0 ]
	[ "$output" = started ]
	[ $((SECONDS - t0)) -lt 10 ]
	# a reader that goes away: the writer dies of SIGPIPE, aisb reports 128+13
	run bash -c "'$AISB' --net none -- yes | head -n 1; echo \${PIPESTATUS[0]}"
	[ "${lines[0]}" = y ]
	[ "${lines[1]}" = 141 ]
	# orphans are reaped by the sandbox's init: no zombie stays behind. Both orphans' pids are
	# known, so the wait is for them to be gone from /proc (reaped: 10 s at most), then no zombie
	# may be left anywhere
	run sb -- sh -c 'a=$( (sleep 0.1 >/dev/null & echo $!) ); b=$( (true >/dev/null & echo $!) ); i=0
		while { [ -e /proc/$a ] || [ -e /proc/$b ]; } && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
		grep -l "^State:.*Z" /proc/[0-9]*/status; echo end'
	[ "$output" = end ]
}

# ---- sessions --------------------------------------------------------------------------------

@test "session: one log line per run, the session dir removed unless --keep" {
	run sb -- true
	run sb -- sh -c 'exit 5'
	[ "$status" -eq 5 ]
	no_session_left
	[ "$(wc -l <"$XDG_STATE_HOME/aisb/sessions.log")" -eq 2 ]
	require_feature "python3 in /usr" have_python
	run "$PY" -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
print(lines[0]["exit"], lines[1]["exit"], lines[1]["command"][0], lines[0]["id"] != lines[1]["id"])' \
		"$XDG_STATE_HOME/aisb/sessions.log"
	[ "$output" = "0 5 sh True" ]
	run sb --keep -- true
	[ "$status" -eq 0 ]
	local dirs
	dirs=$(ls "$XDG_STATE_HOME/aisb/sessions")
	[ "$(echo "$dirs" | wc -w)" -eq 1 ]
	[ -f "$XDG_STATE_HOME/aisb/sessions/$dirs/plan.json" ]
	[[ "$output" == *"$dirs"* ]]    # announced
	[ "$(stat -c %a "$XDG_STATE_HOME/aisb/sessions/$dirs")" = 700 ]
}

@test "session: concurrent sessions each get their own dir and one intact log line" {
	local i pids=()
	for i in 1 2 3 4 5 6; do
		sb -- sh -c "echo run$i > out$i" 3>&- &
		pids+=($!)
	done
	for i in "${pids[@]}"; do
		wait "$i"
	done
	for i in 1 2 3 4 5 6; do
		[ "$(cat "out$i")" = "run$i" ]
	done
	no_session_left
	[ "$(wc -l <"$XDG_STATE_HOME/aisb/sessions.log")" -eq 6 ]
	require_feature "python3 in /usr" have_python
	run "$PY" -c '
import json, sys
ids = {json.loads(l)["id"] for l in open(sys.argv[1])}
print(len(ids))' "$XDG_STATE_HOME/aisb/sessions.log"
	[ "$output" = 6 ]
}

@test "session: previews start nothing and write nothing" {
	run sb --dry-run -- touch "$PROJ/should-not-exist"
	[ "$status" -eq 0 ]
	[[ "$output" == *"touch"* ]]
	run sb --print-policy -- touch "$PROJ/should-not-exist"
	[ "$status" -eq 0 ]
	[ ! -e "$PROJ/should-not-exist" ]
	[ ! -e "$XDG_STATE_HOME/aisb" ]
}

# ---- argument parsing, config ----------------------------------------------------------------

# dry_command ARGS...: the "command:" line of aisb --dry-run ARGS.
dry_command() { "$AISB" --net none "$@" | sed -n 's/^command: *//p'; }

@test "args: sandbox flags end at the first positional or unknown flag (alias pi=aisb)" {
	[ "$(dry_command --dry-run)" = "'pi'" ]
	[ "$(dry_command --dry-run --net none fix the bug)" = "'pi' 'fix' 'the' 'bug'" ]
	# a flag after the first harness argument is the harness's, even one aisb knows
	[ "$(dry_command --dry-run -p --net full)" = "'pi' '-p' '--net' 'full'" ]
	[ "$(dry_command --dry-run --read-only hello --read-only)" = "'pi' 'hello' '--read-only'" ]
	# an unknown flag starts the harness arguments
	[ "$(dry_command --dry-run --net none --model x --net full)" = "'pi' '--model' 'x' '--net' 'full'" ]
	[ "$(dry_command --dry-run --harness codex --foo)" = "'codex' '--foo'" ]
	# 'run' is the default subcommand
	[ "$("$AISB" run --net none --dry-run --harness claude x | sed -n 's/^command: *//p')" = "'claude' 'x'" ]
	# "--" replaces the command; a later "--" belongs to it
	[ "$(dry_command --dry-run --harness codex -- echo -- hi)" = "'echo' '--' 'hi'" ]
	[ "$(dry_command --dry-run x -- y)" = "'pi' 'x' '--' 'y'" ]
	# the flags before the harness arguments did apply
	run sb --dry-run --read-only --model x --no-cwd
	[[ "$output" == *"(read-only)"* ]]
}

@test "args: a harness flag after sandbox flags reaches the harness in a real run" {
	run sb --harness shell -c 'echo "args: $0 $*"' zero --net full --read-only
	[ "$status" -eq 0 ]
	[ "$output" = "args: zero --net full --read-only" ]
	# --shell reads commands from a non-tty stdin
	run sh -c "echo 'echo in-shell; exit 4' | '$AISB' --net none --shell"
	[ "$status" -eq 4 ]
	[ "$output" = in-shell ]
}

@test "args: --strict-args makes an unknown flag exit 2; without it the flag goes to the harness" {
	run sb --strict-args --dry-run --bogus-flag
	[ "$status" -eq 2 ]
	[[ "$output" == *--bogus-flag* ]]
	[ "${#lines[@]}" -eq 1 ]
	run sb --dry-run --bogus-flag
	[ "$status" -eq 0 ]
	[[ "$output" == *"'pi' '--bogus-flag'"* ]]
	run sb --strict-args --dry-run -- echo --bogus-flag    # control: after --, it is the command's
	[ "$status" -eq 0 ]
	run "$AISB" --net
	[ "$status" -eq 2 ]
	run "$AISB" --help
	[ "$status" -eq 0 ]
	[[ "$output" == *--strict-args* ]]
	run "$AISB" --version
	[ "$status" -eq 0 ]
	[ -n "$output" ]
}

@test "config: built-in < config file < AISB_* env < flags, via --print-policy" {
	mkdir -p "$XDG_CONFIG_HOME/aisb"
	run sb --print-policy
	[[ "$output" == *"project_ro=false"* ]]
	[[ "$output" == *"allow_ptrace=false"* ]]
	printf '# a comment\n\nread_only = true\nallow_ptrace = true\nenv = E2E_CFG=1\n' >>"$XDG_CONFIG_HOME/aisb/config"
	run sb --print-policy
	[ "$status" -eq 0 ]
	[[ "$output" == *"project_ro=true"* ]]
	[[ "$output" == *"allow_ptrace=true"* ]]
	[[ "$output" == *"env=E2E_CFG"* ]]
	run env AISB_READ_ONLY=false AISB_ENV=E2E_ENV=2 "$AISB" --net none --print-policy
	[[ "$output" == *"project_ro=false"* ]]
	[[ "$output" == *"allow_ptrace=true"* ]]
	[[ "$output" == *"env=E2E_CFG"* && "$output" == *"env=E2E_ENV"* ]]
	run env AISB_READ_ONLY=false "$AISB" --net none --read-only --env E2E_FLAG=3 --print-policy
	[[ "$output" == *"project_ro=true"* ]]
	[[ "$output" == *"env=E2E_FLAG"* && "$output" == *"env=E2E_CFG"* ]]
	run env AISB_ALLOW_PTRACE=0 "$AISB" --net none --print-policy
	[[ "$output" == *"allow_ptrace=false"* ]]
	# and the effective policy is what runs
	run sb -- sh -c 'echo x > f'
	[ "$status" -ne 0 ]
	run env AISB_READ_ONLY=false "$AISB" --net none -- sh -c 'echo x > f'
	[ "$status" -eq 0 ]
}

@test "bad input: invalid flags, mount specs and env specs exit 78 (2 for usage) naming the value, leaving nothing" {
	mkdir -p "$WORK/data"
	# bad STATUS NEEDLE ARGS...: aisb ARGS -- true exits STATUS with one line containing NEEDLE.
	bad() {
		local want=$1 needle=$2
		shift 2
		run "$AISB" "$@" -- true
		if [ "$status" -ne "$want" ] || [[ "$output" != *"$needle"* ]] || [ "${#lines[@]}" -ne 1 ]; then
			echo "aisb $* -> status $status (want $want), output: $output"
			return 1
		fi
		[ ! -e "$XDG_STATE_HOME/aisb" ] || { echo "aisb $*: state dir created"; ls -R "$XDG_STATE_HOME"; return 1; }
	}
	bad 78 bogus-mode --net bogus-mode
	bad 78 vim --harness vim
	bad 78 zfs --rootfs zfs
	bad 78 maybe --read-only=maybe
	bad 78 relative-dir --workdir relative-dir
	bad 78 /usr/x --workdir /usr/x
	bad 78 "$WORK/no-agents" --agents-dir "$WORK/no-agents"
	bad 78 "$WORK/missing" --mount "$WORK/missing"
	bad 78 relative --mount "$WORK/data:relative"
	bad 78 ".." --mount "$WORK/data/../data:/x"
	bad 78 /usr/x --mount "$WORK/data:/usr/x"
	bad 78 /proc --mount /proc:/x
	bad 78 "A B" --env "A B=1"
	bad 78 "1X" --env 1X=1
	bad 78 E2E_UNSET_VAR --env E2E_UNSET_VAR
	bad 78 "$WORK/no-envf" --env-file "$WORK/no-envf"
	bad 2 --bogus --strict-args --bogus
	bad 78 "'mount'" --mount ""
}

@test "bad input: invalid config lines and AISB_* values exit 78 naming file:line or variable" {
	mkdir -p "$XDG_CONFIG_HOME/aisb"
	local cfg="$XDG_CONFIG_HOME/aisb/config"
	printf 'read_only = true\nbogus_key = 1\n' >"$cfg"
	run sb -- true
	[ "$status" -eq 78 ]
	[[ "$output" == *"$cfg:2"* && "$output" == *bogus_key* ]]
	printf '\nnet = sideways\n' >"$cfg"
	run sb --net none -- true
	[ "$status" -eq 78 ]
	[[ "$output" == *"$cfg:2"* && "$output" == *sideways* ]]
	printf 'just words\n' >"$cfg"
	run sb -- true
	[ "$status" -eq 78 ]
	[[ "$output" == *"$cfg:1"* ]]
	printf 'read_only = perhaps\n' >"$cfg"
	run sb -- true
	[ "$status" -eq 78 ]
	[[ "$output" == *perhaps* ]]
	[ ! -e "$XDG_STATE_HOME/aisb" ]
	rm "$cfg"
	run env AISB_READ_ONLY=perhaps "$AISB" --net none -- true
	[ "$status" -eq 78 ]
	[[ "$output" == *AISB_READ_ONLY* && "$output" == *perhaps* ]]
	run env AISB_HARNESS=vim "$AISB" --net none -- true
	[ "$status" -eq 78 ]
	[[ "$output" == *AISB_HARNESS* ]]
	[ ! -e "$XDG_STATE_HOME/aisb" ]
	run sb -- true    # control
	[ "$status" -eq 0 ]
}

@test "core: user namespaces off (max_user_namespaces=0): the run refuses (77) naming the sysctl, doctor says the same; control: the same nesting runs" {
	need unshare
	# a user namespace where the caller is root with caps may set the sysctl for itself and
	# everything below it (docs/machine-facts.md); the host's value stays
	run unshare -Ur sh -c 'echo 0 > /proc/sys/user/max_user_namespaces && "$0" --net none --no-cwd --accept-unenforced-limits -- true' "$AISB"
	echo "$output"
	[ "$status" -eq 77 ]
	[[ "$output" == *"cannot create the sandbox namespaces: No space left on device: user namespaces are off: user.max_user_namespaces=0; fix: sudo sysctl -w user.max_user_namespaces="* ]]
	run unshare -Ur sh -c 'echo 0 > /proc/sys/user/max_user_namespaces && "$0" doctor' "$AISB"
	[[ "$output" == *"FAIL userns     user namespaces are off: user.max_user_namespaces=0"* ]]
	# control: the same nesting without the sysctl runs
	run unshare -Ur sh -c '"$0" --net none --no-cwd --accept-unenforced-limits -- echo ran' "$AISB"
	[ "$status" -eq 0 ]
	[[ "$output" == *ran* ]]
}

# masked_proc CMD...: CMD in a private mount namespace whose /proc has one masked path, as a
# container engine leaves it (a bind over a /proc file), so a fresh proc is refused there
masked_proc() {
	local f
	for f in /proc/kcore /proc/timer_list /proc/keys; do [ -e "$f" ] && break; done
	unshare -m sh -c 'mount --make-rprivate / && mount --bind /dev/null "$0" && exec "$@"' "$f" "$@"
}

@test "core: doctor reads --container-proc as a run does: a masked /proc FAILs without it; with the config key, AISB_CONTAINER_PROC or its own flag it WARNs with the run's exposure and the run works; a value a run refuses is a FAIL" {
	is_root || skip "needs root for a private mount namespace with a masked /proc (unshare -m)"
	need unshare
	local exposure="every process of the container is visible to the sandbox with its argv (cmdline), status and mountinfo; the kernel still refuses their environ"
	run masked_proc "$AISB" doctor
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"FAIL proc       a fresh /proc cannot be mounted"*"pass --container-proc"* ]]
	echo 'container_proc = true' >>"$XDG_CONFIG_HOME/aisb/config"
	run masked_proc "$AISB" doctor
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"warn proc       a fresh /proc cannot be mounted here (masked): runs with --container-proc (chosen with container_proc in '$XDG_CONFIG_HOME/aisb/config') use the container's /proc: $exposure"* ]]
	[[ "$output" != *"FAIL"* ]]
	# the run agrees: it works, with the same exposure
	run masked_proc "$AISB" --net none --no-cwd -- echo ran
	[ "$status" -eq 0 ]
	[[ "$output" == *ran* && "$output" == *"the sandbox uses the container's /proc (--container-proc): $exposure"* ]]
	sed -i '/^container_proc/d' "$XDG_CONFIG_HOME/aisb/config"
	run masked_proc env AISB_CONTAINER_PROC=true "$AISB" doctor
	[ "$status" -eq 0 ]
	[[ "$output" == *"(chosen with AISB_CONTAINER_PROC)"* ]]
	run masked_proc "$AISB" doctor --container-proc
	[ "$status" -eq 0 ]
	[[ "$output" == *"(chosen with the flag)"* ]]
	# a value every run refuses: doctor says so (the run: 78)
	run env AISB_CONTAINER_PROC=maybe "$AISB" doctor
	[ "$status" -eq 1 ]
	[[ "$output" == *"'container_proc' takes true or false, not 'maybe'"* ]]
	[[ "$output" == *"FAIL config     runs refuse the config or an AISB_* variable (exit 78)"* ]]
	run env AISB_CONTAINER_PROC=maybe "$AISB" --net none --no-cwd -- true
	[ "$status" -eq 78 ]
	# control: an unmasked /proc, the key set: doctor's proc line is the plain ok
	run env AISB_CONTAINER_PROC=true "$AISB" doctor
	[[ "$output" == *"ok   proc       a fresh /proc mounts in a new user+pid namespace"* ]]
}

@test "core: --container-proc: a masked /proc is refused naming the unmask first and the trade second; with the flag a sibling's environ stays unreadable while its argv is visible, said at start, at exit and in --print-policy" {
	is_root || skip "needs root for a private mount namespace with a masked /proc (unshare -m)"
	need unshare
	local canary="aisb-canary-$$-sibling-env" sib
	env AISB_SIBLING_SECRET="$canary" sleep 300 &
	sib=$!
	run masked_proc "$AISB" --net none --no-cwd --accept-unenforced-limits -- true
	echo "$output"
	[ "$status" -eq 77 ]
	[[ "$output" == *"a fresh /proc cannot be mounted"*"fix: run the container with"*"; or, accepting that the sandbox then sees the container's processes and their argv (never their environ, memory or fds), and nested user namespaces are refused by seccomp alone, pass --container-proc"* ]]
	run masked_proc "$AISB" --net none --no-cwd --accept-unenforced-limits --container-proc -- sh -c \
		"cat /proc/$sib/environ && echo ENV-READ; tr '\\0' ' ' </proc/$sib/cmdline; echo; readlink /proc/$sib/fd/0 || echo FD-REFUSED; cat /proc/self/environ | tr '\\0' '\\n' | grep -c = | sed 's/^/own-env-vars=/'"
	kill "$sib"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" != *"$canary"* ]]
	[[ "$output" != *ENV-READ* ]]
	[[ "$output" == *"/environ: Permission denied"* ]]
	[[ "$output" == *"sleep 300"* ]]          # the argv is visible, as the messages say
	[[ "$output" == *FD-REFUSED* ]]
	# control: the same read path works for the sandbox's own process
	[[ "$output" =~ own-env-vars=[1-9] ]]
	[[ "$output" == *"warning: a fresh /proc cannot be mounted here (masked): the sandbox uses the container's /proc (--container-proc): every process of the container is visible"* ]]
	[[ "$output" == *"warning: this run used the container's /proc (--container-proc)"* ]]
	run "$AISB" --net none --no-cwd --container-proc --print-policy
	[[ "$output" == *"container_proc=true"* ]]
	[[ "$output" == *"container_proc_exposes=every process of the container is visible to the sandbox with its argv"* ]]
	run "$AISB" --net none --no-cwd --print-policy
	[[ "$output" == *"container_proc=false"* ]]
	[[ "$output" != *container_proc_exposes* ]]
}
