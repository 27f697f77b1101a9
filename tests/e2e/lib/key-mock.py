#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/lib/key-mock.py — a model endpoint stand-in for the --key-via-gate tests (stdlib only).
#
# Listens on 127.0.0.1 (or --bind ADDR), a free port (or --port N), written to --port-file once
# bound. Every request is one JSON line in --log: method, path, whether the bearer or x-api-key
# header equals --expect-token, whether any header carried a placeholder (aisb-placeholder-...),
# and the body length. Values are never logged. A path ending in /stream is answered with a
# chunked body of three chunks, flushed one by one; any other path with a Content-Length body. A
# path with /echo quotes the auth headers it got back (the header X-Echo and the body), as a
# careless gateway might; a path with /echo64 quotes the key encoded: base64 (standard, URL-safe)
# of it after 0, 1 and 2 other bytes, and percent-encoded, one "FORM:TEXT" line each.
# With --tls-cert/--tls-key (PEM) it serves HTTPS (TLS 1.2 minimum, ALPN http/1.1), its request
# lines carrying "tls": true; a handshake that fails (a client that does not trust the
# certificate, or refuses its name) is the line {"event": "tls", "error": ...}.
import argparse
import base64
import json
import os
import urllib.parse
import threading
import time
import tlsserve
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
ARGS = None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            n = 0
            while True:
                size = int(self.rfile.readline().strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return n
                n += len(self.rfile.read(size))
                self.rfile.readline()
        return len(self.rfile.read(int(self.headers.get("Content-Length", "0"))))

    def handle_any(self):
        n = self.body()
        bearer = self.headers.get("Authorization", "")
        key = self.headers.get("x-api-key", "")
        entry = {
            "method": self.command,
            "path": self.path,
            "bearer_ok": bool(ARGS.expect_token) and bearer == "Bearer " + ARGS.expect_token,
            "x_api_key_ok": bool(ARGS.expect_token) and key == ARGS.expect_token,
            "auth_sent": bool(bearer or key),
            "placeholder_seen": any("aisb-placeholder-" in v for v in self.headers.values()),
            "accept_encoding": self.headers.get("Accept-Encoding"),
            "body": n,
        }
        if ARGS.tls_cert:
            entry["tls"] = True
        with LOCK, open(ARGS.log, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")
        if "/echo64" in self.path:
            got = (bearer[7:] if bearer.startswith("Bearer ") else key).encode()
            lines = []
            for a in range(3):
                text = b"x" * a + got + b"."
                lines.append("b64-%d:%s" % (a, base64.b64encode(text).decode()))
                lines.append("b64url-%d:%s" % (a, base64.urlsafe_b64encode(text).decode()))
            lines.append("pct:" + urllib.parse.quote(got, safe=""))
            data = ("\n".join(lines) + "\n").encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if "/echo" in self.path:
            # an endpoint that quotes the key back (an error message, a debugging route): in a
            # header, and in the body, split across two chunks flushed apart on /echo/stream
            said = (bearer + " " + key).strip()
            self.send_response(200)
            self.send_header("X-Echo", said)
            if self.path.endswith("/stream"):
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                half = len(said) // 2
                for part in ("echo:" + said[:half], said[half:] + ":end\n"):
                    data = part.encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                    time.sleep(0.05)
                self.wfile.write(b"0\r\n\r\n")
                return
            data = ("echo:" + said + ":end\n").encode()
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if self.path.endswith("/stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(3):
                data = ("data: part%d\n\n" % i).encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            return
        data = json.dumps({"ok": True, "path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = handle_any


def log_line(entry):
    with LOCK, open(ARGS.log, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")


def tls_logged(_facts, conn, error):
    """A failed handshake is a line of the log (no request came); a good one is not."""
    if conn is None:
        log_line({"event": "tls", "error": error})


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--expect-token", default="")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ARGS = ap.parse_args()
    addr = (ARGS.bind, ARGS.port)
    if ARGS.tls_cert:
        srv = tlsserve.server(addr, Handler, ARGS.tls_cert, ARGS.tls_key, tls_logged)
    else:
        srv = ThreadingHTTPServer(addr, Handler)
    srv.daemon_threads = True
    with open(ARGS.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(ARGS.port_file + ".tmp", ARGS.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
