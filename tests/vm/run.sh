#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/vm/run.sh — prove cgroup v2 enforcement in a QEMU guest (design section 11).
#
# Boots Debian's kernel (package linux-image-amd64) under TCG with a busybox initramfs that
# insmods virtio + 9p, mounts the host's / read-only over 9p, switch_roots into it and runs
# tests/vm/guest.sh as PID 1. The guest mounts cgroup2 with memory, pids and cpu, delegates a
# subtree to an unprivileged user and drives the freshly built binaries of this tree. Results come
# back as TAP on the guest's second serial port; this script prints them and decides.
#
# Env: AISB_BIN (built aisb; its dir is the build dir), AISB_SRCDIR, AISB_MUST_WORK=1 (a missing
# qemu/kernel fails instead of skipping), AISB_VM_KERNEL (a vmlinuz), AISB_VM_TIMEOUT (s, 600),
# AISB_VM_UID (the unprivileged uid in the guest, 65534), AISB_VM_KEEP=1 (keep the work dir).
set -u

srcdir=${AISB_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${AISB_BIN:-}
[ -n "$bin" ] || bin=$(pwd)/aisb
build=$(cd "$(dirname "$bin")" && pwd)
timeout_s=${AISB_VM_TIMEOUT:-600}
vm_uid=${AISB_VM_UID:-65534}

skip() {
	if [ "${AISB_MUST_WORK:-0}" = 1 ]; then
		echo "not ok 1 - vm: $* (AISB_MUST_WORK=1)"
		echo "1..1"
		exit 1
	fi
	echo "1..0 # SKIP vm: $*"
	exit 77
}

qemu=$(command -v qemu-system-x86_64) || skip "qemu-system-x86_64 not found (apt-get install qemu-system-x86)"
command -v cpio >/dev/null || skip "cpio not found (apt-get install cpio)"
[ -x "$build/tests/vm/cg-run" ] || skip "$build/tests/vm/cg-run not built (run 'make check')"
[ -x "$bin" ] || skip "aisb binary '$bin' not built"

# A static busybox: the initramfs has no libc.
bb=''
for c in /bin/busybox /usr/bin/busybox $(command -v busybox 2>/dev/null); do
	[ -x "$c" ] || continue
	if ! ldd "$c" >/dev/null 2>&1; then bb=$c; break; fi
done
[ -n "$bb" ] || skip "no static busybox (apt-get install busybox-static)"

# A kernel whose modules include 9p (the host's own modules dir names the version).
kernel='' kver=''
for k in ${AISB_VM_KERNEL:-} /boot/vmlinuz-*; do
	[ -f "$k" ] || continue
	v=${k##*/vmlinuz-}
	if [ -f "/lib/modules/$v/kernel/fs/9p/9p.ko" ] || [ -f "/lib/modules/$v/kernel/fs/9p/9p.ko.xz" ]; then
		kernel=$k kver=$v
		break
	fi
done
[ -n "$kernel" ] || skip "no /boot/vmlinuz-* with 9p modules (apt-get install linux-image-amd64)"
[ -r "$kernel" ] || skip "kernel '$kernel' is not readable by uid $(id -u)"

work=$(mktemp -d "${TMPDIR:-/tmp}/aisb-vm.XXXXXX") || exit 1
cleanup() {
	if [ "${AISB_VM_KEEP:-0}" = 1 ]; then echo "# vm work dir kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT INT TERM

# ---- the initramfs ----
ir=$work/initramfs
mkdir -p "$ir/bin" "$ir/sbin" "$ir/usr/bin" "$ir/usr/sbin" "$ir/proc" "$ir/sys" "$ir/dev" \
	"$ir/newroot" "$ir/keep" "$ir/mod"
cp "$bb" "$ir/bin/busybox"
# overlay: for guest.sh's --image checks (a user namespace cannot load it)
mods="virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci netfs fscache 9pnet 9pnet_virtio 9p overlay"
for m in $mods; do
	f=$(find "/lib/modules/$kver/kernel" -name "$m.ko" -o -name "$m.ko.xz" 2>/dev/null | head -n 1)
	if [ -z "$f" ]; then
		grep -q "/$m.ko" "/lib/modules/$kver/modules.builtin" 2>/dev/null && continue
		skip "module $m.ko missing for kernel $kver"
	fi
	case $f in
	*.xz) xz -dc "$f" >"$ir/mod/$m.ko" || skip "cannot decompress $f" ;;
	*) cp "$f" "$ir/mod/$m.ko" ;;
	esac
done

# Directories under /tmp vanish under the guest's tmpfs /tmp: keep the ones we need.
keep=
for d in "$build" "$srcdir"; do
	case $d in /tmp/* | /run/*) keep="$keep $d" ;; esac
done

cat >"$ir/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $mods; do
	[ -f /mod/\$m.ko ] && insmod /mod/\$m.ko
done
fail() { echo "vm-init: \$*" >/dev/ttyS1; echo o >/proc/sysrq-trigger; sleep 5; }
opts=trans=virtio,version=9p2000.L,ro,msize=262144
mount -t 9p -o \$opts hostroot /newroot || fail "cannot mount the host root over 9p"
# Keep what we need from under /tmp and /run before tmpfs covers them (a second mount of the
# same 9p tag fails with EBUSY): bind it aside, then back over the tmpfs.
i=0
for d in $keep; do
	mkdir -p /keep/\$i && mount --bind /newroot\$d /keep/\$i || fail "cannot keep \$d"
	i=\$((i + 1))
done
mount -t tmpfs -o mode=1777 tmpfs /newroot/tmp || fail "tmpfs /tmp"
mount -t tmpfs -o mode=755 tmpfs /newroot/run || fail "tmpfs /run"
i=0
for d in $keep; do
	mkdir -p /newroot\$d && mount --move /keep/\$i /newroot\$d || fail "cannot restore \$d"
	i=\$((i + 1))
done
mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
mount --move /dev /newroot/dev
exec switch_root /newroot /bin/sh "$srcdir/tests/vm/guest.sh" "$build" "$vm_uid"
EOF
chmod 755 "$ir/init"
(cd "$ir" && find . | cpio -o -H newc --quiet) | gzip -1 >"$work/initramfs.gz" || skip "cpio failed"

# ---- boot ----
: >"$work/results.log"
start=$(date +%s)
timeout -k 5 "$timeout_s" "$qemu" -nodefaults -accel tcg -smp 2 -m 768 -display none -no-reboot \
	-monitor none -kernel "$kernel" -initrd "$work/initramfs.gz" \
	-append "console=ttyS0 quiet loglevel=3 panic=-1 sysrq_always_enabled=1" \
	-serial "file:$work/console.log" -serial "file:$work/results.log" \
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap
qrc=$?
end=$(date +%s)
echo "# vm: kernel $kver, qemu exit $qrc, $((end - start)) s"

tr -d '\r' <"$work/results.log" >"$work/tap"
cat "$work/tap"
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	echo "# vm: timed out after $timeout_s s; console tail:"
	tail -n 30 "$work/console.log" | sed 's/^/# /'
	exit 1
fi
if ! grep -q '^# vm-done' "$work/tap"; then
	echo "# vm: the guest did not finish; console tail:"
	tail -n 30 "$work/console.log" | sed 's/^/# /'
	exit 1
fi
if grep -q '^not ok' "$work/tap"; then
	echo "# vm: failures; console tail:"
	tail -n 40 "$work/console.log" | sed 's/^/# /'
	exit 1
fi
grep -q '^ok' "$work/tap" || exit 1
exit 0
