#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# apt-mirror.py [SUITE] — print the first Debian mirror URI that this host's apt configuration
# uses for SUITE (default bookworm, plain "deb" entries only), read from /etc/apt/sources.list,
# /etc/apt/sources.list.d/*.list and *.sources (deb822). Exit 1 when there is none. The tests
# never name a mirror host themselves: the machine's own apt mirror is the only one they reach.
import glob
import re
import sys

suite = sys.argv[1] if len(sys.argv) > 1 else "bookworm"
ROOT = "/etc/apt"


def one_line(path):
    try:
        lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    except OSError:
        return None
    for line in lines:
        line = line.split("#", 1)[0].strip()
        line = re.sub(r"\[[^\]]*\]", " ", line)  # [arch=... signed-by=...]
        f = line.split()
        if len(f) >= 3 and f[0] == "deb" and f[2] == suite:
            return f[1]
    return None


def deb822(path):
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        return None
    for stanza in re.split(r"\n\s*\n", text):
        fields = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line or line[:1].isspace():
                continue
            k, v = line.split(":", 1)
            fields[k.strip().lower()] = v.split()
        if fields.get("enabled", ["yes"])[0].lower() == "no":
            continue
        if "deb" in fields.get("types", []) and suite in fields.get("suites", []) and fields.get("uris"):
            return fields["uris"][0]
    return None


for path in [ROOT + "/sources.list"] + sorted(glob.glob(ROOT + "/sources.list.d/*.list")):
    uri = one_line(path)
    if uri:
        print(uri)
        sys.exit(0)
for path in sorted(glob.glob(ROOT + "/sources.list.d/*.sources")):
    uri = deb822(path)
    if uri:
        print(uri)
        sys.exit(0)
print("apt-mirror.py: no 'deb' source for %s in %s" % (suite, ROOT), file=sys.stderr)
sys.exit(1)
