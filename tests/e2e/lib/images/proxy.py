#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
# proxy.py MODE UPSTREAM_PORT PORTFILE — an HTTP front for a local plain registry, on 127.0.0.1.
#   truncate  blob bodies are cut in half (Content-Length still says the full size)
#   bearer    requires "Authorization: Bearer testtoken"; answers 401 with a Bearer challenge whose
#             realm is this proxy's /token (which hands out testtoken anonymously)
#   token     a token server that wants basic credentials aisb:$PROXY_PASSWORD and hands out
#             "tok-pull" or, when the scope asks for push, "tok-push"; reads need either token,
#             writes (POST, PUT, PATCH, DELETE) need tok-push
#   relocate  no auth; upload Locations are rewritten to 127.0.0.2 (another origin)
#   forward   no auth, nothing changed (the control for relocate)
#   flaky     the first request of each kind (method and path, an upload session's id left out)
#             answers 503; the next one is forwarded
#   down      every request but GET /v2/ answers 503
# Every request is appended to PORTFILE.log as "METHOD PATH" (the token mode adds the token
# that came with it, or "-"). GET, HEAD, POST, PUT, PATCH and DELETE are forwarded with their
# bodies; the Host header is kept, so the registry's upload Locations name this proxy.
import base64, http.client, http.server, os, re, socketserver, sys, threading

mode, upstream, portfile = sys.argv[1], int(sys.argv[2]), sys.argv[3]
password = os.environ.get("PROXY_PASSWORD", "")
seen, seen_lock = set(), threading.Lock()
FWD_REQ = ("accept", "content-type", "content-length", "host", "content-range")
FWD_RESP = ("content-type", "docker-content-digest", "www-authenticate", "location", "range",
            "docker-upload-uuid", "content-length")

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def challenge(self, port):
        self.reply(401, b"", [("WWW-Authenticate",
                               'Bearer realm="http://127.0.0.1:%d/token",service="test",scope="repository:bb:pull"' % port)])

    def handle_any(self):
        port = self.server.server_address[1]
        authz = self.headers.get("Authorization") or "-"
        with open(portfile + ".log", "a") as lf:
            lf.write("%s %s%s\n" % (self.command, self.path,
                                    " " + authz.split(" ")[-1] if mode == "token" and not self.path.startswith("/token") else ""))
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        if mode == "down" and self.path != "/v2/":
            self.reply(503, b'{"errors":[{"code":"UNAVAILABLE","message":"down for the test"}]}')
            return
        if mode == "flaky":
            key = (self.command, re.sub(r"/uploads/[^/?]+", "/uploads/", self.path.split("?")[0]))
            with seen_lock:
                first = key not in seen
                seen.add(key)
            if first:
                self.reply(503, b'{"errors":[{"code":"UNAVAILABLE","message":"flaky for the test"}]}')
                return
        if mode == "bearer":
            if self.path.startswith("/token"):
                self.reply(200, b'{"token":"testtoken"}', [("Content-Type", "application/json")])
                return
            if authz != "Bearer testtoken":
                self.challenge(port)
                return
        if mode == "token":
            if self.path.startswith("/token"):
                want = "Basic " + base64.b64encode(("aisb:" + password).encode()).decode()
                if authz != want:
                    self.reply(401, b'{"errors":[{"code":"UNAUTHORIZED","message":"bad credentials"}]}')
                    return
                tok = "tok-push" if "push" in self.path else "tok-pull"
                self.reply(200, ('{"token":"%s"}' % tok).encode(), [("Content-Type", "application/json")])
                return
            ok = ("Bearer tok-push",) if self.command not in ("GET", "HEAD") else ("Bearer tok-push", "Bearer tok-pull")
            if authz not in ok:
                self.challenge(port)
                return
        c = http.client.HTTPConnection("127.0.0.1", upstream)
        hdrs = {k: v for k, v in self.headers.items() if k.lower() in FWD_REQ}
        c.request(self.command, self.path, body=body, headers=hdrs)
        r = c.getresponse()
        rbody = r.read()
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() in FWD_RESP and k.lower() != "content-length":
                if mode == "relocate" and k.lower() == "location":
                    v = v.replace("//127.0.0.1:", "//127.0.0.2:")
                self.send_header(k, v)
        length = r.getheader("Content-Length") if self.command == "HEAD" else str(len(rbody))
        self.send_header("Content-Length", length or "0")
        self.end_headers()
        if self.command == "HEAD":
            return
        if mode == "truncate" and "/blobs/" in self.path and len(rbody) > 1000:
            self.wfile.write(rbody[: len(rbody) // 2]); self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(rbody)

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any

class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

s = S(("127.0.0.1", 0), H)
with open(portfile, "w") as f:
    f.write(str(s.server_address[1]))
s.serve_forever()
