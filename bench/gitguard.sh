#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/gitguard.sh — what the post-run git check (gitguard) costs a run: `aisb --net none -- true`
# in a one-commit git project, small and with ~100,000 entries (a copy of /usr/share, hard links,
# warm in the page cache), against a second aisb binary (BASE_BIN, e.g.
# the previous release) run side by side, interleaved. Medians and the ratios; not a test.
#   AISB_BIN=./build/aisb BASE_BIN=/tmp/aisb-base N=30 bench/gitguard.sh
# Also as the unprivileged user (binaries readable by it):
#   runuser -u aisb-e2e -- env AISB_BIN=... BASE_BIN=... bench/gitguard.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
aisb=$(realpath "${AISB_BIN:-$here/../build/aisb}")
base=${BASE_BIN:+$(realpath "$BASE_BIN")}
n=${N:-30}
# not /dev/shm: a project there is refused (never exposed to a sandbox); /var/tmp is on the
# disk, so a warm-up run fills the page cache first
d=$(mktemp -d /var/tmp/aisb-bench-gg.XXXXXX)
trap 'rm -rf "$d"' EXIT
export XDG_STATE_HOME="$d/state" XDG_CACHE_HOME="$d/cache" XDG_CONFIG_HOME="$d/config"
mkdir -p "$d/config/aisb"
echo "accept_unenforced_limits = true" >"$d/config/aisb/config" # this host: no delegated cgroup v2
mk() { # DIR: a one-commit repository
	mkdir -p "$1" && git -C "$1" init -q && echo a >"$1/f" && git -C "$1" add f &&
		git -C "$1" -c user.name=b -c user.email=b@e commit -q -m i
}
mk "$d/small"
mk "$d/big"
cp -al /usr/share "$d/big/share" 2>/dev/null || cp -a /usr/share "$d/big/share"
# ~100,000 entries: top up with small files, 1,000 per directory
python3 - "$d/big" <<'PY'
import os, sys
root = sys.argv[1]
have = sum(1 + len(f) + len(s) for _, s, f in os.walk(root))
for i in range(have, 100000):
    sub = os.path.join(root, "fill", str(i // 1000))
    os.makedirs(sub, exist_ok=True)
    open(os.path.join(sub, str(i)), "w").close()
PY
echo "bench: $(find "$d/big" | wc -l) entries in the big project"
# interleaved (one run of each binary in turn, N rounds), so that the machine's load moves both
bins=("$aisb" ${base:+"$base"})
python3 - "$n" "$d" "${bins[@]}" <<'PY'
import os, subprocess, sys, time, statistics
n, d, bins = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
t = {(b, p): [] for b in bins for p in ("small", "big")}
for p in ("small", "big"):
    for _ in range(3):
        for b in bins:
            subprocess.run([b, "--net", "none", "--ephemeral-home", "--no-agents", "--", "true"], cwd=f"{d}/{p}", check=True)
    for _ in range(n):
        for b in bins:
            s = time.perf_counter()
            subprocess.run([b, "--net", "none", "--ephemeral-home", "--no-agents", "--", "true"], cwd=f"{d}/{p}", check=True)
            t[(b, p)].append((time.perf_counter() - s) * 1000)
med = {k: statistics.median(v) for k, v in t.items()}
for (b, p), m in med.items():
    print(f"{m:8.1f} ms  {b}  in {p}")
if len(bins) == 2:
    a, c = bins
    print(f"ratio new/base: small {med[(a,'small')]/med[(c,'small')]:.3f}, big {med[(a,'big')]/med[(c,'big')]:.3f}; "
          f"walk of the big tree (big - small): new {med[(a,'big')]-med[(a,'small')]:.1f} ms, "
          f"base {med[(c,'big')]-med[(c,'small')]:.1f} ms")
PY
