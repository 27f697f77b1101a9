# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/lib/common.bash — shared setup for the end-to-end bats files.
#
# Every test gets its own project dir (under AISB_E2E_WORK, a path the sandbox does not own),
# its own XDG state/config/cache dirs, and $AISB pointing at the binary under test.

AISB=${AISB_BIN:?AISB_BIN must name the aisb binary}

common_setup() {
	WORK=$(mktemp -d "${AISB_E2E_WORK:-$BATS_TEST_TMPDIR}/t.XXXXXX")
	PROJ="$WORK/proj"
	mkdir -p "$PROJ"
	export XDG_STATE_HOME="$WORK/state" XDG_CONFIG_HOME="$WORK/config" XDG_CACHE_HOME="$WORK/cache"
	private_run_dir
	# Hosts without delegated cgroup v2 (this one) warn on every run that the default limits are
	# not enforced; the suites acknowledge it once in config, as a user would, so that output
	# comparisons stay exact. tests/e2e/lifecycle.bats checks the warning itself.
	mkdir -p "$XDG_CONFIG_HOME/aisb"
	# The same for the informational notices (loopback-only network, pi's fd/rg): tests/e2e/ux.bats
	# checks them with --quiet=false.
	printf 'accept_unenforced_limits = true\nquiet = true\n' >"$XDG_CONFIG_HOME/aisb/config"
	cd "$PROJ" || return 1
}

common_teardown() {
	cd / || true
	[ -n "${WORK:-}" ] && rm -rf "$WORK"
	private_run_dir_done
}

# private_run_dir: a run dir of this test's own on tmpfs (live session dirs go there,
# src/run/session.h), so that the test's sessions never land in the shared /dev/shm/aisb-UID;
# private_run_dir_done removes it. (aisb ps/clean also read /run/user/UID/aisb and
# /dev/shm/aisb-UID: a live session of this user there shows in them.)
private_run_dir() { XDG_RUNTIME_DIR=$(mktemp -d /dev/shm/aisb-e2e-rt.XXXXXX) && export XDG_RUNTIME_DIR; }
private_run_dir_done() {
	case ${XDG_RUNTIME_DIR:-} in /dev/shm/aisb-e2e-rt.*) rm -rf "$XDG_RUNTIME_DIR" ;; esac
	return 0
}

# run_dir: aisb's run dir in this environment (src/run/session.h).
run_dir() {
	if [ -n "${XDG_RUNTIME_DIR:-}" ]; then echo "$XDG_RUNTIME_DIR/aisb"; else echo "/dev/shm/aisb-$(id -u)"; fi
}

# session_dirs: this test's session dirs, in the state dir (--keep) and the run dir, one per line.
session_dirs() {
	local d
	for d in "$XDG_STATE_HOME"/aisb/sessions/* "$(run_dir)"/sessions/*; do
		[ -d "$d" ] && echo "$d"
	done
	return 0
}

# session_ids: their ids.
session_ids() { session_dirs | sed 's,.*/,,'; }

# session_dir [ID]: session ID's dir (the first one without ID), wherever it is; fails when none.
session_dir() {
	local d
	d=$(session_dirs | grep -m1 -- "/${1:-}[^/]*\$") && echo "$d"
}

# require_feature NAME CMD...: skip (or fail under AISB_MUST_WORK=1) when CMD fails.
require_feature() {
	local name=$1
	shift
	if ! "$@" >/dev/null 2>&1; then
		if [ "${AISB_MUST_WORK:-0}" = 1 ]; then
			echo "required feature missing: $name (AISB_MUST_WORK=1)" >&2
			return 1
		fi
		skip "feature missing: $name"
	fi
}

is_root() { [ "$(id -u)" -eq 0 ]; }

# sb ARGS...: run aisb with --net none (the network tests choose their own mode).
sb() { "$AISB" --net none "$@"; }

# debian_cache: where lib/images/mk-debian-oci.sh keeps the Debian minbase layout (one per day
# and user; images.bats and build.bats share it; run.sh names the one it made for both passes).
debian_cache() {
	if [ -n "${AISB_E2E_DEBIAN:-}" ]; then
		echo "$AISB_E2E_DEBIAN"
	elif [ -n "${AISB_E2E_WORK:-}" ]; then
		echo "$AISB_E2E_WORK/debian-minbase-$(date +%Y%m%d)"
	else
		echo "/var/tmp/aisb-e2e-debian-$(id -u)-$(date +%Y%m%d)"
	fi
}

# need TOOL...: skip the test when a tool is not installed (a failure under AISB_MUST_WORK=1).
need() {
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 && continue
		if [ "${AISB_MUST_WORK:-0}" = 1 ]; then
			echo "missing tool: $t" >&2
			return 1
		fi
		skip "needs $t"
	done
}

# no_trace VALUE PATH...: VALUE is in no file below the PATHs that exist (a missing PATH is
# skipped). A grep error fails too: `! grep -r` passed when grep gave 2 (a missing dir) even
# though it had listed files holding the value.
no_trace() {
	local v=$1 p out rc paths=()
	shift
	for p in "$@"; do [ -e "$p" ] && paths+=("$p"); done
	[ ${#paths[@]} -gt 0 ] || return 0
	out=$(grep -rlF -- "$v" "${paths[@]}") && rc=0 || rc=$?
	if [ -n "$out" ]; then
		echo "the value is in: $out"
		return 1
	fi
	[ "$rc" -eq 1 ] || { echo "grep failed with $rc"; return 1; }
}
