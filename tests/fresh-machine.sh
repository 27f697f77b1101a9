#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/fresh-machine.sh — the README's quick start on a fresh Debian 12, where a package that was
# installed by hand on the CI machine cannot hide a missing line in contrib/packages.txt.
#
# A minbase bookworm made with mmdebstrap from this host's mirror (tests/containers/mk-image.sh,
# cached), with only sudo added and a user 'ci' allowed to use it, runs in a rootful podman
# container made to behave like a machine: --privileged (no /proc masks, host devices such as
# /dev/net/tun, no seccomp filter of its own: podman's makes the suites' host-side controls fail,
# personality, io_uring, sethostname, measured; and the capabilities newuidmap needs for the
# rootless podman and mmdebstrap --mode=unshare the suites run), /home and /tmp on volumes. The
# container shapes CI platforms give are tests/containers/run.sh's job, not this one's. Inside,
# on a copy of this checkout:
#   1. as 'ci': ./setup.sh (sudo apt-get install of contrib/packages.txt, build, the demo sandbox);
#   2. as root: the unit tests and the e2e suites named by AISB_FRESH_E2E (default: smoke, core,
#      net, images, homedir), as root and as an unprivileged user, with AISB_MUST_WORK=1;
#      or, with AISB_FRESH_FULL=1, ./tests/run-all.sh as 'ci' (the README's second step).
# The VM tests, the podman builder and the container suite need a machine, not a container:
# they run on the CI machine itself (.ci/run). Root only. Prints what it runs and how long.
set -eu
srcdir=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "fresh-machine: needs root (rootful podman)" >&2; exit 1; }
suites=${AISB_FRESH_E2E:-smoke core net images homedir}
t0=$(date +%s)
img=$("$srcdir/tests/containers/mk-image.sh" aisb-ci-fresh sudo,ca-certificates)
echo "fresh-machine: image $img ($(($(date +%s) - t0)) s)"

work=$(mktemp -d /tmp/aisb-fresh.XXXXXX)
name=aisb-fresh-$$
trap 'podman rm -f "$name" >/dev/null 2>&1; rm -rf "$work"' EXIT
# the tracked files and the working tree's changes, nothing built
git -C "$srcdir" ls-files -z --cached --others --exclude-standard |
	(cd "$srcdir" && xargs -0 tar --no-recursion -cf - 2>/dev/null) | tar -xf - -C "$work"
chmod -R a+rX "$work"

# shellcheck disable=SC2086 # a list of words
filter=$(printf '%s\n' $suites | paste -sd'|')
cat >"$work/inside.sh" <<INSIDE
#!/bin/bash
set -eu
cp -a /src /home/ci/aisb
chown -R ci:ci /home/ci/aisb
cd /home/ci/aisb
# 1. the quick start, as a user with sudo (the demo sandbox included)
s=\$(date +%s)
runuser -u ci -- env HOME=/home/ci PATH=/usr/sbin:/usr/bin:/sbin:/bin AISB_CONFIGURE=--enable-werror ./setup.sh
echo "fresh-machine: setup.sh as ci: \$((\$(date +%s) - s)) s"
runuser -u ci -- ./build/aisb doctor || true
if [ "${AISB_FRESH_FULL:-0}" = 1 ]; then
	# the README's second step as that user: the whole suite (no AISB_MUST_WORK: a user
	# without rootful podman skips the container suite, as on a developer's machine)
	s=\$(date +%s)
	runuser -u ci -- env HOME=/home/ci PATH=/usr/sbin:/usr/bin:/sbin:/bin ./tests/run-all.sh
	echo "fresh-machine: run-all.sh as ci: \$((\$(date +%s) - s)) s"
	exit 0
fi
# 2. unit tests and e2e suites, as root and as an unprivileged user (run.sh creates it)
s=\$(date +%s)
make -C build -j"\$(nproc)" check-unit >/dev/null || { cat build/test-suite.log; exit 1; }
echo "fresh-machine: unit tests: \$((\$(date +%s) - s)) s"
s=\$(date +%s)
files=""
for f in $suites; do files="\$files tests/e2e/\$f.bats"; done
cd build
AISB_BIN=\$PWD/aisb AISB_SRCDIR=\$PWD/.. AISB_MUST_WORK=1 bash ../tests/e2e/run.sh
echo "fresh-machine: e2e ($filter): \$((\$(date +%s) - s)) s"
INSIDE
chmod +x "$work/inside.sh"
# run.sh runs every tests/e2e/*.bats; only the chosen suites are copied into the container
[ "${AISB_FRESH_FULL:-0}" = 1 ] || find "$work/tests/e2e" -maxdepth 1 -name '*.bats' | while read -r f; do
	b=$(basename "$f" .bats)
	# shellcheck disable=SC2086 # a list of words
	printf '%s\n' $suites | grep -qx "$b" || rm -f "$f"
done
t1=$(date +%s)
# /home and /tmp on volumes (the host's filesystem, as on a machine; the container's overlayfs
# root refuses whiteout nodes and overlay uppers, measured), removed with the container. apt's
# downloads are kept between runs (the packages, not what is installed from them).
debs=${AISB_CI_CACHE:-/var/cache/aisb-ci}/apt-archives
mkdir -p "$debs/partial"
podman run --rm --name "$name" --runtime runc --ulimit nofile=20000:20000 --ulimit nproc=32768:32768 \
	--privileged -v "$work:/src:ro" -v "$debs:/var/cache/apt/archives" \
	-v /home -v /tmp \
	"$img" bash /src/inside.sh
echo "fresh-machine: passed in $(($(date +%s) - t1)) s in the container ($(($(date +%s) - t0)) s in all)"
