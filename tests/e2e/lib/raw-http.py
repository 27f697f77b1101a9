#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/lib/raw-http.py BYTES — sends BYTES (Python escapes: \r\n, \x00 ...) in one write to
# the proxy named by $HTTP_PROXY (the gate inside a sandbox), ends its side, and prints
# everything that comes back until the connection closes (a reset ends it too, printed as
# "<reset>"). No timeout: the test waits for the answer's end, not for a time.
import os
import socket
import sys
from urllib.parse import urlsplit

proxy = urlsplit(os.environ["HTTP_PROXY"])
data = sys.argv[1].encode("latin-1").decode("unicode_escape").encode("latin-1")
s = socket.create_connection((proxy.hostname, proxy.port))
s.sendall(data)
s.shutdown(socket.SHUT_WR)
out = b""
try:
    while True:
        k = s.recv(65536)
        if not k:
            break
        out += k
except ConnectionResetError:
    out += b"<reset>"
sys.stdout.write(out.decode("latin-1"))
