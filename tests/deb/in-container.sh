#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/deb/in-container.sh — run by tests/deb/run.sh inside a clean Debian container with the
# package at /opt/t/aisb.deb and a busybox OCI layout at /opt/t/bb. Exits non-zero on the first
# failure; prints OK/FAIL lines.
set -eu
export DEBIAN_FRONTEND=noninteractive
# control: the container is clean (no library aisb dlopen()s is there), and dpkg alone refuses the
# package for exactly the libraries its Depends names, the dlopen()ed ones among them
if ldconfig -p | grep -qE 'libnftnl\.so\.11|libarchive\.so\.13|libcurl\.so\.4'; then
	echo "FAIL the container is not clean: $(ldconfig -p | grep -E 'libnftnl|libarchive|libcurl')"
	exit 1
fi
if dpkg -i /opt/t/aisb.deb >/tmp/dpkg.log 2>&1; then
	echo "FAIL dpkg -i installed aisb without its dependencies"
	exit 1
fi
for p in libnftnl11 libmnl0 libarchive13 libcurl4 libssl3; do
	grep -q "depends on $p" /tmp/dpkg.log || { echo "FAIL dpkg -i did not ask for $p:"; cat /tmp/dpkg.log; exit 1; }
done
echo "OK   control: dpkg -i alone refuses aisb for its dlopen()ed libraries"
dpkg --purge aisb >/dev/null 2>&1 || true
apt-get update -qq
apt-get install -y -qq --no-install-recommends /opt/t/aisb.deb >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; exit 1; }
grep -E '^(Setting up|Unpacking) ' /tmp/apt.log | sed 's/^/apt: /'
# (not `aisb --version`: it also asks the harness for its version, in a sandbox of the cwd)
dpkg-query -W -f='aisb ${Version} installed\n' aisb

check() { # NAME CMD...: runs CMD, prints OK or FAIL with its output
	name=$1
	shift
	if out=$("$@" 2>&1); then echo "OK   $name"; else echo "FAIL $name: $out"; exit 1; fi
}

as() { # CMD...: as the current identity ($who)
	if [ "$who" = user ]; then runuser -u aisbu -- "$@"; else "$@"; fi
}

id aisbu >/dev/null 2>&1 || useradd --create-home aisbu
for who in root user; do
	proj=$(mktemp -d /var/tmp/proj.XXXXXX)
	chmod 777 "$proj"
	echo "from the host" >"$proj/marker"
	chmod 644 "$proj/marker"
	cd "$proj"
	check "$who: --net none runs a sandbox with no capabilities" as sh -c \
		'aisb --net none --accept-unenforced-limits -- sh -c "cat marker && grep -q \"^CapEff:[[:space:]]*0*$\" /proc/self/status"'
	# --net allow loads libmnl and libnftnl (dlopen) and installs the ruleset; nothing dials
	check "$who: --net allow (libmnl, libnftnl from Depends)" as \
		aisb --net allow --allow example.org --accept-unenforced-limits -- true
	check "$who: an OCI image is pulled from disk and run (libarchive, libcrypto)" as sh -c \
		'aisb pull -q oci:/opt/t/bb:v1 && aisb --net none --accept-unenforced-limits --image oci:/opt/t/bb:v1 -- cat /etc/motd'
	check "$who: doctor --deep" as aisb doctor --deep
	as aisb doctor --deep | grep -E '^(ok|warn|FAIL) +(caps|libs) ' | sed 's/^/INFO /'
	cd /
done
echo "OK   all"
