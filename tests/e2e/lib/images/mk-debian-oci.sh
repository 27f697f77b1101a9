#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# mk-debian-oci.sh CACHEDIR — a Debian bookworm minbase OCI layout (tag bookworm) in
# CACHEDIR/layout, made with mmdebstrap from the mirror of this host's apt configuration
# (apt-mirror.py) and reused while CACHEDIR/layout/index.json exists. Prints the layout path.
# As root: mmdebstrap --mode=root into a directory, then tar --sort=name --mtime=@0
# --numeric-owner (without /dev's nodes) and gzip -n. Unprivileged: --mode=unshare (needs
# subuids) writing the tar itself. SOURCE_DATE_EPOCH=0 either way.
set -eu
cache=$1
here=$(cd "$(dirname "$0")" && pwd)
layout=$cache/layout
if [ -f "$layout/index.json" ]; then
	echo "$layout"
	exit 0
fi
# tests/e2e/run.sh makes the layout before its two passes start and holds CACHEDIR/lock
# meanwhile: wait for that (30 min at most), then take its result
if [ -z "${AISB_DEBIAN_LOCK_HELD:-}" ] && [ -e "$cache/lock" ]; then
	flock -s -w 1800 "$cache/lock" true || { echo "mk-debian-oci: $cache/lock still held after 30 min" >&2; exit 1; }
	if [ -f "$layout/index.json" ]; then
		echo "$layout"
		exit 0
	fi
fi
mirror=$(python3 "$here/apt-mirror.py" bookworm)
mkdir -p "$cache"
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
export SOURCE_DATE_EPOCH=0
if [ "$(id -u)" -eq 0 ]; then
	mmdebstrap --quiet --mode=root --variant=minbase bookworm "$work/root" "$mirror" >&2
	tar --sort=name --mtime=@0 --numeric-owner --exclude='./dev/*' -C "$work/root" -cf "$work/layer.tar" .
else
	mmdebstrap --quiet --mode=unshare --variant=minbase bookworm "$work/layer.tar" "$mirror" >&2
fi
gzip -n -6 <"$work/layer.tar" >"$work/layer.tar.gz"
rm -f "$work/layer.tar"
python3 "$here/oci-layout.py" "$work/layout" --tag bookworm \
	--env "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" --cmd /bin/bash \
	"$work/layer.tar.gz" >/dev/null
sha256sum "$work/layout/blobs/sha256/"* | while read -r sum path; do
	[ "$sum" = "$(basename "$path")" ] || { echo "digest mismatch: $path" >&2; exit 1; }
done
chmod -R a+rX "$work/layout"
chmod a+rx "$cache"
# appears whole or not at all: the rename is atomic, a concurrent builder's result wins
mv -T "$work/layout" "$layout" 2>/dev/null || [ -f "$layout/index.json" ]
echo "$layout"
