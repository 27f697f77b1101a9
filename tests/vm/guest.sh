#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/vm/guest.sh — runs as PID 1 in the QEMU guest of tests/vm/run.sh.
#
# guest.sh BUILD_DIR UID: mounts cgroup2, enables memory pids cpu, delegates /sys/fs/cgroup/deleg
# to UID, then proves with BUILD_DIR/tests/vm/cg-run (the cgroup module alone) and with
# BUILD_DIR/aisb (the whole sandbox, when this build has it) that a memory hog is OOM-killed and
# reported, a fork bomb stops at pids.max, cpu.max throttles, and no leaf is left. TAP goes to
# /dev/ttyS1; the guest powers off at the end.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
build=$1
uid=$2
out=/dev/ttyS1
cgrun=$build/tests/vm/cg-run
aisb=$build/aisb
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
cg=/sys/fs/cgroup
n=0

ok() { n=$((n + 1)); echo "ok $n - $*" >>$out; }
notok() { n=$((n + 1)); echo "not ok $n - $*" >>$out; }
skipt() { n=$((n + 1)); echo "ok $n # SKIP $*" >>$out; }
check() { # check DESC CMD...: ok when CMD succeeds (sh has no locals: unique names)
	_check_desc=$1
	shift
	if "$@"; then ok "$_check_desc"; else notok "$_check_desc"; fi
}
finish() {
	echo "1..$n" >>$out
	echo "# vm-done" >>$out
	sync
	echo o >/proc/sysrq-trigger
	sleep 10
}

echo "# guest kernel $(uname -r), $(nproc) cpus" >>$out
mount -t cgroup2 cgroup2 $cg || { notok "mount cgroup2"; finish; }
echo "+memory +pids +cpu" >$cg/cgroup.subtree_control
mkdir $cg/deleg
echo "+memory +pids +cpu" >$cg/deleg/cgroup.subtree_control
# Delegation as systemd does it for Delegate=yes: the dir and its procs/subtree files.
chown "$uid" $cg/deleg $cg/deleg/cgroup.procs $cg/deleg/cgroup.subtree_control $cg/deleg/cgroup.threads
check "cgroup2 delegated subtree offers memory pids cpu" \
	sh -c "grep -q memory $cg/deleg/cgroup.controllers && grep -q pids $cg/deleg/cgroup.controllers && grep -q cpu $cg/deleg/cgroup.controllers"

home=/tmp/home
mkdir -p $home/.local/state $home/proj
chown -R "$uid" $home

# as_user NAME CMD...: CMD as the test user in a fresh delegated cgroup deleg/NAME (what
# `systemd-run --user --scope -p Delegate=yes` gives a user). Output in /tmp/NAME.{out,err}.
as_user() {
	name=$1
	shift
	d=$cg/deleg/$name
	mkdir $d && chown "$uid" $d $d/cgroup.procs $d/cgroup.subtree_control $d/cgroup.threads
	sh -c 'u=$1; shift; echo $$ >"$0/cgroup.procs" && cd /tmp/home/proj &&
		exec setpriv --reuid="$u" --regid="$u" --clear-groups \
		env -i PATH="$PATH" HOME=/tmp/home XDG_STATE_HOME=/tmp/home/.local/state "$@"' \
		$d "$uid" "$@" >/tmp/$name.out 2>/tmp/$name.err
	rc=$?
	rmdir $d 2>/dev/null
	return $rc
}
stat_of() { sed -n "s/.*$2=\([0-9]*\).*/\1/p" /tmp/$1.out | tail -n 1; }
dump() { for f in /tmp/$1.out /tmp/$1.err; do [ -f $f ] && sed "s/^/# $1: /" $f >>$out; done; }

# ---- the cgroup module alone (cg-run) ----
as_user mem-ok $cgrun --memory 64M --id t1 -- dd if=/dev/zero of=/dev/null bs=16M count=4
rc=$?
check "cg-run: 16M buffer under --memory 64M runs (control, rc=$rc)" [ $rc = 0 ]
[ $rc = 0 ] || dump mem-ok

as_user mem-hog $cgrun --memory 64M --id t2 -- dd if=/dev/zero of=/dev/null bs=200M count=1
rc=$?
check "cg-run: 200M buffer under --memory 64M is killed, exit 137 (rc=$rc)" [ $rc = 137 ]
check "cg-run: reported 'killed: out of memory (limit 64 MiB)'" grep -q "killed: out of memory (limit 64 MiB)" /tmp/mem-hog.err
check "cg-run: memory.events oom_kill > 0" [ "$(stat_of mem-hog oom_kill)" -gt 0 ]
[ $rc = 137 ] || dump mem-hog

as_user pids-ok $cgrun --pids 64 --id t3 -- sh -c 'for i in $(seq 20); do sleep 1 & done; wait'
rc=$?
check "cg-run: 20 children under --pids 64 (control, rc=$rc, no pids.max event)" \
	[ $rc = 0 ] && [ "$(stat_of pids-ok pids_max_events)" = 0 ]

as_user pids-bomb $cgrun --pids 32 --id t4 -- sh -c 'bomb() { bomb | bomb & }; bomb; sleep 3' 
rc=$?
check "cg-run: fork bomb stops at pids.max 32 (pids.events max=$(stat_of pids-bomb pids_max_events))" \
	[ "$(stat_of pids-bomb pids_max_events)" -gt 0 ]
check "cg-run: no process of the fork bomb survives teardown" \
	sh -c "! ps -eo uid=,comm= | awk -v u=$uid '\$1==u' | grep -q ."

as_user cpu-ok $cgrun --cpus 2 --id t5 -- timeout 2 sh -c 'while :; do :; done'
check "cg-run: busy loop under --cpus 2 is not throttled (control, nr_throttled=$(stat_of cpu-ok nr_throttled))" \
	[ "$(stat_of cpu-ok nr_throttled)" = 0 ]
as_user cpu-slow $cgrun --cpus 0.2 --id t6 -- timeout 2 sh -c 'while :; do :; done'
check "cg-run: busy loop under --cpus 0.2 is throttled (cpu.stat nr_throttled=$(stat_of cpu-slow nr_throttled))" \
	[ "$(stat_of cpu-slow nr_throttled)" -gt 0 ]

# Without delegation (the user in a cgroup it does not own) the module refuses.
mkdir $cg/nodeleg
sh -c 'echo $$ >'$cg'/nodeleg/cgroup.procs && exec setpriv --reuid='"$uid"' --regid='"$uid"' --clear-groups '"$cgrun"' --memory 64M -- true' \
	>/tmp/nodeleg.out 2>&1
rc=$?
rmdir $cg/nodeleg 2>/dev/null
check "cg-run: a non-delegated cgroup is refused with 78 (rc=$rc)" [ $rc = 78 ]
check "cg-run: the refusal names why" grep -q "not delegated" /tmp/nodeleg.out

check "no aisb-* leaf is left under the delegated subtree" \
	sh -c "! find $cg/deleg -name 'aisb-*' -type d | grep -q ."

# ---- the whole sandbox (aisb run), when this build has the core ----
if as_user probe "$aisb" run --no-cwd --ephemeral-home -- true; then
	as_user a-mem-ok "$aisb" run --no-cwd --ephemeral-home --memory 64M -- dd if=/dev/zero of=/dev/null bs=16M count=4
	rc=$?
	check "aisb: 16M buffer under --memory 64M runs (control, rc=$rc)" [ $rc = 0 ]
	[ $rc = 0 ] || dump a-mem-ok
	as_user a-mem-hog "$aisb" run --no-cwd --ephemeral-home --memory 64M -- dd if=/dev/zero of=/dev/null bs=200M count=1
	rc=$?
	check "aisb: memory hog exits 137 (rc=$rc)" [ $rc = 137 ]
	check "aisb: reports 'killed: out of memory (limit 64 MiB)'" grep -q "killed: out of memory (limit 64 MiB)" /tmp/a-mem-hog.err
	[ $rc = 137 ] || dump a-mem-hog
	as_user a-bomb "$aisb" run --verbose --no-cwd --ephemeral-home --pids 32 -- sh -c 'bomb() { bomb | bomb & }; bomb; sleep 3'
	check "aisb: fork bomb stops at pids.max (reported)" grep -q "process limit" /tmp/a-bomb.err
	grep -q "process limit" /tmp/a-bomb.err || dump a-bomb
	as_user a-cpu "$aisb" run --verbose --no-cwd --ephemeral-home --cpus 0.2 -- timeout 2 sh -c 'while :; do :; done'
	check "aisb: --cpus 0.2 throttles (cpu.stat nr_throttled > 0)" \
		sh -c "grep -Eq 'nr_throttled=[1-9]' /tmp/a-cpu.err"
	grep -Eq 'nr_throttled=[1-9]' /tmp/a-cpu.err || dump a-cpu
	# SIGKILL of the supervisor, while the workload runs and during startup: the watchdog
	# removes the leaf (and undoes the supervisor leaf), nothing of the sandbox survives, and
	# the next `aisb clean` removes the session dir.
	for when in run start; do
		kd=$cg/deleg/a-kill-$when
		mkdir $kd && chown "$uid" $kd $kd/cgroup.procs $kd/cgroup.subtree_control $kd/cgroup.threads
		sh -c 'u=$1; shift; echo $$ >"$0/cgroup.procs" && cd /tmp/home/proj &&
			exec setpriv --reuid="$u" --regid="$u" --clear-groups \
			env -i PATH="$PATH" HOME=/tmp/home XDG_STATE_HOME=/tmp/home/.local/state "$@"' \
			$kd "$uid" "$aisb" run --no-cwd --ephemeral-home --memory 64M -- sh -c 'sleep 60; true' vmkill-$when \
			>/tmp/a-kill-$when.out 2>&1 &
		sup=$!
		if [ $when = run ]; then
			i=0
			ready=0
			while [ $i -lt 300 ]; do
				l=$(find $kd -maxdepth 1 -name 'aisb-*' ! -name '*.sup' -type d | head -n 1)
				if [ -n "$l" ] && [ "$(wc -l <"$l/cgroup.procs")" -ge 3 ]; then
					ready=1
					break
				fi
				sleep 0.1
				i=$((i + 1))
			done
			check "aisb: the session leaf holds init, sh and sleep before the kill" [ $ready = 1 ]
			[ $ready = 1 ] || dump a-kill-$when
		else
			# startup: kill as soon as the session leaf exists, before the workload runs
			i=0
			while [ $i -lt 3000 ] && ! find $kd -maxdepth 1 -name 'aisb-*' ! -name '*.sup' -type d | grep -q .; do
				i=$((i + 1))
			done
		fi
		kill -9 $sup
		wait $sup
		echo "# after SIGKILL ($when): $(find $kd -name 'aisb-*' -type d | wc -l) aisb-* cgroup(s)" >>$out
		i=0
		while [ $i -lt 100 ]; do
			find $kd -name 'aisb-*' -type d | grep -q . || grep -lqaw -e "v[m]kill-$when" /proc/[0-9]*/cmdline 2>/dev/null || break
			sleep 0.1
			i=$((i + 1))
		done
		check "aisb: SIGKILL of the supervisor ($when): no aisb-* cgroup is left" \
			sh -c "! find $kd -name 'aisb-*' -type d | grep -q ."
		check "aisb: SIGKILL of the supervisor ($when): no sandbox process survives" \
			sh -c "! grep -lqaw -e 'v[m]kill-$when' /proc/[0-9]*/cmdline 2>/dev/null"
		rmdir $kd 2>/dev/null
	done
	as_user a-clean "$aisb" clean
	check "aisb clean removes the session dirs the killed supervisors left" \
		sh -c "grep -q 'removed session' /tmp/a-clean.out && [ -z \"\$(ls /tmp/home/.local/state/aisb/sessions)\" ]"
	[ -z "$(ls /tmp/home/.local/state/aisb/sessions)" ] || dump a-clean

	# --image in a session that is not kept: the writes to the image's tree are a tmpfs whose
	# pages count against memory.max; its bound (half the limit) makes a write that fills it
	# ENOSPC inside, not an OOM kill of the sandbox's processes (docs/images.md), where tmpfs
	# keeps user xattrs (6.6+); on an older kernel (Debian 12's 6.1 here) aisb uses the session
	# dir instead, which is what is checked then.
	if ! "$srcdir/tests/e2e/lib/images/mk-busybox-oci.sh" /tmp/bb v1 >/tmp/mkbb.out 2>/tmp/mkbb.err; then
		dump mkbb
	fi
	chmod -R a+rX /tmp/bb
	as_user a-img-pull "$aisb" pull -q oci:/tmp/bb:v1
	# img_dd NAME MIB: dd MIB MiB into the image root under --memory 64M; prints dd=STATUS
	img_dd() {
		as_user "$1" "$aisb" run --no-cwd --ephemeral-home --memory 64M --image oci:/tmp/bb:v1 -- \
			sh -c "dd if=/dev/zero of=/big bs=1M count=$2; echo dd=\$?"
	}
	img_dd a-img-ok 8
	rc=$?
	check "aisb --image: 8M written to the image root under --memory 64M (control, rc=$rc)" \
		sh -c "[ $rc = 0 ] && grep -qx dd=0 /tmp/a-img-ok.out"
	[ $rc = 0 ] || dump a-img-ok
	# does this kernel's tmpfs keep user.* xattrs (Linux 6.6+)? aisb probes the same; without
	# them an overlay upper on tmpfs breaks the image (removing one of its directories is EIO)
	mkdir -p /tmp/xattr-probe && mount -t tmpfs none /tmp/xattr-probe && : >/tmp/xattr-probe/f
	if python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.t", b"1")' /tmp/xattr-probe/f 2>/dev/null; then
		tmpfs_uxattr=1
	else
		tmpfs_uxattr=0
	fi
	umount /tmp/xattr-probe
	if [ $tmpfs_uxattr = 1 ]; then
		img_dd a-img-fill 100
		rc=$?
		check "aisb --image: filling the image root under --memory 64M is ENOSPC inside, not an OOM kill (rc=$rc)" \
			sh -c "[ $rc = 0 ] && grep -qx dd=1 /tmp/a-img-fill.out && grep -q 'No space left' /tmp/a-img-fill.err"
		[ $rc = 0 ] || dump a-img-fill
		as_user a-img-opaque "$aisb" run --no-cwd --ephemeral-home --image oci:/tmp/bb:v1 -- \
			sh -c 'rm -rf /usr && mkdir /usr && echo new >/usr/f && cat /usr/f && ls -A /usr'
		rc=$?
		check "aisb --image: a lower directory removed and made again in the tmpfs upper (rc=$rc)" \
			sh -c "[ $rc = 0 ] && [ \$(wc -l </tmp/a-img-opaque.out) = 2 ] && grep -qx new /tmp/a-img-opaque.out && grep -qx f /tmp/a-img-opaque.out"
		[ $rc = 0 ] || dump a-img-opaque
	else
		# (this guest's state dir is itself on tmpfs, so the session-dir upper cannot be tried
		# here; the bounded tmpfs upper is tested by tests/e2e/images.bats on the host)
		as_user a-img-plan "$aisb" run --no-cwd --ephemeral-home --image oci:/tmp/bb:v1 --dry-run -- true
		rc=$?
		check "aisb --image: this kernel's tmpfs has no user xattrs, so a non-kept session's upper is in its session dir (rc=$rc)" \
			sh -c "[ $rc = 0 ] && grep -q 'upper in the session dir (this kernel.s tmpfs has no user xattrs; removed at exit)' /tmp/a-img-plan.out /tmp/a-img-plan.err"
		[ $rc = 0 ] || dump a-img-plan
	fi
	as_user a-default "$aisb" run --no-cwd --ephemeral-home -- true
	check "aisb: a default run with cgroups prints no limits warning" sh -c "! grep -q 'not enforced' /tmp/a-default.err"
	check "aisb: no aisb-* leaf is left" sh -c "! find $cg/deleg -name 'aisb-*' -type d | grep -q ."
else
	dump probe
	skipt "aisb run does not work in this build yet (core sandbox missing)"
fi

finish
