#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/agents.bats — the REAL pi, codex and claude CLIs (npm, .ci/run installs them) inside
# aisb, with the user's host config bridged into the sandbox home, against lib/mock-model.py on
# the host's 127.0.0.1: the model asks for a shell tool call, the agent runs it in the sandbox,
# the file lands in the host project. Each refusal is paired with the run that succeeds.
# Inner commands are single-quoted on purpose: they expand inside the sandbox.
# shellcheck disable=SC2016
load lib/common
load lib/model
bats_require_minimum_version 1.5.0

LIB=${AISB_E2E_DIR:-$BATS_TEST_DIRNAME}/lib
PY=/usr/bin/python3
# What the model asks the agent to run: proves where it ran (uid and home inside).
TOOL_CMD='echo "ran:$(id -u):$HOME" > agent-proof.txt'

setup() {
	common_setup
	require_feature "pi, codex and claude from npm (.ci/run installs them)" \
		sh -c 'command -v pi && command -v codex && command -v claude'
	require_feature python3 test -x "$PY"
	# The caller's home as the bridge sees it: a fresh one per test, outside the project.
	export HOME="$WORK/home"
	mkdir -p "$HOME"
	unset AI_API_TOKEN ANTHROPIC_API_KEY ANTHROPIC_AUTH_TOKEN ANTHROPIC_BASE_URL OPENAI_API_KEY MOCK_KEY
	TOKEN="tok-$RANDOM$RANDOM"
	CANARY=""
	git -C "$PROJ" init -q # codex exec wants a git repository
}

teardown() {
	model_stop
	[ -S "${TSOCK:-}" ] && tmux -S "$TSOCK" kill-server 2>/dev/null
	common_teardown
}

# mock_start [TOKEN]: the model server (lib/model.bash) on a free port of 127.0.0.1; sets PORT
# and MOCK_LOG.
mock_start() {
	model_start mock "${1:-$TOKEN}" --command "$TOOL_CMD"
	MOCK_LOG="$WORK/mock.jsonl"
	PORT=$(cat "$WORK/mock.port")
	[ -n "$PORT" ]
}

# host_config_pi KEY: ~/.pi/agent pointing at the mock, with KEY as the provider's apiKey.
host_config_pi() { model_pi_config "http://127.0.0.1:$PORT" "$1" ',"theme":"dark","quietStartup":false'; }

host_config_codex() { model_codex_config "http://127.0.0.1:$PORT" MOCK_KEY; }

# assert_agent_ran: the tool call ran inside the sandbox and its file is the caller's on the host.
assert_agent_ran() {
	[[ "$output" == *MOCK-DONE* ]]
	[ -f "$PROJ/agent-proof.txt" ]
	[ "$(cat "$PROJ/agent-proof.txt")" = "ran:1000:/home/sandbox" ]
	[ "$(stat -c %u "$PROJ/agent-proof.txt")" = "$(id -u)" ]
	# two model requests (tool call, then the answer), each carrying the key by reference
	[ "$(grep -c '"proto": "'"$1"'"' "$MOCK_LOG")" -ge 2 ]
	! grep '"auth_ok": false' "$MOCK_LOG"
	grep -q '"tool": null' "$MOCK_LOG"
}

@test "agents: pi runs the model's bash tool call in the sandbox with the bridged ~/.pi/agent" {
	mock_start
	host_config_pi "$TOKEN" # a literal key: becomes $AI_API_TOKEN in the sandbox
	AI_API_TOKEN=$TOKEN run -0 timeout 120 "$AISB" --allow-host-port "$PORT" -p "write the proof file" </dev/null
	assert_agent_ran chat
	[[ "$output" == *'passing $AI_API_TOKEN to the sandbox by name'* ]]
	# the bridged copy: the key by reference, the endpoint rewritten, owned by the sandbox user, 0600
	local m="$XDG_STATE_HOME/aisb/homes/default/.pi/agent/models.json"
	grep -q '"apiKey": "AI_API_TOKEN"' "$m"
	grep -q "\"baseUrl\": \"http://host.aisb.internal:$PORT/v1\"" "$m"
	! grep -q "$TOKEN" "$m" || false
	[ "$(stat -c '%a %u' "$m")" = "600 $(id -u)" ]
	grep -q '"defaultThinkingLevel": "xhigh"' "$XDG_STATE_HOME/aisb/homes/default/.pi/agent/settings.json"
	# never the credential store
	[ ! -e "$XDG_STATE_HOME/aisb/homes/default/.pi/agent/auth.json" ] ||
		! grep -q "$TOKEN" "$XDG_STATE_HOME/aisb/homes/default/.pi/agent/auth.json"
}

@test "agents: pi without --allow-host-port is refused (78) naming the flag; without its token variable too" {
	mock_start
	host_config_pi "$TOKEN"
	AI_API_TOKEN=$TOKEN run -78 "$AISB" -p "x" </dev/null
	[[ "$output" == *"--allow-host-port $PORT"* ]]
	[[ "$output" == *"host.aisb.internal:$PORT"* ]]
	# another allow entry does not cover the endpoint either
	AI_API_TOKEN=$TOKEN run -78 "$AISB" --allow example.com -p "x" </dev/null
	[[ "$output" == *"--allow-host-port $PORT"* ]]
	# --net full cannot reach the host's loopback (pasta without the gateway mapping)
	AI_API_TOKEN=$TOKEN run -78 "$AISB" --net full --dry-run -p "x" </dev/null
	[[ "$output" == *"--allow-host-port $PORT instead"* ]]
	# the token variable unset or empty: refused, naming it and the fix
	run -78 "$AISB" --allow-host-port "$PORT" -p "x" </dev/null
	[[ "$output" == *'$AI_API_TOKEN'* && "$output" == *"export AI_API_TOKEN="* ]]
	AI_API_TOKEN= run -78 "$AISB" --allow-host-port "$PORT" -p "x" </dev/null
	[[ "$output" == *"export AI_API_TOKEN="* ]]
	[ ! -e "$PROJ/agent-proof.txt" ]
	[ ! -s "$MOCK_LOG" ]
	# --pi-token-env names another variable; --no-pi-token-env requires none (a preview here)
	MYTOK=$TOKEN run -0 "$AISB" --pi-token-env MYTOK --allow-host-port "$PORT" --dry-run -p x
	[[ "$output" == *"env:        MYTOK=<redacted>"* ]]
	run -0 "$AISB" --no-pi-token-env --allow-host-port "$PORT" --dry-run -p x
	[[ "$output" != *AI_API_TOKEN=* ]]
	# control: with the flag and the variable it runs (the previous test's run, shortened)
	AI_API_TOKEN=$TOKEN run -0 timeout 120 "$AISB" --allow-host-port "$PORT" -p "x" </dev/null
	assert_agent_ran chat
}

@test "agents: a non-loopback endpoint needs its --allow; an unknown --thinking level lists the valid ones" {
	mkdir -p "$HOME/.pi/agent"
	echo '{"providers":{"far":{"baseUrl":"https://llm.example.com:8443/v1","apiKey":"K","api":"openai-completions","models":[{"id":"m"}]}}}' \
		>"$HOME/.pi/agent/models.json"
	AI_API_TOKEN=x run -78 "$AISB" --dry-run -p x
	[[ "$output" == *"llm.example.com:8443"* && "$output" == *"--allow llm.example.com:8443"* ]]
	# control: allowed, the plan resolves (a preview: nothing leaves this machine)
	AI_API_TOKEN=x run -0 "$AISB" --allow llm.example.com:8443 --dry-run -p x
	[[ "$output" == *"model endpoint llm.example.com:8443"* ]]
	# --net none is the user's explicit choice: no refusal
	AI_API_TOKEN=x run -0 "$AISB" --net none --dry-run -p x
	run -78 "$AISB" --thinking ultra --net none --dry-run -p x
	[[ "$output" == *"off minimal low medium high xhigh"* ]]
	AI_API_TOKEN=x run -0 "$AISB" --thinking low --net none --dry-run -p x
	# a harness with no config and nothing allowed: refused, saying what to add
	rm -rf "$HOME/.pi"
	run -78 "$AISB" -p x
	[[ "$output" == *"pi needs the network for its model"*"--allow"* ]]
	# a '--' command keeps the loopback-only default
	run -0 "$AISB" -- true
}

@test "agents: codex exec runs the model's shell call in the sandbox, without its own sandbox" {
	mock_start
	host_config_codex
	MOCK_KEY=$TOKEN run -0 timeout 120 "$AISB" --harness codex --allow-host-port "$PORT" exec "write the proof file" </dev/null
	assert_agent_ran responses
	[[ "$output" == *'without its own sandbox'* ]]
	[[ "$output" == *'passing $MOCK_KEY'* ]]
	local c="$XDG_STATE_HOME/aisb/homes/default/.codex/config.toml"
	grep -q '^sandbox_mode = "danger-full-access"' "$c"
	grep -q "base_url = \"http://host.aisb.internal:$PORT/v1\"" "$c"
	[ "$(stat -c %a "$c")" = 600 ]
	# refusals: the endpoint not allowed; the provider's key variable unset
	MOCK_KEY=$TOKEN run -78 "$AISB" --harness codex exec x </dev/null
	[[ "$output" == *"--allow-host-port $PORT"* ]]
	run -78 "$AISB" --harness codex --allow-host-port "$PORT" exec x </dev/null
	[[ "$output" == *'$MOCK_KEY'* ]]
}

@test "agents: claude -p runs the model's Bash call in the sandbox, onboarding and trust done" {
	mock_start
	export ANTHROPIC_BASE_URL="http://127.0.0.1:$PORT"
	ANTHROPIC_API_KEY=$TOKEN run -0 timeout 120 "$AISB" --harness claude --allow-host-port "$PORT" -p "write the proof file" </dev/null
	assert_agent_ran anthropic
	local d="$XDG_STATE_HOME/aisb/homes/default/.claude"
	grep -q '"hasCompletedOnboarding": true' "$d/.claude.json"
	grep -q '"hasTrustDialogAccepted": true' "$d/.claude.json"
	grep -q '"defaultMode": "bypassPermissions"' "$d/settings.json"
	ANTHROPIC_API_KEY=$TOKEN run -78 "$AISB" --harness claude -p x </dev/null
	[[ "$output" == *"--allow-host-port $PORT"* ]]
	[[ "$output" == *'$ANTHROPIC_BASE_URL'* ]]
}

@test "agents: a canary in every host config file and variable appears nowhere but as the env reference" {
	CANARY="canary-$RANDOM-$RANDOM-bridge"
	mock_start "$CANARY"
	mkdir -p "$HOME/.pi/agent" "$HOME/.codex" "$HOME/.claude"
	cat >"$HOME/.pi/agent/models.json" <<EOF
{"providers":{"mock":{"baseUrl":"http://127.0.0.1:$PORT/v1","api":"openai-completions","apiKey":"$CANARY",
  "headers":{"X-Lit":"$CANARY","X-Cmd":"!echo $CANARY"},"models":[{"id":"mock-model"}]}}}
EOF
	echo "{\"defaultProvider\":\"mock\",\"defaultModel\":\"mock-model\",\"sessionDir\":\"$HOME/$CANARY\"}" \
		>"$HOME/.pi/agent/settings.json"
	echo "{\"mock\":{\"type\":\"api_key\",\"key\":\"$CANARY\"}}" >"$HOME/.pi/agent/auth.json"
	echo "{\"$CANARY\":1}" >"$HOME/.pi/agent/models-store.json"
	host_config_codex
	cat >>"$HOME/.codex/config.toml" <<EOF
experimental_bearer_token = "$CANARY"
http_headers = { "X-Key" = "$CANARY" }
EOF
	echo "{\"OPENAI_API_KEY\":\"$CANARY\"}" >"$HOME/.codex/auth.json"
	echo "{\"primaryApiKey\":\"$CANARY\",\"oauthAccount\":{\"emailAddress\":\"$CANARY\"},\"theme\":\"dark\"}" >"$HOME/.claude.json"
	echo "{\"claudeAiOauth\":{\"accessToken\":\"$CANARY\"}}" >"$HOME/.claude/.credentials.json"
	echo "{\"apiKeyHelper\":\"echo $CANARY\",\"env\":{\"ANTHROPIC_API_KEY\":\"$CANARY\",\"ANTHROPIC_BASE_URL\":\"http://127.0.0.1:$PORT\"}}" \
		>"$HOME/.claude/settings.json"
	export AI_API_TOKEN=$CANARY MOCK_KEY=$CANARY ANTHROPIC_API_KEY=$CANARY OPENAI_API_KEY=$CANARY
	local out="$WORK/all-output"
	{
		timeout 120 "$AISB" --allow-host-port "$PORT" -p "write the proof file" </dev/null
		echo "rc=$?"
		timeout 120 "$AISB" --harness codex --allow-host-port "$PORT" exec "write the proof file" </dev/null
		echo "rc=$?"
		timeout 120 "$AISB" --harness claude --allow-host-port "$PORT" -p "write the proof file" </dev/null
		echo "rc=$?"
		# an ephemeral home's files, kept in the session dir
		timeout 120 "$AISB" --ephemeral-home --keep --allow-host-port "$PORT" -p "write the proof file" </dev/null
		echo "rc=$?"
		for h in pi codex claude; do
			"$AISB" --harness "$h" --allow-host-port "$PORT" --dry-run x
			"$AISB" --harness "$h" --allow-host-port "$PORT" --print-policy x
			"$AISB" --harness "$h" x </dev/null && echo "rc=0 unexpected" # refused: no allow entry
			true
		done
	} >"$out" 2>&1
	cat "$out"
	[ "$(grep -c '^rc=0$' "$out")" -eq 4 ]
	! grep -q "rc=0 unexpected" "$out" || false
	ls "$XDG_STATE_HOME"/aisb/sessions/*/bridge-home/.pi/agent/models.json
	# the keys reached the model, by reference
	[ "$(grep -c '"auth_ok": true' "$MOCK_LOG")" -ge 6 ]
	! grep '"auth_ok": false' "$MOCK_LOG" || false
	# the dropped header and the unrun command were reported by name
	grep -q "dropped header 'X-Lit'" "$out"
	grep -q "dropped header 'X-Cmd'" "$out"
	grep -q 'dropped apiKeyHelper' "$out"
	no_trace "$CANARY" "$out" "$XDG_STATE_HOME" "$XDG_CACHE_HOME" "$XDG_CONFIG_HOME" "$PROJ"
}

@test "agents: the bridged files merge per key with what the sandbox changed" {
	mock_start
	host_config_pi "$TOKEN"
	export AI_API_TOKEN=$TOKEN
	local s="$XDG_STATE_HOME/aisb/homes/default/.pi/agent/settings.json"
	pi_run() { timeout 120 "$AISB" --allow-host-port "$PORT" -p "x" </dev/null; }
	# edit KEY VALUE inside the sandbox (a '--' command: the same home, no bridge)
	sandbox_edit() {
		"$AISB" -- "$PY" -c 'import json,sys; p="/home/sandbox/.pi/agent/settings.json"; d=json.load(open(p))
for kv in sys.argv[1:]:
    k,v=kv.split("=",1); d[k]=json.loads(v)
json.dump(d,open(p,"w"))' "$@"
	}
	get() { "$PY" -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1])).get(sys.argv[2])))' "$s" "$1"; }
	run -0 pi_run
	[ "$(get theme)" = '"dark"' ]
	# the sandbox edits a key, invents one, and lowers the thinking level
	sandbox_edit 'theme="light"' 'invented=1' 'defaultThinkingLevel="low"'
	# the host changes that key, and another one the sandbox left alone, and adds one
	"$PY" -c 'import json,sys; p=sys.argv[1]; d=json.load(open(p)); d.update(theme="solarized", quietStartup=True, newKey="n"); json.dump(d,open(p,"w"))' \
		"$HOME/.pi/agent/settings.json"
	run -0 pi_run
	[ "$(get theme)" = '"light"' ]             # the sandbox's edit wins
	[ "$(get quietStartup)" = true ]           # untouched: follows the host
	[ "$(get newKey)" = '"n"' ]                # new on the host: arrives
	[ "$(get invented)" = 1 ]                  # invented in the sandbox: survives
	[ "$(get defaultThinkingLevel)" = '"xhigh"' ] # policy: written on every run
	# a deleted file is seeded again; an unparseable one too, with a warning
	"$AISB" -- rm /home/sandbox/.pi/agent/settings.json
	run -0 pi_run
	[ "$(get theme)" = '"solarized"' ]
	"$AISB" -- sh -c 'echo "{not json" > /home/sandbox/.pi/agent/settings.json'
	run -0 pi_run
	[[ "$output" == *"not valid JSON: seeded again"* ]]
	[ "$(get theme)" = '"solarized"' ]
	# a symlink planted in the home is replaced, never written through
	echo keep >"$WORK/outside"
	"$AISB" -- ln -sf "$WORK/outside" /home/sandbox/.pi/agent/settings.json
	run -0 pi_run
	[ "$(cat "$WORK/outside")" = keep ]
	[ ! -L "$s" ]
	[ "$(get theme)" = '"solarized"' ]
}

@test "agents: --ephemeral-home still bridges; --no-pi-config bridges nothing" {
	mock_start
	host_config_pi "$TOKEN"
	AI_API_TOKEN=$TOKEN run -0 timeout 120 "$AISB" --ephemeral-home --allow-host-port "$PORT" -p "write the proof file" </dev/null
	assert_agent_ran chat
	[ ! -e "$XDG_STATE_HOME/aisb/homes/default/.pi" ]
	# without the bridge pi has no provider for the mock: it never asks the model
	rm -f "$PROJ/agent-proof.txt"
	: >"$MOCK_LOG"
	AI_API_TOKEN=$TOKEN run timeout 60 "$AISB" --no-pi-config --ephemeral-home --allow-host-port "$PORT" -p "x" </dev/null
	[ ! -e "$PROJ/agent-proof.txt" ]
	[ ! -s "$MOCK_LOG" ]
}

@test "agents: the README's 'Use with pi / codex / claude' lines work as written" {
	local readme="${AISB_E2E_DIR:-$BATS_TEST_DIRNAME}/README.md" lines line
	require_feature "README.md next to the tests" test -f "$readme"
	mock_start sk-example
	host_config_pi sk-example
	host_config_codex
	sed -i 's/MOCK_KEY/AI_API_TOKEN/' "$HOME/.codex/config.toml"
	# the block between the markers, with the mock's port for the example's 11434
	lines=$(sed -n '/<!-- agents-example/,/<!-- end agents-example/p' "$readme" | grep -E '^(export|aisb) ')
	[ "$(grep -c '^aisb ' <<<"$lines")" -eq 3 ]
	aisb() { "$AISB" "$@"; }
	while IFS= read -r line; do
		rm -f "$PROJ/agent-proof.txt"
		line=${line//11434/$PORT}
		echo "# $line"
		eval "$line" </dev/null
		case $line in aisb*) [ "$(cat "$PROJ/agent-proof.txt")" = "ran:1000:/home/sandbox" ] ;; esac
	done <<<"$lines"
	! grep '"auth_ok": false' "$MOCK_LOG" || false
}

# ---- the pi TUI under tmux ------------------------------------------------------------------

tmx() { tmux -S "$TSOCK" "$@"; }

# tui_start ENV...: a detached 100x30 tmux session running bash in the project with this test's
# home and XDG dirs, and the NAME=VALUE settings given.
tui_start() {
	TSOCK="$WORK/tmux.sock"
	{
		echo '#!/bin/sh'
		echo "cd '$PROJ' || exit 1"
		echo "export HOME='$HOME' XDG_STATE_HOME='$XDG_STATE_HOME' XDG_CONFIG_HOME='$XDG_CONFIG_HOME' XDG_CACHE_HOME='$XDG_CACHE_HOME'"
		for kv in "$@"; do echo "export ${kv%%=*}='${kv#*=}'"; done
		echo "export TERM=xterm PS1='host\$ '"
		echo 'exec bash --norc --noprofile -i'
	} >"$WORK/shell.sh"
	chmod +x "$WORK/shell.sh"
	tmx new-session -d -x 100 -y 30 -s e2e "$WORK/shell.sh"
}

# tui_type TEXT: type TEXT, then End, and Enter once the pane shows TEXT (30 s at most).
# codex takes keys that arrive in a burst for a paste, and an Enter up to 120 ms after the burst
# for a newline (its paste-burst window); a key that is not a character ends the burst at once,
# so End goes after the text (at the end of the line it moves nothing in bash, pi, claude or
# codex). Waiting for the text on the pane, instead of for a time, makes the Enter a key of its
# own after the text was read and drawn, which is what every one of them needs to submit it.
# The text's tail is counted (-J: wrapped lines joined) so that an earlier copy does not count.
tui_type() {
	local tail=$1 n0 _
	[ ${#tail} -le 24 ] || tail=${tail: -24}
	n0=$(tmx capture-pane -p -J -t e2e | grep -cF -- "$tail") || true    # grep -c: 1 with 0 lines
	tmx send-keys -t e2e -l "$1" && tmx send-keys -t e2e End || return 1
	for _ in $(seq 150); do
		if [ "$(tmx capture-pane -p -J -t e2e | grep -cF -- "$tail")" -gt "$n0" ]; then
			tmx send-keys -t e2e Enter
			return 0
		fi
		sleep 0.2
	done
	echo "the pane never showed '$1'; the pane:"
	tmx capture-pane -p -t e2e
	return 1
}

# tui_wait REGEX [TRIES]: until the pane shows REGEX (0.2 s per try, default 300: a bound for a
# loaded machine, where node CLIs take long to start; never waited out when the state comes).
tui_wait() {
	local _
	for _ in $(seq "${2:-300}"); do
		tmx capture-pane -p -t e2e | grep -qE -- "$1" && return 0
		sleep 0.2
	done
	echo "timed out waiting for '$1'; the pane:"
	tmx capture-pane -p -t e2e
	return 1
}

# tui_quit RCFILE COMMAND: the agent's own quit command (claude /exit, codex /quit), then wait
# for the shell to write RCFILE. Not ctrl+c: claude and codex quit on a second one only within
# about a second of the first, and one that arrives after the agent is gone reaches aisb's
# teardown instead and ends the shell's command list (RCFILE never written): pressed every 0.5 s
# that failed at load 60 (the agent gone too early), pressed once the first had shown, at load
# 16 (the second too late). The command is one state change, waited for as such.
tui_quit() {
	tui_type "$2"
	tui_wait_file "$1"
}

@test "agents: a pi TUI session under tmux starts, follows a resize, exits, and restores the terminal" {
	require_feature tmux command -v tmux
	mock_start
	host_config_pi "$TOKEN"
	tui_start "AI_API_TOKEN=$TOKEN"
	tui_type "stty -g > $WORK/before; $(printf %q "$AISB") --allow-host-port $PORT; echo \$? > $WORK/rc; stty -g > $WORK/after"
	# pi draws its footer with the model name, and full-width rules
	local rule100 rule120 _
	rule100=$(printf '─%.0s' $(seq 100))
	rule120=$(printf '─%.0s' $(seq 120))
	tui_wait 'mock-model'
	tui_wait "^$rule100\$"
	tmx resize-window -t e2e -x 120 -y 40
	tui_wait "^$rule120\$" 50
	# a prompt runs the model's tool call in the sandbox
	tui_type "write the proof file"
	tui_wait MOCK-DONE
	[ "$(cat "$PROJ/agent-proof.txt")" = "ran:1000:/home/sandbox" ]
	# ctrl+d on an empty editor exits pi
	tmx send-keys -t e2e C-d
	for _ in $(seq 300); do    # 30 s at most
		[ -s "$WORK/after" ] && break
		sleep 0.1
	done
	[ "$(cat "$WORK/rc")" = 0 ]
	[ "$(cat "$WORK/after")" = "$(cat "$WORK/before")" ]
}

@test "agents: interactive claude and codex start without onboarding, trust or key prompts" {
	require_feature tmux command -v tmux
	mock_start
	host_config_codex
	tui_start "ANTHROPIC_API_KEY=$TOKEN" "ANTHROPIC_BASE_URL=http://127.0.0.1:$PORT" "MOCK_KEY=$TOKEN"
	tui_type "$(printf %q "$AISB") --harness claude --allow-host-port $PORT; echo \$? > $WORK/rc1"
	# the prompt box comes first: no theme/onboarding, folder trust, API-key or mode questions
	tui_wait 'bypass permissions on'
	! tmx capture-pane -p -t e2e | grep -qiE 'trust|Detected a custom API key|text style|auto mode' || false
	tui_type "write the proof file"
	tui_wait MOCK-DONE
	[ "$(cat "$PROJ/agent-proof.txt")" = "ran:1000:/home/sandbox" ]
	tui_quit "$WORK/rc1" /exit
	[ "$(cat "$WORK/rc1")" = 0 ]
	rm "$PROJ/agent-proof.txt"
	tmx send-keys -t e2e -l "clear" && tmx send-keys -t e2e Enter
	tui_type "$(printf %q "$AISB") --harness codex --allow-host-port $PORT; echo \$? > $WORK/rc2"
	tui_wait 'Ask Codex to do anything'
	! tmx capture-pane -p -t e2e | grep -qiE 'trust this|sign in|log ?in' || false
	tui_type "write the proof file"
	tui_wait MOCK-DONE
	[ "$(cat "$PROJ/agent-proof.txt")" = "ran:1000:/home/sandbox" ]
	tui_quit "$WORK/rc2" /quit
	[ "$(cat "$WORK/rc2")" = 0 ]
}

# tui_wait_file FILE: until the shell wrote FILE (the agent exited and aisb finished), 60 s at
# most; no key is sent meanwhile (a ctrl+c then would interrupt aisb's teardown, not the agent).
tui_wait_file() {
	local _
	for _ in $(seq 300); do
		[ -s "$1" ] && return 0
		sleep 0.2
	done
	echo "no $1; the pane:"
	tmx capture-pane -p -t e2e
	return 1
}

@test "agents: after interactive pi, claude and codex sessions with the persistent home no passed-in value survives in the home or aisb's state; codex's shell snapshot is masked and named; a later session finds no trace" {
	require_feature tmux command -v tmux
	CANARY="canary-$RANDOM-$RANDOM-tui"
	mock_start "$CANARY"
	host_config_pi "$CANARY" # a literal key: passed as $AI_API_TOKEN
	host_config_codex
	tui_start "AI_API_TOKEN=$CANARY" "MOCK_KEY=$CANARY" "ANTHROPIC_API_KEY=$CANARY" \
		"ANTHROPIC_BASE_URL=http://127.0.0.1:$PORT"
	# everything the terminal is sent, raw
	tmx pipe-pane -t e2e -o "cat >>'$WORK/pane.log'"
	local a
	a=$(printf %q "$AISB")
	# pi: a prompt, then ctrl+d
	tui_type "$a --allow-host-port $PORT; echo \$? > $WORK/rc1"
	tui_wait 'mock-model'
	tui_type "write the proof file"
	tui_wait MOCK-DONE
	tmx send-keys -t e2e C-d
	tui_wait_file "$WORK/rc1"
	[ "$(cat "$WORK/rc1")" = 0 ]
	# claude
	rm -f "$PROJ/agent-proof.txt"
	tmx send-keys -t e2e -l "clear" && tmx send-keys -t e2e Enter
	tui_type "$a --harness claude --allow-host-port $PORT; echo \$? > $WORK/rc2"
	tui_wait 'bypass permissions on'
	tui_type "write the proof file"
	tui_wait MOCK-DONE
	tui_quit "$WORK/rc2" /exit
	[ "$(cat "$WORK/rc2")" = 0 ]
	# codex, left with a clean /quit
	rm -f "$PROJ/agent-proof.txt"
	tmx send-keys -t e2e -l "clear" && tmx send-keys -t e2e Enter
	tui_type "$a --harness codex --allow-host-port $PORT; echo \$? > $WORK/rc3"
	tui_wait 'Ask Codex to do anything'
	tui_type "write the proof file"
	tui_wait MOCK-DONE
	[ "$(cat "$PROJ/agent-proof.txt")" = "ran:1000:/home/sandbox" ]
	tui_type "/quit"
	tui_wait_file "$WORK/rc3"
	[ "$(cat "$WORK/rc3")" = 0 ]
	tmx capture-pane -p -t e2e -S -100
	# the attack happened (codex wrote its environment into the home) and was answered by name
	grep -q "shell_snapshots/.*(\$MOCK_KEY" "$WORK/pane.log"
	# no value anywhere: aisb's state (the persistent home, bridge copies, logs), cache, config,
	# the project, and nothing aisb or the harnesses put on the terminal
	no_trace "$CANARY" "$XDG_STATE_HOME" "$XDG_CACHE_HOME" "$XDG_CONFIG_HOME" "$PROJ" "$WORK/pane.log"
	# the keys reached the model by reference in every session
	[ "$(grep -c '"auth_ok": true' "$MOCK_LOG")" -ge 6 ]
	! grep '"auth_ok": false' "$MOCK_LOG" || false
	# a later plain session in another project: the snapshot is there, masked
	mkdir -p "$WORK/proj2"
	cd "$WORK/proj2"
	run -0 "$AISB" --net none -- sh -c 'cat ~/.codex/shell_snapshots/*.sh'
	[[ "$output" == *"MOCK_KEY="*REDACTED* ]]
	[[ "$output" != *"$CANARY"* ]]
}
