#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# tree-describe.py ROOT — everything an OCI layer can say about the tree under ROOT, one line per
# path in name order: type and mode, owner, size, content hash or link target, a regular file's
# mtime, its xattrs (names and values), and the first path of the same tree it shares an inode
# with. Directory and symlink times are left out: they are the unpack's own, in any unpacker.
# Two trees that print the same are the same image.
import hashlib
import os
import stat
import sys

root = sys.argv[1]
paths = []
for d, dirs, files in os.walk(root):
    for n in dirs + files:
        paths.append(os.path.relpath(os.path.join(d, n), root))
paths.sort()
first = {}
for p in paths:
    st = os.lstat(os.path.join(root, p))
    a = os.path.join(root, p)
    if stat.S_ISREG(st.st_mode):
        with open(a, "rb") as f:
            what = hashlib.sha256(f.read()).hexdigest()
        mtime = st.st_mtime_ns
        key = (st.st_dev, st.st_ino)
        link = first.setdefault(key, p)
        link = "-" if link == p else link
    elif stat.S_ISLNK(st.st_mode):
        what, mtime, link = os.readlink(a), 0, "-"
    else:
        what, mtime, link = "-", 0, "-"
    xattrs = []
    if not stat.S_ISLNK(st.st_mode):
        for x in sorted(os.listxattr(a, follow_symlinks=False)):
            xattrs.append("%s=%s" % (x, os.getxattr(a, x, follow_symlinks=False).hex()))
    size = 0 if stat.S_ISDIR(st.st_mode) else st.st_size
    print("%s %07o %d:%d %d %s %d [%s] %s" % (p, st.st_mode, st.st_uid, st.st_gid, size, what, mtime,
                                            ",".join(xattrs), link))
