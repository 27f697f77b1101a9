#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# install.bats — `make install DESTDIR=...` installs exactly the expected files, and the
# installed binary runs a sandbox.

setup_file() {
	DEST=$(mktemp -d /tmp/aisb-install.XXXXXX)
	chmod 755 "$DEST"
	export DEST
	make -s -C "$AISB_BUILDDIR" install DESTDIR="$DEST" prefix=/usr sysconfdir=/etc >"$DEST.log" 2>&1 ||
		{ cat "$DEST.log" >&2; return 1; }
}

teardown_file() {
	rm -rf "$DEST" "$DEST.log"
}

@test "install: DESTDIR holds the binary, one man page per subcommand, completion, AppArmor profile, docs" {
	local want got sub
	want=$( {
		echo /usr/bin/aisb
		echo /usr/share/man/man1/aisb.1
		# the subcommands the binary knows (its completion lists them): each has a page
		for sub in $("$AISB_BUILDDIR/aisb" __complete '' | grep -v '^-'); do
			echo "/usr/share/man/man1/aisb-$sub.1"
		done
		echo /usr/share/bash-completion/completions/aisb
		echo /etc/bash_completion.d/aisb-aliases
		# the profile: always the package's copy; in /etc/apparmor.d only where AppArmor reads
		# abi 4.0 (configure.ac, tests/install/paths.bats)
		echo /usr/share/aisb/apparmor/aisb
		echo /usr/share/aisb/seccomp/aisb.json
		[ ! -e /etc/apparmor.d/abi/4.0 ] || echo /etc/apparmor.d/aisb
		echo /usr/share/doc/aisb/README.md
		for f in "$AISB_SRCDIR"/docs/*.md; do echo "/usr/share/doc/aisb/$(basename "$f")"; done
	} | sort)
	got=$(cd "$DEST" && find . -type f -o -type l | sed 's|^\.||' | sort)
	echo "want:"; echo "$want"; echo "got:"; echo "$got"
	[ "$want" = "$got" ]
	# nothing outside DESTDIR: the install wrote only under it (checked by the exact list) and
	# the binary is executable, the data files are not
	[ -x "$DEST/usr/bin/aisb" ]
	[ ! -x "$DEST/usr/share/man/man1/aisb.1" ]
	[ ! -x "$DEST/usr/share/aisb/apparmor/aisb" ]
}

@test "install: the installed man pages render and the completion file is the tree's" {
	run man -l "$DEST/usr/share/man/man1/aisb-run.1"
	[ "$status" -eq 0 ]
	[[ $output == *"--allow ENTRY"* ]]
	cmp "$DEST/usr/share/bash-completion/completions/aisb" "$AISB_SRCDIR/contrib/completion/aisb"
	cmp "$DEST/usr/share/aisb/apparmor/aisb" "$AISB_SRCDIR/contrib/apparmor/aisb"
}

# run_installed WHO: the installed binary starts a sandbox as WHO (me, or the unprivileged user)
run_installed() {
	local proj prefix
	proj=$(mktemp -d "$DEST/proj.XXXXXX")
	chmod 777 "$proj"
	echo "from the host" >"$proj/marker"
	chmod 644 "$proj/marker"
	prefix=(env XDG_STATE_HOME="$proj/.state" XDG_CACHE_HOME="$proj/.cache" XDG_CONFIG_HOME="$proj/.config")
	if [ "$1" = user ]; then
		id aisb-e2e >/dev/null 2>&1 || useradd --create-home --shell /bin/bash aisb-e2e
		prefix=(runuser -u aisb-e2e -- env -i PATH=/usr/bin:/bin HOME=/tmp "${prefix[@]:1}")
	fi
	cd "$proj"
	run "${prefix[@]}" "$DEST/usr/bin/aisb" --net none --accept-unenforced-limits -- \
		sh -c 'cat marker; id -u; grep ^CapEff /proc/self/status; touch /usr/x 2>/dev/null || echo ro'
	cd /
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"from the host"* ]]
	[[ $output == *"CapEff:	0000000000000000"* ]]
	[[ $output == *ro* ]]
	# control: the same binary refuses a policy it cannot honour (exit 78), so the 0 above is
	# the sandbox's, not a binary that exits 0 for anything
	run "${prefix[@]}" "$DEST/usr/bin/aisb" --net allow -- true
	[ "$status" -eq 78 ]
}

@test "install: the installed binary runs a sandbox (as the caller)" {
	run_installed me
}

@test "install: the installed binary runs a sandbox (as an unprivileged user)" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to switch to the unprivileged user (covered by the caller test)"
	run_installed user
}
