#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/containers/mk-image.sh NAME PACKAGES — a rootful podman image localhost/NAME:HASH made
# with mmdebstrap (--variant=minbase bookworm) from the mirror of this host's apt configuration,
# with the comma-separated PACKAGES and two users (uid 1000 'ci' with passwordless sudo when
# sudo is among the packages). Prints the image reference.
#
# Cached twice: the rootfs tarball under $AISB_CI_CACHE (default /var/cache/aisb-ci), keyed by
# a hash of the package list, this script and the date of the week (so the mirror's updates
# arrive at most a week late), and the podman image of the same name; an existing image is
# reused as it is. Root only (rootful podman: docs/machine-facts.md).
set -eu
name=$1
pkgs=$2
here=$(cd "$(dirname "$0")" && pwd)
cache=${AISB_CI_CACHE:-/var/cache/aisb-ci}
[ "$(id -u)" -eq 0 ] || { echo "mk-image.sh: needs root (rootful podman)" >&2; exit 1; }
key=$( { echo "$pkgs"; cat "$0"; date +%G-%V; } | sha256sum | cut -c1-16)
ref=localhost/$name:$key
if podman image exists "$ref"; then
	echo "$ref"
	exit 0
fi
mkdir -p "$cache"
tarball=$cache/$name-$key.tar
if [ ! -f "$tarball" ]; then
	mirror=$(python3 "$here/../e2e/lib/images/apt-mirror.py" bookworm)
	work=$(mktemp -d "$cache/build.XXXXXX")
	trap 'rm -rf "$work"' EXIT
	# The users exist in the image, as in a CI image; sudo rights only where sudo is installed.
	# shellcheck disable=SC2016 # $1 is mmdebstrap's: the hook runs with the root dir as $1
	mmdebstrap --quiet --mode=root --variant=minbase --include="$pkgs" \
		--customize-hook='chroot "$1" useradd --create-home --uid 1000 --shell /bin/bash ci' \
		--customize-hook='if [ -d "$1/etc/sudoers.d" ]; then echo "ci ALL=(ALL) NOPASSWD:ALL" >"$1/etc/sudoers.d/ci"; chmod 0440 "$1/etc/sudoers.d/ci"; fi' \
		bookworm "$work/root" "$mirror" >&2
	tar --numeric-owner --exclude='./dev/*' -C "$work/root" -cf "$work/rootfs.tar" .
	mv "$work/rootfs.tar" "$tarball"
	# older tarballs of this name are stale
	find "$cache" -maxdepth 1 -name "$name-*.tar" ! -name "$name-$key.tar" -delete
fi
podman import --quiet "$tarball" "$ref" >/dev/null
# this script's older images of the same name are stale too
podman images --format '{{.Repository}}:{{.Tag}}' "localhost/$name" | grep -vxF "$ref" |
	xargs -r podman rmi >/dev/null 2>&1 || true
echo "$ref"
