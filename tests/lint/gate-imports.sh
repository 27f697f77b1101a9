#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/lint/gate-imports.sh — every libc function the gate's code calls is on a reviewed list.
#
#   gate-imports.sh BUILDDIR     check the gate's objects in BUILDDIR; exit 1 naming every new one
#   gate-imports.sh --self-test  prove the check catches a planted import (and passes a clean list)
#
# The confined gate is killed by its seccomp filter at the first system call outside its list
# (src/net/gate-rules.c), and some libc functions make system calls one would not expect, or
# only for some inputs: glibc's qsort() calls sysinfo(2) from 27 entries on, which killed the
# gate at the exit summary (issue 22). So a libc function new to the gate's objects fails here
# until someone has checked what it calls and added it below, with that answer. `make lint` runs
# both modes. Functions the gate's objects define for each other (addr_*, dns_*, ...) are not
# libc; util's write_full() is a loop over write(2).

# the objects linked into the gate's process and the supervisor's side of it
OBJECTS=(src/net/gate.o src/net/keymask.o src/net/dns.o src/net/http.o src/net/sni.o src/net/policy.o src/net/addr.o src/net/allow.o src/net/tlsgate-wire.o)

# name: what it does under the gate's filter ("supervisor" = called only before the fork or in
# the supervisor, never in the confined gate)
REVIEWED="
__assert_fail: writes to stderr (a dead pipe) and aborts: a programmer error kills the gate anyway
__errno_location: no system call
__explicit_bzero_chk: no system call (a memset the compiler keeps; --key-via-gate; e2e keygate.bats)
__memcpy_chk: no system call
__snprintf_chk: no system call
__stack_chk_fail: aborts (the gate dies, as it must)
__vsnprintf_chk: no system call
_exit: exit_group
accept4: accept4
calloc: brk/mmap/munmap (allowed)
clock_gettime: vDSO, else clock_gettime (allowed)
close: close
connect: connect
epoll_create1: supervisor (gate_new)
epoll_ctl: epoll_ctl
epoll_wait: epoll_wait (epoll_pwait on some architectures; both allowed)
fcntl: fcntl
fflush: supervisor (before the fork)
fork: supervisor
fputc: supervisor (gate_summary)
free: munmap/brk (allowed)
freeaddrinfo: supervisor (--proxy)
fstat: supervisor (measure_log)
gai_strerror: supervisor (--proxy)
getaddrinfo: supervisor (--proxy, before the fork)
getpid: supervisor
getrlimit: supervisor (gate_new)
getsockopt: getsockopt
gmtime_r: no system call (tzset() ran before the filter: gate_confine)
inet_ntop: no system call
inet_pton: no system call
kill: supervisor
log_internal: supervisor (the gate's log is silenced after its filter)
malloc: brk/mmap (allowed)
memchr: no system call
memcmp: no system call
memmem: no system call (--key-via-gate; run under the filter by e2e keygate.bats)
memcpy: no system call
memmove: no system call
open: supervisor (open_log)
parse_u64: no system call
pipe2: pipe2
poll: supervisor (receive_summary)
realloc: brk/mmap/mremap (allowed)
recv: recvfrom
recvfrom: recvfrom
send: sendto
sendto: sendto
setrlimit: supervisor (gate_new)
setsockopt: setsockopt
shutdown: shutdown
snprintf: no system call
socket: socket (AF_INET/AF_INET6 stream only)
socketpair: socketpair (AF_UNIX stream only, allowed so: tls_handoff(), --key-via-gate https://; e2e keygate.bats), and the supervisor's
splice: splice
strchr: no system call
strcasecmp: no system call (the locale's tables, loaded before the filter; e2e keygate.bats)
strcmp: no system call
strdup: malloc
strftime: no system call for the formats used (no %Z; the time zone was read before the filter)
strlen: no system call
strncasecmp: no system call
strncmp: no system call
strrchr: no system call
strsignal: supervisor (report_death)
strspn: no system call
strstr: no system call
waitpid: supervisor
write: write
write_full: write
"

# imports BUILDDIR: the undefined symbols of OBJECTS that no object of libaisb.a defines.
imports() {
	local b=$1 o defined
	for o in "${OBJECTS[@]}"; do
		[ -f "$b/$o" ] || { echo "gate-imports: $b/$o is missing (build first)" >&2; return 2; }
	done
	defined=$(cd "$b" && nm --defined-only libaisb.a 2>/dev/null | awk 'NF == 3 {print $3}' | sort -u)
	(cd "$b" && nm -u "${OBJECTS[@]}") | awk 'NF >= 2 {print $NF}' | sort -u | comm -23 - <(echo "$defined")
}

# check LIST-OF-IMPORTS: exit 1 naming each one not in REVIEWED
check() {
	local bad=0 s
	for s in $1; do
		if ! grep -q "^$s: " <<<"$REVIEWED"; then
			echo "gate-imports: the gate's code now calls '$s': check which system calls it makes (with the inputs the gate gives it) against src/net/gate-rules.c, then add it to tests/lint/gate-imports.sh with the answer (issue 22: qsort() called sysinfo(2) and killed the gate)" >&2
			bad=1
		fi
	done
	return $bad
}

if [ "${1:-}" = --self-test ]; then
	check "malloc write" || { echo "gate-imports: self-test: a reviewed list failed" >&2; exit 1; }
	if check "malloc qsort" 2>/dev/null; then
		echo "gate-imports: self-test: a planted qsort was not caught" >&2
		exit 1
	fi
	exit 0
fi
list=$(imports "${1:?usage: gate-imports.sh BUILDDIR}") || exit 1
check "$list"
