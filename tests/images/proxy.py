#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
# proxy.py MODE UPSTREAM_PORT PORTFILE — an HTTP front for a local plain registry, on 127.0.0.1.
#   truncate  blob bodies are cut in half (Content-Length still says the full size)
#   bearer    requires "Authorization: Bearer testtoken"; answers 401 with a Bearer challenge whose
#             realm is this proxy's /token (which hands out testtoken anonymously)
# Every request is appended to PORTFILE.log as "METHOD PATH".
import http.client, http.server, socketserver, sys

mode, upstream, portfile = sys.argv[1], int(sys.argv[2]), sys.argv[3]

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        with open(portfile + ".log", "a") as lf:
            lf.write("GET %s\n" % self.path)
        port = self.server.server_address[1]
        if mode == "bearer":
            if self.path.startswith("/token"):
                body = b'{"token":"testtoken"}'
                self.send_response(200); self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
                return
            if self.headers.get("Authorization") != "Bearer testtoken":
                self.send_response(401)
                self.send_header("WWW-Authenticate",
                                 'Bearer realm="http://127.0.0.1:%d/token",service="test",scope="repository:bb:pull"' % port)
                self.send_header("Content-Length", "0"); self.end_headers()
                return
        c = http.client.HTTPConnection("127.0.0.1", upstream)
        hdrs = {k: v for k, v in self.headers.items() if k.lower() in ("accept",)}
        c.request("GET", self.path, headers=hdrs)
        r = c.getresponse()
        body = r.read()
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() in ("content-type", "docker-content-digest", "www-authenticate", "location"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if mode == "truncate" and "/blobs/" in self.path and len(body) > 1000:
            self.wfile.write(body[: len(body) // 2]); self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)

class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

s = S(("127.0.0.1", 0), H)
with open(portfile, "w") as f:
    f.write(str(s.server_address[1]))
s.serve_forever()
