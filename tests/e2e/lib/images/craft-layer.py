#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
# craft-layer.py KIND OUT.tar [ARG] — hostile and special layers for the unpack tests.
#   dotdot     an entry "../escaped-dotdot"
#   abspath    an entry "/tmp/escaped-abs" (absolute name)
#   symlink    "esc" -> ARG (an absolute host dir), then "esc/escaped-symlink" written through it
#   hardlink   "hl" hardlinked to "../../../../ARG" (a host file)
#   device     a char device "dev/evil" (1,3) next to a normal file "ok"
#   setuid     "bin/suid" with mode 04755
#   lower      a/keep a/gone b/old b/sub/deep c.txt        (first layer of the whiteout pair)
#   upper      a/.wh.gone b/.wh..wh..opq b/new              (second layer)
#   deep       a file ARG (default 129) directory levels below the root: "d/d/.../f"
#   deepsym    "l" -> a 100-level chain of dirs, then "l/" + 40 more levels through it
#   manylinks  one file "t" and ARG hardlinks to it
import io, sys, tarfile

kind, out = sys.argv[1], sys.argv[2]
arg = sys.argv[3] if len(sys.argv) > 3 else ""
t = tarfile.open(out, "w", format=tarfile.PAX_FORMAT)

def f(name, data=b"x\n", mode=0o644):
    i = tarfile.TarInfo(name); i.size = len(data); i.mode = mode; i.mtime = 0
    t.addfile(i, io.BytesIO(data))

def d(name, mode=0o755):
    i = tarfile.TarInfo(name); i.type = tarfile.DIRTYPE; i.mode = mode; i.mtime = 0
    t.addfile(i)

def link(name, target, typ):
    i = tarfile.TarInfo(name); i.type = typ; i.linkname = target; i.mtime = 0; i.mode = 0o777
    t.addfile(i)

if kind == "dotdot":
    f("ok"); f("../escaped-dotdot")
elif kind == "abspath":
    f("ok"); f("/tmp/escaped-abs")
elif kind == "symlink":
    link("esc", arg, tarfile.SYMTYPE); f("esc/escaped-symlink")
elif kind == "hardlink":
    f("ok"); link("hl", "../../../.." + arg, tarfile.LNKTYPE)
elif kind == "device":
    f("ok"); d("dev")
    i = tarfile.TarInfo("dev/evil"); i.type = tarfile.CHRTYPE; i.devmajor = 1; i.devminor = 3; i.mode = 0o666
    t.addfile(i)
elif kind == "setuid":
    d("bin"); f("bin/suid", b"#!/bin/sh\n", 0o4755)
elif kind == "lower":
    d("a"); f("a/keep"); f("a/gone"); d("b"); f("b/old"); d("b/sub"); f("b/sub/deep"); f("c.txt")
elif kind == "upper":
    d("a"); f("a/.wh.gone", b""); d("b"); f("b/.wh..wh..opq", b""); f("b/new")
elif kind == "deep":
    f("d/" * (int(arg or 129) - 1) + "f")
elif kind == "deepsym":
    d("x/" * 100); link("l", "x/" * 99 + "x", tarfile.SYMTYPE); f("l/" + "y/" * 39 + "f")
elif kind == "manylinks":
    f("t")
    for n in range(int(arg)):
        link("h%d" % n, "t", tarfile.LNKTYPE)
else:
    sys.exit("unknown kind " + kind)
t.close()
