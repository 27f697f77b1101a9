#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/pty.bats — interactive use: the sandbox's own pty relayed by the supervisor under
# script(1) and tmux, window size, terminal restore, and terminal injection (TIOCSTI).
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
	TSOCK="$WORK/tmux.sock"
}

teardown() {
	[ -S "${TSOCK:-}" ] && tmux -S "$TSOCK" kill-server 2>/dev/null
	common_teardown
}

# in_script CMD: run the shell command line CMD under script(1), i.e. with a pty as stdin/stdout.
in_script() { script -qec "$1" /dev/null; }

# aisb_cmd: the aisb command line as a string for script/tmux.
aisb_cmd() { printf '%q --net none' "$AISB"; }

wait_for_file() {
	local _
	for _ in $(seq 100); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	echo "timed out waiting for $1"
	return 1
}

# wait_for_workload COMM: up to 10 s until this test's sandbox's workload (the child of its init,
# whose host pid is in sessions/<id>/init) is COMM, blocked (state S) and without children: it
# waits for something, e.g. in read() on its terminal, and is no longer starting up. A time
# (`sleep 0.3` after `ready`) stood in for this state until issue 25.
wait_for_workload() {
	local _ f init w comm st
	for _ in $(seq 100); do
		for f in "$(run_dir)"/sessions/*/init "$XDG_STATE_HOME"/aisb/sessions/*/init; do
			read -r init 2>/dev/null <"$f" || continue
			while read -r w comm st; do
				[ "$comm" = "$1" ] && [ "${st:0:1}" = S ] && [ -z "$(ps -o pid= --ppid "$w")" ] && return 0
			done < <(ps -o pid=,comm=,stat= --ppid "$init")
		done
		sleep 0.1
	done
	echo "timed out waiting for the sandbox's workload to be a blocked '$1'"
	return 1
}

@test "pty: under script the command gets the sandbox's own pty, and its exit code comes back" {
	require_feature "script(1)" command -v script
	run in_script "$(aisb_cmd) -- sh -c 'tty; test -t 0 && test -t 1 && test -t 2 && echo TTY-OK; ls /dev/pts; exit 7'"
	[ "$status" -eq 7 ]
	output=${output//$'\r'/}
	[[ "$output" == *"/dev/pts/0"* ]]
	[[ "$output" == *TTY-OK* ]]
	# only the sandbox's devpts instance: its one pty and ptmx
	[[ "$output" == *"0  ptmx"* || "$output" == *$'0\nptmx'* ]]
	# control: without a tty there is none inside either
	run sb -- sh -c 'test -t 0 || echo NO-TTY'
	[ "$output" = NO-TTY ]
	run in_script "$(aisb_cmd) -- sh -c 'kill -TERM \$\$'"
	[ "$status" -eq 143 ]
}

@test "pty: a large output is relayed completely before aisb exits" {
	require_feature "script(1)" command -v script
	in_script "$(aisb_cmd) -- seq 200000" | tr -d '\r' >"$WORK/out"
	[ "$(tail -n 1 "$WORK/out")" = 200000 ]
	# (script(1) turns its stdin's EOF into a NUL that the inner pty echoes as ^@, at
	# whatever point of the stream it arrives)
	seq 200000 | cmp - <(sed 's/\^@//g' "$WORK/out")
	# A reader that stalls keeps the relay's buffer full when the command ends; the relay once
	# took the pty's hangup on a full buffer for EOF and dropped the tail (about half the runs).
	local _
	for _ in 1 2; do
		in_script "$(aisb_cmd) -- seq 10000" | { sleep 0.5; tr -d '\r'; } >"$WORK/out"
		[ "$(tail -n 1 "$WORK/out")" = 10000 ]
	done
}

@test "pty: input reaches the command once it runs" {
	require_feature "script(1)" command -v script
	# Type only after the command started (see the typeahead test for input sent earlier).
	# the typing side (bash, given this file's wait) types once the shell inside sits in read():
	# `ready` only says that it got as far as touch
	export -f wait_for_workload run_dir
	run bash -c "{ while [ ! -e ready ]; do sleep 0.05; done; wait_for_workload sh || exit 1; printf 'hello\n'; } |
		script -qec \"$(aisb_cmd) -- sh -c 'touch ready; read x; echo got:\\\$x'\" /dev/null"
	output=${output//$'\r'/}
	[[ "$output" == *"got:hello"* ]]
}

@test "pty: typeahead sent before the sandbox is ready is not lost" {
	# Regression: raw mode used to be entered with TCSAFLUSH, which discarded input already
	# queued on the host terminal (a user typing right after pressing Enter lost keys).
	require_feature "script(1)" command -v script
	run sh -c "printf 'hello\n' | script -qec \"$(aisb_cmd) -- sh -c 'read x; echo got:\\\$x'\" /dev/null"
	output=${output//$'\r'/}
	[[ "$output" == *"got:hello"* ]]
}

@test "pty: TIOCSTI is refused inside while TIOCGWINSZ works (TIOCSTI works on the host)" {
	require_feature "script(1)" command -v script
	require_feature "python3 in /usr" have_python
	cat >probe.py <<'EOF'
import fcntl, termios
try:
    fcntl.ioctl(0, termios.TIOCGWINSZ, b"\0" * 8); print("GWINSZ ok")
except OSError as e:
    print("GWINSZ err", e.errno)
try:
    fcntl.ioctl(0, termios.TIOCSTI, b"#"); print("STI ok")
except OSError as e:
    print("STI err", e.errno)
EOF
	run in_script "$(aisb_cmd) -- python3 probe.py"
	output=${output//$'\r'/}
	[[ "$output" == *"GWINSZ ok"* ]]
	[[ "$output" == *"STI err 1"* ]]    # EPERM: seccomp (the kernel's own refusal is EIO)
	# control: the same probe on a host pty injects, where the kernel allows it at all
	if [ "$(cat /proc/sys/dev/tty/legacy_tiocsti 2>/dev/null || echo 1)" = 1 ] || is_root; then
		run in_script "$PY probe.py"
		output=${output//$'\r'/}
		[[ "$output" == *"STI ok"* ]]
	fi
}

# ---- tmux ------------------------------------------------------------------------------------

# tmx ARGS...: tmux on this test's own server.
tmx() { tmux -S "$TSOCK" "$@"; }

# tmux_start: a detached 100x30 session running a plain bash in the project, with this test's
# XDG dirs.
tmux_start() {
	cat >"$WORK/shell.sh" <<EOF
#!/bin/sh
cd '$PROJ' || exit 1
export XDG_STATE_HOME='$XDG_STATE_HOME' XDG_CONFIG_HOME='$XDG_CONFIG_HOME' XDG_CACHE_HOME='$XDG_CACHE_HOME'
export XDG_RUNTIME_DIR='$XDG_RUNTIME_DIR'
export TERM=xterm PS1='host\$ '
exec bash --norc --noprofile -i
EOF
	chmod +x "$WORK/shell.sh"
	tmx new-session -d -x 100 -y 30 -s e2e "$WORK/shell.sh"
}

# tmux_run LINE: type LINE and Enter into the pane.
tmux_run() { tmx send-keys -t e2e -l "$1" && tmx send-keys -t e2e Enter; }

# wait_for_content FILE TEXT: up to 10 s for FILE to hold exactly TEXT.
wait_for_content() {
	local _
	for _ in $(seq 100); do
		[ "$(cat "$1" 2>/dev/null)" = "$2" ] && return 0
		sleep 0.1
	done
	echo "timed out: $1 holds '$(cat "$1" 2>/dev/null)', want '$2'"
	tmx capture-pane -p -t e2e
	return 1
}

@test "pty: a tmux session works: window size follows the window, the terminal is restored" {
	require_feature tmux command -v tmux
	tmux_start
	local tty
	tty=$(tmx display -p -t e2e '#{pane_tty}')
	tmux_run "stty -g > $WORK/before"
	wait_for_file "$WORK/before"
	# type only once the sandbox runs (see the typeahead test); what the host shell does after
	# aisb is on the same line: keys typed while the inner bash exits would go to it, and are
	# lost (a CI run at load 4 never got them to the host shell)
	tmux_run "$(aisb_cmd) -- sh -c 'touch ready; exec bash --norc --noprofile'; echo \$? > $WORK/rc; stty -g > $WORK/after"
	wait_for_file ready
	wait_for_workload bash # its prompt, reading the terminal
	tmux_run "stty size > size1"
	wait_for_content size1 "30 100"
	# the host terminal is in raw mode while the sandbox runs
	[ "$(stty -F "$tty" -g)" != "$(cat "$WORK/before")" ]
	tmx capture-pane -p -t e2e | grep -q 'stty size > size1'
	tmx resize-window -t e2e -x 120 -y 40
	local _
	for _ in $(seq 50); do
		tmux_run "stty size > size2"
		[ "$(cat size2 2>/dev/null)" = "40 120" ] && break
		sleep 0.2
	done
	wait_for_content size2 "40 120"
	tmux_run "exit 3"
	wait_for_file "$WORK/after"
	wait_for_content "$WORK/rc" 3
	[ "$(cat "$WORK/after")" = "$(cat "$WORK/before")" ]
}

@test "pty: the terminal is restored when aisb is terminated or the command is killed" {
	require_feature tmux command -v tmux
	tmux_start
	tmux_run "stty -g > $WORK/before"
	wait_for_file "$WORK/before"
	# aisb terminated from outside by SIGTERM
	# (one line each, so nothing is typed while aisb runs)
	tmux_run "sh -c 'echo \$\$ > $WORK/aisb.pid; exec $(aisb_cmd) -- sh -c \"touch ready; exec sleep 60\"'; echo \$? > $WORK/rc1; stty -g > $WORK/after1"
	wait_for_file ready
	wait_for_file "$WORK/aisb.pid"
	kill -TERM "$(cat "$WORK/aisb.pid")"
	wait_for_content "$WORK/rc1" 143
	[ "$(cat "$WORK/after1")" = "$(cat "$WORK/before")" ]
	# the command killed by a signal inside
	rm -f ready
	tmux_run "$(aisb_cmd) -- sh -c 'touch ready; kill -KILL \$\$'; echo \$? > $WORK/rc2; stty -g > $WORK/after2"
	wait_for_content "$WORK/rc2" 137
	[ "$(cat "$WORK/after2")" = "$(cat "$WORK/before")" ]
	# a refused run (policy error before anything starts)
	tmux_run "$(aisb_cmd) --env E2E_UNSET_PTY -- true; echo \$? > $WORK/rc3; stty -g > $WORK/after3"
	wait_for_content "$WORK/rc3" 78
	[ "$(cat "$WORK/after3")" = "$(cat "$WORK/before")" ]
}

@test "pty: Ctrl-C at the terminal interrupts the command inside (130)" {
	require_feature tmux command -v tmux
	tmux_start
	tmux_run "$(aisb_cmd) -- sh -c 'touch ready; exec sleep 60'; echo \$? > $WORK/rc"
	wait_for_file ready
	wait_for_workload sleep
	tmx send-keys -t e2e C-c
	wait_for_content "$WORK/rc" 130
}

@test "pty: closing the terminal ends the sandbox" {
	require_feature tmux command -v tmux
	local mark=$((RANDOM + 20000))
	tmux_start
	tmux_run "$(aisb_cmd) -- sh -c 'touch ready; exec sleep $mark'"
	wait_for_file ready
	pgrep -f "^sleep $mark\$"    # control: it runs
	tmx kill-server
	local _
	for _ in $(seq 50); do
		pgrep -f "^sleep $mark\$" >/dev/null || break
		sleep 0.1
	done
	run pgrep -f "^sleep $mark\$"
	[ "$status" -ne 0 ]
	run pgrep -f "aisb.*sleep $mark"
	[ "$status" -ne 0 ]
}

@test "pty: aisb --shell gives an interactive shell in the sandbox" {
	require_feature tmux command -v tmux
	tmux_start
	tmux_run "$(aisb_cmd) --shell; echo \$? > $WORK/rc"
	local _
	for _ in $(seq 100); do
		tmx capture-pane -p -t e2e | grep -q 'sandbox@' && break
		sleep 0.1
	done
	tmx capture-pane -p -t e2e | grep -q 'sandbox@'
	tmux_run 'echo $((6 * 7)) $(id -un) $HOME > shell-out; exit 4'
	wait_for_content shell-out "42 sandbox /home/sandbox"
	wait_for_content "$WORK/rc" 4
}

# ---- terminal control sequences from the sandbox (src/ns/ttyfilter.c) ----------------------

# The probe: a clipboard write (OSC 52), a title (OSC 2), a hyperlink (OSC 8), a tmux-passthrough
# DCS and a UTF-8 encoded C1 CSI, between ordinary colour sequences.
TTY_PROBE='printf "A\033]52;c;%s\007B\033]2;spoofed-title\033\\\\C\033]8;;https://evil.example/\007link\033]8;;\007D\033Ptmux;\033\033]52;c;%s\007\033\\\\E\302\2332JF\033[31mred\033[0m\n" "$(printf pwned-canary | base64)" "$(printf pwned-canary | base64)"'

@test "pty: clipboard, title, hyperlink and DCS sequences from the sandbox never reach the terminal; colours do" {
	require_feature "script(1)" command -v script
	in_script "$(aisb_cmd) -- sh -c '$TTY_PROBE'" >"$WORK/out" 2>"$WORK/err"
	od -c "$WORK/out" | head -20
	! grep -aq $'\e]52' "$WORK/out" || false
	! grep -aq $'\e]2;' "$WORK/out" || false
	! grep -aq $'\e]8;' "$WORK/out" || false
	! grep -aq $'\eP' "$WORK/out" || false
	! grep -aq $'\xc2\x9b' "$WORK/out" || false
	grep -aq "$(printf 'pwned-canary' | base64)" "$WORK/out" && false
	# control: the text and the colour sequence arrive, byte for byte
	grep -aq $'ABClinkDE2JF\e\\[31mred\e\\[0m' "$WORK/out"
	grep -aq "dropped 7 terminal control sequence(s) from the sandbox (clipboard 2" "$WORK/out"
	# control: the escape hatch relays every one of them
	in_script "$(aisb_cmd) --tty-passthrough -- sh -c '$TTY_PROBE'" >"$WORK/out2"
	grep -aq $'\e]52;c;'"$(printf 'pwned-canary' | base64)" "$WORK/out2"
	grep -aq $'\e]2;spoofed-title' "$WORK/out2"
	grep -aq $'\xc2\x9b' "$WORK/out2"
}

@test "pty: under tmux a sandboxed OSC 52 sets no paste buffer and OSC 2 no pane title; --tty-passthrough does (control)" {
	require_feature tmux command -v tmux
	tmux_start
	tmx set -g set-clipboard on
	tmx set -g allow-passthrough off 2>/dev/null || true
	tmux_run "$(aisb_cmd) -- sh -c '$TTY_PROBE; touch done1'"
	wait_for_file done1
	# tmux has parsed the whole probe once its last part, the colour, is on the screen: only
	# then does an empty paste buffer say that the OSC 52 before it set nothing
	local _
	for _ in $(seq 100); do
		tmx capture-pane -p -e -t e2e | grep -q $'\e\\[31mred' && break
		sleep 0.1
	done
	run tmx show-buffer
	[[ "$output" != *pwned-canary* ]]
	[ "$(tmx display -p -t e2e '#{pane_title}')" != spoofed-title ]
	# control: the colour reached tmux's screen
	tmx capture-pane -p -e -t e2e | grep -q $'\e\\[31mred'
	# control: the same probe with the escape hatch sets both
	tmux_run "$(aisb_cmd) --tty-passthrough -- sh -c '$TTY_PROBE; touch done2'"
	wait_for_file done2
	for _ in $(seq 30); do
		tmx show-buffer 2>/dev/null | grep -q pwned-canary && break
		sleep 0.1
	done
	tmx show-buffer | grep -q pwned-canary
	[ "$(tmx display -p -t e2e '#{pane_title}')" = spoofed-title ]
}

@test "pty: a sandbox that ignores SIGHUP is ended when its terminal closes, so that its git check runs (issue 21)" {
	require_feature tmux command -v tmux
	require_feature git command -v git
	local mark="$WORK/pwned" _
	git init -q .
	git -c user.name=t -c user.email=t@e commit -q --allow-empty -m init
	# the workload plants a repository whose config runs a command on `git status`, then
	# ignores the hangup and keeps running
	{
		echo "trap '' HUP TERM"
		echo "git init -q sub && printf '[core]\\n\\tfsmonitor = \"touch $mark\"\\n' >>sub/.git/config"
		echo "touch .ready"
		echo "while :; do sleep 1; done"
	} >plant.sh
	tmux_start
	tmux_run "$(aisb_cmd) -- sh plant.sh"
	wait_for_file "$PROJ/.ready"
	grep -q fsmonitor sub/.git/config
	# control: while its terminal is open it runs, with its check still ahead (said by ps)
	# (ps also lists this user's sessions of other tests in the shared run dirs: by id here)
	local id
	id=$(ls "$XDG_STATE_HOME/aisb/pending")
	id=${id%.json}
	run "$AISB" ps
	[[ "$output" == *"$id"*live*"$PROJ"* ]]
	[[ "$output" == *"git check pending for"* ]]
	# the window closes
	tmx kill-server
	for _ in $(seq 300); do
		[ -z "$(ls "$XDG_STATE_HOME/aisb/pending" 2>/dev/null)" ] && ! "$AISB" ps 2>&1 | grep -q "^$id .*live" && break
		sleep 0.1
	done
	[ -z "$(ls "$XDG_STATE_HOME/aisb/pending")" ]
	run "$AISB" ps
	[[ "$output" != *"$id"*live* ]]
	[ ! -e sub/.git/config ]
	ls "$XDG_STATE_HOME"/aisb/quarantine/*/project/sub/.git/config
	(cd sub && git status) >/dev/null 2>&1 || true
	[ ! -e "$mark" ]
}

# The sandbox asks the terminal for a checksum of a screen rectangle (DECRQCRA), then for its
# status (DSR 5), and records what comes back until the status answer: a terminal that answers
# DECRQCRA (xterm, WezTerm; here lib/fake-terminal.py) would hand it the screen, a cell at a time.
ASK_SCREEN='import os, tty
tty.setraw(0)
os.write(1, b"\033[1;1;1;1;1;80*y\033[5n")
got = b""
while b"\033[0n" not in got:
    got += os.read(0, 256)
open("got", "wb").write(got)'

@test "pty: a screen checksum request (DECRQCRA) never reaches the terminal, so no answer reaches the sandbox (control: DSR is answered; --tty-passthrough lets the checksum through)" {
	require_feature "python3 in /usr" have_python
	printf '%s\n' "$ASK_SCREEN" >ask.py
	"$PY" "$BATS_TEST_DIRNAME/lib/fake-terminal.py" "$WORK/out" "$AISB" --net none -- python3 ask.py
	od -c got
	# the request never reached the terminal and no checksum came back; the status query did
	! grep -aq '\*y' "$WORK/out" || false
	[ "$(cat got)" = $'\e[0n' ]
	# control: with the escape hatch the terminal sees the request and the sandbox reads its answer
	rm got
	"$PY" "$BATS_TEST_DIRNAME/lib/fake-terminal.py" "$WORK/out2" "$AISB" --net none --tty-passthrough -- python3 ask.py
	od -c got
	grep -aq $'\e\\[1;1;1;1;1;80\\*y' "$WORK/out2"
	grep -aq $'\eP1!~[0-9A-F]\\{4\\}\e\\\\' got
}
