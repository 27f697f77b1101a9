#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
# fake-registry.py LAYOUT STATEDIR — a registry v2 serving an OCI layout, with token servers and
# a blob store on two loopback hosts, to see where aisb sends credentials. Settings come from
# the environment:
#   FR_TLS=1          the registry and its blob stores speak https (default: plain http)
#   FR_CHALLENGE      bearer (default) | basic
#   FR_REALM          other (a token server on 127.0.0.2) | same (127.0.0.1, another port)
#   FR_REALM_SCHEME   http | https (default: the registry's own)
#   FR_REDIRECT       none (default) | other | sameport: blob GETs answer 307 to a blob store on
#                     127.0.0.2, or on 127.0.0.1 at another port
# Servers: R (registry, 127.0.0.1), B (blobs, 127.0.0.2), token servers T (127.0.0.2, http), Ts
# (127.0.0.2, https), S and Ss (127.0.0.1, other ports, http/https; they serve blobs too).
# STATEDIR/ports holds "R=port B=port T=port ..." once all listen (every https server uses
# STATEDIR/server.{crt,key}, IP SANs 127.0.0.1 and 127.0.0.2, CA STATEDIR/ca/ca.crt, made here);
# every request is appended to STATEDIR/log as "SERVER PATH AUTH" (AUTH the Authorization
# header's value, or "-"). Tokens are handed out to anyone: the question is only what arrives.
import http.server, json, os, socketserver, ssl, subprocess, sys, threading

layout, state = sys.argv[1], sys.argv[2]
tls = os.environ.get("FR_TLS") == "1"
challenge = os.environ.get("FR_CHALLENGE", "bearer")
realm_where = os.environ.get("FR_REALM", "other")
realm_scheme = os.environ.get("FR_REALM_SCHEME", "https" if tls else "http")
redirect = os.environ.get("FR_REDIRECT", "none")
TOKEN = "tok-canary-3141"
lock = threading.Lock()

def make_certs():
    if os.path.exists(os.path.join(state, "server.crt")):
        return
    os.makedirs(os.path.join(state, "ca"), exist_ok=True)
    def run(*a):
        subprocess.run(a, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=aisb fake CA",
        "-keyout", state + "/ca.key", "-out", state + "/ca/ca.crt")
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
        "-keyout", state + "/server.key", "-out", state + "/server.csr")
    with open(state + "/san.ext", "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,IP:127.0.0.2\n")
    run("openssl", "x509", "-req", "-in", state + "/server.csr", "-CA", state + "/ca/ca.crt", "-CAkey",
        state + "/ca.key", "-CAcreateserial", "-CAserial", state + "/ca.srl", "-days", "2",
        "-extfile", state + "/san.ext", "-out", state + "/server.crt")

def blob(digest):
    p = os.path.join(layout, "blobs", "sha256", digest.split(":", 1)[-1])
    if "/" in digest or not os.path.isfile(p):
        return None
    with open(p, "rb") as f:
        return f.read()

def manifest(ref):
    with open(os.path.join(layout, "index.json")) as f:
        idx = json.load(f)
    for d in idx["manifests"]:
        if d["digest"] == ref or d.get("annotations", {}).get("org.opencontainers.image.ref.name") == ref:
            return blob(d["digest"]), d["mediaType"]
    return None, None

ports = {}
secure = {}

def url(server, path):
    host = "127.0.0.2" if server[0] in "TB" else "127.0.0.1"
    return "%s://%s:%d%s" % ("https" if secure[server] else "http", host, ports[server], path)

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass

    def reply(self, code, body=b"", ctype="application/json", extra=()):
        self.send_response(code)
        for k, v in extra:
            self.send_header(k, v)
        if body:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        name = self.server.name
        with lock, open(os.path.join(state, "log"), "a") as lf:
            lf.write("%s %s %s\n" % (name, self.path, self.headers.get("Authorization", "-")))
        if name[0] in "TS" and self.path.startswith("/token"):
            return self.reply(200, json.dumps({"token": TOKEN}).encode())
        if name[0] in "BS" and self.path.startswith("/blob/"):
            data = blob(self.path[6:])
            return self.reply(200, data, "application/octet-stream") if data else self.reply(404)
        if name != "R":
            return self.reply(404)
        auth = self.headers.get("Authorization", "")
        if challenge == "bearer" and auth != "Bearer " + TOKEN:
            realm = url(("T" if realm_where == "other" else "S") + ("s" if realm_scheme == "https" else ""), "/token")
            return self.reply(401, b"{}", extra=[("WWW-Authenticate", 'Bearer realm="%s",service="fake"' % realm)])
        if challenge == "basic" and not auth.startswith("Basic "):
            return self.reply(401, b"{}", extra=[("WWW-Authenticate", 'Basic realm="fake"')])
        parts = self.path.split("/")
        if self.path == "/v2/":
            return self.reply(200, b"{}")
        if len(parts) >= 5 and parts[-2] == "manifests":
            body, mt = manifest(parts[-1])
            return self.reply(200, body, mt) if body else self.reply(404)
        if len(parts) >= 5 and parts[-2] == "blobs":
            if redirect != "none":
                target = "B" if redirect == "other" else ("Ss" if tls else "S")
                return self.reply(307, extra=[("Location", url(target, "/blob/" + parts[-1]))])
            data = blob(parts[-1])
            return self.reply(200, data, "application/octet-stream") if data else self.reply(404)
        return self.reply(404)

class Srv(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

make_certs()
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(state + "/server.crt", state + "/server.key")
servers = []
for name, host, sec in (("R", "127.0.0.1", tls), ("B", "127.0.0.2", tls), ("T", "127.0.0.2", False),
                        ("Ts", "127.0.0.2", True), ("S", "127.0.0.1", False), ("Ss", "127.0.0.1", True)):
    srv = Srv((host, 0), H)
    srv.name = name
    if sec:
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    ports[name], secure[name] = srv.server_address[1], sec
    servers.append(srv)
for srv in servers:
    threading.Thread(target=srv.serve_forever, daemon=True).start()
with open(os.path.join(state, "ports.tmp"), "w") as f:
    f.write(" ".join("%s=%d" % kv for kv in ports.items()) + "\n")
os.rename(os.path.join(state, "ports.tmp"), os.path.join(state, "ports"))
threading.Event().wait()
