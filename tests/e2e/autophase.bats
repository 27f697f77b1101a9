#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/autophase.bats — issue 15: `aisb autophase`, the .agents/phases/ pipeline driver.
#
# Real git on a two-phase fixture whose launcher is a fake harness (a shell script that edits
# files inside aisb). Each refusal has its control: the same pipeline where policy allows it.
# Inner scripts are single-quoted on purpose: they expand inside the sandbox.
# shellcheck disable=SC2016,SC2154
load lib/common
bats_require_minimum_version 1.5.0

setup() {
	common_setup
	require_feature git command -v git
	# the driver's identity must come from the repository's config here, not the caller's env
	unset GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL
	# the driver reads the user's rc files (the host launcher) and global git config (the push):
	# this test's own, never the real user's
	mkdir -p "$WORK/home"
	export HOME="$WORK/home"
	git init -q -b main .
	git config user.name "Host Person"
	git config user.email host@example.test
	mkdir -p .agents/phases
	# the fake harness: records that it ran (inside the project), proves it is confined (the
	# work dir's parent is not writable), does the phase's edit, talks on stdout
	cat >.agents/launcher <<-'EOF'
	#!/bin/sh
	# LAUNCHER_BODY_CANARY_5f1c
	touch ".ran-$AISB_PHASE"
	if touch ../escaped 2>/dev/null; then echo ESCAPED; fi
	read -r first
	echo "agent $AISB_PHASE got '$first' for $1"
	case "$AISB_PHASE" in
	01-*) echo one >one.txt ;;
	02-*) echo two >two.txt; echo more >>one.txt ;;
	esac
	[ ! -f .agents/plant ] || sh .agents/plant
	EOF
	printf '#!/bin/sh\ntest -f one.txt\n' >.agents/validate.sh
	chmod +x .agents/launcher .agents/validate.sh
	printf '# Make one\nfirst line of phase one\n' >.agents/phases/01-one.md
	printf '# Make two\nfirst line of phase two\n' >.agents/phases/02-two.md
	printf 'notes\n' >.agents/phases/README.txt
	printf '.ran-*\n.ready\n.go\n' >.gitignore
	git add -A
	git commit -q -m init
	BASE=$(git rev-parse HEAD)
	git init -q --bare "$WORK/bare.git"
	git remote add origin "$WORK/bare.git"
}

teardown() {
	common_teardown
}

ap() { "$AISB" autophase "$@"; }

# commits_since_base: the driver's commits, oldest first, as "author|committer|subject|trailer"
commits_since_base() {
	git log --reverse --format='%an <%ae>|%cn <%ce>|%s|%(trailers:key=Aisb-Phase,valueonly)' "$BASE..HEAD" | sed '/^$/d'
}

@test "autophase: two phases run in aisb, are committed on the host with its identity and pushed to a bare repository" {
	run --separate-stderr ap --push origin -- --net none
	echo "stdout: $output"
	echo "stderr: $stderr"
	[ "$status" -eq 0 ]
	# the sandbox's stdout is the command's; aisb's own lines are on stderr
	[[ "$output" == *"agent 01-one got '# Make one' for .agents/phases/01-one.md"* ]]
	[[ "$output" == *"agent 02-two got '# Make two' for .agents/phases/02-two.md"* ]]
	[[ "$output" != *"aisb:"* ]]
	[[ "$stderr" == *"phase 01-one: delivered as"* ]]
	[[ "$stderr" == *"phase 02-two: delivered as"* ]]
	# inside aisb: confined (the host could write there, the agent could not)
	[[ "$output" != *ESCAPED* ]]
	[ ! -e "$WORK/escaped" ]
	touch "$WORK/escaped"
	# committed on the host, one commit per phase, the host's identity
	[ "$(commits_since_base)" = "Host Person <host@example.test>|Host Person <host@example.test>|01-one: Make one|01-one
Host Person <host@example.test>|Host Person <host@example.test>|02-two: Make two|02-two" ]
	[ "$(git show HEAD~1:one.txt)" = one ]
	[ "$(git show HEAD:two.txt)" = two ]
	[ -z "$(git status --porcelain)" ]
	# pushed
	[ "$(git -C "$WORK/bare.git" rev-parse main)" = "$(git rev-parse HEAD)" ]
	# a rerun finds both delivered (the trailers are the state) and starts nothing
	rm -f .ran-*
	run ap -- --net none
	[ "$status" -eq 0 ]
	[[ "$output" == *"0 phases delivered, 2 in all"* ]]
	[ -z "$(ls .ran-* 2>/dev/null)" ]
	run ap --status
	[[ "$output" == *"phase 01-one: delivered in"* ]]
	[[ "$output" == *"phase 02-two: delivered in"* ]]
	[[ "$output" == *"ignored:   .agents/phases/README.txt"* ]]
}

@test "autophase: a hook planted by a unit is refused at delivery; --trust-git-changes delivers and the hook never runs on the host" {
	local mark=$WORK/hook-ran
	# --writable-git lets the sandbox write .git/hooks (gitguard then only names what it finds):
	# the snapshot taken before the first unit is what stops the delivery
	# the hooks that the driver's git commands would fire: update-ref runs reference-transaction,
	# push runs pre-push; post-commit is the one a user's plain commit runs
	printf 'for h in post-commit reference-transaction pre-push; do
		printf "#!/bin/sh\\necho $h >>%s\\n" >.git/hooks/$h; chmod +x .git/hooks/$h; done\n' "$mark" >.agents/plant
	git add .agents/plant
	git commit -q -m plant
	BASE=$(git rev-parse HEAD)
	run --separate-stderr ap --push origin -- --net none --writable-git
	echo "$stderr"
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"phase 01-one: refusing to deliver: '$PROJ/.git/hooks/"*"' appeared since the pipeline started"* ]]
	[ "$(git rev-parse HEAD)" = "$BASE" ]              # nothing committed
	[ -z "$(git -C "$WORK/bare.git" for-each-ref)" ]   # nothing pushed
	[ ! -e .ran-02-two ]                              # the pipeline stopped
	[ -f one.txt ]                                    # the work is left for inspection
	# control: the user vouches for the change; the same pipeline delivers, and the planted
	# hook did not run in the driver's commits
	rm -f one.txt .ran-* .git/hooks/post-commit .git/hooks/reference-transaction .git/hooks/pre-push
	run --separate-stderr ap --trust-git-changes --push origin -- --net none --writable-git
	echo "$stderr"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"appeared since the pipeline started; delivering anyway (--trust-git-changes)"* ]]
	[ "$(commits_since_base | wc -l)" -eq 2 ]
	[ "$(git -C "$WORK/bare.git" rev-parse main)" = "$(git rev-parse HEAD)" ]
	[ ! -e "$mark" ]
	# the probe is real: the user's own plain git commit and push run those hooks
	git commit -q --allow-empty -m manual
	git push -q origin main
	grep -qx post-commit "$mark"
	grep -qx reference-transaction "$mark"
	grep -qx pre-push "$mark"
}

@test "autophase: a .git/config change made on the host while a unit runs is refused; the same run without it delivers" {
	# the first agent waits for the host between "ready" and "go"
	printf 'touch .ready\ni=0\nwhile [ ! -e .go ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done\n' >.agents/plant
	git add .agents/plant
	git commit -q -m wait
	BASE=$(git rev-parse HEAD)
	local i
	for change in yes no; do
		rm -f .ready .go
		ap -- --net none >"$WORK/out" 2>&1 &
		local pid=$!
		i=0
		while [ ! -e .ready ] && [ "$i" -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
		[ -e .ready ]
		if [ "$change" = yes ]; then
			git config remote.origin.url "https://evil.example.test/r.git"
		fi
		touch .go
		local rc=0
		wait "$pid" || rc=$?
		cat "$WORK/out"
		if [ "$change" = yes ]; then
			[ "$rc" -eq 78 ]
			grep -qF "refusing to deliver: '$PROJ/.git/config' changed since the pipeline started" "$WORK/out"
			[ "$(git rev-parse HEAD)" = "$BASE" ]
			# back to the user's config, and the unit's leftovers cleared, for the control
			git config remote.origin.url "$WORK/bare.git"
			rm -f one.txt two.txt
		else
			[ "$rc" -eq 0 ]
			[ "$(commits_since_base | wc -l)" -eq 2 ]
		fi
	done
}

@test "autophase: a failing validate.sh stops the pipeline: nothing committed, nothing pushed" {
	printf '#!/bin/sh\necho validating >&2\nexit 3\n' >.agents/validate.sh
	git commit -q -am "strict gate"
	BASE=$(git rev-parse HEAD)
	run --separate-stderr ap --push origin -- --net none
	echo "$stderr"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"phase 01-one: .agents/validate.sh exited 3 after the last fix round; nothing of it is delivered"* ]]
	[ "$(git rev-parse HEAD)" = "$BASE" ]
	[ -z "$(git -C "$WORK/bare.git" for-each-ref)" ]
	[ -e .ran-01-one ]
	[ ! -e .ran-02-two ]
	# control: the same pipeline with a passing gate (the work left behind is cleared first:
	# a dirty work tree is refused, and that refusal is checked here too)
	run ap -- --net none
	[ "$status" -eq 78 ]
	[[ "$output" == *"the work tree has changes"* ]]
	rm -f one.txt
	printf '#!/bin/sh\ntest -f one.txt\n' >.agents/validate.sh
	git commit -q -am "gate"
	run ap --push origin -- --net none
	[ "$status" -eq 0 ]
	[ "$(git -C "$WORK/bare.git" rev-parse main)" = "$(git rev-parse HEAD)" ]
}

@test "autophase: an agent that edits validate.sh is refused; the pipeline that leaves it alone delivers" {
	printf 'echo "exit 0" >.agents/validate.sh\n' >.agents/plant
	git add .agents/plant
	git commit -q -m plant
	BASE=$(git rev-parse HEAD)
	run ap -- --net none
	[ "$status" -eq 78 ]
	[[ "$output" == *"refusing to deliver: .agents/validate.sh changed during the pipeline"* ]]
	[ "$(git rev-parse HEAD)" = "$BASE" ]
	# control
	git checkout -q -- .agents/validate.sh
	rm -f one.txt
	git rm -q .agents/plant
	git commit -q -m unplant
	BASE=$(git rev-parse HEAD)
	run ap -- --net none
	[ "$status" -eq 0 ]
	[ "$(commits_since_base | wc -l)" -eq 2 ]
}

@test "autophase: --status and --dry-run start nothing and never print the launcher's body or arguments" {
	local before sessions
	before=$(git rev-parse HEAD)
	run ap --status
	[ "$status" -eq 0 ]
	[[ "$output" == *"launcher:  .agents/launcher from .agents/launcher (its content is never shown)"* ]]
	[[ "$output" == *"phase 01-one: next"* ]]
	[[ "$output" != *CANARY* ]]
	run ap --dry-run --push origin -- --net none
	[ "$status" -eq 0 ]
	[[ "$output" == *"phase 02-two: pending: aisb run --net none -- <launcher> .agents/phases/02-two.md"* ]]
	[[ "$output" == *"identity:  Host Person <host@example.test>"* ]]
	[[ "$output" != *CANARY* ]]
	# a launcher command's own words are not shown either (one may be a token)
	cp .agents/launcher fake.sh
	git add fake.sh
	git commit -q -m fake
	before=$(git rev-parse HEAD)
	for mode in --status --dry-run; do
		run ap "$mode" --launcher "sh fake.sh ARG_CANARY_77e2" -- --net none
		[ "$status" -eq 0 ]
		[[ "$output" == *"launcher:  sh from --launcher, 2 arguments not shown"* ]]
		[[ "$output" != *CANARY* ]]
	done
	# nothing started: no unit ran, no session was recorded, nothing committed
	[ -z "$(ls .ran-* 2>/dev/null)" ]
	sessions=$(find "$XDG_STATE_HOME/aisb/sessions" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
	[ "$sessions" -eq 0 ]
	[ ! -e "$XDG_STATE_HOME/aisb/sessions.log" ]
	[ "$(git rev-parse HEAD)" = "$before" ]
	# control: a real run does start the units (and records sessions), with the same launcher;
	# the canary is real (the fake harness prints its first argument on the sandbox's stdout),
	# and aisb's own lines still do not show it
	run --separate-stderr ap --launcher "sh fake.sh ARG_CANARY_77e2" -- --net none
	[ "$status" -eq 0 ]
	[ -e .ran-01-one ] && [ -e .ran-02-two ]
	[ -e "$XDG_STATE_HOME/aisb/sessions.log" ]
	[[ "$output" == *"for ARG_CANARY_77e2"* ]]
	[[ "$stderr" != *CANARY* ]]
}

@test "autophase: credentials in a remote URL are never printed, neither by the driver nor from git's errors" {
	local port url
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	url="http://user:URL_CANARY_9d3a@127.0.0.1:$port/r.git"
	git remote add creds "$url"
	# the probe would see it: the URL is in the repository's config
	[[ "$(git remote get-url creds)" == *URL_CANARY_9d3a* ]]
	for target in creds "$url"; do
		run ap --status --push "$target"
		[ "$status" -eq 0 ]
		[[ "$output" == *"http://<redacted>@127.0.0.1:$port/r.git"* ]]
		[[ "$output" != *CANARY* ]]
		run ap --dry-run --push "$target" -- --net none
		[ "$status" -eq 0 ]
		[[ "$output" != *CANARY* ]]
	done
	# a real run: delivered locally (a failed push does not stop the pipeline), every push
	# fails (nothing listens there), every line redacted
	run ap --push "$url" -- --net none
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"pushing"*"http://<redacted>@127.0.0.1:$port/r.git"* ]]
	[[ "$output" == *"the push failed"* ]]
	[[ "$output" != *CANARY* ]]
	[ "$(commits_since_base | wc -l)" -eq 2 ]
	# control: the local bare repository takes the same push on a rerun
	run ap --push origin -- --net none
	[ "$status" -eq 0 ]
	[ "$(git -C "$WORK/bare.git" rev-parse main)" = "$(git rev-parse HEAD)" ]
}

@test "autophase: a commit made inside the sandbox is not published; the work tree is, with the host's identity" {
	printf 'git -c user.name=Sandbox -c user.email=sb@x commit -q --allow-empty -m forged\n' >.agents/plant
	git add .agents/plant
	git commit -q -m plant
	BASE=$(git rev-parse HEAD)
	run ap -- --net none
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"'main' moved during the phase"* ]]
	[ "$(git log --format='%an %s' "$BASE..HEAD" | grep -c -e Sandbox -e forged)" -eq 0 ]
	[ "$(commits_since_base | wc -l)" -eq 2 ]
	# control: the sandbox's commit did exist (in the reflog only)
	git reflog main | grep -q forged
}

@test "autophase: no launcher, no validate.sh, a detached HEAD and bad run flags are refused by name" {
	run ap --launcher "" -- --net none
	[ "$status" -eq 2 ]
	run ap -- --shell
	[ "$status" -eq 2 ]
	[[ "$output" == *"--shell cannot be given to the units"* ]]
	run ap -- positional
	[ "$status" -eq 2 ]
	git rm -q .agents/launcher
	git commit -q -m "no launcher"
	run ap -- --net none
	[ "$status" -eq 78 ]
	[[ "$output" == *"no launcher: define 'sandbox-pi' (a function or alias in ~/.bashrc.d/*, ~/.bashrc, ~/.bash_aliases or ~/.profile that runs aisb with \"\$@\"), or pass --pi-cmd NAME, --launcher CMD, set 'autophase_launcher = CMD'"* ]]
	# control: the config's launcher is found
	git show HEAD~1:.agents/launcher >fake.sh
	git add fake.sh
	git commit -q -m fake
	echo "autophase_launcher = sh fake.sh" >>"$XDG_CONFIG_HOME/aisb/config"
	run ap --dry-run -- --net none
	[ "$status" -eq 0 ]
	[[ "$output" == *"launcher:  sh from autophase_launcher in the config, 1 argument not shown"* ]]
	# the run config accepts that key (aisb run ignores it)
	run "$AISB" --net none -- true
	[ "$status" -eq 0 ]
	git rm -q .agents/validate.sh
	git commit -q -m "no gate"
	run ap -- --net none
	[ "$status" -eq 78 ]
	[[ "$output" == *"no $PROJ/.agents/validate.sh"* ]]
	git checkout -q --detach
	run ap --dry-run -- --net none
	[ "$status" -eq 78 ]
	[[ "$output" == *"HEAD is not on a branch"* ]]
}

@test "autophase: a launcher whose program is pi, codex or claude runs as aisb's harness (its config bridged), any other as a command" {
	mkdir -p "$WORK/fakepi/bin"
	printf '#!/bin/sh\necho "pi-harness: $*"\nread -r l\necho "$l" >one.txt\necho x >two.txt\n' >"$WORK/fakepi/bin/pi"
	chmod -R a+rX "$WORK/fakepi"
	chmod +x "$WORK/fakepi/bin/pi"
	run ap --dry-run --launcher "pi -p" -- --net none --harness-from "$WORK/fakepi" --no-pi-config
	[ "$status" -eq 0 ]
	[[ "$output" == *"--harness pi --harness-args <launcher arguments> .agents/phases/01-one.md"* ]]
	# control: the same program by a path is a plain command (no harness lookup)
	run ap --dry-run --launcher "$WORK/fakepi/bin/pi -p" -- --net none
	[[ "$output" == *"-- <launcher> .agents/phases/01-one.md"* ]]
	run --separate-stderr ap --launcher "pi -p" -- --net none --harness-from "$WORK/fakepi" --no-pi-config
	echo "$stderr"
	[ "$status" -eq 0 ]
	[[ "$output" == *"pi-harness: -p .agents/phases/01-one.md"* ]]
	[[ "$output" == *"pi-harness: -p .agents/phases/02-two.md"* ]]
	[ "$(git show HEAD~1:one.txt)" = "# Make one" ]
}

@test "autophase: a second driver in the same repository is refused while the first runs; afterwards it runs" {
	printf 'touch .ready\ni=0\nwhile [ ! -e .go ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done\n' >.agents/plant
	git add .agents/plant
	git commit -q -m wait
	BASE=$(git rev-parse HEAD)
	ap -- --net none >"$WORK/out" 2>&1 &
	local pid=$! i=0 rc=0
	while [ ! -e .ready ] && [ "$i" -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	[ -e .ready ]
	run ap -- --net none
	[ "$status" -eq 78 ]
	[[ "$output" == *"another 'aisb autophase' is running in '$PROJ'"* ]]
	# --status and --dry-run only read: not locked out
	run ap --status
	[ "$status" -eq 0 ]
	touch .go
	wait "$pid" || rc=$?
	cat "$WORK/out"
	[ "$rc" -eq 0 ]
	[ "$(commits_since_base | wc -l)" -eq 2 ]
	# control: the lock went with the first driver
	run ap -- --net none
	[ "$status" -eq 0 ]
	[[ "$output" == *"0 phases delivered, 2 in all"* ]]
}

@test "autophase: a unit whose run gitguard had to quarantine is refused; --trust-git-changes delivers the rest" {
	# a file with a hook's name in a directory named hooks is planted for git wherever it is
	printf 'mkdir -p tools/hooks && printf "#!/bin/sh\\n" >tools/hooks/pre-commit && echo kept >tools/readme\n' \
		>.agents/plant
	git add .agents/plant
	git commit -q -m plant
	BASE=$(git rev-parse HEAD)
	run --separate-stderr ap -- --net none
	echo "$stderr"
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"moved out of the way before any git could use"* ]]   # gitguard's own message
	[[ "$stderr" == *"phase 01-one: refusing to deliver: a unit planted files for git, moved to '$XDG_STATE_HOME/aisb/quarantine/"* ]]
	[ "$(git rev-parse HEAD)" = "$BASE" ]
	# control: accepted by the user, the same pipeline delivers what gitguard left in place
	rm -rf one.txt tools
	run --separate-stderr ap --trust-git-changes -- --net none
	echo "$stderr"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"a unit planted files for git"*"delivering anyway (--trust-git-changes)"* ]]
	[ "$(git show HEAD:tools/readme)" = kept ]
	[ -z "$(git ls-tree -r --name-only HEAD tools/hooks)" ]
}

@test "autophase: a launcher script the agent edits is refused, by any word of the launcher command" {
	cp .agents/launcher run-agent.sh
	printf 'echo "echo rewritten" >>run-agent.sh\n' >.agents/plant
	git add run-agent.sh .agents/plant
	git commit -q -m plant
	BASE=$(git rev-parse HEAD)
	run ap --launcher "sh run-agent.sh" -- --net none
	[ "$status" -eq 78 ]
	[[ "$output" == *"refusing to deliver: the launcher 'run-agent.sh' changed during the pipeline"* ]]
	[ "$(git rev-parse HEAD)" = "$BASE" ]
	# control: the same launcher that leaves itself alone delivers
	git checkout -q -- run-agent.sh
	rm -f one.txt
	git rm -q .agents/plant
	git commit -q -m unplant
	run ap --launcher "sh run-agent.sh" -- --net none
	[ "$status" -eq 0 ]
	[[ "$output" == *"2 phases delivered"* ]]
}

@test "autophase: the identity is read explicitly: env, else the repository's, ~/.gitconfig, XDG config; none is refused" {
	mkdir -p "$WORK/home"
	git config --unset user.name
	git config --unset user.email
	run env HOME="$WORK/home" "$AISB" autophase --dry-run -- --net none
	[ "$status" -eq 78 ]
	[[ "$output" == *"no git identity for the driver's commits"* ]]
	# control 1: the XDG config (git's own global file, read by aisb as text)
	mkdir -p "$XDG_CONFIG_HOME/git"
	printf '[user]\n\tname = Xdg Person\n\temail = xdg@example.test\n' >"$XDG_CONFIG_HOME/git/config"
	run env HOME="$WORK/home" "$AISB" autophase --dry-run -- --net none
	[ "$status" -eq 0 ]
	[[ "$output" == *"identity:  Xdg Person <xdg@example.test>"* ]]
	# ~/.gitconfig beats it, as in git
	printf '[user]\n\tname = Home Person\n\temail = home@example.test\n' >"$WORK/home/.gitconfig"
	run env HOME="$WORK/home" "$AISB" autophase --dry-run -- --net none
	[[ "$output" == *"identity:  Home Person <home@example.test>"* ]]
	# the caller's GIT_AUTHOR_* beat every file, and the commits carry it
	run env HOME="$WORK/home" GIT_AUTHOR_NAME="Env Person" GIT_AUTHOR_EMAIL=env@example.test \
		"$AISB" autophase -- --net none
	[ "$status" -eq 0 ]
	[ "$(git log -1 --format='%an <%ae>|%cn <%ce>')" = "Env Person <env@example.test>|Env Person <env@example.test>" ]
}

@test "autophase: a rerun with nothing left pushes the tip, to --push-branch; a non-fast-forward push is refused, never forced" {
	run ap -- --net none
	[ "$status" -eq 0 ]
	[ -z "$(git -C "$WORK/bare.git" for-each-ref)" ]
	run ap --push origin --push-branch delivered -- --net none
	[ "$status" -eq 0 ]
	[[ "$output" == *"0 phases delivered, 2 in all"* ]]
	[ "$(git -C "$WORK/bare.git" rev-parse delivered)" = "$(git rev-parse HEAD)" ]
	# someone else moved the remote branch past ours: the driver does not rewind it
	git commit -q --allow-empty -m elsewhere
	git push -q origin HEAD:refs/heads/delivered
	git reset -q --hard HEAD~1
	run ap --push origin --push-branch delivered -- --net none
	[ "$status" -eq 1 ]
	[[ "$output" == *"the push failed"* ]]
	[ "$(git -C "$WORK/bare.git" rev-parse delivered)" != "$(git rev-parse HEAD)" ]
	# control: a branch it can fast-forward takes the same push
	run ap --push origin --push-branch fresh -- --net none
	[ "$status" -eq 0 ]
	[ "$(git -C "$WORK/bare.git" rev-parse fresh)" = "$(git rev-parse HEAD)" ]
}

# fake_ssh: the user's global git config (HOME=$WORK/home) sends ssh:// pushes through a fake
# ssh that serves the local bare repository, fails while $WORK/ssh-down exists or on the call
# numbered in $WORK/ssh-fail-at, and logs per call the bare repository's main before it
fake_ssh() {
	mkdir -p "$WORK/home"
	cat >"$WORK/fake-ssh" <<-EOF
	#!/bin/sh
	n=\$(cat "$WORK/ssh-count" 2>/dev/null || echo 0); n=\$((n + 1)); echo \$n >"$WORK/ssh-count"
	echo "call \$n: \$(git --git-dir="$WORK/bare.git" rev-parse -q --verify main)" >>"$WORK/ssh-log"
	if [ -e "$WORK/ssh-down" ] || [ "\$n" = "\$(cat "$WORK/ssh-fail-at" 2>/dev/null)" ]; then
		echo "fake ssh: connection refused" >&2; exit 255
	fi
	for last; do :; done
	exec sh -c "\$last"
	EOF
	chmod +x "$WORK/fake-ssh"
	printf '[core]\n\tsshCommand = %s\n[ssh]\n\tvariant = simple\n' "$WORK/fake-ssh" >"$WORK/home/.gitconfig"
	export HOME="$WORK/home"
}

@test "autophase: a push that fails is made again before the next phase starts; the user's global core.sshCommand is honoured" {
	fake_ssh
	echo 1 >"$WORK/ssh-fail-at"
	run --separate-stderr ap --push "ssh://fakehost$WORK/bare.git" -- --net none
	echo "$stderr"; cat "$WORK/ssh-log"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"phase 01-one: the push failed; the commit"* ]]
	[[ "$stderr" == *"before phase 02-two: pushing"* ]]
	[ "$(git -C "$WORK/bare.git" rev-parse main)" = "$(git rev-parse HEAD)" ]
	# three pushes: phase one's (refused), again before phase two (phase one arrives), phase two's
	[ "$(cat "$WORK/ssh-count")" -eq 3 ]
	[ "$(sed -n 3p "$WORK/ssh-log")" = "call 3: $(git rev-parse HEAD~1)" ]
}

@test "autophase: what a run could not push is pushed by the next run before its first unit; the end's failed push is exit 1" {
	fake_ssh
	touch "$WORK/ssh-down"
	run --separate-stderr ap --push "ssh://fakehost$WORK/bare.git" -- --net none
	echo "$stderr"
	[ "$status" -eq 1 ]
	[ "$(commits_since_base | wc -l)" -eq 2 ]          # delivered locally all the same
	[ -z "$(git -C "$WORK/bare.git" for-each-ref)" ]
	# control: the remote is back; the next run has nothing to run and pushes first
	rm "$WORK/ssh-down"
	run --separate-stderr ap --push "ssh://fakehost$WORK/bare.git" -- --net none
	echo "$stderr"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"before the first unit, what an earlier run may not have pushed: pushing"* ]]
	[[ "$stderr" == *"0 phases delivered, 2 in all"* ]]
	[ "$(git -C "$WORK/bare.git" rev-parse main)" = "$(git rev-parse HEAD)" ]
}

@test "autophase: the push honours the user's global url.*.insteadOf and never the project's config" {
	mkdir -p "$WORK/home" "$WORK/decoy.git"
	git init -q --bare "$WORK/decoy.git"
	export HOME="$WORK/home"
	# the project's own config (writable by a sandbox under --writable-git) points the same
	# prefix elsewhere, and plants a receive-pack command that a push reading it would run
	git config "url.$WORK/decoy.git.insteadOf" aisbtest://proj
	git config remote.named.url aisbtest://proj
	git config remote.named.receivepack "touch $WORK/receivepack-ran; git-receive-pack"
	# no rewrite in the user's config: aisbtest:: is a remote helper, never allowed
	run --separate-stderr ap --push aisbtest://proj -- --net none
	echo "$stderr"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"the push failed"* ]]
	[ -z "$(git -C "$WORK/bare.git" for-each-ref)" ]
	# control: the user's global config rewrites it to the bare repository; the next run pushes
	printf '[url "%s"]\n\tinsteadOf = aisbtest://proj\n' "$WORK/bare.git" >"$WORK/home/.gitconfig"
	run --separate-stderr ap --push named -- --net none
	echo "$stderr"
	[ "$status" -eq 0 ]
	[ "$(git -C "$WORK/bare.git" rev-parse main)" = "$(git rev-parse HEAD)" ]
	[ -z "$(git -C "$WORK/decoy.git" for-each-ref)" ]
	[ ! -e "$WORK/receivepack-ran" ]
}

@test "autophase: a shallow clone delivers and pushes (its .git/shallow goes to the push repository); one the driver cannot read as plain data is refused by name" {
	git commit -q --allow-empty -m second
	git commit -q --allow-empty -m third
	git push -q origin main
	git clone -q --depth 1 -b main "file://$WORK/bare.git" "$WORK/shallow"
	cd "$WORK/shallow"
	git config user.name "Host Person"
	git config user.email host@example.test
	[ "$(git rev-parse --is-shallow-repository)" = true ]
	TIP=$(git rev-parse HEAD)
	# refused: a .git/shallow that is a symlink (git follows it; the driver reads only a plain file)
	cp .git/shallow "$WORK/shallow-copy"
	ln -sf "$WORK/shallow-copy" .git/shallow
	run --separate-stderr ap --push origin -- --net none
	echo "$stderr"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"the repository is shallow and its '$WORK/shallow/.git/shallow' cannot be read"*"not pushed"* ]]
	[ "$(git -C "$WORK/bare.git" rev-parse main)" = "$TIP" ]
	[ "$(git rev-list --count "$TIP..HEAD")" -eq 2 ]      # delivered locally
	# control: the plain file; the next run pushes what the first could not
	rm .git/shallow && mv "$WORK/shallow-copy" .git/shallow
	run --separate-stderr ap --push origin -- --net none
	echo "$stderr"
	[ "$status" -eq 0 ]
	[ "$(git -C "$WORK/bare.git" rev-parse main)" = "$(git rev-parse HEAD)" ]
	[ "$(git -C "$WORK/bare.git" rev-list --count main)" -eq 5 ]
	git -C "$WORK/bare.git" fsck --strict >/dev/null
}

@test "autophase: --dry-run never prints an --env value (canary); the run flags are shown with it redacted" {
	local canary=ENV_VALUE_CANARY_4b7d
	run --separate-stderr ap --dry-run -- --net none --env "FOO=$canary" "--env=BAR=$canary" --env HOME
	echo "$output"; echo "$stderr"
	[ "$status" -eq 0 ]
	[[ "$output" == *"aisb run --net none --env FOO=<redacted> --env=BAR=<redacted> --env HOME -- <launcher>"* ]]
	[[ "$output" != *"$canary"* ]]
	[[ "$stderr" != *"$canary"* ]]
	# control: the value does reach the units in a real run (the agent sees it)
	printf 'echo "foo is $FOO" >foo.txt\n' >.agents/plant
	git add .agents/plant
	git commit -q -m plant
	run --separate-stderr ap -- --net none --env "FOO=$canary"
	[ "$status" -eq 0 ]
	[ "$(git show HEAD:foo.txt)" = "foo is $canary" ]
	[[ "$stderr" != *"$canary"* ]]
}

@test "autophase: the dry run preflights the units: a plan the first unit's aisb run would refuse (78) is refused by the dry run and before any unit" {
	unset AP_UNSET_VAR_91
	run --separate-stderr ap --dry-run -- --net none --env AP_UNSET_VAR_91
	echo "$output"; echo "$stderr"
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"AP_UNSET_VAR_91"* ]]
	[[ "$stderr" == *"preflight: the units' 'aisb run' refuses this plan (exit 78"* ]]
	run --separate-stderr ap -- --net none --env AP_UNSET_VAR_91
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"no unit was started"* ]]
	[ -z "$(ls .ran-* 2>/dev/null)" ]
	[ "$(git rev-parse HEAD)" = "$BASE" ]
	# control: with the variable set the same plan passes the preflight
	run --separate-stderr env AP_UNSET_VAR_91=1 "$AISB" autophase --dry-run -- --net none --env AP_UNSET_VAR_91
	[ "$status" -eq 0 ]
	[[ "$output" == *"preflight: the first unit's 'aisb run --dry-run' accepts the plan"* ]]
}

@test "autophase: --status names validate.sh when there is no launcher, and what is wrong with it otherwise" {
	git rm -q .agents/launcher
	git commit -q -m "no launcher"
	run ap --status
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"launcher:  none"* ]]
	[[ "$output" == *"validate:  .agents/validate.sh"$'\n'* ]]
	chmod -x .agents/validate.sh
	run ap --status
	[[ "$output" == *"validate:  .agents/validate.sh: not executable"* ]]
	rm .agents/validate.sh
	run ap --status
	[[ "$output" == *"validate:  .agents/validate.sh: missing"* ]]
}

@test "autophase: a phase that fails validation twice passes on the second fix round; the agent gets the fix prompt with the gate's output" {
	cat >.agents/validate.sh <<-'EOF'
	#!/bin/sh
	n=$(cat .ran-vcount 2>/dev/null || echo 0); n=$((n + 1)); echo $n >.ran-vcount
	echo "VALIDATE_SAYS attempt $n"
	[ "$n" -ge 3 ] && test -f one.txt
	EOF
	printf 'echo "$AISB_PHASE_ROUND" >>.ran-rounds-$AISB_PHASE\n' >.agents/plant
	git add -A
	git commit -q -m "a gate that passes the third time"
	BASE=$(git rev-parse HEAD)
	# control: one fix round is not enough; the phase fails, nothing is delivered
	run --separate-stderr ap --fix-rounds 1 -- --net none
	echo "$stderr"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"phase 01-one: .agents/validate.sh exited 1 after the last fix round"* ]]
	[ "$(git rev-parse HEAD)" = "$BASE" ]
	rm -f one.txt .ran-*
	# the default two fix rounds: fails, fails, passes; the agent ran three times
	run --separate-stderr ap -- --net none
	echo "$output"; echo "$stderr"
	[ "$status" -eq 0 ]
	[ "$(cat .ran-rounds-01-one | tr '\n' ' ')" = "0 1 2 " ]
	[[ "$stderr" == *"phase 01-one: .agents/validate.sh exited 1; fix round 1 of 2 follows"* ]]
	[[ "$stderr" == *"phase 01-one: .agents/validate.sh exited 1; fix round 2 of 2 follows"* ]]
	[[ "$stderr" == *"VALIDATE_SAYS attempt 2"* ]]   # the gate's output is shown
	[[ "$output" == *"agent 01-one got 'Fix round 2 of 2 for phase 01-one: .agents/validate.sh exited 1 on your work."* ]]
	[ "$(commits_since_base | wc -l)" -eq 2 ]
	# phase two passed at once (its gate's fourth call)
	[ "$(cat .ran-rounds-02-two)" = 0 ]
}

@test "autophase: an agent that exits non-zero is retried (--backoff 0 here); --retries 0 stops at the first failure" {
	printf 'if [ ! -e .ran-failed-once ]; then touch .ran-failed-once; exit 7; fi\n' >.agents/plant
	git add -A
	git commit -q -m "an agent that fails once"
	BASE=$(git rev-parse HEAD)
	run --separate-stderr ap --retries 0 -- --net none
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"phase 01-one: the agent exited 7; nothing of it is delivered"* ]]
	[ "$(git rev-parse HEAD)" = "$BASE" ]
	rm -f one.txt .ran-*
	# control: the default retries, without the wait
	run --separate-stderr ap --backoff 0 -- --net none
	echo "$stderr"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"phase 01-one: the agent exited 7; retry 1 of 2 in 0 s"* ]]
	[ "$(commits_since_base | wc -l)" -eq 2 ]
}

@test "autophase: --validate-in host runs the gate with a toolchain only on the machine, warned on every run; an edited gate never runs there" {
	# a "toolchain" outside the project: invisible inside the sandbox
	printf '#!/bin/sh\necho hosttool ran >>%s/hosttool.log\n' "$WORK" >"$WORK/hosttool"
	chmod +x "$WORK/hosttool"
	printf '#!/bin/sh\n%s/hosttool && test -f one.txt\n' "$WORK" >.agents/validate.sh
	git commit -q -am "a gate that needs the host's tool"
	BASE=$(git rev-parse HEAD)
	# control: in the sandbox (the default) the tool is not there and the gate fails
	run --separate-stderr ap --fix-rounds 0 -- --net none
	[ "$status" -eq 1 ]
	[ ! -e "$WORK/hosttool.log" ]
	rm -f one.txt .ran-*
	run --separate-stderr ap --dry-run --validate-in host -- --net none
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"--validate-in host: .agents/validate.sh runs on this machine, outside any sandbox"* ]]
	[[ "$output" == *"then .agents/validate.sh on the host; then a commit"* ]]
	run --separate-stderr ap --validate-in host -- --net none
	echo "$stderr"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"--validate-in host: .agents/validate.sh runs on this machine, outside any sandbox"* ]]
	[[ "$stderr" == *"phase 01-one: .agents/validate.sh on the host (--validate-in host)"* ]]
	[ "$(wc -l <"$WORK/hosttool.log")" -eq 2 ]
	[ "$(commits_since_base | wc -l)" -eq 2 ]
	# an agent that edits the gate: refused before it would run on the host
	printf '#!/bin/sh\ntouch %s/edited-gate-ran\n' "$WORK" >edit.sh
	printf 'cp edit.sh .agents/validate.sh\n' >.agents/plant
	printf '# Three\n' >.agents/phases/03-three.md
	git add -A
	git commit -q -m "an agent that edits the gate"
	run --separate-stderr ap --validate-in host -- --net none
	echo "$stderr"
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"phase 03-three: refusing to run .agents/validate.sh on the host: it changed during the pipeline"* ]]
	[ ! -e "$WORK/edited-gate-ran" ]
}

# host_launcher_env: the seed's setup: HOME with rc files, a fake `pass` on PATH that hands out a
# new token per call (and counts), and a fake pi harness (inside the sandbox) that records the
# token and the prompt's first line and does the phase's edit. The project's own .agents/launcher
# is removed, so the default host launcher sandbox-pi is the one looked for.
host_launcher_env() {
	mkdir -p "$WORK/home" "$WORK/bin" "$WORK/fakepi/bin"
	export HOME="$WORK/home" PATH="$WORK/bin:$PATH"
	printf '#!/bin/sh\nn=$(cat %s/pass-count 2>/dev/null || echo 0); n=$((n + 1)); echo $n >%s/pass-count\necho "TOKEN_CANARY_$n"\n' \
		"$WORK" "$WORK" >"$WORK/bin/pass"
	cat >"$WORK/fakepi/bin/pi" <<-'EOF'
	#!/bin/sh
	[ "$1" = -p ] || { echo "pi: no prompt ($*)"; exit 9; }
	echo "$AP_TOKEN" >".ran-token-$AISB_PHASE"
	printf '%s\n' "$2" | head -n 1 >".ran-prompt-$AISB_PHASE"
	case "$AISB_PHASE" in 01-*) echo one >one.txt ;; 02-*) echo two >two.txt ;; 03-*) echo three >three.txt ;; esac
	case "$2" in *"inside an aisb sandbox"*) touch ".ran-note-$AISB_PHASE" ;; esac
	[ ! -f .agents/plant ] || sh .agents/plant
	EOF
	chmod +x "$WORK/bin/pass" "$WORK/fakepi/bin/pi"
	chmod -R a+rX "$WORK/fakepi"
	git rm -q .agents/launcher
	git commit -q -m "no project launcher"
	BASE=$(git rev-parse HEAD)
	# the launcher's aisb command line, as a user writes it (the token fetched per call)
	LAUNCH="AP_TOKEN=\$(pass show aisb/token) \"$AISB\" --harness-from \"$WORK/fakepi\" --no-pi-config --env AP_TOKEN"
}

@test "autophase: the seed's launcher: sandbox-pi, a function in ~/.bashrc, found by the rc probe, never called by --status/--dry-run, run per unit with its own pass token" {
	host_launcher_env
	# a guarded ~/.bashrc that ends in exit, as many do: the probe neuters exit
	printf 'case $- in *i*) ;; *) return ;; esac\necho noise from bashrc\nsandbox-pi() {\n\t%s "$@"\n}\nexit 0\n' \
		"$LAUNCH" >"$HOME/.bashrc"
	run --separate-stderr ap --status
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"launcher:  sandbox-pi, a function in $HOME/.bashrc, run on the host per unit (its body is never shown)"* ]]
	[[ "$output" != *"pass show"* ]] && [[ "$output" != *TOKEN_CANARY* ]]
	run --separate-stderr ap --dry-run -- --net none
	echo "$output"; echo "$stderr"
	[ "$status" -eq 0 ]
	[[ "$output" == *"phase 01-one: next: sandbox-pi --net none --env AISB_PHASE=01-one ... -p <prompt>"* ]]
	[[ "$output$stderr" != *"pass show"* ]]
	[ ! -e "$WORK/pass-count" ]                         # nothing called: no token fetched
	run --separate-stderr ap -- --net none
	echo "$output"; echo "$stderr"
	[ "$status" -eq 0 ]
	[ "$(commits_since_base | wc -l)" -eq 2 ]
	# one token per run of the launcher: agent 1, gate 1, agent 2, gate 2
	[ "$(cat "$WORK/pass-count")" -eq 4 ]
	[ "$(cat .ran-token-01-one)" = TOKEN_CANARY_1 ]
	[ "$(cat .ran-token-02-two)" = TOKEN_CANARY_3 ]
	# the prompt is one argument: the phase's text first
	[ "$(cat .ran-prompt-01-one)" = "# Make one" ]
	[[ "$output$stderr" != *TOKEN_CANARY* ]] && [[ "$output$stderr" != *"pass show"* ]]
	[[ "$output$stderr" != *"noise from bashrc"* ]]
}

@test "autophase: sandbox-pi as an alias in ~/.bashrc.d/; --pi-cmd and AISB_AP_PI_CMD name another, in ~/.bash_aliases or on PATH" {
	host_launcher_env
	mkdir -p "$HOME/.bashrc.d"
	printf "alias sandbox-pi='%s'\n" "$LAUNCH" >"$HOME/.bashrc.d/20-ai"
	run ap --status
	[[ "$output" == *"launcher:  sandbox-pi, an alias in $HOME/.bashrc.d/20-ai"* ]]
	run --separate-stderr ap --fix-rounds 0 -- --net none
	echo "$stderr"
	[ "$status" -eq 0 ]
	[ "$(cat .ran-token-01-one)" = TOKEN_CANARY_1 ]
	[ "$(commits_since_base | wc -l)" -eq 2 ]
	# another name, by --pi-cmd and by AISB_AP_PI_CMD (a phase three to run)
	printf 'my-pi() { %s "$@"; }\n' "$LAUNCH" >"$HOME/.bash_aliases"
	printf '# Three\n' >.agents/phases/03-three.md
	git add -A && git commit -q -m three
	run ap --status --pi-cmd my-pi
	[[ "$output" == *"launcher:  my-pi, a function in $HOME/.bash_aliases"* ]]
	run env AISB_AP_PI_CMD=my-pi "$AISB" autophase --status
	[[ "$output" == *"launcher:  my-pi, a function in $HOME/.bash_aliases"* ]]
	run --separate-stderr ap --pi-cmd my-pi -- --net none
	[ "$status" -eq 0 ]
	[ -e .ran-token-03-three ]
	# a program on PATH is captured as its absolute path
	printf '#!/bin/sh\nexec %s "$@"\n' "$LAUNCH" >"$WORK/bin/pi-prog"
	chmod +x "$WORK/bin/pi-prog"
	run ap --status --pi-cmd pi-prog
	[[ "$output" == *"launcher:  pi-prog, the program $WORK/bin/pi-prog"* ]]
	# a name that is nowhere is refused by name
	run ap --pi-cmd no-such-pi -- --net none
	[ "$status" -eq 78 ]
	[[ "$output" == *"no launcher 'no-such-pi'"* ]]
}

@test "autophase: a launcher that drops its arguments is named by --status and refused by the preflight; nothing is called" {
	host_launcher_env
	printf 'sandbox-pi() {\n\t%s\n}\n' "$LAUNCH" >"$HOME/.bashrc"
	run ap --status
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"sandbox-pi DROPS ITS ARGUMENTS"* ]]
	run ap --dry-run -- --net none
	[ "$status" -eq 78 ]
	[[ "$output" == *"preflight: the launcher 'sandbox-pi' (a function in $HOME/.bashrc) drops its arguments"* ]]
	run ap -- --net none
	[ "$status" -eq 78 ]
	[ ! -e "$WORK/pass-count" ]
	[ -z "$(ls .ran-* 2>/dev/null)" ]
	[ "$(git rev-parse HEAD)" = "$BASE" ]
	# control: the same launcher with "$@" runs
	printf 'sandbox-pi() {\n\t%s "$@"\n}\n' "$LAUNCH" >"$HOME/.bashrc"
	run ap -- --net none
	[ "$status" -eq 0 ]
	[ "$(commits_since_base | wc -l)" -eq 2 ]
}

# phase_lib: a fixture of the seed's pipeline library: the five functions aisb shadows (their
# unshadowed bodies say so loudly and fail) and the entry point, with the library's own
# scheduling, fix round, scoped commit and push_phase call; it logs each step it reaches to
# $WORK/lib-log. LIB_PLANT=1: the library itself (on the host) adds a hook-like file before its
# commit. LIB_REDEFINE=1: it tries to define pi again. The agent is the seed's launcher
# (host_launcher_env: sandbox-pi in ~/.bashrc with a per-call pass token).
phase_lib() {
	host_launcher_env
	printf 'case $- in *i*) ;; *) return ;; esac\nsandbox-pi() {\n\t%s "$@"\n}\n' "$LAUNCH" >"$HOME/.bashrc"
	cat >"$WORK/phase-lib.sh" <<-EOF
	log() { echo "\$*" >>"$WORK/lib-log"; }
	EOF
	cat >>"$WORK/phase-lib.sh" <<-'EOF'
	first_prompt() { cat "$1"; }
	fix_prompt() { printf 'Fix: validation failed for %s\n' "$1"; cat "$1"; }
	pi() { echo "UNSHADOWED pi ran on the host" >&2; return 99; }
	run_validation() { echo "UNSHADOWED validation ran on the host" >&2; return 99; }
	push_phase() { echo "UNSHADOWED push" >&2; git push -q origin HEAD; }
	run_pipeline() {
		if [ -n "${LIB_REDEFINE:-}" ]; then
			eval 'pi() { echo "REDEFINED pi ran on the host" >&2; }' 2>/dev/null || log "pi is read-only"
		fi
		for f in .agents/phases/*.md; do
			name=$(basename "$f" .md)
			# the library's report recovery: a phase it committed before is done
			git log --format=%s | grep -qx "$name" && continue
			pi -p "$(first_prompt "$f")" || return 1
			log "pi $name returned"
			if ! run_validation "$f"; then
				pi -p "$(fix_prompt "$f")" || return 1
				run_validation "$f" || return 1
			fi
			log "validated $name"
			if [ -n "${LIB_PLANT:-}" ]; then
				mkdir -p tools/hooks && printf '#!/bin/sh\n' >tools/hooks/pre-commit
			fi
			git add -A && git commit -q -m "$name" || return 1
			log "committed $name"
			push_phase || return 1
			log "pushed $name"
		done
	}
	EOF
}

@test "autophase: --library runs the seed's pipeline library with its five functions shadowed; a library that changed shape is refused" {
	phase_lib
	printf '#!/bin/sh\ntouch %s/hook-ran\n' "$WORK" >.git/hooks/pre-commit
	chmod +x .git/hooks/pre-commit
	# the work-tree check counts a file changed in the second the library starts as the
	# library's (ctime seconds, erring towards a refusal): the hook must be older than that
	local made
	made=$(stat -c %Z .git/hooks/pre-commit)
	while [ "$(date +%s)" -le "$made" ]; do :; done
	# a library that changed shape (fix_prompt renamed): refused before anything runs
	sed 's/^fix_prompt()/make_fix_prompt()/' "$WORK/phase-lib.sh" >"$WORK/changed-lib.sh"
	run --separate-stderr ap --library "$WORK/changed-lib.sh" --push origin -- --net none
	echo "$stderr"
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"does not have the contract's functions (missing: fix_prompt); refusing to run it half-wired"* ]]
	[ "$(git rev-parse HEAD)" = "$BASE" ]
	[ -z "$(ls .ran-* one.txt 2>/dev/null)" ]
	[ ! -e "$WORK/pass-count" ]
	# control: the library that implements the contract; it tries to redefine pi (read-only)
	run --separate-stderr env LIB_REDEFINE=1 "$AISB" autophase --library "$WORK/phase-lib.sh" --push origin -- --net none
	echo "$output"; echo "$stderr"
	[ "$status" -eq 0 ]
	[[ "$stderr" != *UNSHADOWED* ]] && [[ "$stderr" != *REDEFINED* ]]
	grep -qx "pi is read-only" "$WORK/lib-log"
	# the library's subjects, the driver's commits: host identity and the phase trailer
	[ "$(commits_since_base | tr '\n' ' ')" = "Host Person <host@example.test>|Host Person <host@example.test>|01-one|01-one Host Person <host@example.test>|Host Person <host@example.test>|02-two|02-two " ]
	[ "$(git show HEAD~1:one.txt)" = one ]
	[ -e .ran-note-01-one ] && [ -e .ran-note-02-two ]  # the shadowed first_prompt told the agent
	# the library's pi and run_validation went through the host launcher, one pass token each
	[ "$(cat "$WORK/pass-count")" -eq 4 ]
	[ "$(cat .ran-token-01-one)" = TOKEN_CANARY_1 ]
	[ "$(cat .ran-token-02-two)" = TOKEN_CANARY_3 ]
	[[ "$output$stderr" != *TOKEN_CANARY* ]] && [[ "$output$stderr" != *"pass show"* ]]
	[[ "$stderr" == *"push_phase: pushing"* ]]          # every push is aisb's
	[ "$(git -C "$WORK/bare.git" rev-parse main)" = "$(git rev-parse HEAD)" ]
	[ ! -e "$WORK/hook-ran" ]                           # the library's git ran no hook
	# a rerun: the trailers say both phases are delivered
	run ap --status
	[[ "$output" == *"01-one"*"delivered"* ]]
}

@test "autophase: --library: what a unit planted for git stops the library before its own commit; the library's own hook-like file is refused at delivery" {
	phase_lib
	# the agent plants a hook-like file (gitguard quarantines it in the unit's run)
	printf 'mkdir -p tools/hooks && printf "#!/bin/sh\\n" >tools/hooks/pre-commit && echo kept >tools/readme\n' \
		>.agents/plant
	git add .agents/plant
	git commit -q -m plant
	BASE=$(git rev-parse HEAD)
	run --separate-stderr ap --library "$WORK/phase-lib.sh" --push origin -- --net none
	echo "$stderr"
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"phase 01-one: refusing to deliver: a unit planted files for git, moved to '$XDG_STATE_HOME/aisb/quarantine/"* ]]
	[ "$(git rev-parse HEAD)" = "$BASE" ]
	[ ! -e "$WORK/lib-log" ]                            # the library never got past its first pi
	[ -z "$(git -C "$WORK/bare.git" for-each-ref)" ]
	# control: accepted by the user, the same library delivers what gitguard left in place
	rm -rf one.txt tools .ran-*
	run --separate-stderr ap --library "$WORK/phase-lib.sh" --push origin --trust-git-changes -- --net none
	echo "$stderr"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"a unit planted files for git"*"delivering anyway (--trust-git-changes)"* ]]
	[ "$(git show HEAD:tools/readme)" = kept ]
	[ -z "$(git ls-tree -r --name-only HEAD tools/hooks)" ]
	[ "$(git -C "$WORK/bare.git" rev-parse main)" = "$(git rev-parse HEAD)" ]
	# the library's own step on the host makes a hook-like file and commits it: its commit is not
	# delivered, the branch is put back, nothing pushed beyond what was delivered
	git rm -q -r tools .agents/plant && git commit -q -m "no plant" && rm -f "$WORK/lib-log"
	printf '# Three\n' >.agents/phases/03-three.md
	git add -A && git commit -q -m three
	BASE=$(git rev-parse HEAD)
	PUSHED=$(git -C "$WORK/bare.git" rev-parse main)
	run --separate-stderr env LIB_PLANT=1 "$AISB" autophase --library "$WORK/phase-lib.sh" --push origin -- --net none
	echo "$stderr"
	[ "$status" -eq 78 ]
	[[ "$stderr" == *"refusing to deliver: the library's work tree holds files for git made since it started"* ]]
	[[ "$stderr" == *"is back at ${BASE:0:12}"* ]]
	[ "$(git rev-parse HEAD)" = "$BASE" ]
	[ -z "$(git ls-tree -r --name-only HEAD tools)" ]
	[ ! -e tools/hooks/pre-commit ]                      # moved into the quarantine
	grep -qx "committed 03-three" "$WORK/lib-log" && ! grep -q "pushed" "$WORK/lib-log"
	[ "$(git -C "$WORK/bare.git" rev-parse main)" = "$PUSHED" ]
	# control: the same library without the plant delivers (the work tree is clean again first)
	git reset -q --hard "$BASE" && git clean -qfdx -e '.ran-*'
	run --separate-stderr ap --library "$WORK/phase-lib.sh" --push origin -- --net none
	echo "$stderr"
	[ "$status" -eq 0 ]
	[ "$(git log -1 --format=%s%n%b | sed '/^$/d' | tr '\n' ' ')" = "03-three Aisb-Phase: 03-three " ]
	[ "$(git -C "$WORK/bare.git" rev-parse main)" = "$(git rev-parse HEAD)" ]
}
