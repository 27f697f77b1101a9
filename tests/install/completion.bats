#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# completion.bats — contrib/completion/aisb driven the way bash drives it: COMP_WORDS and
# COMP_CWORD set, _aisb called, COMPREPLY read. The binary under test is first on PATH.

setup() {
	BIN=$BATS_TEST_TMPDIR/bin
	mkdir -p "$BIN"
	ln -sf "$AISB_BUILDDIR/aisb" "$BIN/aisb"
	export PATH="$BIN:$PATH"
	export XDG_STATE_HOME=$BATS_TEST_TMPDIR/state XDG_CACHE_HOME=$BATS_TEST_TMPDIR/cache \
		XDG_CONFIG_HOME=$BATS_TEST_TMPDIR/config
	cd "$BATS_TEST_TMPDIR"
	# shellcheck source=/dev/null
	. "$AISB_SRCDIR/contrib/completion/aisb"
}

# comp WORD...: complete the last WORD (COMP_CWORD points at it); prints COMPREPLY, one a line
comp() {
	COMP_WORDS=("$@")
	COMP_CWORD=$(($# - 1))
	COMPREPLY=()
	_aisb
	printf '%s\n' "${COMPREPLY[@]}"
}

@test "completion: subcommands and run's flags at the first word" {
	run comp aisb b
	[ "$output" = build ]
	run comp aisb --allow-f
	[ "$output" = --allow-file ]
	run comp aisb ''
	[[ $output == *doctor* && $output == *--net* ]]
	[[ $output != *__complete* ]]
}

@test "completion: a harness word ends the sandbox flags; nothing is offered after it" {
	run comp aisb fix --
	[ -z "$output" ]
	run comp aisb --net none fix --kee
	[ -z "$output" ]
	run comp aisb --model x --
	[ -z "$output" ]
	run comp aisb -- ls --
	[ -z "$output" ]
	# control: the same prefix before the harness word is completed
	run comp aisb --net none --kee
	[ "$output" = --keep ]
}

@test "completion: each subcommand offers only its own flags" {
	run comp aisb build --
	[[ $output == *--file* && $output == *--builder* ]]
	[[ $output != *--net* && $output != *--deep* ]]
	run comp aisb doctor --
	[ "$output" = "$(printf '%s\n' --deep --container-proc --help)" ]
	run comp aisb build --builder ''
	[ "$output" = "$(printf '%s\n' native podman)" ]
}

@test "completion: fixed lists for --net and --harness, also after '='" {
	run comp aisb --net ''
	[ "$output" = "$(printf '%s\n' none allow full)" ]
	# bash splits --net=a into "--net" "=" "a"; the reply replaces only "a"
	run comp aisb --net = a
	[ "$output" = allow ]
	run comp aisb --net =
	[ "$output" = "$(printf '%s\n' none allow full)" ]
	run comp aisb --harness c
	[ "$output" = "$(printf '%s\n' codex claude)" ]
}

@test "completion: --env from exported variables only" {
	export AISB_T_EXPORTED=1
	AISB_T_LOCAL=1
	run comp aisb --env AISB_T_
	[ "$output" = AISB_T_EXPORTED ]
	# no value is ever printed, only names
	export AISB_T_SECRET=canary-c0mpl3t10n
	run comp aisb --env AISB_T_S
	[ "$output" = AISB_T_SECRET ]
	[[ $output != *canary* ]]
}

@test "completion: --mount and --workdir complete directories, not files" {
	mkdir -p d/sub1 d/sub2
	touch d/file
	run comp aisb --mount d/s
	[ "$(sort <<<"$output")" = "$(printf '%s\n' d/sub1 d/sub2)" ]
	run comp aisb --workdir = d/
	[[ $output == *d/sub1* && $output != *d/file* ]]
	# SRC:DST: bash splits at ':' too; the part after it completes
	run comp aisb --mount d/sub1 : d/sub
	[ "$(sort <<<"$output")" = "$(printf '%s\n' d/sub1 d/sub2)" ]
}

@test "completion: --image and rmi from the store, without creating it" {
	run comp aisb --image ''
	[ -z "$output" ]
	[ ! -e "$XDG_CACHE_HOME/aisb" ]
	# a store with one pin: a busybox OCI layout pulled from disk (no network)
	"$AISB_SRCDIR/tests/e2e/lib/images/mk-busybox-oci.sh" "$BATS_TEST_TMPDIR/bb" v1 >/dev/null
	"$AISB_BUILDDIR/aisb" pull -q "oci:$BATS_TEST_TMPDIR/bb:v1"
	run comp aisb --image ''
	[ "$output" = "oci:$BATS_TEST_TMPDIR/bb:v1" ]
	run comp aisb --image = oc
	[ "$output" = "oci:$BATS_TEST_TMPDIR/bb:v1" ]
	run comp aisb rmi ''
	[ "$output" = "oci:$BATS_TEST_TMPDIR/bb:v1" ]
	run comp aisb --image x
	[ -z "$output" ]
}

@test "completion: --allow from the allow files on the line and ./.aisb/allow" {
	printf '%s\n' '# comment' 'registry.npmjs.org' 'example.com:8443  # port' >site.allow
	run comp aisb --allow-file site.allow --allow r
	[ "$output" = registry.npmjs.org ]
	# example.com:8443 is split at ':' by bash: the reply is what follows it
	run comp aisb --allow-file site.allow --allow example.com : 8
	[ "$output" = 8443 ]
	run comp aisb --allow ''
	[ -z "$output" ]
	mkdir -p .aisb
	echo 'pypi.org' >.aisb/allow
	run comp aisb --allow p
	[ "$output" = pypi.org ]
}

@test "completion: aliases that run aisb get it, with the alias's own words" {
	alias pi=aisb
	alias pn='aisb --net none'
	alias other=ls
	_aisb_register_aliases
	run complete -p pi
	[[ $output == *"-F _aisb pi"* ]]
	run complete -p other
	[ "$status" -ne 0 ]
	run comp pi --kee
	[ "$output" = --keep ]
	run comp pi fix --
	[ -z "$output" ]
	# the alias's words count: after 'aisb --net none', a word is still a flag position
	run comp pn --read
	[ "$output" = --read-only ]
}

@test "completion: nothing resolves a name or touches the network" {
	if ! command -v strace >/dev/null; then
		[ "${AISB_MUST_WORK:-0}" = 1 ] && { echo "strace is missing (AISB_MUST_WORK=1)" >&2; return 1; }
		skip "strace is not installed"
	fi
	# with a store, allow files and sessions in reach: every lister runs
	"$AISB_SRCDIR/tests/e2e/lib/images/mk-busybox-oci.sh" "$BATS_TEST_TMPDIR/bb" v1 >/dev/null
	"$AISB_BUILDDIR/aisb" pull -q "oci:$BATS_TEST_TMPDIR/bb:v1"
	mkdir -p .aisb && echo example.com >.aisb/allow
	for words in "--image ''" "rmi ''" "inspect ''" "--allow ''" "pull ''"; do
		eval "strace -f -qq -e trace=socket,connect,sendto -o '$BATS_TEST_TMPDIR/trace' \
			'$AISB_BUILDDIR/aisb' __complete $words" >/dev/null
		cat "$BATS_TEST_TMPDIR/trace"
		! grep -E 'AF_INET|AF_INET6|AF_NETLINK|connect\(' "$BATS_TEST_TMPDIR/trace"
	done
	# control: the same trace sees a socket when one is made
	strace -f -qq -e trace=socket -o "$BATS_TEST_TMPDIR/trace" \
		"$AISB_BUILDDIR/aisb" --net allow --allow example.com --accept-unenforced-limits -- true || true
	grep -q 'AF_NETLINK' "$BATS_TEST_TMPDIR/trace"
}

@test "completion: with bash-completion itself, an alias in ~/.bashrc gets aisb's completion at start" {
	[ -r /usr/share/bash-completion/bash_completion ] || {
		[ "${AISB_MUST_WORK:-0}" = 1 ] && { echo "bash-completion is missing (AISB_MUST_WORK=1)" >&2; return 1; }
		skip "bash-completion is not installed"
	}
	# the installed layout: completions/aisb on XDG_DATA_DIRS, aisb-aliases in the compat dir
	mkdir -p share/bash-completion/completions compat
	cp "$AISB_SRCDIR/contrib/completion/aisb" share/bash-completion/completions/aisb
	cp "$AISB_SRCDIR/contrib/completion/aisb-aliases" compat/
	script='alias pi=aisb
		. /usr/share/bash-completion/bash_completion
		complete -p pi
		COMP_WORDS=(pi --net ""); COMP_CWORD=2; _aisb; echo "reply: ${COMPREPLY[*]}"'
	run env XDG_DATA_DIRS="$PWD/share" BASH_COMPLETION_COMPAT_DIR="$PWD/compat" bash --norc -c "$script"
	echo "$output"
	[[ $output == *"complete -F _aisb pi"* ]]
	[[ $output == *"reply: none allow full"* ]]
	# control: without the compat snippet the alias has no completion of aisb's
	rm compat/aisb-aliases
	run env XDG_DATA_DIRS="$PWD/share" BASH_COMPLETION_COMPAT_DIR="$PWD/compat" bash --norc -c "$script"
	[[ $output != *"complete -F _aisb pi"* ]]
}

@test "completion: push, save and load offer their own flags; the registry flags on run and build" {
	run comp aisb push --
	[[ $output == *--tls-verify* && $output == *--cert-dir* && $output == *--authfile* ]]
	[[ $output != *--net* && $output != *--output* ]]
	run comp aisb save --
	[ "$output" = "$(printf '%s\n' --output --help)" ]
	run comp aisb load --i
	[ "$output" = --input ]
	run comp aisb --tls-v
	[ "$output" = --tls-verify ]
	run comp aisb build --cert-
	[ "$output" = --cert-dir ]
	mkdir -p certs
	run comp aisb --cert-dir cer
	[[ $output == certs* ]]
	# control: a flag that no table has is not offered
	run comp aisb push --ne
	[ -z "$output" ]
}
