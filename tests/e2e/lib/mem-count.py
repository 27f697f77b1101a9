#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/lib/mem-count.py PID NEEDLE — how often NEEDLE is in the readable memory of PID
# (/proc/PID/maps and /proc/PID/mem: needs root, or the process's own user and it dumpable).
# Prints the count, never the needle or the bytes around it.
import re
import sys


def main():
    pid, needle = sys.argv[1], sys.argv[2].encode()
    n = 0
    with open("/proc/%s/maps" % pid) as maps, open("/proc/%s/mem" % pid, "rb", 0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if "r" not in perms:
                continue
            lo, hi = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(lo)
                data = mem.read(hi - lo)
            except (OSError, OverflowError, ValueError):
                continue  # [vvar] and the like
            n += len(re.findall(re.escape(needle), data))
    print(n)


if __name__ == "__main__":
    main()
