#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/lib/fake-terminal.py OUT CMD... — runs CMD on a pty and plays a terminal that answers
# what xterm and WezTerm answer: DSR 5 (`CSI 5 n`) with `CSI 0 n`, and DECRQCRA
# (`CSI Pi;Pp;Pt;Pl;Pb;Pr * y`, a checksum of a screen rectangle) with `DCS Pi ! ~ XXXX ST`,
# a checksum of the "screen", i.e. of what it read. Everything CMD wrote is saved in OUT. Exits
# with CMD's status once it has exited and its output is drained.
# With --answer PROMPT ANSWER first, it also types ANSWER and a newline once CMD has written
# PROMPT (a state, not a time); CMD ending without ever showing PROMPT exits 2.
import os
import pty
import re
import sys

prompt = answer = None
if sys.argv[1] == "--answer":
    prompt, answer = sys.argv[2].encode(), sys.argv[3].encode()
    del sys.argv[1:4]
out_path, argv = sys.argv[1], sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)
seen = b""
answered = 0
while True:
    try:
        k = os.read(fd, 65536)
    except OSError:
        break
    if not k:
        break
    seen += k
    if prompt is not None and prompt in seen:
        os.write(fd, answer + b"\n")
        prompt = None
    pos = answered
    for m in re.finditer(rb"\x1b\[(?:5n|(\d*)(?:;\d*)*\*y)", seen[answered:]):
        if m.group(0) == b"\x1b[5n":
            os.write(fd, b"\x1b[0n")
        else:
            screen = seen[:answered + m.start()]
            os.write(fd, b"\x1bP%s!~%04X\x1b\\" % (m.group(1) or b"0", sum(screen) & 0xffff))
        pos = answered + m.end()
    answered = pos
with open(out_path, "wb") as f:
    f.write(seen)
_, st = os.waitpid(pid, 0)
sys.exit(2 if prompt is not None else os.waitstatus_to_exitcode(st))
