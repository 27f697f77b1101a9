#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/workspace.sh — what a clone workspace costs against the default bind mount (issue 21:
# "weigh removing the class instead of checking it"). A benchmark, not a test: no threshold, no
# exit status from the numbers. For each synthetic repository (made once with git fast-import,
# no network) it runs, interleaved in each of N rounds so that load from other work hits every
# column alike:
#   ro       aisb --net none --quiet --read-only -- true       (no pins written to, no post-run check)
#   bind     aisb --net none --quiet -- true                   (the default: pins + gitguard's walk at exit)
#   clone    aisb --net none --quiet --workspace clone -- true (clone + checkout + export sandbox)
#   imp-commit  aisb import ID of a kept workspace whose sandbox committed a one-file change
#   imp-dirty   aisb import ID --import-uncommitted of one that left the change uncommitted
#               (the branch each import makes is deleted, untimed, before every sample)
#   status   git status --porcelain on the host in the project (what an editor's git view pays)
# and prints medians (wall, $EPOCHREALTIME) and mean CPU (bash `time`: user+sys of aisb and the
# children it waited for), the ratios clone/bind, bind-ro (the guard's cost) and import/bind,
# the disk a kept clone workspace takes, and what the user sees on the host
# during and after a run in each mode (the host worktree, uncommitted work of the user's).
#   AISB_BIN=./build/aisb N=5 bench/workspace.sh
#   REPOS="small large hist"   which repositories (default all three):
#     small  30 files, 1 commit
#     large  100,000 files in 300 commits (20 files changed per commit), ~290 MiB pack
#     hist   60,000 files in a linux-like tree, 50,000 commits (2 files each)
#   ONLY="status bind clone"  a subset of the columns (the ratios need bind, and clone/ro/imp-*)
#   KEEP=DIR   make (or reuse) the repositories in DIR (must be on a disk aisb accepts as a
#              project: not /dev/shm); making hist takes minutes
#   STATE=DIR  XDG_STATE_HOME for the runs (default: below the work dir, so the clone lands on
#              the same filesystem as the project, as with a home directory on one disk)
# Wrap it in `flock /tmp/bench.lock` on a shared machine. Runs as the calling user.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
aisb=$(realpath -e "${AISB_BIN:-$here/build/aisb}")
n=${N:-5}
work=$(mktemp -d "${TMPDIR:-/tmp}/aisb-bench-ws.XXXXXX")
repos_dir=${KEEP:-$work/repos}
mkdir -p "$repos_dir"
export XDG_STATE_HOME=${STATE:-$work/state} XDG_CONFIG_HOME=$work/config
mkdir -p "$XDG_CONFIG_HOME/aisb"
# the bench measures time, not limits: no warning line per run where cgroups are not delegated
echo 'accept_unenforced_limits = true' >"$XDG_CONFIG_HOME/aisb/config"
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.invalid
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.invalid
cleanup() {
	"$aisb" clean --discard >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

# gen.py FILES COMMITS CHANGES SEED: a fast-import stream. Half the files in the first commit,
# the rest spread over the others; each later commit also changes CHANGES existing files (a line
# inserted). Paths look like a kernel tree's (a few top directories, up to 4 levels, ~15 files a
# directory), content is lines of random words, 300 B to 9 KB a file.
cat >"$work/gen.py" <<'EOF'
import sys, random, hashlib
nfiles, ncommits, nchg, seed = (int(a) for a in sys.argv[1:5])
rnd = random.Random(seed)
words = [''.join(rnd.choice('abcdefghijklmnopqrstuvwxyz_') for _ in range(rnd.randint(2, 10))) for _ in range(2000)]
corpus = ''.join('\t' * rnd.randint(0, 3) + ' '.join(rnd.choice(words) for _ in range(rnd.randint(1, 10))) + ';\n'
                 for _ in range(4000)).encode()
tops = ['arch', 'drivers', 'fs', 'kernel', 'net', 'include', 'lib', 'mm', 'sound', 'tools', 'Documentation',
        'crypto', 'security', 'block']
dirs = ['/'.join([rnd.choice(tops)] + [rnd.choice(words) for _ in range(rnd.randint(0, 3))])
        for _ in range(max(1, nfiles // 15))]
paths, seen = [], set()
while len(paths) < nfiles:
    p = '%s/%s%s' % (rnd.choice(dirs), rnd.choice(words), rnd.choice(['.c', '.h', '.c', '.rst', '.S']))
    if p not in seen:
        seen.add(p); paths.append(p)
def content(p, v):
    h = int.from_bytes(hashlib.blake2b(p.encode(), digest_size=8).digest(), 'little')
    size = 300 + h % 9000
    off = h % (len(corpus) - size)
    b = corpus[off:off + size]
    if v:
        cut = (h >> 20) % size
        b = b[:cut] + b'/* revision %d */\n' % v + b[cut:]
    return b
w = sys.stdout.buffer.write
ver = {}
first = nfiles // 2
per = (nfiles - first) // max(1, ncommits - 1)
added = 0
for c in range(ncommits):
    if c == ncommits - 1:
        new = paths[added:]; added = nfiles
    elif c == 0:
        new = paths[:first]; added = first
    else:
        new = paths[added:added + per]; added += per
    chg = [] if c == 0 else [paths[rnd.randrange(added)] for _ in range(nchg)]
    msg = b'commit %d\n' % c
    t = 1500000000 + c * 60
    w(b'commit refs/heads/main\nauthor A U Thor <a@example.com> %d +0000\n'
      b'committer A U Thor <a@example.com> %d +0000\ndata %d\n%s' % (t, t, len(msg), msg))
    for p in new + chg:
        v = ver.get(p, -1) + 1
        ver[p] = v
        b = content(p, v)
        w(b'M 100644 inline %s\ndata %d\n' % (p.encode(), len(b)))
        w(b); w(b'\n')
    w(b'\n')
w(b'done\n')
EOF
declare -A spec=([small]="30 1 0 1" [large]="100000 300 20 2" [hist]="60000 50000 2 3")
make_repo() { # NAME
	local d=$repos_dir/$1
	[ -e "$d/.git/aisb-bench-done" ] && return 0
	rm -rf "$d"
	git init -q -b main "$d"
	echo "# making $1 (${spec[$1]}: files commits changes seed) in $d" >&2
	# shellcheck disable=SC2086
	python3 "$work/gen.py" ${spec[$1]} | git -C "$d" fast-import --quiet --done
	git -C "$d" reset -q --hard
	touch "$d/.git/aisb-bench-done"
}

median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ms() { awk -v x="$1" 'BEGIN {printf "%.1f", x / 1000}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
TIMEFORMAT='%3U %3S'
# newws CMD...: run CMD, print the id of the workspace it left behind
newws() {
	local before
	# shellcheck disable=SC2012
	before=$(ls "$XDG_STATE_HOME/aisb/workspaces" 2>/dev/null || true)
	"$@" >/dev/null 2>&1 || true
	# shellcheck disable=SC2012 # ids are 12 hex digits
	comm -13 <(echo "$before" | sort) <(ls "$XDG_STATE_HOME/aisb/workspaces" | sort) | grep -v '^\.' | head -1
}

for repo in ${REPOS:-small large hist}; do
	make_repo "$repo"
	d=$repos_dir/$repo
	cd "$d"
	f=$(git ls-files | head -1)
	files=$(git ls-files | wc -l)
	commits=$(git rev-list --count HEAD)
	echo "## $repo: $files files, $commits commits, .git $(du -sm .git | cut -f1) MiB, worktree" \
		"$(du -sm --exclude=.git . | cut -f1) MiB"
	# two kept workspaces to import again and again: one whose sandbox committed a change to F,
	# one that left it uncommitted (the usual end of a harness run: agents edit, they seldom commit)
	id_commit=$(newws "$aisb" --net none --quiet --workspace clone --keep -- sh -c "echo x >>'$f' && git commit -qam x")
	id_dirty=$(newws "$aisb" --net none --quiet --workspace clone -- sh -c "echo x >>'$f'")
	declare -A cmds=(
		[status]="git status --porcelain"
		[ro]="$aisb --net none --quiet --read-only -- true"
		[bind]="$aisb --net none --quiet -- true"
		[clone]="$aisb --net none --quiet --workspace clone -- true"
		[imp-commit]="$aisb import $id_commit"
		[imp-dirty]="$aisb import $id_dirty --import-uncommitted"
	)
	# shellcheck disable=SC2206 # ONLY is a list of column names
	order=(${ONLY:-status ro bind clone imp-commit imp-dirty})
	unset samples
	declare -A samples
	rm -f "$work"/cpu-*
	git status --porcelain >/dev/null # the index refreshed once, as after the checkout
	for _ in $(seq "$n"); do
		for name in "${order[@]}"; do
			# each import makes a branch aisb/<id>: drop it (untimed), so that every import is a first one
			git for-each-ref --format='%(refname)' refs/heads/aisb/ | xargs -r -n1 git update-ref -d
			s=${EPOCHREALTIME/./}
			# shellcheck disable=SC2086
			{ time ${cmds[$name]} >/dev/null 2>"$work/last-err"; } 2>>"$work/cpu-$name" ||
				echo "bench: $name failed (exit $?): $(tail -1 "$work/last-err")" >&2
			e=${EPOCHREALTIME/./}
			samples[$name]+="$((e - s)) "
		done
	done
	declare -A med cpu
	printf '%-10s %12s %14s\n' command "median (ms)" "cpu (ms, mean)"
	for name in "${order[@]}"; do
		med[$name]=$(median <<<"${samples[$name]}")
		cpu[$name]=$(awk '{t += $1 + $2} END {printf "%.1f", t / NR * 1000}' "$work/cpu-$name")
		printf '%-10s %12s %14s\n' "$name" "$(ms "${med[$name]}")" "${cpu[$name]}"
	done
	has() { [ -n "${med[$1]:-}" ] && [ -n "${med[$2]:-}" ]; }
	has clone bind &&
		printf 'clone / bind        %8s  (cpu %s)\n' "$(ratio "${med[clone]}" "${med[bind]}")" "$(ratio "${cpu[clone]}" "${cpu[bind]}")"
	has bind ro && printf 'bind - ro           %8s ms (pins + the post-run git guard)\n' "$(ms $((med[bind] - med[ro])))"
	has clone bind && printf 'clone - bind        %8s ms (clone + checkout + export sandbox)\n' "$(ms $((med[clone] - med[bind])))"
	has imp-commit bind &&
		printf 'imp-commit / bind   %8s  (importing one commit of one file, after the run)\n' "$(ratio "${med[imp-commit]}" "${med[bind]}")"
	has imp-dirty bind &&
		printf 'imp-dirty / bind    %8s  (checkpoint of one uncommitted file + import)\n' "$(ratio "${med[imp-dirty]}" "${med[bind]}")"

	# disk: the kept workspace (clone, checkout, index) against the project's own .git and worktree
	ws=$XDG_STATE_HOME/aisb/workspaces/$id_dirty
	printf 'disk: workspace %s MiB (its .git %s MiB); project .git %s MiB, worktree %s MiB\n' \
		"$(du -sm "$ws" | cut -f1)" "$(du -sm "$ws/repo/.git" | cut -f1)" "$(du -sm .git | cut -f1)" \
		"$(du -sm --exclude=.git . | cut -f1)"
	git for-each-ref --format='%(refname)' refs/heads/aisb/ | xargs -r -n1 git update-ref -d
	"$aisb" clean --discard >/dev/null 2>&1

	# what the user sees: the sandbox edits F and sleeps; the host waits until the edit is made
	# (in the project for bind, read in the workspace's files for clone: no git runs there; F may
	# not end in a newline, so the line is "...agent") and
	# then looks at its own F. Also: the user's own uncommitted edit of F before the run, does the
	# sandbox see it?
	for mode in bind clone; do
		flag=
		[ "$mode" = clone ] && flag="--workspace clone"
		printf 'user edit\n' >>"$f"
		before=$(sha256sum <"$f")
		# shellcheck disable=SC2086
		"$aisb" --net none --quiet $flag -- sh -c "grep -q 'user edit' '$f' && echo seen || echo unseen; echo agent >>'$f'; sleep 3" \
			>"$work/inside" 2>"$work/msgs" &
		pid=$!
		seen=no
		for _ in $(seq 600); do
			if [ "$mode" = bind ]; then
				grep -q 'agent$' "$f" && seen=yes
			else
				for w in "$XDG_STATE_HOME"/aisb/workspaces/*/repo/"$f"; do
					[ -f "$w" ] && grep -q 'agent$' "$w" && seen=yes
				done
			fi
			[ $seen = yes ] && break
			sleep 0.2
		done
		during=$(sha256sum <"$f")
		wait $pid || true
		after=$(sha256sum <"$f")
		printf '%-5s: sandbox saw the uncommitted host edit: %s; host file changed once the agent had edited: %s, after the run: %s; ' \
			"$mode" "$(cat "$work/inside")" "$([ "$before" = "$during" ] && echo no || echo yes)" \
			"$([ "$before" = "$after" ] && echo no || echo yes)"
		echo "aisb said: $(tr '\n' ' ' <"$work/msgs" | sed 's/aisb: //g')"
		git checkout -q -- "$f"
		"$aisb" clean --discard >/dev/null 2>&1
	done
	unset cmds med cpu
	echo
done
echo "(n=$n, user $(id -un), git $(git --version | cut -d' ' -f3), $(uname -r), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg))"
