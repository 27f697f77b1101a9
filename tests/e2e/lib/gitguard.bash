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
