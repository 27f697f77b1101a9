#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/run.sh — run every tests/e2e/*.bats against the built aisb, as the calling user and,
# when that is root, also as an unprivileged user (created if missing), the two passes at the
# same time. Prints TAP per file, its wall time, and a closing "N passed, N failed, N skipped"
# line; exits non-zero on any failure.
#
# Env: AISB_BIN (the binary; default ./aisb), AISB_SRCDIR (source dir), AISB_MUST_WORK=1 (a
# missing kernel feature fails instead of skipping), AISB_E2E_FILTER (bats --filter regex),
# AISB_E2E_USER (the unprivileged user, default aisb-e2e), AISB_E2E_ONLY=root|user,
# AISB_E2E_FILES (space-separated file names without .bats, e.g. "core images": only those),
# AISB_E2E_SERIAL=1 (as root: the user pass after the root pass instead of at the same time),
# AISB_E2E_FILE_TIMEOUT (seconds one bats file may take, default 1200).
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

# run_suite COUNTS LABEL ORDER PREFIX...: every file (ORDER fwd, or rev: the last first) in one bats
# each, under PREFIX (the user and environment). TAP and one "# time:" line per file on stdout;
# "PASSED FAILED SKIPPED" into the file COUNTS. A file that runs over AISB_E2E_FILE_TIMEOUT s
# (default 1200) is killed and counted as a failure, so that a hung test cannot hang the suite.
run_suite() {
	local counts=$1 label=$2 order=$3 out rc f0 t0 p f s tp=0 tf=0 ts=0 list=("${files[@]}") i
	shift 3
	if [ "$order" = rev ]; then
		list=()
		for ((i = ${#files[@]} - 1; i >= 0; i--)); do list+=("${files[$i]}"); done
	fi
	echo "# === e2e as $label ==="
	for f0 in "${list[@]}"; do
		t0=$(date +%s)
		out=$("$@" env AISB_BIN="$stage/aisb" AISB_E2E_DIR="$stage" AISB_E2E_WORK="$work_base" \
			AISB_MUST_WORK="${AISB_MUST_WORK:-0}" AISB_E2E_LABEL="$label" AISB_E2E_DEBIAN="$debian" \
			timeout -k 30 "${AISB_E2E_FILE_TIMEOUT:-1200}" \
			bats --tap ${AISB_E2E_FILTER:+--filter "$AISB_E2E_FILTER"} "$f0" 2>&1)
		rc=$?
		echo "$out"
		s=$(grep -cE '^ok [0-9]+ .*# skip' <<<"$out")
		p=$(( $(grep -cE '^ok [0-9]+' <<<"$out") - s ))
		f=$(grep -cE '^not ok [0-9]+' <<<"$out")
		if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
			echo "# $(basename "$f0") as $label: killed after ${AISB_E2E_FILE_TIMEOUT:-1200} s: counted as a failure"
			f=$((f + 1))
		elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
			echo "# bats exited $rc without a failing test: counted as a failure"
			f=1
		fi
		echo "# time: $(basename "$f0" .bats) as $label: $(($(date +%s) - t0)) s ($p passed, $f failed, $s skipped; load $(cut -d' ' -f1 /proc/loadavg))"
		tp=$((tp + p)) tf=$((tf + f)) ts=$((ts + s))
	done
	echo "$tp $tf $ts" >"$counts"
}

# add_counts COUNTS: adds a pass's counts to the totals; a pass that wrote none failed.
add_counts() {
	local p f s
	if read -r p f s <"$1" 2>/dev/null; then
		pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	else
		echo "# $1: the pass left no counts: counted as a failure"
		fail=$((fail + 1))
	fi
}

# The Debian minbase layout that build.bats and images.bats share (lib/images/mk-debian-oci.sh,
# one per run under AISB_E2E_WORK). The unprivileged user cannot make it (mmdebstrap
# --mode=unshare needs subuids) and reuses root's; with the two passes at once, root makes it
# here, before either starts, holding $debian/lock until it is done: the passes' own calls wait
# for that lock instead of for a time.
debian=$work_base/debian-minbase-$(date +%Y%m%d)
prebuild_debian() {
	case " ${files[*]##*/} " in *" build.bats "* | *" images.bats "*) ;; *) return 0 ;; esac
	command -v mmdebstrap >/dev/null || return 0
	mkdir -p "$debian" && chmod 755 "$debian" || return 1
	exec 9>"$debian/lock"
	flock 9
	# the subshell inherits fd 9, and with it the lock, until the layout is there (or not)
	AISB_DEBIAN_LOCK_HELD=1 "$stage/lib/images/mk-debian-oci.sh" "$debian" >"$stage/debian.log" 2>&1 &
	exec 9>&-
}

only=${AISB_E2E_ONLY:-}
if [ "$(id -u)" -eq 0 ]; then
	if [ "$only" != root ] && ! id "$user" >/dev/null 2>&1; then
		useradd --create-home --shell /bin/bash "$user" || { echo "run.sh: cannot create user $user" >&2; exit 1; }
	fi
	uhome=$(getent passwd "$user" | cut -d: -f6)
	as_user=(runuser -u "$user" -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$uhome" USER="$user"
		LANG=C.UTF-8 TERM="${TERM:-dumb}")
	if [ -z "$only" ] && [ "${AISB_E2E_SERIAL:-0}" != 1 ]; then
		# Both passes at once (docs/testing.md says why that is safe): the root pass on stdout as
		# it goes, the user's, which takes the files in the opposite order so that the two do not
		# run the same test at the same time, after it.
		t0=$(date +%s)
		prebuild_debian
		run_suite "$stage/user.counts" "user $user" rev "${as_user[@]}" >"$stage/user.out" 2>&1 &
		upid=$!
		run_suite "$stage/root.counts" root fwd env HOME=/root
		wait "$upid"
		cat "$stage/user.out"
		echo "# e2e: both passes at once: $(($(date +%s) - t0)) s"
		add_counts "$stage/root.counts"
		add_counts "$stage/user.counts"
	else
		if [ "$only" != user ]; then
			run_suite "$stage/root.counts" root fwd env HOME=/root
			add_counts "$stage/root.counts"
		fi
		if [ "$only" != root ]; then
			run_suite "$stage/user.counts" "user $user" fwd "${as_user[@]}"
			add_counts "$stage/user.counts"
		fi
	fi
else
	run_suite "$stage/user.counts" "user $(id -un)" fwd env
	add_counts "$stage/user.counts"
fi
echo "e2e: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
