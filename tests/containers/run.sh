#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/containers/run.sh — aisb inside CI containers, for real: rootful podman containers of a
# minimal Debian image made from the mirror (mk-image.sh, cached), in the shapes CI platforms
# give, each as root and as the image's user 'ci' (uid 1000):
#   default    podman's defaults: /proc masked, no /dev/net/tun; also with --container-proc chosen
#   unmask     --security-opt unmask=ALL --device /dev/net/tun
#   docker     Docker's real default seccomp profile, /proc unmasked (systempaths=unconfined)
#   dockercu   ... plus clone and unshare (the recipe docs/ci.md gave before issue 24)
#   recipe     docs/ci.md's recipe: contrib/seccomp/aisb.json, /proc unmasked
#   hardened   --cap-drop=ALL --security-opt no-new-privileges (root: no CAP_SETFCAP)
#   readonly   --read-only root, the state and cache dirs named on the tmpfs /tmp
#   nopasswd   --user 1234 (no passwd entry, HOME=/), the same variables
#   notun      --security-opt unmask=ALL, no /dev/net/tun
# The shapes of issue 24's table (docker .. nopasswd) run a short probe (no --net full, no kept
# image run).
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
pods=()
kube_restore=0
cleanup() {
	for n in "${names[@]}"; do podman rm -f "$n" >/dev/null 2>&1; done
	[ "${#pods[@]}" -eq 0 ] || kube_rm
	if [ "$kube_restore" = 1 ]; then
		cp "$work/subuid.orig" /etc/subuid
		cp "$work/subgid.orig" /etc/subgid
	fi
	rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/t"
cp "$bin" "$work/t/aisb"
cp "$here/probe.sh" "$here/serve.sh" "$work/t/"
sh "$srcdir/tests/e2e/lib/images/mk-busybox-oci.sh" "$work/t/bb" latest >/dev/null || skip_all "cannot build the busybox OCI layout"
chmod -R a+rX "$work/t"

# Docker's real default profile (moby's profiles/seccomp/default.json) is contrib/seccomp/aisb.json
# without aisb's one rule (contrib/seccomp/generate.py); the documented recipe is the file itself.
# The recipe docs/ci.md published before (Docker's default plus clone and unshare) is "dockercu".
python3 - "$srcdir/contrib/seccomp/aisb.json" "$work" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
assert p["syscalls"][-1].get("comment") == "aisb"
d = dict(p, syscalls=p["syscalls"][:-1])
json.dump(d, open(sys.argv[2] + "/docker-default.json", "w"))
d["syscalls"] = d["syscalls"] + [{"names": ["clone", "unshare"], "action": "SCMP_ACT_ALLOW"}]
json.dump(d, open(sys.argv[2] + "/docker-clone-unshare.json", "w"))
PY
cp "$srcdir/contrib/seccomp/aisb.json" "$work/aisb-seccomp.json"

common=(--rm --runtime runc --ulimit nofile=20000:20000 --ulimit nproc=32768:32768 -v "$work/t:/opt/t:ro")
# the state and cache on the container's writable tmpfs /tmp (a read-only root, no passwd entry)
xdg="-e XDG_STATE_HOME=/tmp/aisb-state -e XDG_CACHE_HOME=/tmp/aisb-cache"
declare -A opts=(
	[default]=""
	[unmask]="--security-opt unmask=ALL --device /dev/net/tun"
	[docker]="--security-opt seccomp=$work/docker-default.json --security-opt unmask=ALL"
	[dockercu]="--security-opt seccomp=$work/docker-clone-unshare.json --security-opt unmask=ALL"
	[recipe]="--security-opt seccomp=$work/aisb-seccomp.json --security-opt unmask=ALL"
	[hardened]="--cap-drop=ALL --security-opt no-new-privileges --security-opt unmask=ALL"
	[readonly]="--read-only --security-opt unmask=ALL $xdg"
	[nopasswd]="--security-opt unmask=ALL $xdg"
	[notun]="--security-opt unmask=ALL"
)
# who runs in each: root and the image's user ci (uid 1000); nopasswd is uid 1234, which has no
# passwd entry (HOME=/, as `docker run --user 1234` gives)
declare -A users=([nopasswd]="1234")
# the shapes of issue 24's table run the short probe (doctor, --net none, allow, --image)
declare -A light=([docker]=1 [dockercu]=1 [recipe]=1 [hardened]=1 [readonly]=1 [nopasswd]=1)
# where /proc is masked, the probe also takes it by choice (--container-proc in the config)
declare -A cproc=([default]=1)
order=(default unmask docker dockercu recipe hardened readonly nopasswd notun)

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
	for who in ${users[$s]:-root ci}; do
		out=$work/out-$s-$who
		mkdir -p "$out"
		chmod 777 "$out"
		name=aisb-ct-$s-$who-$$
		names+=("$name")
		# shellcheck disable=SC2086
		podman run "${common[@]}" --name "$name" ${opts[$s]} --user "$who" -v "$out:/out" \
			${light[$s]:+-e AISB_PROBE_LIGHT=1} ${cproc[$s]:+-e AISB_PROBE_CPROC=1} \
			-v "$work/t/aisb:/usr/local/bin/aisb:ro" "$img" bash /opt/t/probe.sh /out >"$out/podman.log" 2>&1
		if [ ! -f "$out/done" ]; then
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
			# the same masked /proc taken by choice (container_proc = true in the user's
			# config): doctor says what the run then does, in the run's words, and agrees
			exposure="every process of the container is visible to the sandbox with its argv (cmdline), status and mountinfo; the kernel still refuses their environ, memory, maps and fd targets"
			check "$s/$who: with container_proc in the config doctor WARNs proc with the exposure, no FAIL" \
				exits doctor-cp 0 "warn proc       a fresh /proc cannot be mounted here (masked): runs with --container-proc (chosen with container_proc in '/tmp/cp-config/aisb/config') use the container's /proc: $exposure" \
				"fix: to keep the container's processes out of the sandbox: ${fix#fix: }"
			check "$s/$who: ... and the run works, saying the same exposure" \
				exits none-cp 0 sandbox-ok "the sandbox uses the container's /proc (--container-proc): $exposure" \
				"this run used the container's /proc"
			check "$s/$who: ... PID 1's argv is visible, its environ refused" \
				eval 'has none-cp "bash /opt/t/probe.sh /out" && has none-cp "/proc/1/environ: Permission denied" && lacks none-cp ENV-READ'
			# podman's /proc/sys is read-only: user.max_user_namespaces=0 cannot be set through
			# it (before: every such run failed 77 "cannot cover 'sys/user/max_user_namespaces'"
			# while doctor said it would work); said, and seccomp still refuses
			check "$s/$who: ... the read-only /proc/sys is said, and a nested user namespace is still refused" \
				eval 'has none-cp "nested user namespaces are refused by seccomp alone (--container-proc)" && has none-cp nested-userns-refused && lacks none-cp NESTED-USERNS'
			check "$s/$who: doctor --container-proc says the same (chosen with the flag)" \
				exits doctor-cpflag 0 "warn proc" "(chosen with the flag) use the container's /proc: $exposure"
			check "$s/$who: doctor --deep with the config: real sandboxes with the container's /proc" \
				exits doctor-cpdeep 0 "ok   proc       the container's /proc (--container-proc)" "ok   hardening" "ok   nested-ns"
			;;
		docker | dockercu)
			# Docker's own default (and with clone/unshare only, the recipe docs/ci.md gave
			# before): refused with the calls it denies and aisb's profile; /proc is unmasked,
			# so doctor blames neither /proc nor the kernel version
			denied="mount, umount2"
			[ "$s" = docker ] && denied="clone (with namespace flags), unshare"
			check "$s/$who: doctor FAILs userns naming the denied calls ($denied) and aisb's profile" \
				exits doctor 1 "FAIL userns" "denies system calls the sandbox needs" "$denied" "seccomp/aisb.json"
			check "$s/$who: ... and blames neither /proc nor the kernel version" \
				eval 'lacks doctor "FAIL proc" && lacks doctor "Linux >= 5.11"'
			for m in none allow image; do
				check "$s/$who: --net $m refused (77) with doctor's cause and fix" \
					exits $m 77 "denies system calls the sandbox needs" "$denied" "$(doctor_fixes | head -1)"
			done
			;;
		recipe | readonly | nopasswd)
			check "$s/$who: doctor has no FAIL" exits doctor 0
			check "$s/$who: --net none works" exits none 0 sandbox-ok
			check "$s/$who: --net allow reaches the allowlisted server, the other name is denied" \
				exits allow 0 hello-from-container denied=403
			check "$s/$who: --image from an OCI layout" exits image 0 "hello from the image"
			if [ "$s" = recipe ]; then
				check "$s/$who: with aisb's profile the sandbox has its own hostname" lacks none "the hostname stays"
				check "$s/$who: the state dir needs no variable" exits nostate 0
				check "$s/$who: ... and doctor without the variables agrees" exits doctor-nostate 0 "ok   dirs"
			else
				check "$s/$who: doctor without XDG_STATE_HOME FAILs dirs with the run's text" \
					exits doctor-nostate 1 "FAIL dirs" "$(grep -o "cannot use '[^']*' for aisb's state" "$out/nostate.out")" \
					"fix: set XDG_STATE_HOME"
				# the same run without XDG_STATE_HOME: the one rule's refusal, naming it, 78
				# (configuration, as the image store's: docs/troubleshooting.md)
				check "$s/$who: without XDG_STATE_HOME the run refuses (78) naming it" \
					exits nostate 78 "for aisb's state" "set XDG_STATE_HOME"
			fi
			;;
		hardened)
			if [ "$who" = root ]; then
				check "$s/$who: doctor FAILs userns naming CAP_SETFCAP" exits doctor 1 "FAIL userns" "CAP_SETFCAP" \
					"--cap-add=SETFCAP"
				check "$s/$who: ... and not proc, overlay or nft" \
					eval 'lacks doctor "FAIL proc" && lacks doctor "FAIL nft" && lacks doctor "Linux >= 5.11"'
				for m in none allow image; do
					check "$s/$who: --net $m refused (77) with doctor's cause and fix" \
						exits $m 77 "CAP_SETFCAP" "$(doctor_fixes | head -1)"
				done
			else
				check "$s/$who: doctor has no FAIL" exits doctor 0
				check "$s/$who: --net none works without any capability" exits none 0 sandbox-ok
				check "$s/$who: --net allow works" exits allow 0 hello-from-container denied=403
				check "$s/$who: --image works" exits image 0 "hello from the image"
			fi
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

# `podman kube play` of docs/ci.md's Kubernetes pod, taken from the page itself: only the image
# (the local one: no pull), the command (probe.sh), the probe's volumes and, for the user,
# runAsUser are changed. podman honours hostUsers: false (a user namespace, from the
# "containers" range of /etc/subuid, added here for the test and restored) but ignores
# procMount: Unmasked and seccompProfile: Localhost (docs/machine-facts.md), so /proc stays masked:
# the run refuses (77) and doctor agrees, as docs/ci.md says; the page's change for kube play,
# AISB_CONTAINER_PROC=true in the pod's env (the trade), makes doctor warn and the runs work.
kube_pod() { # WHO OUTDIR: the pod's YAML on stdout
	python3 - "$srcdir/docs/ci.md" "$img" "$1" "$2" "$work/t" <<'PY'
import re, sys
doc, img, who, out, t = sys.argv[1:]
text = open(doc).read()
sec = text[text.index("\n## Kubernetes"):]
pod = re.search(r"```yaml\n(.*?)```", sec, re.S).group(1)
for need in ("hostUsers: false", "procMount: Unmasked", "type: Localhost", "allowPrivilegeEscalation: false"):
    assert need in pod, need
lines = []
for l in pod.splitlines():
    if l.startswith("    image: "):
        l = "    image: " + img
    elif l.startswith("    command: "):
        l = ('    command: ["/bin/bash", "/opt/t/probe.sh", "/out"]\n'
             '    env:\n'
             '    - {name: PATH, value: "/usr/local/bin:/usr/bin:/bin"}\n'
             '    - {name: AISB_PROBE_LIGHT, value: "1"}\n'
             '    - {name: AISB_PROBE_CPROC, value: "1"}\n'
             '    volumeMounts:\n'
             '    - {name: t, mountPath: /opt/t, readOnly: true}\n'
             '    - {name: aisb, mountPath: /usr/local/bin/aisb, readOnly: true}\n'
             '    - {name: out, mountPath: /out}')
    elif l.startswith("    securityContext:") and who != "root":
        l += "\n      runAsUser: " + who
    elif l == "spec:":
        l += "\n  restartPolicy: Never"
    lines.append(l)
lines += ["  volumes:",
          "  - {name: t, hostPath: {path: %s, type: Directory}}" % t,
          "  - {name: aisb, hostPath: {path: %s/aisb, type: File}}" % t,
          "  - {name: out, hostPath: {path: %s, type: Directory}}" % out]
print("\n".join(lines))
PY
}
# the pod's removal: with hostUsers: false podman 4.3.1's first `pod rm -f` can fail on the
# container's busy shm mount ("device or resource busy"); the next one removes it
kube_rm() {
	for _ in 1 2 3 4 5; do
		podman pod exists aisb-job || return 0
		podman pod rm -f aisb-job >/dev/null 2>&1
	done
}
refused_too() { exits allow 77 "$fix" && exits image 77 "$fix"; }
kube_ok=1
if ! command -v catatonit >/dev/null; then
	# podman builds the pod's pause image from it, offline
	[ "${AISB_MUST_WORK:-0}" = 1 ] && notok "kube: catatonit is installed (apt-get install catatonit)"
	kube_ok=0
fi
if [ "$kube_ok" = 1 ]; then
	# the runtime and rlimits of the podman runs above (kube play takes no flags for them)
	printf '[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]\n[engine]\nruntime = "runc"\n' \
		>"$work/containers.conf"
	if ! grep -q '^containers:' /etc/subuid /etc/subgid 2>/dev/null; then
		cp /etc/subuid "$work/subuid.orig" && cp /etc/subgid "$work/subgid.orig"
		echo containers:1000000:1000000 >>/etc/subuid
		echo containers:1000000:1000000 >>/etc/subgid
		kube_restore=1
	fi
	for who in root 1000; do
		out=$work/out-kube-$who
		mkdir -p "$out"
		chmod 777 "$out"
		kube_pod "$who" "$out" >"$work/pod-$who.yaml"
		pods+=("$work/pod-$who.yaml")
		CONTAINERS_CONF=$work/containers.conf podman kube play "$work/pod-$who.yaml" >"$out/podman.log" 2>&1
		# the job container's end, a state (podman names it POD-CONTAINER)
		podman wait aisb-job-job >>"$out/podman.log" 2>&1
		kube_rm
		if [ ! -f "$out/done" ]; then
			notok "kube/$who: podman kube play of docs/ci.md's pod ran the probe"
			sed 's/^/# /' "$out/podman.log"
			continue
		fi
		pre=$failed
		fix="fix: run the container with --security-opt unmask=ALL (podman)"
		check "kube/$who: hostUsers: false is honoured (a user namespace), procMount: Unmasked is not (podman masks /proc)" \
			exits none 77 "a fresh /proc cannot be mounted" "podman masks"
		check "kube/$who: doctor agrees with the run" agrees
		check "kube/$who: doctor FAILs proc with the engine's fix and the trade" \
			exits doctor 1 "FAIL proc" "$fix" "pass --container-proc"
		check "kube/$who: --net allow and --image are refused (77) the same way" refused_too
		check "kube/$who: with AISB_CONTAINER_PROC=true (the page's change for kube play) doctor WARNs proc, no FAIL" \
			exits doctor-cpenv 0 "warn proc       a fresh /proc cannot be mounted here (masked): runs with --container-proc (chosen with AISB_CONTAINER_PROC)"
		check "kube/$who: ... and the run works, saying what it exposes; PID 1's environ is refused" \
			exits none-cpenv 0 sandbox-ok "the sandbox uses the container's /proc (--container-proc)" "/proc/1/environ: Permission denied"
		check "kube/$who: ... the environ is never printed" lacks none-cpenv ENV-READ
		check "kube/$who: ... a nested user namespace is still refused (the config key, the same trade)" \
			exits none-cp 0 nested-userns-refused
		[ "$failed" -eq "$pre" ] || show
	done
fi
t_run=$(($(date +%s) - t1))
echo "1..$n"
echo "# containers: image $t_img s (cached: 0-1 s), ${#order[@]} shapes, ${#names[@]} containers in $t_run s, and docs/ci.md's pod by podman kube play"
[ "$failed" -eq 0 ]
