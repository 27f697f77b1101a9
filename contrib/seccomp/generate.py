#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# contrib/seccomp/generate.py DOCKER_DEFAULT_JSON [OUT] — writes contrib/seccomp/aisb.json:
# Docker's default seccomp profile (moby's profiles/seccomp/default.json, unchanged) plus one
# rule that allows exactly the system calls aisb needs to build its sandbox and that Docker's
# default denies without CAP_SYS_ADMIN (issue 24, measured in tests/containers/run.sh: with
# fewer names the run fails at the first one missing). The added rule is the last one and carries
# "comment": "aisb", so the original is this file without it (tests/containers/run.sh does that
# to test Docker's own default).
#
# Regenerate from a moby checkout: contrib/seccomp/generate.py MOBY/profiles/seccomp/default.json
# (or vendor/github.com/moby/profiles/seccomp/default.json; Debian: golang-github-docker-docker-dev,
# /usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json).
import json
import sys

# Each: why aisb calls it (grep the name in src/). Not setdomainname: aisb never calls it.
AISB_CALLS = [
    "clone",          # the sandbox's namespaces: CLONE_NEWUSER|NEWNS|NEWPID|NEWNET|NEWIPC|NEWUTS|NEWCGROUP
    "unshare",        # init's and the gate's own namespaces (src/ns/init.c, src/net/gate-confine.c)
    "setns",          # pasta (--net full) joins the sandbox's namespaces; doctor's probes
    "mount",          # the mount tree: tmpfs root, binds, proc, devpts, remounts read-only
    "umount2",        # the old root after pivot_root
    "pivot_root",     # into the new root
    "mount_setattr",  # read-only, nosuid, nodev on bind trees, recursively
    "open_tree",      # binds from an fd (no path re-resolved)
    "move_mount",     # ... put in place by fd
    "fsopen",         # new mounts by fd (tmpfs, proc, overlay)
    "fsconfig",
    "fsmount",
    "sethostname",    # the sandbox's own hostname (its uts namespace)
]


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: generate.py DOCKER_DEFAULT_JSON [OUT]")
    with open(sys.argv[1]) as f:
        p = json.load(f)
    if p.get("defaultAction") != "SCMP_ACT_ERRNO" or not p.get("syscalls"):
        sys.exit("%s does not look like Docker's default profile" % sys.argv[1])
    if any(r.get("comment") == "aisb" for r in p["syscalls"]):
        sys.exit("%s already has aisb's rule" % sys.argv[1])
    p["syscalls"].append({
        "comment": "aisb",
        "names": AISB_CALLS,
        "action": "SCMP_ACT_ALLOW",
    })
    out = sys.argv[2] if len(sys.argv) == 3 else "contrib/seccomp/aisb.json"
    with open(out, "w") as f:
        json.dump(p, f, indent="\t")
        f.write("\n")


if __name__ == "__main__":
    main()
