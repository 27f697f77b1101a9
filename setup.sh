#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# setup.sh — install what aisb needs (Debian/Ubuntu), build it in ./build, and run a real sandbox.
#   ./setup.sh            install packages, build, run a demo sandbox
#   ./setup.sh --no-demo  the same without the demo (used by .ci/run)
# Extra configure flags: AISB_CONFIGURE="--enable-werror" ./setup.sh
set -eu
cd "$(dirname "$0")"
demo=1
[ "${1:-}" = "--no-demo" ] && demo=0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
pkgs=$(grep -v '^#' contrib/packages.txt | grep -v '^$' | tr '\n' ' ')
echo "setup: installing packages: $pkgs"
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $pkgs >/dev/null

echo "setup: building in ./build"
autoreconf -fi >/dev/null
mkdir -p build
cd build
# shellcheck disable=SC2086
../configure ${AISB_CONFIGURE:-} >/dev/null
make -j"$(nproc)" >/dev/null
cd ..
echo "setup: built $(./build/aisb --harness shell --version)"

if [ "$demo" -eq 1 ]; then
	proj=$(mktemp -d)
	echo "hello from the project" > "$proj/README"
	echo "setup: running a sandbox on $proj (the project appears at /project, network off):"
	top=$PWD
	(cd "$proj" && "$top/build/aisb" --net none -- sh -c \
		'echo "  inside: $(id)"; echo "  project: $(cat README)";
		 echo "  $(grep CapEff /proc/self/status)"; echo "  processes visible: $(ls /proc | grep -c "^[0-9]")";
		 touch /usr/x 2>/dev/null || echo "  /usr is read-only"')
	rm -rf "$proj"
fi
