#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/deb/run.sh — the Debian package, end to end: `dpkg-buildpackage -b -us -uc` on a copy of
# the source tree, lintian (errors and warnings fail; the triaged ones are overridden, with the
# reason, in debian/aisb.lintian-overrides), then `apt-get install ./aisb.deb` in a clean rootful
# podman container of a Debian minbase (no aisb dependency preinstalled, so the package's
# Depends must pull in every library, the dlopen()ed ones included) and real sandboxes there, as
# root and as an unprivileged user: --net none, --net allow (loads libmnl and libnftnl), an OCI
# image (libarchive, libcrypto), doctor. Prints TAP and the time of each stage.
#
# Root only (rootful podman, docs/machine-facts.md); AISB_MUST_WORK=1 turns a missing tool into a
# failure instead of a skip. Env: AISB_SRCDIR (the source tree), AISB_DEB_KEEP=DIR keeps the
# .deb and the logs in DIR.
set -u
srcdir=${AISB_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}

skip_all() {
	if [ "${AISB_MUST_WORK:-0}" = 1 ]; then
		printf '1..1\nnot ok 1 - deb: %s (AISB_MUST_WORK=1)\n' "$*"
		exit 1
	fi
	echo "1..0 # SKIP deb: $*"
	exit 77
}
[ "$(id -u)" -eq 0 ] || skip_all "needs root (rootful podman)"
for t in dpkg-buildpackage lintian podman mmdebstrap busybox git; do
	command -v "$t" >/dev/null || skip_all "$t is not installed (contrib/packages.txt)"
done

work=$(mktemp -d /tmp/aisb-deb.XXXXXX)
chmod 755 "$work"
ctr=""
cleanup() {
	[ -n "$ctr" ] && podman rm -f "$ctr" >/dev/null 2>&1
	if [ -n "${AISB_DEB_KEEP:-}" ]; then mkdir -p "$AISB_DEB_KEEP" && cp "$work"/*.deb "$work"/*.log "$AISB_DEB_KEEP"/ 2>/dev/null; fi
	rm -rf "$work"
}
trap cleanup EXIT
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
stage() { # NAME LOG CMD...: runs CMD, logs to LOG, reports the stage and its time
	local name=$1 log=$2 t0 rc
	shift 2
	t0=${EPOCHREALTIME/./}
	"$@" >"$log" 2>&1
	rc=$?
	t0=$(((${EPOCHREALTIME/./} - t0) / 100000))
	echo "# $name: $((t0 / 10)).$((t0 % 10)) s"
	if [ $rc -eq 0 ]; then ok "$name"; else not_ok "$name (exit $rc)"; sed 's/^/#   /' "$log" | tail -40; fi
	return $rc
}
echo "1..5"

# 1. the package, from the tree's files as git sees them (tracked and new, not ignored), so a
# developer's ./build is not packaged and nothing is written next to the checkout
mkdir -p "$work/src"
git -C "$srcdir" ls-files -co --exclude-standard -z | (cd "$srcdir" && tar --null -T - -c) | tar -x -C "$work/src"
stage "deb: dpkg-buildpackage -b -us -uc builds aisb_*.deb" "$work/build.log" \
	sh -c "cd '$work/src' && nice dpkg-buildpackage -b -us -uc" || exit 1
deb=$(ls "$work"/aisb_*_*.deb)

# 2. lintian: every warning or error is either fixed or overridden with its reason
stage "deb: lintian finds no error or warning (overrides: debian/aisb.lintian-overrides)" "$work/lintian.log" \
	lintian --fail-on error,warning "$deb"
sed 's/^/#   lintian: /' "$work/lintian.log"

# 3. the dlopen()ed libraries are in Depends, derived from the binary's .note.dlopen notes
missing=""
deps=$(dpkg-deb -f "$deb" Depends)
echo "# Depends: $deps"
recs=$(dpkg-deb -f "$deb" Recommends)
echo "# Recommends: $recs"
[[ $recs == *libcap2* ]] || missing+=" libcap2-in-Recommends"
for p in libcurl4 libarchive13 libssl3 libmnl0 libnftnl11 libjson-c5; do
	[[ ", $deps" == *", $p "* || ", $deps," == *", $p,"* ]] || missing+=" $p"
done
# the seccomp filters are compiled into the binary when it is built (src/gen/seccomp-gen.c):
# libseccomp is a build dependency only
[[ $deps != *libseccomp* ]] || missing+=" (libseccomp2 is not needed at run time)"
if [ -z "$missing" ]; then
	ok "deb: Depends lists the linked and the dlopen()ed libraries"
else
	not_ok "deb: Depends lacks$missing"
fi

# 4. a clean container: a Debian minbase with nothing of aisb's installed
mirror=$(python3 "$srcdir/tests/e2e/lib/images/apt-mirror.py" bookworm)
img=localhost/aisb-deb-base:$(date +%G-%V)
if ! podman image exists "$img"; then
	stage "deb: a minbase image (mmdebstrap from $mirror)" "$work/image.log" sh -c \
		"mmdebstrap --quiet --mode=root --variant=minbase bookworm '$work/root' '$mirror' &&
		 tar --numeric-owner --exclude='./dev/*' -C '$work/root' -c . | podman import --quiet - '$img' &&
		 rm -rf '$work/root'" || exit 1
else
	ok "deb: a minbase image ($img, cached this week)"
fi
sh "$srcdir/tests/e2e/lib/images/mk-busybox-oci.sh" "$work/bb" v1 >/dev/null
cp "$deb" "$work/aisb.deb"
cp "$srcdir/tests/deb/in-container.sh" "$work/"
chmod -R a+rX "$work"

# 5. install with apt (dependencies from the mirror) and run sandboxes. podman masks /proc by
# default, which aisb refuses to cover (77): unmask it, as CI users are told to.
ctr=aisb-deb-$$
stage "deb: apt-get install ./aisb.deb in the clean container, then sandboxes as root and as a user" \
	"$work/container.log" podman run --name "$ctr" --rm --runtime runc \
	--ulimit nofile=20000:20000 --ulimit nproc=32768:32768 --security-opt unmask=ALL \
	-v "$work:/opt/t:ro" "$img" sh /opt/t/in-container.sh
sed 's/^/#   /' "$work/container.log" | grep -E 'OK|FAIL|INFO|aisb [0-9]' | head -40
ctr=""
[ "$failed" -eq 0 ]
