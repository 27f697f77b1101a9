#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/ux.bats — the agent experience around the sandbox (issue 11): the loopback-only
# notice, egress logs that outlive the session dir, --publish without egress, finding a harness
# installed under the home (--harness-from), the shared-flags rule (--version, --help,
# --harness-args), the sandbox homes (--home, aisb home) and trusted project policy (aisb trust).
# Harnesses here are fake shell scripts (the real CLIs: tests/e2e/agents*.bats). Every
# destination is a server this file starts on the host's 127.0.0.1; each refusal is paired with
# a control where the same probe succeeds.
load lib/common
bats_require_minimum_version 1.5.0

setup() {
	common_setup
	SERVERS=()
	BG_PIDS=
}

teardown() {
	for pid in "${SERVERS[@]}" $BG_PIDS; do kill "$pid" 2>/dev/null || true; done
	[ -n "${TMPH:-}" ] && rm -rf "$TMPH"
	common_teardown
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_server: an HTTP server on the host's 127.0.0.1 that binds port 0 itself (no race for a
# port with other test runs) and reports it through a file; the port in SRV_PORT.
start_server() {
	require_feature "python3" command -v python3
	require_feature "curl" command -v curl
	local dir
	dir=$(mktemp -d "$WORK/srv.XXXXXX")
	echo "hello from the host" >"$dir/index.html"
	python3 - "$dir" >/dev/null 2>&1 3>&- <<'EOS' &
import functools, http.server, sys
d = sys.argv[1]
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=d)
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h)
open(d + "/port.tmp", "w").write(str(s.server_port))
__import__("os").rename(d + "/port.tmp", d + "/port")
s.serve_forever()
EOS
	SERVERS+=("$!")
	for _ in $(seq 200); do
		[ -s "$dir/port" ] && break
		sleep 0.05
	done
	SRV_PORT=$(cat "$dir/port")
}

SCURL="curl -sS -m 10 -o /dev/null -w '%{http_code}\\n'"

# fake_pi DIR: a fake pi with fake fd and rg next to it (so pi's fd/rg notice stays away).
fake_pi() {
	fake_harness "$1/bin" pi
	fake_harness "$1/bin" rg
	fake_harness "$1/bin" fdfind
}

# fake_harness DIR NAME: an executable NAME in DIR that answers --version and --help and
# echoes any other arguments.
fake_harness() {
	mkdir -p "$1"
	cat >"$1/$2" <<EOS
#!/bin/sh
case "\$1" in
--version) echo "$2-fake 9.9.9" ;;
--help) echo "$2-fake help text" ;;
*) echo "$2-fake args: \$*" ;;
esac
EOS
	chmod 755 "$1/$2"
}

# ---- network defaults ------------------------------------------------------------------------

@test "ux: a command with no allow entry says once that it runs loopback-only; --net none and previews stay quiet" {
	run "$AISB" --quiet=false -- true
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c 'network: loopback only' <<<"$output")" -eq 1 ]
	[[ "$output" == *"add --allow HOST"* ]]
	# control: the same command with the mode chosen, or --quiet, says nothing
	run "$AISB" --quiet=false --net none -- true
	[ "$status" -eq 0 ]
	[[ "$output" != *"loopback only (no --allow"* ]]
	run "$AISB" --quiet -- true
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	run "$AISB" --quiet=false --dry-run -- true
	[ "$status" -eq 0 ]
	[[ "$output" != *"aisb: network: loopback only"* ]]
	[[ "$output" == *"network:    none (the default allow mode with an empty allowlist"* ]]
}

@test "ux: the denial summary names 'aisb logs ID', which still shows the egress log after the session dir is gone" {
	start_server
	run "$AISB" --add-host svc.test=127.0.0.1 --add-host other.test=127.0.0.1 --allow "other.test:$SRV_PORT" \
		-- sh -c "$SCURL http://svc.test:$SRV_PORT/; $SCURL http://other.test:$SRV_PORT/"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 403 ]
	[ "${lines[1]}" = 200 ]
	[[ "$output" == *"aisb: network: denied 1 request(s): svc.test:$SRV_PORT"*"; every connection: aisb logs "* ]]
	[[ "$output" != *"see the egress log"* ]]
	id=$(grep -o 'every connection: aisb logs [0-9a-f]*' <<<"$output" | awk '{print $NF}')
	[ -n "$id" ]
	[ -z "$(session_dirs)" ]
	[ "$(stat -c %a "$XDG_STATE_HOME/aisb/egress")" = 700 ]
	run "$AISB" logs "$id"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"# egress log (kept: $XDG_STATE_HOME/aisb/egress/$id.jsonl)"* ]]
	grep -q '"host":"svc.test".*"decision":"deny"' <<<"$output"
	# control in the same log: the allowed request
	grep -q '"host":"other.test".*"decision":"allow"' <<<"$output"
	# aisb clean removes what it kept
	echo keep >"$XDG_STATE_HOME/aisb/egress/notes.txt"
	run "$AISB" clean
	[ "$status" -eq 0 ]
	[[ "$output" == *"removed 1 kept egress log"* ]]
	[ ! -e "$XDG_STATE_HOME/aisb/egress/$id.jsonl" ]
	[ -e "$XDG_STATE_HOME/aisb/egress/notes.txt" ]
	run "$AISB" logs "$id"
	[[ "$output" == *"# egress log: none kept"* ]]
}

@test "ux: only the newest 20 egress logs are kept" {
	start_server
	mkdir -p "$XDG_STATE_HOME/aisb/egress"
	for i in $(seq -w 1 25); do
		echo '{}' >"$XDG_STATE_HOME/aisb/egress/0000000000$i.jsonl"
		touch -d "2026-01-01 00:00:$i" "$XDG_STATE_HOME/aisb/egress/0000000000$i.jsonl"
	done
	echo keep >"$XDG_STATE_HOME/aisb/egress/notes.txt"
	run "$AISB" --add-host svc.test=127.0.0.1 --allow "svc.test:$SRV_PORT" -- sh -c "$SCURL http://svc.test:$SRV_PORT/"
	[ "$status" -eq 0 ]
	[ "$(ls "$XDG_STATE_HOME/aisb/egress" | grep -c '\.jsonl$')" -eq 20 ]
	# the oldest went, the newest stayed, this run's log is there, other files are untouched
	[ ! -e "$XDG_STATE_HOME/aisb/egress/000000000001.jsonl" ]
	[ ! -e "$XDG_STATE_HOME/aisb/egress/000000000006.jsonl" ]
	[ -e "$XDG_STATE_HOME/aisb/egress/000000000007.jsonl" ]
	[ -e "$XDG_STATE_HOME/aisb/egress/000000000025.jsonl" ]
	[ "$(ls "$XDG_STATE_HOME/aisb/egress" | grep -v '^0000000000' | grep -c '\.jsonl$')" -eq 1 ]
	[ -e "$XDG_STATE_HOME/aisb/egress/notes.txt" ]
}

@test "ux: --publish without an allow entry is a server-only sandbox: the host reaches it, egress is refused" {
	require_feature "pasta" command -v pasta
	start_server
	local hp
	hp=$(free_port)
	echo inside >"$PROJ/index.html"
	run "$AISB" --publish "$hp:8080" --dry-run -- true
	[ "$status" -eq 0 ]
	[[ "$output" == *"network:    ingress only"* ]]
	# the sandbox serves until the host has fetched the page (the host then drops a file into
	# the project), then probes egress and exits
	"$AISB" --publish "$hp:8080" --add-host svc.test=127.0.0.1 -- sh -c "
		python3 -m http.server 8080 --bind 0.0.0.0 >/dev/null 2>&1 &
		i=0; while [ ! -e fetched ] && [ \$i -lt 200 ]; do sleep 0.1; i=\$((i + 1)); done
		$SCURL http://svc.test:$SRV_PORT/ >egress" 2>"$WORK/err" 3>&- &
	local apid=$! got="" n
	for n in $(seq 100); do
		got=$(curl -s -m 2 "http://127.0.0.1:$hp/index.html" || true)
		[ "$got" != inside ] || break
		sleep 0.1
	done
	touch "$PROJ/fetched"
	wait "$apid" || { cat "$WORK/err"; false; }
	cat "$WORK/err"
	# ingress: the host client got the sandbox's page (control); egress: refused by the gate
	[ "$got" = inside ]
	[ "$(cat "$PROJ/egress")" = 403 ]
	grep -q "denied 1 request(s): svc.test:$SRV_PORT" "$WORK/err"
	# control for the egress probe: the same request with an allow entry
	run "$AISB" --add-host svc.test=127.0.0.1 --allow "svc.test:$SRV_PORT" -- sh -c "$SCURL http://svc.test:$SRV_PORT/"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 200 ]
}

# ---- finding the harness ---------------------------------------------------------------------

@test "ux: a harness under the home (nvm, ~/.local/bin) is found and the exact --harness-from is offered; with it, it runs read-only" {
	local H=$WORK/home nvm
	nvm=$H/.nvm/versions/node/v22.11.0
	fake_harness "$nvm/bin" fakeagent
	mkdir -p "$H/.local/lib/node_modules/fakeagent2/dist" "$H/.local/bin"
	fake_harness "$H/.local/lib/node_modules/fakeagent2/dist" cli.js
	ln -s ../lib/node_modules/fakeagent2/dist/cli.js "$H/.local/bin/fakeagent2"

	HOME=$H run -127 "$AISB" --net none -- fakeagent hi
	echo "$output"
	[ "$status" -eq 127 ]
	[[ "$output" == *"'fakeagent' is installed at $nvm/bin/fakeagent, which the sandbox cannot see"* ]]
	[[ "$output" == *"'aisb --harness-from $nvm ...'"* ]]
	HOME=$H run "$AISB" --net none --harness-from "$nvm" -- fakeagent hi
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "fakeagent-fake args: hi" ]

	HOME=$H run -127 "$AISB" --net none -- fakeagent2 hi
	echo "$output"
	[ "$status" -eq 127 ]
	[[ "$output" == *"$H/.local/bin/fakeagent2 -> $H/.local/lib/node_modules/fakeagent2/dist/cli.js"* ]]
	[[ "$output" == *"--harness-from $H/.local/bin --harness-from $H/.local/lib/node_modules ..."* ]]
	HOME=$H run "$AISB" --net none --harness-from "$H/.local/bin" --harness-from "$H/.local/lib/node_modules" \
		-- sh -c 'fakeagent2 hi; touch "$(command -v fakeagent2)" 2>/dev/null && echo WRITABLE; echo done'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "cli.js-fake args: hi" ]
	[ "${lines[1]}" = done ]
	# ~/.local whole (keyrings, other programs' state) and the home itself are refused
	HOME=$H run "$AISB" --net none --harness-from "$H/.local" -- true
	[ "$status" -eq 78 ]
	[[ "$output" == *"private tree"* ]]
	HOME=$H run "$AISB" --net none --harness-from "$H" -- true
	[ "$status" -eq 78 ]
	# nowhere at all: the sandbox's own message
	HOME=$H run -127 "$AISB" --net none -- no-such-harness-xyz
	[ "$status" -eq 127 ]
	[[ "$output" == *"command not found in the sandbox: 'no-such-harness-xyz'"*"--harness-from DIR"* ]]
}

@test "ux: --harness-from a path the sandbox owns (/tmp, root's /root) is mounted below /aisb-host" {
	TMPH=$(mktemp -d /tmp/aisb-ux-harness.XXXXXX)
	chmod 755 "$TMPH"
	fake_harness "$TMPH/bin" fakeagent
	run "$AISB" --net none --harness-from "$TMPH" -- sh -c 'command -v fakeagent; fakeagent hi'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "/aisb-host$TMPH/bin/fakeagent" ]
	[ "${lines[1]}" = "fakeagent-fake args: hi" ]
}

@test "ux: pi in host mode is told how to get fd and rg when the sandbox has neither" {
	local D=$WORK/harness
	fake_harness "$D/bin" pi
	run "$AISB" --quiet=false --net none --harness-from "$D" -- pi hi
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"pi-fake args: hi"* ]]
	if [ -x /usr/bin/rg ] && { [ -x /usr/bin/fd ] || [ -x /usr/bin/fdfind ]; }; then
		[[ "$output" != *"apt-get install fd-find ripgrep"* ]]
	else
		[[ "$output" == *"apt-get install fd-find ripgrep"* ]]
	fi
	# control: with both visible (through --harness-from) the notice goes
	fake_harness "$D/bin" rg
	fake_harness "$D/bin" fdfind
	run "$AISB" --quiet=false --net none --harness-from "$D" -- pi hi
	[ "$status" -eq 0 ]
	[[ "$output" != *"fd-find ripgrep"* ]]
	# previews never print it
	rm "$D/bin/rg"
	run "$AISB" --quiet=false --net none --harness-from "$D" --dry-run -- pi hi
	[[ "$output" != *"fd-find ripgrep"* ]]
	run "$AISB" --net none --harness-from "$D" -- pi hi
	[[ "$output" != *"fd-find ripgrep"* ]]
}

# ---- shared flags ----------------------------------------------------------------------------

@test "ux: as 'alias pi=aisb', --version prints aisb's and then the harness's version from inside the sandbox" {
	local D=$WORK/harness
	fake_pi "$D"
	echo "harness_from = $D" >>"$XDG_CONFIG_HOME/aisb/config"
	run "$AISB" --version
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "aisb "[0-9]* ]]
	[ "${lines[1]}" = "pi (inside the sandbox): pi-fake 9.9.9" ]
	# from a directory the sandbox would refuse as a project (/), the same: no project is mounted
	run sh -c "cd / && '$AISB' --version"
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = "pi (inside the sandbox): pi-fake 9.9.9" ]
	# with --harness, that harness's
	fake_harness "$D/bin" codex
	run "$AISB" --harness codex --version
	[ "${lines[1]}" = "codex (inside the sandbox): codex-fake 9.9.9" ]
	# a harness found nowhere: aisb's version and a note, still success (HOME and PATH without it)
	run "$AISB" --harness claude --version
	echo "$output"
	[ "$status" -eq 0 ]
	if ! [ -x /usr/bin/claude ] && ! [ -x /usr/local/bin/claude ]; then
		[[ "${lines[1]}" == "claude: not found where the sandbox looks"* ]]
	else
		[[ "${lines[1]}" == "claude (inside the sandbox): "* ]]
	fi
	# a harness under the home that the sandbox cannot see: where it is, and still success (only
	# checkable with a harness name not installed system-wide, which the sandbox would see first)
	local h
	for h in pi codex claude; do
		[ -x "/usr/bin/$h" ] || [ -x "/usr/local/bin/$h" ] || break
		h=
	done
	if [ -n "$h" ]; then
		mkdir -p "$WORK/home/.npm-global/bin"
		fake_harness "$WORK/home/.npm-global/bin" "$h"
		HOME=$WORK/home XDG_CONFIG_HOME=$WORK/cfg2 run "$AISB" --harness "$h" --version
		echo "$output"
		[ "$status" -eq 0 ]
		[[ "$output" == *"--harness-from $WORK/home/.npm-global"* ]]
		[[ "${lines[-1]}" == "aisb "[0-9]* ]]
	fi
	# -- COMMAND: only aisb's
	run "$AISB" --version -- true
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 1 ]
}

@test "ux: --help ends with the way to the harness's help; --harness-args hands --help, --version, --image and --verbose to the harness" {
	local D=$WORK/harness
	fake_pi "$D"
	echo "harness_from = $D" >>"$XDG_CONFIG_HOME/aisb/config"
	run "$AISB" --help
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "usage: aisb"* ]]
	[[ "${lines[-1]}" == *"The harness's help: aisb --harness-args --help" ]]
	run "$AISB" --net none --harness-args --help
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "pi-fake help text" ]
	run "$AISB" --net none --harness-args --version
	[ "$output" = "pi-fake 9.9.9" ]
	# codex's --image and --verbose reach the harness instead of aisb
	run "$AISB" --net none --harness-args --image shot.png --verbose "describe"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "pi-fake args: --image shot.png --verbose describe" ]
	# after a first harness argument, or with a single dash, they are the harness's already
	run "$AISB" --net none -p hi --verbose --help
	[ "$output" = "pi-fake args: -p hi --verbose --help" ]
	run "$AISB" --net none -h
	[ "$output" = "pi-fake args: -h" ]
	# a first word that is an aisb subcommand reaches the harness after --harness-args
	run "$AISB" --net none --harness-args trust me
	[ "$output" = "pi-fake args: trust me" ]
	run "$AISB" trust --help
	[[ "${lines[0]}" == "usage: aisb trust"* ]]
	# control: before them, aisb's own --image is aisb's (and refuses a non-reference)
	run "$AISB" --net none --image 'bad ref!' --dry-run
	[ "$status" -eq 78 ]
	[[ "$output" == *"is not an image reference"* ]]
}

@test "ux: podman habits before '--' (an unknown flag) or a podman command aisb lacks are refused with the aisb spelling; --harness-args and the harness's own words still reach it" {
	local D=$WORK/harness
	fake_pi "$D"
	fake_harness "$D/bin" claude
	echo "harness_from = $D" >>"$XDG_CONFIG_HOME/aisb/config"
	# refusal: podman's -v before a '--' would have run 'pi -v /tmp:/x -- make'
	run "$AISB" --net none -v /tmp:/x -- echo ran
	echo "$output"
	[ "$status" -eq 78 ]
	[[ "$output" == *"'-v' is not an aisb flag and a '--' follows it"*"aisb's --mount SRC[:DST][:rw]"*"--harness-args"* ]]
	[[ "$output" != *"pi-fake"* ]]
	[[ "$output" != *ran* ]]
	run "$AISB" --net none --network=none -- echo ran
	[ "$status" -eq 78 ]
	[[ "$output" == *"'--network=none' is not an aisb flag"*"--net none|allow|full"* ]]
	# control: the aisb spelling runs the command; --harness-args hands the same words to pi
	run "$AISB" --net none --mount /tmp:/x -- echo ran
	[ "$status" -eq 0 ]
	[ "$output" = "ran" ]
	run "$AISB" --net none --harness-args -v /tmp:/x -- make
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "pi-fake args: -v /tmp:/x -- make" ]
	# control: without a '--', a harness flag is the harness's (the alias rule)
	run "$AISB" --net none -p hi --verbose
	[ "$output" = "pi-fake args: -p hi --verbose" ]
	# refusal: a podman command aisb does not have starts nothing
	run "$AISB" --net none rm x
	echo "$output"
	[ "$status" -eq 78 ]
	[[ "$output" == *"'rm' is a podman/docker command that aisb does not have and pi does not take"*"aisb clean"*"--harness-args"* ]]
	[[ "$output" != *"pi-fake"* ]]
	run "$AISB" exec x
	[ "$status" -eq 78 ]
	# control: --harness-args gives pi the word; a harness's own subcommand stays its own
	run "$AISB" --net none --harness-args rm x
	[ "$status" -eq 0 ]
	[ "$output" = "pi-fake args: rm x" ]
	run "$AISB" --net none install x
	[ "$output" = "pi-fake args: install x" ]
	run "$AISB" --net none --harness claude rm x
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "claude-fake args: rm x" ]
}

@test "ux: a subcommand's unknown flag is exit 2 naming the flag, never the value after its '=' (canary); a known flag with '=' is taken (control)" {
	local s
	for s in $("$AISB" __complete '' | grep -v '^-'); do
		[ "$s" = run ] && continue # run's unknown flags are the harness's (core.bats)
		run --separate-stderr "$AISB" "$s" --passwd=canary-7c21e0
		echo "$s: $status $stderr"
		[ "$status" -eq 2 ]
		[[ "$stderr" == *"unknown flag '--passwd'"* ]]
		[[ "$stderr" != *canary-7c21e0* && "$output" != *canary-7c21e0* ]]
	done
	# a flag without a value given one: named, the value not echoed
	run --separate-stderr "$AISB" images --all=canary-7c21e0
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"'--all' takes no value"* && "$stderr" != *canary-7c21e0* ]]
	# control: a known flag with '=' is read as the table says
	run --separate-stderr "$AISB" images --format=json
	[ "$status" -eq 0 ]
	[[ "$output" == "["* ]]
}

@test "ux: every subcommand's --help prints its usage (exit 0); build with a missing context names it" {
	local s
	for s in $("$AISB" __complete '' | grep -v '^-'); do
		run "$AISB" "$s" --help
		echo "$s: $status ${lines[0]}"
		[ "$status" -eq 0 ]
		[[ "${lines[0],,}" == "usage: aisb"* ]]
	done
	# refusal: a context that does not exist (or is a file) is an error, not the built-in recipe
	run "$AISB" build --dry-run "$WORK/no-such-dir"
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"the context directory '$WORK/no-such-dir': No such file or directory"* ]]
	[[ "$output" != *"built-in"* ]]
	: >"$WORK/afile"
	run "$AISB" build --dry-run "$WORK/afile"
	[ "$status" -eq 2 ]
	[[ "$output" == *"the context '$WORK/afile' is not a directory"* ]]
	# control: an existing context is read (its Containerfile is what the error is about)
	mkdir -p "$WORK/ctx"
	printf 'FROM scratch\n' >"$WORK/ctx/Containerfile"
	run "$AISB" build --dry-run "$WORK/ctx"
	echo "$output"
	[[ "$output" == *"$WORK/ctx/Containerfile:1:"* ]]
	[[ "$output" != *"context"* ]]
}

# ---- the sandbox home ------------------------------------------------------------------------

@test "ux: --home project gives each project its own home, 'home = project' in config too; aisb home --path/--list show them" {
	local P2=$WORK/proj2
	mkdir -p "$P2"
	run "$AISB" --net none --home project -- sh -c 'echo one >~/marker'
	[ "$status" -eq 0 ]
	run "$AISB" home --path project
	[ "$status" -eq 0 ]
	local h1=$output
	[[ "$h1" == "$XDG_STATE_HOME/aisb/homes/project-proj-"* ]]
	[ "$(cat "$h1/marker")" = one ]
	# control: the same project sees it again; another project and the default home do not
	run "$AISB" --net none --home project -- cat /home/sandbox/marker
	[ "$output" = one ]
	(cd "$P2" && "$AISB" --net none --home project -- sh -c 'test ! -e ~/marker && echo absent') >"$WORK/o2"
	[ "$(cat "$WORK/o2")" = absent ]
	run "$AISB" --net none -- sh -c 'test ! -e ~/marker && echo absent'
	[ "$output" = absent ]
	# config: home = project, and aisb home without arguments follows it
	echo "home = project" >>"$XDG_CONFIG_HOME/aisb/config"
	run "$AISB" --net none -- cat /home/sandbox/marker
	[ "$output" = one ]
	run "$AISB" home
	[ "$output" = "$h1" ]
	# named homes, and the list
	run "$AISB" --net none --home work -- sh -c 'echo w >~/w'
	[ -e "$XDG_STATE_HOME/aisb/homes/work/w" ]
	run "$AISB" home --list
	echo "$output"
	[[ "$output" == *"default"* ]]
	[[ "$output" == *"work"* ]]
	[[ "$output" == *"project-proj-"* ]]
	[[ "$output" == *"project-proj2-"* ]]
	# invalid names are refused
	run "$AISB" --net none --home ../x -- true
	[ "$status" -eq 78 ]
	run "$AISB" --net none --home project --no-cwd -- true
	[ "$status" -eq 78 ]
}

@test "ux: aisb home --reset refuses a live session's home and never follows a symlink" {
	run "$AISB" --net none --home busy -- sh -c 'echo x >~/f'
	[ "$status" -eq 0 ]
	"$AISB" --net none --home busy -- sleep 30 >/dev/null 2>&1 3>&- &
	BG_PIDS=$!
	for _ in $(seq 100); do "$AISB" ps 2>/dev/null | grep -q ' live ' && break; sleep 0.1; done
	run "$AISB" home --reset busy
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"in use by live session"* ]]
	[ -e "$XDG_STATE_HOME/aisb/homes/busy/f" ]
	kill "$BG_PIDS"
	wait "$BG_PIDS" || true
	BG_PIDS=
	# control: once it ended, the reset works
	run "$AISB" home --reset busy
	echo "$output"
	[ "$status" -eq 0 ]
	[ ! -e "$XDG_STATE_HOME/aisb/homes/busy" ]
	# a symlinked home is not followed: the target survives
	mkdir -p "$WORK/victim"
	echo precious >"$WORK/victim/file"
	ln -s "$WORK/victim" "$XDG_STATE_HOME/aisb/homes/evil"
	run "$AISB" home --reset evil
	echo "$output"
	[ "$status" -eq 78 ]
	[[ "$output" == *"refusing to follow it"* ]]
	[ "$(cat "$WORK/victim/file")" = precious ]
}

# ---- project policy --------------------------------------------------------------------------

# policy_run: a run that asks for svc.test (the project's entry) and other.test (a flag entry,
# the control in every run).
policy_run() {
	"$AISB" --add-host svc.test=127.0.0.1 --add-host other.test=127.0.0.1 --allow "other.test:$SRV_PORT" "$@" \
		-- sh -c "$SCURL http://svc.test:$SRV_PORT/; $SCURL http://other.test:$SRV_PORT/"
}

@test "ux: an untrusted .aisb/config is ignored with one notice; a policy that sets a mount cannot be trusted" {
	start_server
	mkdir -p .aisb
	printf 'allow = svc.test:%s\n' "$SRV_PORT" >.aisb/config
	run policy_run
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c "project policy '$PROJ/.aisb' is not trusted and was ignored" <<<"$output")" -eq 1 ]
	[ "${lines[1]}" = 403 ]
	[ "${lines[2]}" = 200 ]
	# attack: the repository widens mounts and enforcement; trust refuses and records nothing
	printf 'allow = svc.test:%s\nmount = /etc:/hostetc\nnet = full\n' "$SRV_PORT" >.aisb/config
	run "$AISB" trust
	echo "$output"
	[ "$status" -eq 78 ]
	[[ "$output" == *".aisb:2: key 'mount' is not allowed in a project policy"* ]]
	[[ "$output" == *"nothing was trusted"* ]]
	[ ! -e "$XDG_STATE_HOME/aisb/trust" ] || [ -z "$(ls "$XDG_STATE_HOME/aisb/trust")" ]
	run policy_run
	[[ "$output" == *"is not trusted and was ignored"* ]]
	[ "${lines[1]}" = 403 ]
	run "$AISB" --net none -- test -e /hostetc
	[ "$status" -eq 1 ]
	# a symlinked policy (borrowed from elsewhere) is ignored too
	rm -rf .aisb
	mkdir -p "$WORK/elsewhere/.aisb"
	printf 'allow = svc.test:%s\n' "$SRV_PORT" >"$WORK/elsewhere/.aisb/config"
	ln -s "$WORK/elsewhere/.aisb" .aisb
	run "$AISB" trust
	[ "$status" -eq 78 ]
	[[ "$output" == *"symlink"* ]]
	run policy_run
	[[ "$output" == *"ignored: a symlink"* ]]
	[ "${lines[1]}" = 403 ]
}

@test "ux: after aisb trust the project's allow entries work; a change by the sandbox (or anyone) is ignored until trusted again" {
	start_server
	mkdir -p .aisb
	printf '# reviewed policy\nallow = svc.test:%s\n' "$SRV_PORT" >.aisb/config
	run "$AISB" trust --show
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"not trusted"*"would add to every run"*"allow   += svc.test:$SRV_PORT"*"approve with: aisb trust"* ]]
	run "$AISB" trust
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"trusted; any change"* ]]
	[ "$(stat -c %a "$XDG_STATE_HOME/aisb/trust")" = 700 ]
	# control: the trusted entry reaches the local server, without any notice
	run policy_run
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 200 ]
	[ "${lines[1]}" = 200 ]
	[[ "$output" != *"project policy"* ]]
	# attack: the sandbox rewrites the policy it runs under
	run "$AISB" --net none -- sh -c 'echo "allow = *.evil.test" >>.aisb/config'
	[ "$status" -eq 0 ]
	run policy_run
	echo "$output"
	[[ "$output" == *"project policy '$PROJ/.aisb' changed since you trusted it"*"was ignored"* ]]
	[ "${lines[1]}" = 403 ]
	[ "${lines[2]}" = 200 ]
	run "$AISB" trust --show
	echo "$output"
	[[ "$output" == *"changed since it was trusted"*"changes since it was trusted:"*"  + allow   *.evil.test"*"would add to"*"allow   += *.evil.test"* ]]
	[[ "$output" != *"- allow"* ]]
	# .aisb/allow counts as part of the policy, and the trust follows the content
	printf '# reviewed policy\nallow = svc.test:%s\n' "$SRV_PORT" >.aisb/config
	run policy_run
	[ "${lines[0]}" = 200 ]
	echo "svc2.test" >.aisb/allow
	run policy_run
	[[ "$output" == *"changed since you trusted it"* ]]
	[ "${lines[1]}" = 403 ]
	run "$AISB" trust
	[ "$status" -eq 0 ]
	run "$AISB" --print-policy -- true
	[[ "$output" == *"allow=svc.test:$SRV_PORT"* ]]
	[[ "$output" == *"allow=svc2.test"* ]]
	# an explicit --net none of this run wins over the project's standing entries
	run "$AISB" --net none --print-policy -- true
	[ "$status" -eq 0 ]
	[[ "$output" == *"net=none"* ]]
	[[ "$output" != *"allow=svc"* ]]
	# revoke
	run "$AISB" trust --revoke
	[ "$status" -eq 0 ]
	run policy_run
	[[ "$output" == *"is not trusted and was ignored"* ]]
	[ "${lines[1]}" = 403 ]
}

@test "ux: trust --show and the trust record never show an env value from the policy" {
	mkdir -p .aisb
	printf 'env = PROJ_TOKEN=canary-ux-5f1e\nenv = EDITOR\nharness = codex\nmemory = 1G\n' >.aisb/config
	run "$AISB" trust --show
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"env     += PROJ_TOKEN=<redacted>"* ]]
	[[ "$output" == *"env     += EDITOR (from your environment)"* ]]
	[[ "$output" == *"harness  = codex"* ]]
	[[ "$output" == *"memory   = 1G"* ]]
	[[ "$output" != *canary-ux-5f1e* ]]
	# (an explicit limit is refused on hosts without cgroup delegation: run without it)
	printf 'env = PROJ_TOKEN=canary-ux-5f1e\nenv = EDITOR\nharness = codex\n' >.aisb/config
	run "$AISB" trust
	[ "$status" -eq 0 ]
	[[ "$output" != *canary-ux-5f1e* ]]
	# a changed value shows as the name only
	printf 'env = PROJ_TOKEN=canary-ux-6a2b\nenv = EDITOR\nharness = claude\n' >.aisb/config
	run "$AISB" trust --show
	echo "$output"
	[[ "$output" == *"+ env     PROJ_TOKEN=<redacted>"*"- env     PROJ_TOKEN=<redacted>"*"~ harness codex -> claude"* ]]
	[[ "$output" != *canary-ux-* ]]
	# the record keeps a fingerprint, never the value
	! grep -r canary-ux- "$XDG_STATE_HOME" || false
	grep -rq 'PROJ_TOKEN=<sha256:' "$XDG_STATE_HOME/aisb/trust"
	printf 'env = PROJ_TOKEN=canary-ux-5f1e\nenv = EDITOR\nharness = codex\n' >.aisb/config
	# the trusted value does reach the sandbox (and only there); dry-run redacts it
	EDITOR=vi run "$AISB" --net none --harness shell -- sh -c 'echo "$PROJ_TOKEN"'
	[ "$output" = canary-ux-5f1e ]
	EDITOR=vi run "$AISB" --net none --dry-run -- true
	[[ "$output" == *"env:        PROJ_TOKEN=<redacted>"* ]]
	[[ "$output" != *canary-ux-5f1e* ]]
}
