# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/lib/gitguard.bash — what gitguard.bats and gitguard-cut.bats share: a one-commit
# repository as the project, the attack run inside, and the user's next host git afterwards.

# gitguard_setup: the project is a repository with one commit; $MARK is where a planted command
# leaves its trace.
gitguard_setup() {
	common_setup
	require_feature git command -v git
	export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@e GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@e
	git init -q .
	echo a >f
	git add f
	git commit -q -m init
	MARK="$WORK/pwned"
}

# project_aged: returns once the clock is a second past every ctime in the project, so that the
# next run judges all of it old, as the user's own files are: gitguard takes a file whose ctime
# second is not before the run's start for the sandbox's (src/git/gitguard.c, is_fresh). A
# ctime cannot be set back, so the clock is the state waited for (under a second; fails after 5).
project_aged() {
	local newest now
	newest=$(find "$PROJ" -printf '%C@\n' | sort -n | tail -1)
	newest=${newest%.*}
	while now=$(date +%s) && [ "$now" -le "$newest" ]; do
		[ "$now" -lt $((newest + 5)) ] || { echo "the clock stays at $now"; return 1; }
		sleep 0.05
	done
}

# inside SCRIPT [AISB FLAGS...]: runs SCRIPT in the sandbox; $MARK is the marker path there.
inside() {
	local script=$1
	shift
	run sb "$@" --env MARK="$MARK" --env GIT_AUTHOR_NAME=t --env GIT_AUTHOR_EMAIL=t@e \
		--env GIT_COMMITTER_NAME=t --env GIT_COMMITTER_EMAIL=t@e -- sh -c "$script"
}

# host_git [DIR...]: the user's next plain git commands on the host, in each DIR (the project
# when none is named; a nested repository is a `cd` into it); RAN when the marker appeared,
# CLEAN otherwise.
host_git() {
	local d
	rm -f "$MARK"
	[ $# -gt 0 ] || set -- "$PROJ"
	for d in "$@"; do
		(
			cd "$d" 2>/dev/null || exit 0
			git status
			git diff
			git log -1 --stat
		) >/dev/null 2>&1
	done
	if [ -e "$MARK" ]; then echo RAN; else echo CLEAN; fi
}
