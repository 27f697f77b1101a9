#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/workspace-demo.sh — the facts behind threat-model.md "Why the default is bind, not
# clone" that are not times (issue 21), shown with harmless marker files in a throw-away repository:
#   1. bind: what a live session plants (a nested repository with core.fsmonitor and a gitlink in
#      the index) runs on a host `git status` during the run; after it, the check has moved it
#   2. clone: the same kind of plant in the clone's .git/config never runs on the project's git
#      status or in `aisb import`, but does on a host git run inside the kept workspace
#   3. --target current --import-uncommitted brings the work into the worktree at the end
#   4. ... and refuses (125, workspace kept) when the user edited a tracked file meanwhile
#   AISB_BIN=./build/aisb bench/workspace-demo.sh
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
A=$(realpath -e "${AISB_BIN:-$here/build/aisb}")
D=$(mktemp -d "${TMPDIR:-/tmp}/aisb-ws-demo.XXXXXX")
trap '""$A"" clean --discard >/dev/null 2>&1; rm -rf "$D"' EXIT
export XDG_CONFIG_HOME=$D/config XDG_STATE_HOME=$D/state
mkdir -p "$XDG_CONFIG_HOME/aisb"
echo 'accept_unenforced_limits = true' >"$XDG_CONFIG_HOME/aisb/config"
export GIT_AUTHOR_NAME=u GIT_AUTHOR_EMAIL=u@example.invalid GIT_COMMITTER_NAME=u GIT_COMMITTER_EMAIL=u@example.invalid
cd "$D" || exit 1
export GIT_AUTHOR_NAME=u GIT_AUTHOR_EMAIL=u@example.invalid GIT_COMMITTER_NAME=u GIT_COMMITTER_EMAIL=u@example.invalid
git init -q -b main p && cd p && echo a >f && git add f && git commit -qm init
marker() { if [ -e "$D/$1" ]; then echo "RAN ($D/$1 exists)"; else echo "nothing ran"; fi; }
echo "== 1. bind: a plant during a live session, host git status in another terminal"
# the payload is a host path: it runs on the host, outside the sandbox, when host git reads it
"$A" --net none --quiet -- sh -c "
  mkdir -p x/sub && cd x/sub && git init -q && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m s &&
  git config core.fsmonitor 'touch $D/MARKER-live; false' && cd ../.. &&
  git update-index --add --cacheinfo 160000,\$(git -C x/sub rev-parse HEAD),x/sub && sleep 6" >"$D/out1" 2>&1 &
pid=$!
sleep 3
git status --porcelain >/dev/null 2>&1
echo "host 'git status' 3 s into the run: $(marker MARKER-live)"
wait $pid
echo "aisb exit $?"
cat "$D/out1"
rm -f "$D/MARKER-live"
git status --porcelain >/dev/null 2>&1
echo "host 'git status' after the run: $(marker MARKER-live)"
git reset -q
rm -rf x
echo "== 2. clone: the sandbox plants in its own .git/config and leaves uncommitted work"
"$A" --net none --quiet --workspace clone -- sh -c "git config core.fsmonitor 'touch $D/MARKER-ws; false'; echo b >>f" 2>&1
id=
for w in "$XDG_STATE_HOME"/aisb/workspaces/????????????; do id=${w##*/}; done
git status --porcelain >/dev/null 2>&1
echo "host 'git status' in the project: $(marker MARKER-ws)"
"$A" import "$id" --import-uncommitted 2>&1
echo "after aisb import: $(marker MARKER-ws)"
git -C "$XDG_STATE_HOME/aisb/workspaces/$id/repo" status --porcelain >/dev/null 2>&1
echo "host 'git status' run IN the kept workspace: $(marker MARKER-ws)"
rm -f "$D/MARKER-ws"
"$A" clean --discard >/dev/null 2>&1
echo "== 3. clone with --target current --import-uncommitted: the work lands in the worktree at the end"
"$A" --net none --quiet --workspace clone --target current --import-uncommitted -- sh -c 'echo c >>f' 2>&1
git log --format='%h %an: %s' | head -2
echo "worktree: last line of f: $(tail -1 f); git status: $(git status --porcelain | tr '\n' ' ')"
echo "== 4. the same while the user edits a tracked file during the run"
"$A" --net none --quiet --workspace clone --target current --import-uncommitted -- sh -c 'echo d >>f; sleep 3' 2>&1 &
pid=$!
sleep 1.5
echo userline >>f
wait $pid
echo "aisb exit $?"
git log --format='%h %s' | head -1
echo "git status: $(git status --porcelain | tr '\n' ' ')"
