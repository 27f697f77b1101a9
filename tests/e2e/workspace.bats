#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/workspace.bats — issue 15: `--workspace clone`, the validated import, `aisb import`,
# ps/inspect/clean of workspaces. Real git on both sides.
#
# The sandbox works on its own clone; what it commits comes back rebuilt as branch aisb/<id>.
# Each forgery is made for real inside the sandbox; the forged bundles reach the host through
# the export sandbox the way a hostile clone can arrange it (its .git/config names a
# core.fsmonitor command, which the export's `git status` runs, and which drops a bundle of the
# sandbox's making into the export's output). Every refusal has a control that goes through
# the same path and is imported.
# Inner commands are single-quoted on purpose: they expand inside the sandbox.
# shellcheck disable=SC2016
load lib/common
bats_require_minimum_version 1.5.0

setup() {
	common_setup
	require_feature git command -v git
	export GIT_AUTHOR_NAME=Host GIT_AUTHOR_EMAIL=host@example.com
	export GIT_COMMITTER_NAME=Host GIT_COMMITTER_EMAIL=host@example.com
	git init -q -b main .
	echo one >tracked
	git add tracked
	git commit -q -m init
	BASE=$(git rev-parse HEAD)
	MARK="$WORK/pwned"
}

teardown() {
	common_teardown
}

# clone_run [AISB FLAGS...] -- SCRIPT: a --workspace clone run of SCRIPT.
clone_run() {
	local args=()
	while [ "$1" != -- ]; do
		args+=("$1")
		shift
	done
	shift
	run sb --workspace clone "${args[@]}" -- sh -c "$1"
}

# imported: the one aisb/* branch (its short name), or nothing.
imported() {
	git for-each-ref --format='%(refname:short)' 'refs/heads/aisb/*'
}

# ws_ids: the ids of the workspaces in the state dir
ws_ids() {
	local d
	for d in "$XDG_STATE_HOME"/aisb/workspaces/*/; do
		[ -d "$d" ] || continue
		d=${d%/}
		echo "${d##*/}"
	done
}

# host_state: HEAD, the checked-out branch, the index's checksum and the porcelain status
# (with GIT_OPTIONAL_LOCKS=0, so that measuring does not refresh the index).
host_state() {
	git symbolic-ref HEAD
	git rev-parse HEAD
	sha256sum .git/index
	GIT_OPTIONAL_LOCKS=0 git status --porcelain --untracked-files=all
	git stash list
}

# forge BUNDLE_SCRIPT: inside, leaves HEAD at the base, writes the bundle BUNDLE_SCRIPT makes
# (with $base set) to .git/forged.bundle and plants the fsmonitor command that hands it to the
# export.
FORGE_TAIL='git config core.fsmonitor "cp '"/aisb-export/repo/.git/forged.bundle /aisb-export/out/export.bundle; true"'" && echo FORGED'

@test "workspace: a clone run's commits come back as aisb/<id>; host worktree, index and branch untouched" {
	echo local-edit >>tracked            # uncommitted host work, tracked ...
	echo untracked >host-only.txt        # ... and untracked
	git config aisb.marker host-config-only
	local before after
	before=$(host_state)
	clone_run -- '
		test ! -e host-only.txt || { echo SAW-UNTRACKED; exit 1; }
		grep -q local-edit tracked && { echo SAW-WORKTREE; exit 1; }
		git config aisb.marker && { echo SAW-HOST-CONFIG; exit 1; }
		test "$(git rev-parse --show-toplevel)" = "$PWD" || exit 1
		echo new >added && git add added && git commit -q -m "agent: add" &&
		echo two >>tracked && git commit -q -am "agent: edit" && echo DONE'
	[ "$status" -eq 0 ]
	[[ "$output" == *DONE* ]]
	[[ "$output" == *"imported 2 commit(s) of session"* ]]
	after=$(host_state)
	[ "$before" = "$after" ]
	local br
	br=$(imported)
	[[ "$br" == aisb/* ]]
	# rebuilt on the recorded base, with the host's identity, in order
	[ "$(git rev-list --count "$BASE..$br")" -eq 2 ]
	[ "$(git rev-parse "$br~2")" = "$BASE" ]
	[ "$(git log -1 --format=%s "$br")" = "agent: edit" ]
	[ "$(git log -1 --format='%an <%ae>|%cn <%ce>' "$br")" = "Host <host@example.com>|Host <host@example.com>" ]
	git log -1 --format=%B "$br" | grep -q "^Aisb-Session: ${br#aisb/}$"
	[ "$(git show "$br:added")" = new ]
	git fsck --strict --no-dangling >/dev/null 2>&1
	# nothing left to import: the workspace is gone
	[ ! -e "$XDG_STATE_HOME/aisb/workspaces/${br#aisb/}" ]
}

@test "workspace: a project that borrows objects (git clone --shared) is fetched into the workspace and imports too" {
	git clone -q --shared "$PROJ" "$WORK/shared"
	cd "$WORK/shared"
	[ -s .git/objects/info/alternates ]
	clone_run -- 'test ! -e .git/objects/info/alternates && git log --oneline | grep -q init && echo x >x && git add x && git commit -q -m x'
	[ "$status" -eq 0 ]
	[ "$(git log -1 --format=%s "$(imported)")" = x ]
}

@test "workspace: the bind mode (control) shows the same host files the clone hides" {
	echo local-edit >>tracked
	echo untracked >host-only.txt
	run sb -- sh -c 'test -e host-only.txt && grep -q local-edit tracked && echo SAW-BOTH'
	[ "$status" -eq 0 ]
	[[ "$output" == *SAW-BOTH* ]]
}

@test "workspace: a wrong author and a signature are rewritten; the sandbox's commit object is not imported" {
	clone_run -- '
		echo x >f && git add f &&
		tree=$(git write-tree) &&
		c=$( { printf "tree %s\nparent %s\nauthor Evil <evil@example.org> 1 +0000\ncommitter Evil <evil@example.org> 1 +0000\n" "$tree" "$(git rev-parse HEAD)";
		       printf "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\nforged\n"; } |
		     git hash-object -t commit -w --stdin) &&
		git update-ref HEAD "$c" && git cat-file commit HEAD | grep -c "^gpgsig" && echo SANDBOX=$c'
	[ "$status" -eq 0 ]
	[[ "$output" == *SANDBOX=* ]]
	local sandbox_commit br
	sandbox_commit=$(sed -n 's/.*SANDBOX=\([0-9a-f]*\).*/\1/p' <<<"$output")
	br=$(imported)
	[ -n "$br" ]
	[ "$(git rev-parse "$br")" != "$sandbox_commit" ]
	run git cat-file -e "$sandbox_commit"    # not even the object came over
	[ "$status" -ne 0 ]
	[ "$(git log -1 --format='%an <%ae> %at' "$br")" != "Evil <evil@example.org> 1" ]
	[ "$(git log -1 --format='%an <%ae>' "$br")" = "Host <host@example.com>" ]
	[ "$(git cat-file commit "$br" | grep -c '^gpgsig')" -eq 0 ]
	[ "$(git log -1 --format=%s "$br")" = forged ]
	[ "$(git show "$br:f")" = x ]
}

@test "workspace: a merge (extra parent) is refused and the workspace kept; a line of commits (control) is imported" {
	local canary=aisb-canary-$RANDOM$RANDOM
	clone_run --env CANARY="$canary" -- '
		test -n "$CANARY" || exit 9
		git checkout -q -b side && echo s >s && git add s && git commit -q -m side &&
		git checkout -q main && echo m >m && git add m && git commit -q -m main &&
		git merge -q --no-edit side && echo MERGED'
	[ "$status" -eq 125 ]
	[[ "$output" == *MERGED* ]]
	[[ "$output" == *"more than one parent"* ]]
	# the value passed in appears in no output and nowhere in the state dir (workspace.json, export log)
	[[ "$output" != *"$canary"* ]]
	run grep -rlF "$canary" "$XDG_STATE_HOME/aisb" --exclude-dir=repo
	[ "$status" -eq 1 ]
	[ -z "$(imported)" ]
	local id
	id=$(ws_ids)
	[ -d "$XDG_STATE_HOME/aisb/workspaces/$id/repo/.git" ]
	run "$AISB" ps
	[[ "$output" == *"$id"*refused* ]]
	run "$AISB" inspect "$id"
	[ "$status" -eq 0 ]
	[[ "$output" == *"workspace:"* ]]
	[[ "$output" == *"$BASE"* ]]
	# its session dir is gone; completion still offers the id to aisb import
	run "$AISB" __complete import ''
	[[ "$output" == *"$id"* ]]
	# control: two commits in a line, same run otherwise
	clone_run -- 'echo s >s && git add s && git commit -q -m one && echo m >m && git add m && git commit -q -m two'
	[ "$status" -eq 0 ]
	[ "$(git rev-list --count "$BASE..$(imported)")" -eq 2 ]
}

@test "workspace: a forged bundle reaching an object outside it (a host-only blob) is refused; a whole one (control) is imported" {
	# a blob only a host branch reaches; the forger's pack leaves it out, the host's store has it
	git checkout -q -b secret
	echo topsecret >s
	git add s
	git commit -q -m secret
	git checkout -q main
	local S
	S=$(git rev-parse secret:s)
	clone_run --env S="$S" -- '
		base=$(git rev-parse HEAD) &&
		t=$(printf "100644 blob %s\tleak\n" "$S" | git mktree --missing) &&
		c=$(git commit-tree "$t" -p "$base" -m leak) &&
		{ printf "# v2 git bundle\n-%s\n%s refs/heads/aisb-export\n\n" "$base" "$c";
		  printf "%s\n%s\n" "$c" "$t" | git pack-objects --stdout -q; } >.git/forged.bundle && '"$FORGE_TAIL"
	[[ "$output" == *FORGED* ]]
	[ "$status" -eq 125 ]
	[[ "$output" == *"object $S that the sandbox's commits reach is not in the bundle"* ]]
	[ -z "$(imported)" ]
	# control: the same forgery with every object inside the bundle goes through (so the
	# forgery does reach the host's checks)
	clone_run -- '
		base=$(git rev-parse HEAD) && b=$(echo forged-content | git hash-object -w --stdin) &&
		t=$(printf "100644 blob %s\tleak\n" "$b" | git mktree) &&
		c=$(git commit-tree "$t" -p "$base" -m leak) &&
		{ printf "# v2 git bundle\n-%s\n%s refs/heads/aisb-export\n\n" "$base" "$c";
		  printf "%s\n%s\n%s\n" "$c" "$t" "$b" | git pack-objects --stdout -q; } >.git/forged.bundle && '"$FORGE_TAIL"
	[ "$status" -eq 0 ]
	[ "$(git show "$(imported):leak")" = forged-content ]
}

@test "workspace: a forged bundle on another base or with other refs is refused; the honest export (control) passes" {
	clone_run -- '
		base=$(git rev-parse HEAD) && echo x >x && git add x && git commit -q -m x && c=$(git rev-parse HEAD) &&
		git update-ref HEAD "$base" &&
		{ printf "# v2 git bundle\n-%s\n%s refs/heads/aisb-export\n%s refs/heads/main\n\n" "$base" "$c" "$c";
		  printf "%s\n^%s\n" "$c" "$base" | git pack-objects --revs --stdout -q; } >.git/forged.bundle && '"$FORGE_TAIL"
	[ "$status" -eq 125 ]
	[[ "$output" == *"refs other than refs/heads/aisb-export"* ]]
	clone_run -- '
		echo x >x && git add x && git commit -q -m x && c=$(git rev-parse HEAD) && git update-ref HEAD HEAD~1 &&
		{ printf "# v2 git bundle\n-%s\n%s refs/heads/aisb-export\n\n" "$c" "$c";
		  printf "%s\n" "$c" | git pack-objects --revs --stdout -q; } >.git/forged.bundle && '"$FORGE_TAIL"
	[ "$status" -eq 125 ]
	[[ "$output" == *"needs objects other than the base"* ]]
	[ -z "$(imported)" ]
	clone_run -- 'echo x >x && git add x && git commit -q -m x'
	[ "$status" -eq 0 ]
	[ -n "$(imported)" ]
}

@test "workspace: a forged bundle with a malformed commit fails index-pack --strict; the same commit well-formed (control) is imported" {
	local make='base=$(git rev-parse HEAD) && t=$(git rev-parse "HEAD^{tree}") &&
		c=$(printf "tree %s\nparent %s\nauthor Evil <evil@example.org> %s\ncommitter Evil <evil@example.org> 1 +0000\n\nodd\n" \
			"$t" "$base" "$DATE" | git hash-object -t commit -w --literally --stdin) &&
		{ printf "# v2 git bundle\n-%s\n%s refs/heads/aisb-export\n\n" "$base" "$c";
		  printf "%s\n" "$c" | git pack-objects --stdout -q; } >.git/forged.bundle && '"$FORGE_TAIL"
	clone_run --env DATE="not-a-date" -- "$make"
	[[ "$output" == *FORGED* ]]
	[ "$status" -eq 125 ]
	[[ "$output" == *"index-pack --strict refused"* ]]
	[ -z "$(imported)" ]
	clone_run --env DATE="1 +0000" -- "$make"
	[ "$status" -eq 0 ]
	[ "$(git log -1 --format=%s "$(imported)")" = odd ]
}

@test "workspace: a commit whose tree holds a .git entry is refused by the strict checks; the same tree under another name (control) is imported" {
	local make='h=$(printf "#!/bin/sh\ntouch /tmp/x\n" | git hash-object -w --stdin) &&
		hooks=$(printf "100755 blob %s\tpost-checkout\n" "$h" | git mktree) &&
		dir=$(printf "040000 tree %s\thooks\n" "$hooks" | git mktree) &&
		t=$( { git ls-tree HEAD; printf "040000 tree %s\t%s\n" "$dir" "$NAME"; } | git mktree) &&
		c=$(git commit-tree "$t" -p HEAD -m planted) && git update-ref HEAD "$c" && echo PLANTED'
	clone_run --env NAME=.git -- "$make"
	[[ "$output" == *PLANTED* ]]
	[ "$status" -eq 125 ]
	[[ "$output" == *"refused"* ]]
	[[ "$output" == *"hasDotgit"* ]]
	[ -z "$(imported)" ]
	clone_run --env NAME=dotgit -- "$make"
	[ "$status" -eq 0 ]
	[ -n "$(git rev-parse "$(imported):dotgit/hooks/post-checkout")" ]
}

@test "workspace: hooks and config planted in the clone never run on the host; run by host git in the clone (control) they do" {
	clone_run --keep --env MARK="$MARK" -- '
		printf "#!/bin/sh\ntouch %s\n" "$MARK" >.git/hooks/pre-commit &&
		cp .git/hooks/pre-commit .git/hooks/post-checkout && cp .git/hooks/pre-commit .git/hooks/reference-transaction &&
		chmod +x .git/hooks/* &&
		git config core.fsmonitor "touch $MARK" &&
		echo x >x && git add x && git -c core.hooksPath=/dev/null commit -q -m x && echo PLANTED'
	[ "$status" -eq 0 ]
	[[ "$output" == *PLANTED* ]]
	[ ! -e "$MARK" ]
	local br id
	br=$(imported)
	id=${br#aisb/}
	[ -n "$br" ]
	# the user's next git commands on the host: nothing planted runs
	git status >/dev/null
	git checkout -q "$br" && git checkout -q main
	git commit -q --allow-empty -m host
	[ ! -e "$MARK" ]
	# again with aisb import (the export, the rebuild and the publication run again)
	run "$AISB" import "$id" --target "again-$id"
	[ "$status" -eq 0 ]
	[ ! -e "$MARK" ]
	# control: the same hooks are real: host git run in the kept clone fires them
	(cd "$XDG_STATE_HOME/aisb/workspaces/$id/repo" && git status >/dev/null 2>&1 && git commit -q --allow-empty -m y) || true
	[ -e "$MARK" ]
}

@test "workspace: the host's own hooks and fsmonitor stay off during an import; plain host git (control) runs them" {
	printf '#!/bin/sh\ntouch %s\n' "$MARK" >.git/hooks/reference-transaction
	cp .git/hooks/reference-transaction .git/hooks/post-checkout
	chmod +x .git/hooks/*
	git config core.fsmonitor "touch $MARK"
	clone_run --target current -- 'echo x >x && git add x && git commit -q -m x'
	[ "$status" -eq 0 ]
	[ "$(git log -1 --format=%s)" = x ]
	[ ! -e "$MARK" ]
	git update-ref refs/heads/probe HEAD
	[ -e "$MARK" ]
}

@test "workspace: --target current fast-forwards the checked-out branch and its worktree" {
	clone_run --target current -- 'echo x >x && git add x && git commit -q -m x && echo y >>tracked && git commit -q -am y'
	[ "$status" -eq 0 ]
	[ "$(git symbolic-ref HEAD)" = refs/heads/main ]
	[ "$(git rev-list --count "$BASE..main")" -eq 2 ]
	[ "$(cat x)" = x ]
	[ "$(tail -n1 tracked)" = y ]
	[ -z "$(git status --porcelain)" ]
	[ -z "$(imported)" ]
	[ -z "$(git for-each-ref 'refs/aisb-recovery/*')" ]
}

@test "workspace: from a linked worktree, --target current moves that worktree's branch only; aisb/<id> (control) moves nothing checked out" {
	git worktree add -q "$WORK/wt" -b feature
	cd "$WORK/wt"
	# a branch checked out in the other worktree is never a --target, even where it could move
	clone_run --target main -- 'echo v >v && git add v && git commit -q -m v'
	[ "$status" -eq 125 ]
	[[ "$output" == *"checked out in a worktree"* ]]
	[ "$(git -C "$PROJ" rev-parse main)" = "$BASE" ]
	clone_run --target current -- 'echo w >w && git add w && git commit -q -m w'
	[ "$status" -eq 0 ]
	[ "$(git symbolic-ref HEAD)" = refs/heads/feature ]
	[ "$(cat w)" = w ]
	[ "$(git -C "$PROJ" rev-parse main)" = "$BASE" ]
	[ ! -e "$PROJ/w" ]
	clone_run -- 'echo v >v && git add v && git commit -q -m v'
	[ "$status" -eq 0 ]
	[ "$(git log -1 --format=%s "$(imported)")" = v ]
}

@test "workspace: --target current refuses when the host branch was rewritten or tracked files are dirty; the unmoved branch (control) fast-forwards" {
	clone_run --keep -- 'echo x >x && git add x && git commit -q -m x'
	[ "$status" -eq 0 ]
	local id
	id=$(imported)
	id=${id#aisb/}
	# the host branch is rewritten meanwhile: its tip no longer contains the base
	git checkout -q --orphan tmp
	git commit -q -m "rewritten root"
	git branch -q -f main tmp
	git checkout -q main
	git branch -q -D tmp
	local moved
	moved=$(git rev-parse main)
	run "$AISB" import "$id" --target current
	[ "$status" -eq 78 ]
	[[ "$output" == *"was rewritten since the sandbox started"* ]]
	[ "$(git rev-parse main)" = "$moved" ]
	[ ! -e x ]
	# dirty tracked files
	git reset -q --hard "$BASE"
	echo dirty >>tracked
	run "$AISB" import "$id" --target current
	[ "$status" -eq 78 ]
	[[ "$output" == *"uncommitted changes to tracked files"* ]]
	[ "$(git rev-parse main)" = "$BASE" ]
	# control: clean and where it started
	git checkout -q -- tracked
	run "$AISB" import "$id" --target current
	[ "$status" -eq 0 ]
	[ "$(git rev-list --count "$BASE..main")" -eq 1 ]
	[ "$(cat x)" = x ]
	[[ "$output" != *rebased* ]]
}

# moved_setup: a kept workspace (its commits: x added, a line appended to tracked) whose host
# branch then moves by one commit of the host's, which edits FILE (default: adds hostfile).
# Sets ID and MOVED.
moved_setup() {
	# hooks and an fsmonitor planted in the clone: they would run if host git ran there
	clone_run --keep -- 'echo x >x && git add x && git commit -q -m "agent: x" && echo agent >>tracked && git commit -q -am "agent: tracked" &&
		mkdir -p .git/hooks && for h in post-rewrite post-checkout post-commit pre-commit; do printf "#!/bin/sh\ntouch '"$MARK"'\n" >.git/hooks/$h; chmod +x .git/hooks/$h; done &&
		git config core.fsmonitor "touch '"$MARK"'; true"'
	[ "$status" -eq 0 ]
	ID=$(imported)
	ID=${ID#aisb/}
	git branch -q -D "aisb/$ID"
	if [ "${1:-}" = tracked ]; then
		echo host >>tracked
		git commit -q -am "host: tracked"
	else
		echo host >hostfile
		git add hostfile
		git commit -q -m "host: hostfile"
	fi
	MOVED=$(git rev-parse main)
}

@test "workspace: a moved host branch: --target current rebases the commits onto its tip (in the export sandbox) and fast-forwards; host history intact" {
	moved_setup
	local host_commit
	host_commit=$(git cat-file commit "$MOVED" | sha256sum)
	run "$AISB" import "$ID" --target current
	[ "$status" -eq 0 ]
	[[ "$output" == *"rebased onto the moved branch main"* ]]
	# the host's commit is kept as it was, the sandbox's two are on top of it, rebuilt
	[ "$(git rev-list --count "$MOVED..main")" -eq 2 ]
	[ "$(git rev-parse main~2)" = "$MOVED" ]
	[ "$(git cat-file commit "$MOVED" | sha256sum)" = "$host_commit" ]
	[ "$(git rev-parse "$MOVED~1")" = "$BASE" ]
	[ "$(git log --format=%s "$MOVED..main" | tr '\n' '|')" = "agent: tracked|agent: x|" ]
	[ "$(git log -1 --format='%an <%ae>|%cn <%ce>' main)" = "Host <host@example.com>|Host <host@example.com>" ]
	git log -1 --format=%B main | grep -q "^Aisb-Session: $ID$"
	[ "$(cat x)" = x ]
	[ "$(cat hostfile)" = host ]
	[ "$(printf 'one\nagent\n')" = "$(cat tracked)" ]
	[ -z "$(git status --porcelain)" ]
	[ -z "$(git for-each-ref 'refs/aisb-recovery/*')" ]
	git fsck --strict --no-dangling >/dev/null 2>&1
	# nothing planted in the clone ran on the host; the host's pack for the export is gone
	[ ! -e "$MARK" ]
	[ ! -e "$XDG_STATE_HOME/aisb/workspaces/$ID/onto" ]
}

@test "workspace: the host branch moves while a --target current run is live: its end-of-run import rebases onto it; unmoved (control) fast-forwards from the base" {
	mkdir "$WORK/sig"
	# the sandbox commits, says so through a mounted directory, and waits for the host's move
	sb --workspace clone --target current --mount "$WORK/sig:/sig:rw" -- sh -c '
		echo x >x && git add x && git commit -q -m "agent: x" && touch /sig/committed &&
		while [ ! -e /sig/go ]; do sleep 0.1; done' >"$WORK/log" 2>&1 &
	local pid=$! moved
	while [ ! -e "$WORK/sig/committed" ] && kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	[ -e "$WORK/sig/committed" ]
	echo host >hostfile
	git add hostfile
	git commit -q -m "host: during the run"
	moved=$(git rev-parse main)
	touch "$WORK/sig/go"
	wait "$pid"
	grep -q "rebased onto the moved branch main" "$WORK/log"
	[ "$(git rev-parse main~1)" = "$moved" ]
	[ "$(git log -1 --format=%s main)" = "agent: x" ]
	[ "$(cat x)" = x ]
	[ "$(cat hostfile)" = host ]
	[ -z "$(git status --porcelain)" ]
	# control: nobody moves the branch, the run fast-forwards from its base as before
	local base2
	base2=$(git rev-parse main)
	clone_run --target current -- 'echo z >z && git add z && git commit -q -m z'
	[ "$status" -eq 0 ]
	[[ "$output" != *rebased* ]]
	[ "$(git rev-parse main~1)" = "$base2" ]
}

@test "workspace: a moved host branch: import --rebase puts a new branch on its tip; without --rebase (control) it stays on the base" {
	moved_setup
	run "$AISB" import "$ID" --target onbase
	[ "$status" -eq 0 ]
	[[ "$output" != *rebased* ]]
	[ "$(git rev-parse onbase~2)" = "$BASE" ]
	run "$AISB" import "$ID" --target rebased --rebase
	[ "$status" -eq 0 ]
	[[ "$output" == *"rebased onto the moved branch main"* ]]
	[ "$(git rev-parse rebased~2)" = "$MOVED" ]
	[ "$(git show rebased:hostfile)" = host ]
	[ "$(git show rebased:x)" = x ]
	# the checked-out branch and worktree are not touched by a branch target
	[ "$(git rev-parse main)" = "$MOVED" ]
	[ ! -e x ]
}

@test "workspace: a moved host branch whose commit conflicts: refused naming the file, branch, worktree and workspace intact; unmoved (control) fast-forwards" {
	moved_setup tracked
	local before
	before=$(host_state)
	run "$AISB" import "$ID" --target current
	[ "$status" -eq 78 ]
	[[ "$output" == *"does not apply on it: conflict in tracked"* ]]
	[[ "$output" == *"the workspace is kept"* ]]
	[ "$(host_state)" = "$before" ]
	[ "$(git rev-parse main)" = "$MOVED" ]
	[ -z "$(git for-each-ref 'refs/aisb-recovery/*' 'refs/heads/aisb/*')" ]
	"$AISB" inspect "$ID" | grep -q 'state:    refused: .*conflict in tracked'
	# the same refusal for a branch target with --rebase, which creates nothing
	run "$AISB" import "$ID" --target rebased --rebase
	[ "$status" -eq 78 ]
	[[ "$output" == *"conflict in tracked"* ]]
	run git rev-parse -q --verify rebased
	[ "$status" -ne 0 ]
	# nothing of the sandbox's work was lost: the workspace still imports on the old base ...
	run "$AISB" import "$ID" --target kept
	[ "$status" -eq 0 ]
	[ "$(git rev-parse kept~2)" = "$BASE" ]
	[ "$(git show kept:tracked)" = "$(printf 'one\nagent')" ]
	# ... and (control) with the host branch back where the sandbox started, fast-forwards
	git reset -q --hard "$BASE"
	run "$AISB" import "$ID" --target current
	[ "$status" -eq 0 ]
	[[ "$output" != *rebased* ]]
	[ "$(git rev-parse main~2)" = "$BASE" ]
	[ "$(cat x)" = x ]
}

@test "workspace: a moved host branch and a sandbox merge: the rebase is refused naming the merge; a line (control) is rebased" {
	clone_run --keep -- 'git checkout -q -b side && echo s >s && git add s && git commit -q -m s &&
		git checkout -q main && echo m >m && git add m && git commit -q -m m && git merge -q --no-edit side'
	[ "$status" -eq 125 ]
	local id
	id=$(ws_ids)
	git commit -q --allow-empty -m "host moved"
	run "$AISB" import "$id" --target current
	[ "$status" -eq 78 ]
	[[ "$output" == *"is a merge or a new root"* ]]
	[ ! -e m ]
	# control: a line of commits on the same moved branch
	moved_setup
	run "$AISB" import "$ID" --target current
	[ "$status" -eq 0 ]
	[[ "$output" == *rebased* ]]
}

@test "workspace: a moved host branch that committed a file copied in as untracked keeps the host's version; unmoved (control) the file stays out" {
	echo notes >notes.txt
	clone_run --untracked copy --keep -- 'test -e notes.txt && echo sandbox >>notes.txt && git add -f notes.txt && echo y >y && git add y && git commit -q -m y'
	[ "$status" -eq 0 ]
	local id
	id=$(imported)
	id=${id#aisb/}
	# control: on the unmoved base, the copied file is left out of the imported tree
	run git cat-file -e "aisb/$id:notes.txt"
	[ "$status" -ne 0 ]
	git branch -q -D "aisb/$id"
	# the host commits its untracked file meanwhile: the rebased import must not delete it
	git add notes.txt
	git commit -q -m "host: notes"
	run "$AISB" import "$id" --target current
	[ "$status" -eq 0 ]
	[[ "$output" == *rebased* ]]
	[ "$(git show main:notes.txt)" = notes ]
	[ "$(cat notes.txt)" = notes ]
	[ "$(git show main:y)" = y ]
	[ -z "$(git status --porcelain)" ]
}

@test "workspace: --target current that cannot update the worktree sets the branch back and keeps refs/aisb-recovery/<id>; without the obstacle (control) it fast-forwards" {
	echo host-untracked >x     # untracked on the host; the sandbox adds a tracked x
	clone_run --target current --keep -- 'echo sandbox >x && git add x && git commit -q -m x'
	[ "$status" -eq 125 ]
	[[ "$output" == *"updating the worktree failed"* ]]
	[[ "$output" == *"was set back"* ]]
	[ "$(git rev-parse main)" = "$BASE" ]
	[ "$(cat x)" = host-untracked ]
	local rec id
	rec=$(git for-each-ref --format='%(refname)' 'refs/aisb-recovery/*')
	[ -n "$rec" ]
	[ "$(git show "$rec:x")" = sandbox ]
	id=${rec#refs/aisb-recovery/}
	# control: the obstacle gone, the same import fast-forwards
	rm x
	run "$AISB" import "$id" --target current
	[ "$status" -eq 0 ]
	[ "$(cat x)" = sandbox ]
	[ "$(git rev-list --count "$BASE..main")" -eq 1 ]
	[ -z "$(git for-each-ref 'refs/aisb-recovery/*')" ]
}

# review_commits: the sandbox's work for the --review tests: an ordinary edit, files in an
# existing directory, and one path of each kind the review names.
REVIEW_WORK='echo two >>tracked && echo b >src/b.c &&
	mkdir -p .github/workflows newdir .husky && echo ci >.github/workflows/ci.yml && echo f >newdir/f &&
	printf "#!/bin/sh\n" >.husky/pre-commit && chmod +x .husky/pre-commit &&
	printf "#!/bin/sh\n" >src/run.sh && chmod +x src/run.sh && echo "*.c filter=x" >.gitattributes &&
	git add -A && git commit -q -m "agent: review me" && echo c >>src/a.c && git commit -q -am "agent: second"'

review_setup() {
	mkdir src
	echo a >src/a.c
	git add src
	git commit -q -m src
	BASE=$(git rev-parse HEAD)
}

@test "workspace: --review shows the commits, the diffstat and the paths outside the usual ones; without a terminal nothing is published, --yes (control) publishes" {
	review_setup
	clone_run --review -- "$REVIEW_WORK" </dev/null
	[ "$status" -eq 125 ]
	[[ "$output" == *"not published: --review asks for your confirmation on a terminal"* ]]
	[ -z "$(imported)" ]
	local id
	id=$(ws_ids)
	[[ "$output" == *"review of session $id: 2 commit(s) to publish as aisb/$id, on ${BASE:0:12}"* ]]
	[[ "$output" == *" agent: review me"* ]]
	[[ "$output" == *" agent: second"* ]]
	[[ "$output" == *"M tracked | +1 -0"* ]]
	[[ "$output" == *"M src/a.c | +1 -0"* ]]
	[[ "$output" == *"8 file(s) changed, 8 insertion(s)(+), 0 deletion(s)(-)"* ]]
	[[ "$output" == *"outside the usual paths"*": 5"* ]]
	[[ "$output" == *"A .gitattributes (git control file)"* ]]
	[[ "$output" == *"A .github/workflows/ci.yml (dotfile)"* ]]
	[[ "$output" == *"A .husky/pre-commit (hook-like path)"* ]]
	[[ "$output" == *"A newdir/f (new top-level entry)"* ]]
	[[ "$output" == *"A src/run.sh (executable)"* ]]
	# an ordinary file in a directory the host has is not named
	[[ "$output" != *"src/b.c ("* ]]
	"$AISB" inspect "$id" | grep -q 'state:    review'
	# aisb import --review without a terminal: the same refusal, 78
	run "$AISB" import "$id" --review </dev/null
	[ "$status" -eq 78 ]
	[[ "$output" == *"A newdir/f (new top-level entry)"* ]]
	[ -z "$(imported)" ]
	# --yes without --review is a usage error
	run "$AISB" import "$id" --yes
	[ "$status" -eq 2 ]
	# control: --yes publishes what was shown
	run "$AISB" import "$id" --review --yes </dev/null
	[ "$status" -eq 0 ]
	[[ "$output" == *"review of session $id"* ]]
	[ "$(git rev-list --count "$BASE..aisb/$id")" -eq 2 ]
	[ "$(git show "aisb/$id:newdir/f")" = f ]
}

@test "workspace: --review shows a subject and a path holding ESC, C1 0x9b and U+009B as '?'; a UTF-8 subject and path (control) unchanged" {
	review_setup
	# shellcheck disable=SC2016
	clone_run --review -- 'bad=$(printf "s \033[31m r \233[2J c \302\233[2J e"); f=$(printf "p\033[1mq\233r\302\233t.txt");
		echo x >"$f" && git add -A && git commit -q -m "$bad" &&
		echo y >"café-ü.txt" && git add -A && git commit -q -m "café ünïcode"' </dev/null
	[ "$status" -eq 125 ]                              # no terminal: kept for a later review
	[ -z "$(printf '%s' "$output" | od -An -v -tx1 | tr ' ' '\n' | grep -xE '1b|9b')" ]
	local id
	id=$(ws_ids)
	run "$AISB" import "$id" --review --yes </dev/null
	echo "$output"
	[ "$status" -eq 0 ]
	# no ESC, no single-byte CSI, no U+009B reached the terminal
	[ -z "$(printf '%s' "$output" | od -An -v -tx1 | tr ' ' '\n' | grep -xE '1b|9b')" ]
	# (git may re-encode a lone 0x9b of a message as U+009B: one '?' or two, never the byte)
	[[ "$output" == *" s ?[31m r ?"*"[2J c ??[2J e"* ]]
	[[ "$output" == *"A p?[1mq?r??t.txt | +1 -0"* ]]
	# the control: valid UTF-8 text is shown as it is
	[[ "$output" == *" café ünïcode"* ]]
	[[ "$output" == *"A café-ü.txt | +1 -0"* ]]
	[[ "$output" != *"this session was passed --env"* ]]  # no --env: nothing to warn about
	[ "$(git rev-list --count "$BASE..aisb/$id")" -eq 2 ]
}

@test "workspace: --review on a terminal: declined (n) publishes nothing and keeps the workspace; confirmed (y, control) publishes" {
	review_setup
	clone_run --keep -- "$REVIEW_WORK"
	[ "$status" -eq 0 ]
	local id py
	id=$(ws_ids)
	git branch -q -D "aisb/$id"
	py=/usr/bin/python3
	[ -x "$py" ] || py=/usr/local/bin/python3
	run "$py" "$BATS_TEST_DIRNAME/lib/fake-terminal.py" --answer "publish these commits? [y/N]" n "$WORK/out" "$AISB" import "$id" --review
	[ "$status" -eq 1 ]
	grep -q "A .husky/pre-commit (hook-like path)" "$WORK/out"
	grep -q "not published (declined at the review)" "$WORK/out"
	[ -z "$(imported)" ]
	[ -d "$XDG_STATE_HOME/aisb/workspaces/$id/repo" ]
	# the prompt comes after the review, which the user reads first
	[ "$(grep -n 'publish these commits' "$WORK/out" | cut -d: -f1)" -gt "$(grep -n 'outside the usual paths' "$WORK/out" | cut -d: -f1)" ]
	# control: the same review, confirmed
	run "$py" "$BATS_TEST_DIRNAME/lib/fake-terminal.py" --answer "publish these commits? [y/N]" y "$WORK/out2" "$AISB" import "$id" --review
	[ "$status" -eq 0 ]
	grep -q "imported 2 commit(s) of session $id" "$WORK/out2"
	[ "$(git rev-list --count "$BASE..aisb/$id")" -eq 2 ]
	[ "$(git rev-parse "aisb/$id~2")" = "$BASE" ]
}

@test "workspace: run --review at the end of a run on a terminal: declined keeps the workspace and the command's status; confirmed (control) publishes" {
	local py
	py=/usr/bin/python3
	[ -x "$py" ] || py=/usr/local/bin/python3
	run "$py" "$BATS_TEST_DIRNAME/lib/fake-terminal.py" --answer "publish these commits? [y/N]" n "$WORK/out" \
		"$AISB" --net none --workspace clone --review -- sh -c 'echo q >q && git add q && git commit -q -m q'
	[ "$status" -eq 0 ]
	grep -q "A q | +1 -0" "$WORK/out"
	grep -q "not published (declined at the review)" "$WORK/out"
	grep -q "workspace kept" "$WORK/out"
	[ -z "$(imported)" ]
	[ -n "$(ws_ids)" ]
	run "$py" "$BATS_TEST_DIRNAME/lib/fake-terminal.py" --answer "publish these commits? [y/N]" y "$WORK/out2" \
		"$AISB" --net none --workspace clone --review -- sh -c 'echo r >r && git add r && git commit -q -m r'
	[ "$status" -eq 0 ]
	grep -q "imported 1 commit(s)" "$WORK/out2"
	[ "$(git log -1 --format=%s "$(imported)")" = r ]
}

@test "workspace: --review never prints a value passed with --env: masked in subjects and paths at the run's review, contents never shown; the value (control) is in the published commits" {
	review_setup
	local canary=aisb-canary-7f3e9b2d41
	clone_run --review --env SECRET="$canary" -- 'echo "$SECRET" >src/leak.c && mkdir "d-$SECRET" && echo x >"d-$SECRET/f" &&
		git add -A && git commit -q -m "agent: $SECRET in the subject"' </dev/null
	[ "$status" -eq 125 ]
	[[ "$output" == *"review of session"* ]]
	[[ "$output" != *"$canary"* ]]
	[[ "$output" == *"agent: REDACTED"* ]]
	[[ "$output" == *"A d-REDACTED"* ]]
	[[ "$output" != *"this session was passed --env"* ]]  # the run's review knows the values
	local id
	id=$(ws_ids)
	run grep -q "$canary" "$XDG_STATE_HOME/aisb/workspaces/$id/workspace.json"
	[ "$status" -eq 1 ]
	# a later aisb import --review does not know the value: it never shows a file's content
	clone_run --env SECRET="$canary" --keep -- 'echo "$SECRET" >src/leak2.c && git add -A && git commit -q -m "agent: content only"'
	[ "$status" -eq 0 ]
	local id2
	id2=$(imported)
	id2=${id2#aisb/}
	# the name is recorded, never the value
	tr -d ' \n' <"$XDG_STATE_HOME/aisb/workspaces/$id2/workspace.json" | grep -q '"env_names":\["SECRET"\]'
	run grep -q "$canary" "$XDG_STATE_HOME/aisb/workspaces/$id2/workspace.json"
	[ "$status" -eq 1 ]
	run "$AISB" import "$id2" --review --yes </dev/null
	[ "$status" -eq 0 ]
	[[ "$output" == *"A src/leak2.c | +1 -0"* ]]
	[[ "$output" != *"$canary"* ]]
	# ... and says so, by the variable's name (recorded without its value)
	[[ "$output" == *"WARNING: this session was passed --env SECRET: their values are never kept, so this review cannot mask them"* ]]
	# control: the value really was there
	run "$AISB" import "$id"
	[ "$status" -eq 0 ]
	[ "$(git show "aisb/$id:src/leak.c")" = "$canary" ]
	[ "$(git show "aisb/$id2:src/leak2.c")" = "$canary" ]
}

@test "workspace: --untracked copy brings untracked files but not ignored or .aisbignore'd ones, and never imports them" {
	echo notes >notes.txt
	mkdir -p sub/deep
	echo deep >sub/deep/n.txt
	ln -s ../notes.txt sub/link
	echo secret >secret.env
	echo private >private.txt
	printf 'secret.env\n' >.gitignore
	printf 'private.txt\n' >.aisbignore
	git add .gitignore
	git commit -q -m ignore
	BASE=$(git rev-parse HEAD)
	# default: tracked files only
	clone_run -- 'test ! -e notes.txt && test ! -e secret.env && echo TRACKED-ONLY'
	[[ "$output" == *TRACKED-ONLY* ]]
	clone_run --untracked copy -- '
		test "$(cat notes.txt)" = notes && test ! -e secret.env && test ! -e private.txt &&
		test "$(cat sub/deep/n.txt)" = deep && test "$(readlink sub/link)" = ../notes.txt && echo COPIED &&
		git status --porcelain | grep -q notes.txt && echo STATUS-SHOWS
		echo changed >notes.txt && echo keep >kept && git add -f notes.txt kept && git commit -q -m agent'
	[ "$status" -eq 0 ]
	[[ "$output" == *COPIED* ]]
	[[ "$output" != *STATUS-SHOWS* ]]
	local br
	br=$(imported)
	[ "$(git show "$br:kept")" = keep ]
	run git cat-file -e "$br:notes.txt"
	[ "$status" -ne 0 ]
	[ "$(cat notes.txt)" = notes ]
}

@test "workspace: --import-uncommitted takes the uncommitted work as one checkpoint commit; without it (control) it stays in the workspace" {
	clone_run -- 'echo wip >wip'
	[ "$status" -eq 0 ]
	[[ "$output" == *"no new commits"* ]]
	[ -z "$(imported)" ]
	local id
	id=$(ws_ids)
	[ -e "$XDG_STATE_HOME/aisb/workspaces/$id/repo/wip" ]
	run "$AISB" import "$id" --import-uncommitted
	[ "$status" -eq 0 ]
	[ "$(git show "aisb/$id:wip")" = wip ]
	[ "$(git rev-list --count "$BASE..aisb/$id")" -eq 1 ]
	[ "$(git log -1 --format='%an' "aisb/$id")" = Host ]
}

@test "workspace: a clone whose .git the sandbox broke is kept, not removed; an intact one without work (control) is removed" {
	clone_run -- 'echo work >left && rm -rf .git/refs .git/HEAD'
	[ "$status" -eq 0 ]
	[[ "$output" == *"workspace kept"* ]]
	local id
	id=$(ws_ids)
	[ -e "$XDG_STATE_HOME/aisb/workspaces/$id/repo/left" ]
	rm -rf "$XDG_STATE_HOME/aisb/workspaces/$id"
	clone_run -- 'true'
	[ "$status" -eq 0 ]
	[ -z "$(ws_ids)" ]
}

@test "workspace: clean keeps a workspace whose commits were not imported, --discard removes it; an imported one (control) is removed" {
	clone_run -- 'git checkout -q -b side && git commit -q --allow-empty -m s && git checkout -q main && git commit -q --allow-empty -m m && git merge -q --no-edit side'
	[ "$status" -eq 125 ]
	local refused kept
	refused=$(ws_ids)
	clone_run --keep -- 'git commit -q --allow-empty -m ok'
	[ "$status" -eq 0 ]
	kept=$(imported)
	kept=${kept#aisb/}
	[ -d "$XDG_STATE_HOME/aisb/workspaces/$kept" ]
	run "$AISB" clean
	[ "$status" -eq 0 ]
	[[ "$output" == *"kept workspace $refused"* ]]
	[[ "$output" == *"removed workspace $kept"* ]]
	[ -d "$XDG_STATE_HOME/aisb/workspaces/$refused/repo" ]
	[ ! -e "$XDG_STATE_HOME/aisb/workspaces/$kept" ]
	run "$AISB" clean --discard
	[ "$status" -eq 0 ]
	[[ "$output" == *"removed workspace $refused (discarded"* ]]
	[ ! -e "$XDG_STATE_HOME/aisb/workspaces/$refused" ]
}

@test "workspace: while its run is live, import is refused and clean --discard keeps the workspace; once the run ended (control) its commit is imported" {
	# the run stays live until the host has tried import and clean (it touches sig/go; 60 s at most)
	mkdir "$WORK/sig"
	sb --workspace clone --mount "$WORK/sig:/sig:rw" -- sh -c 'git commit -q --allow-empty -m inside &&
		i=0; while [ ! -e /sig/go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done' >"$WORK/out" 2>&1 3>&- &
	local bg=$! id _
	for _ in $(seq 300); do
		id=$(ws_ids)
		[ -n "$id" ] && "$AISB" ps 2>/dev/null | grep -q "^$id .* live " && break
		sleep 0.1
	done
	[ -n "$id" ]
	run "$AISB" import "$id"
	[ "$status" -eq 1 ]
	[[ "$output" == *"session $id is still running"* ]]
	run "$AISB" clean --discard
	[ "$status" -eq 0 ]
	[ -d "$XDG_STATE_HOME/aisb/workspaces/$id/repo/.git" ]
	[ -z "$(imported)" ]
	touch "$WORK/sig/go"
	wait "$bg"
	cat "$WORK/out"
	[ "$(imported)" = "aisb/$id" ]
}

@test "workspace: refused before start: not a repository, --target current on a detached HEAD, a project policy undoing clone" {
	mkdir "$WORK/plain"
	cd "$WORK/plain"
	run sb --workspace clone -- true
	[ "$status" -eq 78 ]
	[[ "$output" == *"not in a git repository"* ]]
	cd "$PROJ"
	git checkout -q --detach
	run sb --workspace clone --target current -- true
	[ "$status" -eq 78 ]
	[[ "$output" == *detached* ]]
	run sb --target current -- true
	[ "$status" -eq 78 ]
	[[ "$output" == *"need --workspace clone"* ]]
	# control: the same detached HEAD imports as a new branch
	run sb --workspace clone -- sh -c 'git commit -q --allow-empty -m d'
	[ "$status" -eq 0 ]
	[ -n "$(imported)" ]
}

@test "workspace: workspace = clone in the user's config and in a trusted project policy; a project cannot set bind" {
	printf 'workspace = clone\n' >>"$XDG_CONFIG_HOME/aisb/config"
	run sb --dry-run -- true
	[[ "$output" == *"workspace:  clone of $PROJ"* ]]
	# without a project there is nothing to clone: --no-cwd runs as before
	run sb --no-cwd -- true
	[ "$status" -eq 0 ]
	mkdir -p .aisb
	printf 'workspace = bind\n' >.aisb/config
	run "$AISB" trust
	[ "$status" -eq 78 ]
	[[ "$output" == *"workspace = clone only"* ]]
	head -n2 "$XDG_CONFIG_HOME/aisb/config" >"$XDG_CONFIG_HOME/aisb/config.new"
	mv "$XDG_CONFIG_HOME/aisb/config.new" "$XDG_CONFIG_HOME/aisb/config"
	printf 'workspace = clone\n' >.aisb/config
	run "$AISB" trust
	[ "$status" -eq 0 ]
	run sb --dry-run -- true
	[ "$status" -eq 0 ]
	[[ "$output" == *"workspace:  clone of $PROJ"* ]]
}
