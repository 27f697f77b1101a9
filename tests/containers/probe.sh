#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/containers/probe.sh OUTDIR — runs inside a CI-like container (tests/containers/run.sh):
# aisb doctor, then --net none, the state dir without XDG variables, --net allow against a server inside the container, --image from
# an OCI layout (not kept, and --keep), and --net full, each as NAME.out (stdout+stderr) and NAME.rc in OUTDIR;
# with AISB_PROBE_CPROC also doctor and a run with --container-proc chosen in the user's config.
# The checks are made by run.sh on the host; this script only records.
set -u
out=$1
t=$(dirname "$0")
cd /tmp || exit 1
step() { # NAME CMD...
	name=$1
	shift
	"$@" >"$out/$name.out" 2>&1
	echo $? >"$out/$name.rc"
}
step doctor aisb doctor
step none aisb --verbose --net none --no-cwd -- sh -c 'echo sandbox-ok; cat /proc/sys/kernel/hostname'
# the state and cache dirs by the rule every command shares, without the XDG variables a shape
# may set (a read-only root, a uid with no passwd entry refuse here, naming the variable)
step nostate env -u XDG_STATE_HOME -u XDG_CACHE_HOME aisb --net none --no-cwd -- true
step doctor-nostate env -u XDG_STATE_HOME -u XDG_CACHE_HOME aisb doctor
# a server inside the container, on its loopback (the container's own netns: a fixed port is
# free); the sandbox reaches it only through the gate, by an allowlisted name
socat TCP-LISTEN:18080,bind=127.0.0.1,fork,reuseaddr EXEC:"$t/serve.sh" &
srv=$!
i=0
while ! (exec 3<>/dev/tcp/127.0.0.1/18080) 2>/dev/null && [ $i -lt 100 ]; do
	sleep 0.05
	i=$((i + 1))
done
step allow aisb --net allow --allow srv.test:18080 --add-host srv.test=127.0.0.1 \
	--add-host other.test=127.0.0.1 --no-cwd -- sh -c \
	'curl -sS -m 10 http://srv.test:18080/; curl -sS -m 10 -o /dev/null -w "denied=%{http_code}\n" http://other.test:18080/'
kill "$srv" 2>/dev/null
step image aisb --net none --no-cwd --image "oci:$t/bb:latest" -- cat /etc/motd
# a masked /proc taken by choice (run.sh: AISB_PROBE_CPROC): the user's config opts in, doctor
# reads it as the run does; doctor's own flag; the deep checks run real sandboxes with it
if [ -n "${AISB_PROBE_CPROC:-}" ]; then
	mkdir -p /tmp/cp-config/aisb
	echo 'container_proc = true' >/tmp/cp-config/aisb/config
	step doctor-cp env XDG_CONFIG_HOME=/tmp/cp-config aisb doctor
	# PID 1 is this script: its argv is visible, its environ refused (never printed); a nested
	# user namespace is refused (by seccomp alone: /proc/sys is read-only here)
	step none-cp env XDG_CONFIG_HOME=/tmp/cp-config aisb --net none --no-cwd -- sh -c \
		'echo sandbox-ok; cat /proc/1/environ >/dev/null && echo ENV-READ; tr "\0" " " </proc/1/cmdline; echo
		unshare -U true 2>/dev/null && echo NESTED-USERNS || echo nested-userns-refused'
	step doctor-cpflag aisb doctor --container-proc
	# the same by the environment (docs/ci.md's change for podman kube play)
	step doctor-cpenv env AISB_CONTAINER_PROC=true aisb doctor
	step none-cpenv env AISB_CONTAINER_PROC=true aisb --net none --no-cwd -- sh -c \
		'echo sandbox-ok; cat /proc/1/environ >/dev/null && echo ENV-READ; echo'
	step doctor-cpdeep env XDG_CONFIG_HOME=/tmp/cp-config aisb doctor --deep
fi
# the shapes that only check the refusal and the basic runs stop here (run.sh: AISB_PROBE_LIGHT)
if [ -n "${AISB_PROBE_LIGHT:-}" ]; then
	: >"$out/done"
	exit 0
fi
# a kept session's upper is on the state dir's filesystem (the container's overlayfs root here)
step image-keep aisb --net none --no-cwd --keep --image "oci:$t/bb:latest" -- cat /etc/motd
step full aisb --net full --no-cwd -- true
: >"$out/done"
exit 0
