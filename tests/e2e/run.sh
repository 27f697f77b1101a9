#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/run.sh — run every tests/e2e/*.bats against the built aisb, as the calling user and,
# when that is root, again as an unprivileged user (created if missing). Prints TAP per suite
# and a closing "N passed, N failed, N skipped" line; exits non-zero on any failure.
#
# Env: AISB_BIN (the binary; default ./aisb), AISB_SRCDIR (source dir), AISB_MUST_WORK=1 (a
# missing kernel feature fails instead of skipping), AISB_E2E_FILTER (bats --filter regex),
# AISB_E2E_USER (the unprivileged user, default aisb-e2e), AISB_E2E_ONLY=root|user,
# AISB_E2E_FILES (space-separated file names without .bats, e.g. "core images": only those).
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${AISB_BIN:-$PWD/aisb}
user=${AISB_E2E_USER:-aisb-e2e}
[ -x "$bin" ] || { echo "run.sh: AISB_BIN '$bin' is not executable" >&2; exit 1; }
command -v bats >/dev/null || { echo "run.sh: bats is not installed (apt-get install bats)" >&2; exit 1; }

# Everything the unprivileged user needs is copied to a world-readable place: the checkout may
# live under /root (0700).
stage=$(mktemp -d /tmp/aisb-e2e.XXXXXX)
chmod 755 "$stage"
cleanup() { rm -rf "$stage" 2>/dev/null; [ -n "${work_base:-}" ] && rm -rf "$work_base" 2>/dev/null; }
trap cleanup EXIT
cp "$bin" "$stage/aisb"
cp -r "$here"/*.bats "$here/lib" "$stage/"
[ -d "$here/fixtures" ] && cp -r "$here/fixtures" "$stage/"
# agents.bats runs the README's agent example lines as written
cp "$here/../../README.md" "$stage/" 2>/dev/null || true
# compiled helpers (tests/e2e/Makefile.inc) from the build dir next to the binary
mkdir -p "$stage/helpers"
for helper in deny-userns probe; do
	helper=$(dirname "$bin")/tests/e2e/$helper
	[ -x "$helper" ] && cp "$helper" "$stage/helpers/"
done
# the seccomp filter generator of the build (hardening.bats runs it with a shimmed libseccomp)
[ -x "$(dirname "$bin")/seccomp-gen" ] && cp "$(dirname "$bin")/seccomp-gen" "$stage/helpers/"
chmod -R a+rX "$stage"

# Projects live under a path the sandbox does not own (/tmp, /root, /var are reserved and would
# be relocated to /project), so "mounted at its own path" is tested for real.
work_base=$(mktemp -d /home/aisb-e2e-work.XXXXXX 2>/dev/null || mktemp -d "$HOME/aisb-e2e-work.XXXXXX")
chmod 1777 "$work_base"

pass=0 fail=0 skip=0
files=()
for f in ${AISB_E2E_FILES:-}; do
	[ -f "$stage/$f.bats" ] || { echo "run.sh: no tests/e2e/$f.bats" >&2; exit 1; }
	files+=("$stage/$f.bats")
done
[ ${#files[@]} -gt 0 ] || files=("$stage"/*.bats)

run_suite() { # $1 label, rest: command prefix
	local label=$1 out rc
	shift
	echo "# === e2e as $label ==="
	out=$("$@" env AISB_BIN="$stage/aisb" AISB_E2E_DIR="$stage" AISB_E2E_WORK="$work_base" \
		AISB_MUST_WORK="${AISB_MUST_WORK:-0}" AISB_E2E_LABEL="$label" \
		bats --tap ${AISB_E2E_FILTER:+--filter "$AISB_E2E_FILTER"} "${files[@]}" 2>&1)
	rc=$?
	echo "$out"
	local p f s
	s=$(grep -cE '^ok [0-9]+ .*# skip' <<<"$out")
	p=$(( $(grep -cE '^ok [0-9]+' <<<"$out") - s ))
	f=$(grep -cE '^not ok [0-9]+' <<<"$out")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "# bats exited $rc without a failing test: counted as a failure"
		f=1
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
}

only=${AISB_E2E_ONLY:-}
if [ "$(id -u)" -eq 0 ]; then
	[ "$only" = user ] || run_suite root env HOME=/root
	if [ "$only" != root ]; then
		if ! id "$user" >/dev/null 2>&1; then
			useradd --create-home --shell /bin/bash "$user" || { echo "run.sh: cannot create user $user" >&2; exit 1; }
		fi
		uhome=$(getent passwd "$user" | cut -d: -f6)
		run_suite "user $user" runuser -u "$user" -- env -i PATH=/usr/local/bin:/usr/bin:/bin \
			HOME="$uhome" USER="$user" LANG=C.UTF-8 TERM="${TERM:-dumb}"
	fi
else
	run_suite "user $(id -un)" env
fi
echo "e2e: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
