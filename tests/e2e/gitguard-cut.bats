#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/gitguard-cut.bats — issue 21: host git never runs what the sandbox wrote, even when
# the check is cut short: a bound, an unreadable directory, a killed supervisor, an autophase
# delivery, and the commands printed for pasting.
#
# As in gitguard.bats, each attack is performed for real inside the sandbox, then a plain host
# `git status`/`diff`/`log` runs in the project AND in the planted nested repository; the
# planted command must not have run (its marker is absent). Each is paired with its control:
# the same plant with --writable-git, where the same host git does run it.
# Inner commands are single-quoted on purpose: they expand inside the sandbox.
# shellcheck disable=SC2016
load lib/common
bats_require_minimum_version 1.5.0

load lib/gitguard

setup() {
	gitguard_setup
	BG_PIDS=
}

teardown() {
	[ -z "${BG_PIDS:-}" ] || { kill -9 "$BG_PIDS" 2>/dev/null; wait "$BG_PIDS" 2>/dev/null; }
	chmod -R u+rwx "$PROJ" 2>/dev/null || true
	common_teardown
}

# wait_until CMD...: polls a state, up to 60 s (never a fixed sleep)
wait_until() {
	local _
	for _ in $(seq 600); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

FSMON='printf "[core]\n\tfsmonitor = \"touch %s\"\n" "$MARK"'
# a chain of empty directories deeper than the walk's bound (256), next to the plant
CHAIN='d=a; i=0; while [ $i -lt 300 ]; do d=$d/d; i=$((i+1)); done; mkdir -p "$d"'

@test "gitguard-cut: a deep empty chain hides nothing: .git/commondir and its config are quarantined, only the chain is named unchecked" {
	local script="$CHAIN"' && mkdir evil && cp -r .git/objects .git/refs .git/HEAD evil/ && '"$FSMON"' >evil/config &&
		echo ../evil >.git/commondir && echo PLANTED'
	inside "$script"
	[ "$status" -eq 0 ]
	[[ "$output" == *PLANTED* ]]
	[[ "$output" == *"'$PROJ/.git/commondir'"* ]]
	[[ "$output" == *"'$PROJ/evil/config'"* ]]
	[ ! -e .git/commondir ]
	[[ "$output" == *"1 directory could not be checked for planted git files, so it was moved whole out of git's reach"* ]]
	[[ "$output" == *"more than 256 levels below the project"* ]]
	[ "$(host_git)" = CLEAN ]
	git status --porcelain >/dev/null
	# control: --writable-git leaves it; the same plain host git runs it
	rm -rf evil a
	inside "$script" --writable-git
	[[ "$output" == *"LEFT IN PLACE (--writable-git)"* ]]
	[ "$(host_git)" = RAN ]
}

@test "gitguard-cut: a directory made 0311 with a gitlinked repository inside is opened up, checked and put back" {
	local script='mkdir -p x && git init -q x/zsub && '"$FSMON"' >>x/zsub/.git/config &&
		git -C x/zsub commit -q --allow-empty -m s &&
		git update-index --add --cacheinfo 160000,$(git -C x/zsub rev-parse HEAD),x/zsub &&
		chmod 0311 x && echo PLANTED'
	inside "$script"
	[ "$status" -eq 0 ]
	[[ "$output" == *PLANTED* ]]
	[[ "$output" == *"'$PROJ/x/zsub/.git/config': sets core.fsmonitor"* ]]
	[ "$(stat -c %a x)" = 311 ]
	if ! is_root; then
		[[ "$output" == *"1 directory made unreadable inside was opened up to be checked"* ]]
	fi
	[ "$(host_git "$PROJ" "$PROJ/x/zsub")" = CLEAN ]
	# control: left in place (--writable-git), the user's plain git status enters x/zsub
	chmod 755 x
	rm -rf x
	git rm -q --cached x/zsub
	inside "$script" --writable-git
	[ "$(stat -c %a x)" = 311 ]
	[ "$(host_git "$PROJ" "$PROJ/x/zsub")" = RAN ]
}

# plant_loop: the workload ignores SIGTERM, then plants a nested repository with an fsmonitor
# and a gitlink for it, writes .ready, and keeps running
PLANT_WAIT='trap "" TERM; git init -q sub && '"$FSMON"' >>sub/.git/config &&
	git -C sub commit -q --allow-empty -m s &&
	git update-index --add --cacheinfo 160000,$(git -C sub rev-parse HEAD),sub && touch .ready &&
	while :; do sleep 1; done'

start_planter() {
	"$AISB" --net none "$@" --env MARK="$MARK" --env GIT_AUTHOR_NAME=t --env GIT_AUTHOR_EMAIL=t@e \
		--env GIT_COMMITTER_NAME=t --env GIT_COMMITTER_EMAIL=t@e -- sh -c "$PLANT_WAIT" \
		>"$WORK/bg.out" 2>&1 3>&- &
	BG_PIDS=$!
	wait_until test -e "$PROJ/.ready"
}

@test "gitguard-cut: aisb clean --all ends a sandbox that ignores SIGTERM so that its aisb still checks it" {
	start_planter
	run "$AISB" ps
	[[ "$output" == *"git check pending for 1 live session"* ]]
	run "$AISB" clean --all
	[ "$status" -eq 0 ]
	[[ "$output" == *"stopped session"* ]]
	wait "$BG_PIDS" || true
	BG_PIDS=
	grep -q "'$PROJ/sub/.git/config': sets core.fsmonitor" "$WORK/bg.out"
	[ "$(host_git "$PROJ" "$PROJ/sub")" = CLEAN ]
	[ -z "$(ls "$XDG_STATE_HOME/aisb/pending")" ]
}

@test "gitguard-cut: a SIGKILLed aisb leaves its check pending; the next aisb command runs it before anything else" {
	start_planter
	[ -n "$(ls "$XDG_STATE_HOME/aisb/pending")" ]
	kill -9 "$BG_PIDS"
	wait "$BG_PIDS" || true
	BG_PIDS=
	[ "$(grep -c 'moved out of the way' "$WORK/bg.out")" -eq 0 ]
	run "$AISB" ps
	[[ "$output" == *"ended without its check for planted git files (its aisb was killed); checking now"* ]]
	[[ "$output" == *"'$PROJ/sub/.git/config': sets core.fsmonitor"* ]]
	[ "$(host_git "$PROJ" "$PROJ/sub")" = CLEAN ]
	[ -z "$(ls "$XDG_STATE_HOME/aisb/pending")" ]
	# said once: the next command has nothing pending
	run "$AISB" ps
	[[ "$output" != *"ended without its check"* ]]
	# a --dry-run only announces a pending check
	rm -rf sub .ready
	git rm -q --cached sub
	start_planter
	kill -9 "$BG_PIDS"
	wait "$BG_PIDS" || true
	BG_PIDS=
	run "$AISB" --net none --dry-run -- true
	[[ "$output" == *"ended without its check for planted git files; the next aisb command that is not a preview runs it"* ]]
	[ -e sub/.git/config ] && grep -q fsmonitor sub/.git/config
	run "$AISB" doctor
	[[ "$output" == *"checking now"* ]]
	[ "$(host_git "$PROJ" "$PROJ/sub")" = CLEAN ]
	# control: the same plant with --writable-git, killed, is only named, and host git runs it
	rm -rf sub .ready
	git rm -q --cached sub
	start_planter --writable-git
	kill -9 "$BG_PIDS"
	wait "$BG_PIDS" || true
	BG_PIDS=
	run "$AISB" ps
	[[ "$output" == *"LEFT IN PLACE (--writable-git)"* ]]
	[ "$(host_git "$PROJ" "$PROJ/sub")" = RAN ]
}

@test "gitguard-cut: SIGKILL at random moments of a planting workload, 50 times: the payload never runs before aisb has warned" {
	local i d out
	for i in $(seq 50); do
		d=0.$((RANDOM % 40))
		"$AISB" --net none --env MARK="$MARK" --env GIT_AUTHOR_NAME=t --env GIT_AUTHOR_EMAIL=t@e \
			--env GIT_COMMITTER_NAME=t --env GIT_COMMITTER_EMAIL=t@e -- sh -c 'n=0; while :; do n=$((n+1));
				mkdir -p r$n && git init -q r$n && printf "[core]\n\tfsmonitor = \"touch %s\"\n" "$MARK" >>r$n/.git/config;
			done' >/dev/null 2>&1 3>&- &
		BG_PIDS=$!
		sleep "$d"
		kill -9 "$BG_PIDS"
		wait "$BG_PIDS" || true
		BG_PIDS=
		out=$("$AISB" ps 2>&1)
		# every planted repository, entered the way a user would
		[ "$(host_git "$PROJ" "$PROJ"/r*)" = CLEAN ] || { echo "iteration $i (after $d s): RAN; aisb said: $out"; false; }
		[ -z "$(ls "$XDG_STATE_HOME/aisb/pending" 2>/dev/null)" ]
		rm -rf "$PROJ"/r*
	done
}

@test "gitguard-cut: autophase refuses to deliver after a check that could not judge everything, even with --trust-git-changes" {
	git init -q -b main "$WORK/ap"
	cd "$WORK/ap"
	PROJ=$PWD
	git config user.name "Host Person"
	git config user.email host@example.test
	mkdir -p .agents/phases
	printf '#!/bin/sh\necho one >one.txt\n[ ! -f .agents/plant ] || sh .agents/plant\n' >.agents/launcher
	printf '#!/bin/sh\ntest -f one.txt\n' >.agents/validate.sh
	chmod +x .agents/launcher .agents/validate.sh
	printf '# Make one\nfirst\n' >.agents/phases/01-one.md
	printf '%s\n' "$CHAIN" 'git init -q zz && printf "[core]\n\tfsmonitor = \"touch %s\"\n" "$MARK" >>zz/.git/config' \
		>.agents/plant
	git add -A
	git commit -q -m init
	local base
	base=$(git rev-parse HEAD)
	run --separate-stderr "$AISB" autophase --trust-git-changes -- --net none --env MARK="$MARK"
	echo "$stderr"
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"refusing to deliver: the check for planted git files of the agent's run could not vouch for everything (1 directory not checked"* ]]
	[ "$(git rev-parse HEAD)" = "$base" ]
	[ "$(host_git "$PROJ" "$PROJ/zz")" = CLEAN ]
	# control: the same plant without the chain is judged whole, and the user's trust delivers
	rm -rf a zz one.txt
	printf '%s\n' 'git init -q zz && git -C zz -c user.name=t -c user.email=t@e commit -q --allow-empty -m s &&
		printf "[core]\n\tfsmonitor = \"touch %s\"\n" "$MARK" >>zz/.git/config' >.agents/plant
	git commit -q -am "no chain"
	base=$(git rev-parse HEAD)
	run --separate-stderr "$AISB" autophase --trust-git-changes -- --net none --env MARK="$MARK"
	echo "$stderr"
	[ "$status" -eq 0 ]
	[ "$(git rev-parse HEAD)" != "$base" ]
	[ "$(host_git "$PROJ" "$PROJ/zz")" = CLEAN ]
}

@test "gitguard-cut: every restore line aisb prints is shell-safe: quotes, ;, \$(), newlines and control bytes" {
	local script='for n in "q'\'';touch \"$MARK.inj\";'\''" "a\$(touch \"$MARK.inj\")b" "$(printf "nl\nx")" "$(printf "c\001\033d")" "é;\`touch $MARK.inj\`"; do
		mkdir -p "$n/.git" && '"$FSMON"' >"$n/.git/config"; done; echo PLANTED'
	inside "$script"
	[ "$status" -eq 0 ]
	[[ "$output" == *PLANTED* ]]
	[[ "$output" != *$'\033'* ]]
	local lines n=0 line
	lines=$(printf '%s\n' "$output" | sed -n 's/.*(restore, only if you trust it: \(mv .*\))$/\1/p')
	[ "$(printf '%s\n' "$lines" | wc -l)" -eq 5 ]
	while IFS= read -r line; do
		bash -c "$line"
		n=$((n + 1))
	done <<<"$lines"
	[ "$n" -eq 5 ]
	[ ! -e "$MARK.inj" ]
	# each config is back at its exact path
	[ -f "$PROJ/q';touch \"$MARK.inj\";'/.git/config" ]
	[ -f "$PROJ/a\$(touch \"$MARK.inj\")b/.git/config" ]
	[ -f "$PROJ/$(printf 'nl\nx')/.git/config" ]
	[ -f "$PROJ/$(printf 'c\001\033d')/.git/config" ]
	[ -f "$PROJ/é;\`touch $MARK.inj\`/.git/config" ]
	# and the inspect line is one word too
	[[ "$output" == *"inspect with: ls -laR '$XDG_STATE_HOME/aisb/quarantine/"* ]]
}

@test "gitguard-cut: the OOM killer's pick is the sandbox (oom_score_adj 1000), not its aisb, which keeps the caller's" {
	local mine
	mine=$(cat /proc/self/oom_score_adj)
	"$AISB" --net none -- sh -c 'cat /proc/self/oom_score_adj >oom; sh -c "cat /proc/self/oom_score_adj" >oom2; touch .ready; while :; do sleep 1; done' \
		>/dev/null 2>&1 3>&- &
	BG_PIDS=$!
	wait_until test -e "$PROJ/.ready"
	[ "$(cat oom)" = 1000 ]
	[ "$(cat oom2)" = 1000 ]       # inherited by what the workload starts
	[ "$(cat "/proc/$BG_PIDS/oom_score_adj")" = "$mine" ]
	kill "$BG_PIDS"
	wait "$BG_PIDS" || true
	BG_PIDS=
}
