#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/gate.sh — the gate against a direct loopback transfer: 1 GiB through CONNECT and through
# the transparent listener vs direct; time to first byte per connection; 1,000 concurrent
# connections; the supervisor's peak RSS. A server on the host's 127.0.0.1 only, reached from the
# sandbox as svc.test (--add-host svc.test=127.0.0.1). Not a test: prints numbers, no thresholds.
#   AISB_BIN=./build/aisb bench/gate.sh        (BYTES=... N=... CONC=... to change the sizes)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
aisb=${AISB_BIN:-$here/../build/aisb}
n=${N:-200}
conc=${CONC:-1000}
work=$(mktemp -d /tmp/aisb-gate-bench.XXXXXX)
chmod 755 "$work"
cp "$here/gate-load.py" "$work/"
export XDG_STATE_HOME="$work/state"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 "$work/gate-load.py" serve "$port" &
srv=$!
trap 'kill $srv 2>/dev/null; rm -rf "$work"' EXIT
cd "$work"
for _ in $(seq 100); do python3 -c "import socket; socket.create_connection(('127.0.0.1',$port))" 2>/dev/null && break; sleep 0.05; done

export BYTES=${BYTES:-1073741824}
sb() { "$aisb" --allow "svc.test:$port" --add-host svc.test=127.0.0.1 --ephemeral-home --no-agents \
	--env BYTES --env HOLD=2 -- "$@"; }
# the work dir is the project: inside, the script is in the working directory
load="python3 gate-load.py"

echo "== 1 GiB, one connection"
$load bulk direct 127.0.0.1 "$port"
sb $load bulk connect svc.test "$port"
sb $load bulk transparent svc.test "$port"

echo "== time to first byte, $n sequential connections"
$load ttfb direct 127.0.0.1 "$port" "$n"
sb $load ttfb connect svc.test "$port" "$n"
sb $load ttfb transparent svc.test "$port" "$n"

echo "== $conc concurrent connections through CONNECT, supervisor RSS"
"$aisb" --allow "svc.test:$port" --add-host svc.test=127.0.0.1 --ephemeral-home --no-agents \
	--env HOLD=2 -- $load many connect svc.test "$port" "$conc" &
apid=$! # the supervisor itself
peak=0
while kill -0 "$apid" 2>/dev/null; do
	rss=$(awk '/^VmRSS/ {print $2}' "/proc/$apid/status" 2>/dev/null || echo 0)
	[ "${rss:-0}" -gt "$peak" ] && peak=$rss
	sleep 0.05
done
wait "$apid" || true
echo "supervisor peak VmRSS ${peak} KiB (sampled every 50 ms)"
echo "(user $(id -un), $(uname -r), $(nproc) cpus)"
