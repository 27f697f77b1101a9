#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# mk-busybox-oci.sh OUTDIR [TAG] — a static-busybox OCI layout, reproducible: tar --sort=name
# --mtime=@0 --owner=0 --numeric-owner, gzip -n, sha256 digests (via oci-layout.py).
set -eu
out=$1
tag=${2:-latest}
here=$(cd "$(dirname "$0")" && pwd)
bb=$(command -v busybox)
case "$(file -b "$bb" 2>/dev/null || echo static)" in *dynamic*) echo "busybox is not static" >&2; exit 1;; esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
r=$work/root
mkdir -p "$r/bin" "$r/etc" "$r/tmp" "$r/work" "$r/home" "$r/usr/bin"
cp "$bb" "$r/bin/busybox"
for t in sh ls cat echo id env pwd mkdir rm touch test true false sleep stat wc head grep sed printf readlink uname; do
	ln -s busybox "$r/bin/$t"
done
echo "root:x:0:0:root:/root:/bin/sh" >"$r/etc/passwd"
echo "root:x:0:" >"$r/etc/group"
echo "hello from the image" >"$r/etc/motd"
chmod 1777 "$r/tmp"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$r" -cf "$work/layer.tar" .
gzip -n -9 <"$work/layer.tar" >"$work/layer.tar.gz"
python3 "$here/oci-layout.py" "$out" --tag "$tag" --workdir /work \
	--env "PATH=/bin:/usr/bin" --env "IMAGE_VAR=from-image" --cmd /bin/sh "$work/layer.tar.gz"
