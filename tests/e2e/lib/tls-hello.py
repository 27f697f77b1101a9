#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/lib/tls-hello.py connect|direct HOST PORT SNI — runs inside the sandbox: opens a TCP
# connection to HOST:PORT, through the gate's CONNECT proxy ($HTTPS_PROXY) or directly (the
# transparent path), and starts a real TLS handshake with SNI as server_hostname. Prints the
# CONNECT status line (connect mode) and how the handshake ended; the handshake never completes
# (the test's server is not TLS), only whether the gate let it through matters.
import os
import socket
import ssl
import sys
from urllib.parse import urlsplit

mode, host, port, sni = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
if mode == "connect":
    p = urlsplit(os.environ["HTTPS_PROXY"])
    s = socket.create_connection((p.hostname, p.port), timeout=10)
    s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)
        if not b:
            break
        head += b
    print("connect:", head.split(b"\r\n")[0].decode(errors="replace"))
else:
    s = socket.create_connection((host, port), timeout=10)
ctx = ssl.create_default_context()
try:
    ctx.wrap_socket(s, server_hostname=sni)
    print("tls: handshake done")
except (ssl.SSLError, OSError) as e:
    print("tls:", type(e).__name__)
