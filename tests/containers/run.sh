#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/containers/run.sh — aisb inside CI containers, for real: rootful podman containers of a
# minimal Debian image made from the mirror (mk-image.sh, cached), in the shapes CI platforms
# give, each as root and as the image's user 'ci' (uid 1000):
#   default    podman's defaults: /proc masked, no /dev/net/tun
#   unmask     --security-opt unmask=ALL --device /dev/net/tun
#   seccomp    a Docker-like seccomp profile (podman's own, made to deny namespaces to clone
#              and unshare, as Docker's default does), /proc masked
#   notun      --security-opt unmask=ALL, no /dev/net/tun
# In each: aisb doctor, --net none, --net allow against a server inside the container (plus a
# denied name), --image from an OCI layout, --net full (tests/containers/probe.sh). Checked:
# what works where the platform allows it, the refusal with the engine's exact option where it
# does not, and that doctor agrees with the run every time. Prints TAP.
#
# Root only (rootful podman); AISB_MUST_WORK=1 makes a missing podman or a non-root caller a
# failure instead of a skip. Env: AISB_BIN, AISB_SRCDIR, AISB_CI_CACHE (mk-image.sh).
set -u
srcdir=${AISB_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${AISB_BIN:-$PWD/aisb}
here=$srcdir/tests/containers

skip_all() {
	if [ "${AISB_MUST_WORK:-0}" = 1 ]; then
		echo "1..1"
		echo "not ok 1 - containers: $* (AISB_MUST_WORK=1)"
		exit 1
	fi
	echo "1..0 # SKIP containers: $*"
	exit 77
}
[ "$(id -u)" -eq 0 ] || skip_all "needs root (rootful podman)"
command -v podman >/dev/null || skip_all "podman is not installed (apt-get install podman runc)"
command -v mmdebstrap >/dev/null || skip_all "mmdebstrap is not installed"
command -v busybox >/dev/null || skip_all "busybox is not installed (apt-get install busybox-static)"
[ -x "$bin" ] || skip_all "AISB_BIN '$bin' is not executable"

t0=$(date +%s)
img=$("$here/mk-image.sh" aisb-ci-runtime \
	libseccomp2,libjson-c5,libcurl4,libarchive13,libssl3,libmnl0,libnftnl11,passt,socat,curl,procps,iproute2) ||
	skip_all "cannot build the container image (see above)"
t_img=$(($(date +%s) - t0))

work=$(mktemp -d /tmp/aisb-containers.XXXXXX)
names=()
cleanup() {
	for n in "${names[@]}"; do podman rm -f "$n" >/dev/null 2>&1; done
	rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/t"
cp "$bin" "$work/t/aisb"
cp "$here/probe.sh" "$here/serve.sh" "$work/t/"
sh "$srcdir/tests/e2e/lib/images/mk-busybox-oci.sh" "$work/t/bb" latest >/dev/null || skip_all "cannot build the busybox OCI layout"
chmod -R a+rX "$work/t"

# Docker's default profile denies namespace flags to clone (and unshare without CAP_SYS_ADMIN)
# and answers EPERM; podman's allows them. This is podman's profile with Docker's rules for
# exactly those calls.
python3 - /usr/share/containers/seccomp.json "$work/seccomp-docker-like.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
for rule in p["syscalls"]:
    rule["names"] = [n for n in rule["names"] if n not in ("clone", "clone3", "unshare")]
p["syscalls"] = [r for r in p["syscalls"] if r["names"]]
ns = 0x7E020000  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET, Docker's mask
p["syscalls"] += [
    {"names": ["clone"], "action": "SCMP_ACT_ALLOW",
     "args": [{"index": 0, "value": ns, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}]},
    {"names": ["unshare"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1, "errno": "EPERM"},
    {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38, "errno": "ENOSYS"},
]
p["defaultErrnoRet"] = 1  # EPERM, as Docker's default profile answers (clone with a namespace)
p["defaultErrno"] = "EPERM"
json.dump(p, open(sys.argv[2], "w"), indent=1)
PY

common=(--rm --runtime runc --ulimit nofile=20000:20000 --ulimit nproc=32768:32768 -v "$work/t:/opt/t:ro")
declare -A opts=(
	[default]=""
	[unmask]="--security-opt unmask=ALL --device /dev/net/tun"
	[seccomp]="--security-opt seccomp=$work/seccomp-docker-like.json"
	[notun]="--security-opt unmask=ALL"
)
order=(default unmask seccomp notun)

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
check() { # DESC CMD...: one TAP line
	local d=$1
	shift
	if "$@"; then ok "$d"; else notok "$d"; fi
}
rc() { cat "$out/$1.rc"; }
has() { grep -qF -- "$2" "$out/$1.out"; }
# exits STEP CODE TEXT...: STEP exited with CODE and printed every TEXT
exits() {
	local step=$1 code=$2 x
	shift 2
	[ "$(rc "$step")" -eq "$code" ] || return 1
	for x in "$@"; do has "$step" "$x" || return 1; done
}
lacks() { ! has "$1" "$2"; }
# the fix lines doctor printed under its FAIL lines
doctor_fixes() { awk '/^FAIL /{f=1; next} f && /fix: /{sub(/^.*fix: /, ""); print} {f=0}' "$out/doctor.out"; }
# doctor agrees with the run: it exits 0 exactly when --net none works, and every fix it
# prints under a FAIL is the text the refused runs print
agrees() {
	local fx
	if [ "$(rc doctor)" -eq 0 ]; then
		[ "$(rc none)" -eq 0 ]
		return
	fi
	[ "$(rc none)" -ne 0 ] || return 1
	fx=$(doctor_fixes | head -1)
	[ -n "$fx" ] && has none "$fx" && has allow "$fx" && has image "$fx"
}
# a kept image run (its upper in the state dir) falls back from overlay exactly when doctor
# warned about it; a run that is not kept has its upper on a tmpfs and never falls back for it
overlay_agrees() {
	local a=n b=n
	has image-keep "overlayfs with userxattr cannot be mounted here" && a=y
	has doctor "warn overlay" && b=y
	[ "$a" = "$b" ] && lacks image "overlayfs with userxattr cannot be mounted here"
}
show() { for f in "$out"/*.out; do sed "s|^|# $(basename "$f" .out): |" "$f"; done; }

t1=$(date +%s)
for s in "${order[@]}"; do
	for who in root ci; do
		out=$work/out-$s-$who
		mkdir -p "$out"
		chmod 777 "$out"
		name=aisb-ct-$s-$who-$$
		names+=("$name")
		# shellcheck disable=SC2086
		podman run "${common[@]}" --name "$name" ${opts[$s]} --user "$who" -v "$out:/out" \
			-v "$work/t/aisb:/usr/local/bin/aisb:ro" "$img" bash /opt/t/probe.sh /out >"$out/podman.log" 2>&1
		if [ ! -f "$out/full.rc" ]; then
			notok "$s/$who: the container ran the probe"
			sed 's/^/# /' "$out/podman.log"
			continue
		fi
		pre=$failed
		check "$s/$who: doctor agrees with the run" agrees
		case $s in
		default)
			fix="fix: run the container with --security-opt unmask=ALL (podman)"
			check "$s/$who: doctor FAILs proc with podman's option" exits doctor 1 "FAIL proc" "$fix"
			for m in none allow image; do
				check "$s/$who: --net $m refused (77) with the same fix" exits $m 77 "a fresh /proc cannot be mounted" "$fix"
			done
			# two things are missing for --net full here (proc, tun); the refusal names the first
			# one met (pasta starts before init mounts), with doctor's option for it
			check "$s/$who: --net full refused (77) with doctor's tun option" \
				exits full 77 "Failed to open tun socket" "fix: run the container with --device /dev/net/tun (podman)"
			;;
		seccomp)
			check "$s/$who: doctor FAILs userns naming the seccomp profile" exits doctor 1 "FAIL userns" "seccomp"
			for m in none allow image full; do
				check "$s/$who: --net $m refused (77) with doctor's fix" \
					exits $m 77 "cannot create the sandbox namespaces" "$(doctor_fixes | head -1)"
			done
			;;
		unmask | notun)
			check "$s/$who: doctor has no FAIL" exits doctor 0
			check "$s/$who: --net none works (the hostname stays the container's, said with --verbose)" \
				exits none 0 sandbox-ok "the hostname stays the container's"
			check "$s/$who: --net allow reaches the allowlisted server, the other name is denied" \
				exits allow 0 hello-from-container denied=403
			check "$s/$who: --image from an OCI layout" exits image 0 "hello from the image"
			# the state dir is on the container's overlayfs root: no overlay upper there; a kept
			# run falls back (read-only image, tmpfs writable paths) and doctor says so
			# beforehand; one that is not kept writes to its tmpfs upper
			check "$s/$who: doctor warns about the overlay upper exactly when the kept image run falls back" overlay_agrees
			tfix="run the container with --device /dev/net/tun (podman)"
			if [ "$s" = unmask ]; then
				check "$s/$who: --net full works with /dev/net/tun; doctor's pasta line is ok" \
					exits doctor 0 "ok   pasta"
				check "$s/$who: --net full works" exits full 0
			else
				check "$s/$who: doctor warns that pasta needs /dev/net/tun, with the engine's option" \
					exits doctor 0 "warn pasta      /dev/net/tun cannot be opened" "$tfix"
				check "$s/$who: --net full refused (77) with pasta's own line and the same option" \
					exits full 77 "Failed to open tun socket" "$tfix"
				check "$s/$who: ... not with a raw wait status" lacks full "status 256"
			fi
			;;
		esac
		check "$s/$who: doctor's cgroup advice is about the container, not the host's boot options" \
			exits doctor "$(rc doctor)" "cgroups=split"
		check "$s/$who: ... and never the host's boot options" lacks doctor "systemd.unified_cgroup_hierarchy"
		[ "$failed" -eq "$pre" ] || show
	done
done
t_run=$(($(date +%s) - t1))
echo "1..$n"
echo "# containers: image $t_img s (cached: 0-1 s), ${#order[@]} shapes x 2 users in $t_run s"
[ "$failed" -eq 0 ]
