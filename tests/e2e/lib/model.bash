# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/lib/model.bash — the model stand-in of the real-CLI tests (agents.bats, keygate.bats):
# lib/mock-model.py on the host's 127.0.0.1, and the host configs of pi and codex that point at
# it. Needs common_setup's $WORK and the test file's $PY and $LIB; model_stop goes in teardown.

# model_start NAME TOKEN [ARG...]: lib/mock-model.py expecting TOKEN as the bearer or x-api-key
# (checked, never logged), with ARG... (--command, --tls-cert ...), on a free port of 127.0.0.1.
# Returns once it listens (python starts slowly on a loaded machine: 30 s at most); its port is
# then in $WORK/NAME.port, and its log is $WORK/NAME.jsonl.
model_start() {
	local name=$1 token=$2 _
	shift 2
	"$PY" "$LIB/mock-model.py" --port-file "$WORK/$name.port" --log "$WORK/$name.jsonl" \
		--expect-token "$token" "$@" &
	MODEL_PIDS+=($!)
	for _ in $(seq 600); do
		[ -s "$WORK/$name.port" ] && return 0
		sleep 0.05
	done
	echo "model_start: lib/mock-model.py did not listen within 30 s"
	return 1
}

# model_stop: ends every model_start server of the test.
model_stop() {
	local p
	for p in "${MODEL_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	MODEL_PIDS=()
}

# model_pi_config ORIGIN KEY [SETTINGS]: ~/.pi/agent with the provider "mock" at ORIGIN/v1
# (openai-completions, model mock-model), KEY as its apiKey (a literal, or a variable's name),
# and settings.json: default provider and model, plus SETTINGS (more JSON members, ",a":b...).
model_pi_config() {
	mkdir -p "$HOME/.pi/agent"
	cat >"$HOME/.pi/agent/models.json" <<JSON
{"providers":{"mock":{"baseUrl":"$1/v1","api":"openai-completions","apiKey":"$2",
  "models":[{"id":"mock-model"}]}}}
JSON
	echo "{\"defaultProvider\":\"mock\",\"defaultModel\":\"mock-model\"${3:-}}" >"$HOME/.pi/agent/settings.json"
}

# model_codex_config ORIGIN ENV_KEY: ~/.codex/config.toml with the provider "mock" at ORIGIN/v1
# (the Responses API, model mock-model), its key read from $ENV_KEY.
model_codex_config() {
	mkdir -p "$HOME/.codex"
	cat >"$HOME/.codex/config.toml" <<TOML
model = "mock-model"
model_provider = "mock"

[model_providers.mock]
name = "Mock"
base_url = "$1/v1"
env_key = "$2"
wire_api = "responses"
TOML
}
