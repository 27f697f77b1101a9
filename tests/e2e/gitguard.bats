#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/gitguard.bats — issue 10, escape 2: host git must never run what the sandbox wrote.
#
# Each attack is performed for real inside the sandbox; afterwards a plain `git status`, `git
# diff` and `git log` (or the command that fires the planted code) run ON THE HOST, and the
# planted command must not have run (its marker file is absent) while the quarantine message
# names what was moved. The control of each attack is the same run with --writable-git, which
# only reports: there the same host git DOES run the planted command, so the probe is real.
# The last tests show ordinary git work inside reaches the host without any message.
# Inner commands are single-quoted on purpose: they expand inside the sandbox.
# shellcheck disable=SC2016
load lib/common
bats_require_minimum_version 1.5.0

load lib/gitguard

setup() {
	gitguard_setup
}

teardown() {
	common_teardown
}

# quarantined REL: the message names $PROJ/REL as moved, and the file is in the quarantine.
quarantined() {
	[[ "$output" == *"moved out of the way before any git could use"* ]] || { echo "no quarantine message"; return 1; }
	[[ "$output" == *"'$PROJ/$1'"* ]] || { echo "message does not name $1"; return 1; }
	[ ! -e "$PROJ/$1" ] || { echo "$1 still in place"; return 1; }
	compgen -G "$XDG_STATE_HOME/aisb/quarantine/*/project/$1" >/dev/null || { echo "$1 not in quarantine"; return 1; }
}

EVIL_CFG='printf "[core]\n\tfsmonitor = \"touch %s\"\n" "$MARK"'

@test "gitguard: a planted .git/commondir never reaches host git; --writable-git control runs it" {
	local script='mkdir evil && cp -r .git/objects .git/refs .git/HEAD evil/ && '"$EVIL_CFG"' >evil/config &&
		echo ../evil >.git/commondir && echo PLANTED'
	inside "$script"
	[ "$status" -eq 0 ]
	[[ "$output" == *PLANTED* ]]
	quarantined .git/commondir
	quarantined evil/config
	grep -q '"git_quarantined":2' "$XDG_STATE_HOME/aisb/sessions.log"
	[ "$(host_git)" = CLEAN ]
	git status --porcelain >/dev/null    # the repository is intact
	# control: left in place, the same plain host git runs it
	rm -rf evil
	inside "$script" --writable-git
	[[ "$output" == *"LEFT IN PLACE (--writable-git)"* ]]
	[[ "$output" == *"'$PROJ/.git/commondir'"* ]]
	[ "$(host_git)" = RAN ]
}

@test "gitguard: a submodule gitfile and a gitlink planted in the index never reach host git" {
	local script='mkdir sub && git init -q --bare evilsub &&
		printf "[core]\n\tbare = false\n\tfsmonitor = \"touch %s\"\n" "$MARK" >>evilsub/config &&
		git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),sub &&
		echo "gitdir: ../evilsub" >sub/.git && echo PLANTED'
	inside "$script"
	[[ "$output" == *PLANTED* ]]
	quarantined sub/.git
	quarantined evilsub/config
	[ "$(host_git)" = CLEAN ]
	# control
	rm -rf sub evilsub
	git rm -q --cached sub
	inside "$script" --writable-git
	[[ "$output" == *PLANTED* ]]
	[ "$(host_git)" = RAN ]
}

@test "gitguard: a real submodule's gitfile swapped inside is quarantined and git's own restored" {
	git init -q "$WORK/subsrc"
	git -C "$WORK/subsrc" commit -q --allow-empty -m s
	git -c protocol.file.allow=always submodule add -q "$WORK/subsrc" sub 2>/dev/null
	git commit -q -m sub
	local before script
	before=$(cat sub/.git)
	script='git init -q --bare evilsub &&
		printf "[core]\n\tbare = false\n\tfsmonitor = \"touch %s\"\n" "$MARK" >>evilsub/config &&
		echo "gitdir: ../evilsub" >sub/.git && echo PLANTED'
	inside "$script"
	[[ "$output" == *PLANTED* ]]
	[[ "$output" == *"'$PROJ/sub/.git'"*"back in place"* ]]
	[ "$(cat sub/.git)" = "$before" ]
	[ "$(host_git)" = CLEAN ]
	[ "$(git -C sub log --format=%s)" = s ]
	# control
	rm -rf evilsub
	inside "$script" --writable-git
	[ "$(host_git)" = RAN ]
}

@test "gitguard: a directory made unreadable inside is opened up, checked and its mode put back" {
	is_root && skip "root reads every directory: nothing needs opening up (gitguard-cut.bats runs the 0311 attack as root too)"
	inside 'mkdir -p hide/r && git init -q hide/r && '"$EVIL_CFG"' >>hide/r/.git/config && chmod 000 hide && echo HID'
	[[ "$output" == *HID* ]]
	[[ "$output" == *"1 directory made unreadable inside was opened up to be checked, and its mode put back"* ]]
	[[ "$output" == *"'$PROJ/hide/r/.git/config': sets core.fsmonitor"* ]]
	[ "$(stat -c %a hide)" = 0 ]
	chmod 755 hide
	[ "$(host_git "$PROJ/hide/r")" = CLEAN ]
	# control: readable, the same tree gives no message
	inside 'true'
	[[ "$output" != *"opened up"* ]]
}

@test "gitguard: an embedded repository added as a gitlink never reaches host git" {
	local script='git init -q sub && cd sub && git config core.fsmonitor "touch $MARK" &&
		git commit -q --allow-empty -m s && cd .. && git add sub 2>/dev/null && echo PLANTED'
	inside "$script"
	[[ "$output" == *PLANTED* ]]
	quarantined sub/.git/config
	[ "$(host_git)" = CLEAN ]
	# control
	rm -rf sub
	git rm -q --cached sub
	inside "$script" --writable-git
	[ "$(host_git)" = RAN ]
}

@test "gitguard: config.worktree with a filter for .git/info/attributes never reaches host git" {
	git config extensions.worktreeConfig true
	local script='printf "[filter \"evil\"]\n\tclean = \"touch %s; cat\"\n" "$MARK" >.git/config.worktree &&
		echo "f filter=evil" >.git/info/attributes && echo b >f && echo PLANTED'
	inside "$script"
	[[ "$output" == *PLANTED* ]]
	quarantined .git/config.worktree
	[ "$(host_git)" = CLEAN ]
	# control
	inside "$script" --writable-git
	[ "$(host_git)" = RAN ]
}

@test "gitguard: a linked worktree's metadata is read-only inside; git gc inside still works" {
	git worktree add -q "$WORK/wt" 2>/dev/null
	git -C "$WORK/wt" config extensions.worktreeConfig true
	inside 'echo /tmp/evil >.git/worktrees/wt/commondir && echo WROTE1
		mv .git/worktrees/wt .git/worktrees/aside && echo RENAMED
		'"$EVIL_CFG"' >.git/worktrees/wt/config.worktree && echo WROTE2
		git gc -q && echo GC'
	[[ "$output" != *WROTE1* && "$output" != *RENAMED* ]]
	[[ "$output" == *GC* ]]
	# a new config.worktree cannot be pinned (it did not exist): quarantined after the run
	[[ "$output" == *WROTE2* ]]
	quarantined .git/worktrees/wt/config.worktree
	[ "$(cat .git/worktrees/wt/commondir)" = ../.. ]
	[ "$(host_git "$WORK/wt")" = CLEAN ]
	git -C "$WORK/wt" status --porcelain >/dev/null
	# control: the same write where the run allows it
	inside 'echo ../.. >.git/worktrees/wt/commondir && echo WROTE1' --writable-git
	[[ "$output" == *WROTE1* ]]
}

@test "gitguard: planted alternates are quarantined; existing ones are read-only inside" {
	inside 'echo /tmp >.git/objects/info/alternates && echo PLANTED'
	[[ "$output" == *PLANTED* ]]
	quarantined .git/objects/info/alternates
	git log -1 >/dev/null
	# an alternates file the user has is pinned; control: --writable-git can write it
	echo "$WORK/other" >.git/objects/info/alternates
	inside 'echo /tmp >.git/objects/info/alternates && echo WROTE'
	[[ "$output" != *WROTE* ]]
	[ "$(cat .git/objects/info/alternates)" = "$WORK/other" ]
	inside 'echo /tmp >.git/objects/info/alternates && echo WROTE' --writable-git
	[[ "$output" == *WROTE* ]]
}

@test "gitguard: a project file the user's config includes, and core.hooksPath hooks, never reach host git" {
	echo "[user]" >.gitconfig-proj
	git config include.path ../.gitconfig-proj
	mkdir .githooks
	git config core.hooksPath .githooks
	local script=''"$EVIL_CFG"' >>.gitconfig-proj &&
		printf "#!/bin/sh\ntouch %s\n" "$MARK" >.githooks/pre-commit && chmod +x .githooks/pre-commit &&
		echo PLANTED'
	# make the two files old, as the user's own are
	project_aged
	inside "$script"
	[[ "$output" == *PLANTED* ]]
	quarantined .gitconfig-proj
	quarantined .githooks/pre-commit
	[ "$(host_git)" = CLEAN ]
	rm -f "$MARK"
	git commit -q --allow-empty -m x
	[ ! -e "$MARK" ]
	# control
	echo "[user]" >.gitconfig-proj
	inside "$script" --writable-git
	[ "$(host_git)" = RAN ]
}

@test "gitguard: a new repository where the user runs git next never reaches host git" {
	# The project is a subdirectory of the repository: the sandbox sees no .git and makes one.
	mkdir sub
	cd sub
	inside 'git init -q . && git config core.fsmonitor "touch $MARK" && echo PLANTED'
	[[ "$output" == *PLANTED* ]]
	[[ "$output" == *"'$PWD/.git/config'"* ]]
	[ "$(host_git "$PWD")" = CLEAN ]
	# control: a plain git init inside gives no message, and the new repository works
	rm -rf .git
	inside 'git init -q . && echo x >y && git add y && git commit -q -m y && echo MADE'
	[[ "$output" == *MADE* ]]
	[[ "$output" != *"the sandbox changed"* ]]
	[ "$(git log --format=%s)" = y ]
}

@test "gitguard: a hook staged in one run and renamed into place in the next never reaches host git" {
	inside 'git init -q x && mkdir x/.git/stage && printf "#!/bin/sh\ntouch %s\n" "$MARK" >x/.git/stage/post-commit &&
		chmod +x x/.git/stage/post-commit && echo STAGED'
	[[ "$output" == *STAGED* ]]
	[[ "$output" != *"the sandbox changed"* ]]    # not a hook yet: nothing to say
	project_aged                                   # run 2 starts a second later: the file is old
	local script='rm -rf x/.git/hooks && mv x/.git/stage x/.git/hooks && echo MOVED'
	inside "$script"
	[[ "$output" == *MOVED* ]]
	quarantined x/.git/hooks/post-commit
	rm -f "$MARK"
	git -C x commit -q --allow-empty -m x
	[ ! -e "$MARK" ]
	# control: the same two steps, left in place, run on the host
	rm -rf x
	inside 'git init -q x && mkdir x/.git/stage && printf "#!/bin/sh\ntouch %s\n" "$MARK" >x/.git/stage/post-commit &&
		chmod +x x/.git/stage/post-commit'
	project_aged
	inside "$script" --writable-git
	[[ "$output" == *"LEFT IN PLACE (--writable-git)"*"/x/.git/hooks/post-commit'"* ]]
	git -C x commit -q --allow-empty -m x
	[ -e "$MARK" ]
}

@test "gitguard: control: commits, branches, tags, add, stash and gc inside reach the host without a message" {
	inside 'echo b >f && git add f && git commit -q -m second && git branch feature &&
		git tag v1 && echo c >f && git stash -q && git checkout -q -b topic && git gc -q &&
		git stash pop -q && git add f && echo DONE'
	[ "$status" -eq 0 ]
	[[ "$output" == *DONE* ]]
	[[ "$output" != *"the sandbox changed"* ]]
	[[ "$output" != *quarantine* ]]
	[ "$(git log --format=%s -1 master)" = second ]
	git rev-parse -q --verify refs/heads/feature >/dev/null
	git rev-parse -q --verify refs/tags/v1 >/dev/null
	[ "$(git branch --show-current)" = topic ]
	[ "$(git diff --cached --name-only)" = f ]
	[ ! -e "$XDG_STATE_HOME/aisb/quarantine" ]
	run grep -c git_quarantined "$XDG_STATE_HOME/aisb/sessions.log"
	[ "$output" = 0 ]
	[ "$(host_git)" = CLEAN ]
}

@test "gitguard: a git config mounted read-write as a single file is judged after the run" {
	echo "[user]" >"$WORK/gitconfig"
	inside "$EVIL_CFG"' >>/cfg && echo PLANTED' --mount "$WORK/gitconfig:/cfg:rw"
	[[ "$output" == *PLANTED* ]]
	[[ "$output" == *"'$WORK/gitconfig': sets core.fsmonitor"* ]]
	[ ! -e "$WORK/gitconfig" ]
	# control: an ordinary file mounted the same way is left alone
	echo data >"$WORK/data.txt"
	inside 'echo more >>/d && echo WROTE' --mount "$WORK/data.txt:/d:rw"
	[[ "$output" == *WROTE* ]]
	[[ "$output" != *"the sandbox changed"* ]]
	[ "$(cat "$WORK/data.txt")" = "data
more" ]
}

@test "mount: a symlink a sandbox planted in a --mount source is never followed by the next run" {
	mkdir -p "$WORK/secretdir" data
	echo SECRET >"$WORK/secretdir/canary"
	# run 1: the sandbox replaces its rw mount's host directory by a symlink to the secret dir
	# (through the project, which holds it)
	inside 'rmdir data && ln -s '"$WORK/secretdir"' data && echo SWAPPED' --mount "$PROJ/data:/data"
	[[ "$output" == *SWAPPED* ]]
	[ -L data ]
	# run 2, the same flag: refused, naming the link and the fix
	run sb --mount "$PROJ/data:/data" -- cat /data/canary
	[ "$status" -eq 78 ]
	[[ "$output" != *SECRET* ]]
	[[ "$output" == *"'$PROJ/data' is a symlink in a directory you can write"* ]]
	[[ "$output" == *"name the real path"* ]]
	# control: the real path, named, is mounted
	run sb --mount "$WORK/secretdir:/data:ro" -- cat /data/canary
	[ "$status" -eq 0 ]
	[ "$output" = SECRET ]
}

@test "mount: --env-file and --mount share the rule: symlinks only where no sandbox could write" {
	printf 'V=1\n' >"$WORK/env"
	chmod 600 "$WORK/env"
	ln -s "$WORK/env" envlink
	run sb --env-file "$PROJ/envlink" -- true
	[ "$status" -eq 78 ]
	[[ "$output" == *"--env-file '$PROJ/envlink': '$PROJ/envlink' is a symlink"* ]]
	run sb --env-file "$WORK/env" -- sh -c 'echo "V=$V"'    # control: the real path
	[ "$status" -eq 0 ]
	[ "$output" = V=1 ]
	# a system symlink (/lib -> usr/lib on merged-/usr Debian) lives in a directory only root can
	# write: followed for an ordinary caller; never for root, whose sandboxes may write anything
	require_feature "merged-/usr /lib symlink" test -L /lib
	run sb --mount /lib:/l:ro -- test -d /l/x86_64-linux-gnu
	if is_root; then
		[ "$status" -eq 78 ]
		[[ "$output" == *"'/lib' is a symlink"* ]]
		run sb --mount /usr/lib:/l:ro -- test -d /l/x86_64-linux-gnu    # control for root
	fi
	[ "$status" -eq 0 ]
}
