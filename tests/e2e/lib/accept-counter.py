#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/lib/accept-counter.py PORT PORTFILE LOG — a TCP server on 127.0.0.1:PORT (0: a free
# one) of the network namespace it runs in, the port written to PORTFILE once it listens; it
# appends one line to LOG per accepted connection and closes it: the test reads LOG to tell
# whether the gate dialled the destination at all.
import os
import socket
import sys

port, port_file, log = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(64)
with open(port_file + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(port_file + ".tmp", port_file)
while True:
    c, _ = s.accept()
    with open(log, "a") as f:
        f.write("accept\n")
    c.close()
