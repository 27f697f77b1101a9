#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/lib/http-recorder.py PORTFILE LOG — an HTTP/1.1 server on the host's 127.0.0.1 (a
# free port, written to PORTFILE once it listens) that is as easy to smuggle into as a server
# can be: it keeps every connection alive whatever the request says (Connection: close too),
# answers pipelined requests in turn, and frames a body by Transfer-Encoding before
# Content-Length (RFC 9112 6.3). Each request it reads is one line in LOG, written before the
# answer: "METHOD TARGET host=HOST body=N". The answer's body names the Host it saw.
import os
import socket
import sys
import threading

port_file, log = sys.argv[1], sys.argv[2]
lock = threading.Lock()


def record(line):
    with lock, open(log, "a") as f:
        f.write(line + "\n")


def serve(c):
    buf = b""
    f = c.makefile("rb")
    try:
        while True:
            line = f.readline()
            if not line:
                return
            if line in (b"\r\n", b"\n"):
                continue
            method, target = (line.split(b" ") + [b"", b""])[:2]
            headers = {}
            while True:
                h = f.readline()
                if not h or h in (b"\r\n", b"\n"):
                    break
                k, _, v = h.partition(b":")
                headers.setdefault(k.strip().lower(), v.strip())
            body = b""
            if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
                while True:
                    size = int(f.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while f.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        break
                    body += f.read(size)
                    f.readline()
            elif b"content-length" in headers:
                body = f.read(int(headers[b"content-length"]))
            host = headers.get(b"host", b"").decode(errors="replace")
            record("%s %s host=%s body=%d" % (method.decode(errors="replace"), target.decode(errors="replace"),
                                               host, len(body)))
            answer = ("seen %s\n" % host).encode()
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(answer), answer))
    except (OSError, ValueError):
        pass
    finally:
        c.close()


s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(64)
with open(port_file + ".tmp", "w") as pf:
    pf.write(str(s.getsockname()[1]))
os.rename(port_file + ".tmp", port_file)
while True:
    conn, _ = s.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
