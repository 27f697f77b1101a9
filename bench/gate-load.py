#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/gate-load.py — server and clients for bench/gate.sh (127.0.0.1 only).
#   serve PORT            : every connection gets "hi\n", then BYTES (env, default 1 GiB) of zeros
#                           if it sends "bulk\n", else is held open until the client closes
#   bulk MODE HOST PORT   : MODE direct|connect|transparent|squid|srt; read BYTES, print seconds, MiB/s and
#                           the client's own CPU seconds; SINK=splice reads with splice(2) into
#                           /dev/null (no copy to userspace) instead of recv_into
#                           (MODE floor is direct to a relay-floor port, for the label only)
#   ttfb MODE HOST PORT N : N sequential connections; median/p90 ms from connect to first byte (a
#                           name is resolved before the clock starts; that lookup is printed apart)
#   many MODE HOST PORT N : N concurrent connections held open at once; print how many got "hi"
#   serve-http PORT       : an HTTP/1.1 server: GET /bulk is answered with BYTES zeros
#                           (Content-Length), any other request with "ok"; one request per
#                           connection (the injecting path's columns, --key-via-gate)
#   serve-http PORT CERT KEY: the same over TLS (PEM files; ALPN http/1.1 only)
#   hbulk LABEL MODE HOST PORT, httfb LABEL MODE HOST PORT N: bulk and ttfb as HTTP requests
#                           (GET /bulk, GET /), printed as LABEL, the key in $AI_API_TOKEN sent
#                           as "Authorization: Bearer" (a --key-via-gate placeholder or a key);
#                           the first byte is the answer's. MODE direct-tls or connect-tls: the
#                           same over TLS, verified for $BENCH_SNI (else HOST) against the CA file
#                           $BENCH_CA, else the default store ($SSL_CERT_FILE: inside a keyed
#                           sandbox, the session's bundle); hbulk's clock starts after the
#                           handshake, httfb's includes it; TCP_NODELAY unless BENCH_NODELAY=0
# MODE connect tunnels through aisb's gate (127.0.0.1:3128 in the sandbox); squid through the
# proxy in $BENCH_PROXY (HOST:PORT, a squid on the host); srt through the proxy srt puts in
# $HTTPS_PROXY/$https_proxy inside its sandbox. All three send the same CONNECT request.
import asyncio, base64, fcntl, os, resource, socket, ssl, statistics, sys, time, urllib.parse

BYTES = int(os.environ.get("BYTES", str(1 << 30)))
PROXY = ("127.0.0.1", 3128)


def proxy_for(mode):
    """(host, port, extra header lines) of the proxy MODE tunnels through."""
    if mode == "connect":
        return PROXY + (b"",)
    if mode == "squid":
        v = os.environ["BENCH_PROXY"]
    else:  # srt: "http://USER:TOKEN@localhost:PORT" (a per-run credential of srt's proxy)
        v = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy") or os.environ["HTTP_PROXY"]
        v = v.split("://", 1)[-1].rstrip("/")
    auth = b""
    if "@" in v:
        cred, v = v.rsplit("@", 1)
        cred = urllib.parse.unquote(cred).encode()
        auth = b"Proxy-Authorization: Basic " + base64.b64encode(cred) + b"\r\n"
    host, _, port = v.rpartition(":")
    return (host.strip("[]"), int(port), auth)


def dial(mode, host, port):
    if mode in ("connect", "squid", "srt"):
        phost, pport, auth = proxy_for(mode)
        s = socket.create_connection((phost, pport))
        s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n%s\r\n" % (host.encode(), port, host.encode(), port, auth))
        # Peek, then take exactly the answer head: the tunnel's first bytes may follow it in the
        # same segment. One recv(1) per byte (this client before) cost ~80 us per CONNECT in
        # Python at load 5, more than a relay's own share of the time to first byte.
        head = b""
        while True:
            p = s.recv(65536, socket.MSG_PEEK)
            if not p:
                raise RuntimeError("proxy closed")
            i = (head + p).find(b"\r\n\r\n")
            if i >= 0:
                head += s.recv(i + 4 - len(head))
                break
            head += s.recv(len(p))
        if b" 200 " not in head.split(b"\r\n")[0]:
            raise RuntimeError(head.decode(errors="replace"))
        return s
    return socket.create_connection((host, port))


async def send_bulk(w):
    """BYTES zero bytes to @w, in 1 MiB writes, each drained."""
    chunk = bytes(1 << 20)
    left = BYTES
    while left > 0:
        n = min(left, len(chunk))
        w.write(chunk[:n])
        await w.drain()
        left -= n


async def serve(port):

    async def handle(r, w):
        w.write(b"hi\n")
        try:
            line = await r.readline()
            if line == b"bulk\n":
                await send_bulk(w)
                w.close()
            else:
                await r.read()
        except Exception:
            pass
        w.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", port, backlog=4096)
    async with srv:
        await srv.serve_forever()


async def serve_http(port, cert=None, key=None):
    ctx = None
    if cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        ctx.set_alpn_protocols(["http/1.1"])

    async def handle(r, w):
        try:
            head = await r.readuntil(b"\r\n\r\n")
            if head.startswith(b"GET /bulk "):
                w.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % BYTES)
                await send_bulk(w)
            else:
                w.write(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
                await w.drain()
        except Exception:
            pass
        w.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", port, backlog=4096, ssl=ctx)
    async with srv:
        await srv.serve_forever()


def hdial(mode, host, port):
    """dial() for the HTTP clients: MODE with a -tls suffix adds TLS over the connection."""
    if not mode.endswith("-tls"):
        return dial(mode, host, port)
    s = dial(mode[:-4], host, port)
    # TCP_NODELAY as curl, node's http and reqwest set it (BENCH_NODELAY=0: not): TLS writes its
    # Finished and the request apart, and Nagle holds the request until the Finished is acked
    if os.environ.get("BENCH_NODELAY", "1") != "0":
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    ctx = ssl.create_default_context(cafile=os.environ.get("BENCH_CA") or None)
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx.wrap_socket(s, server_hostname=os.environ.get("BENCH_SNI") or host)


def recv_all(s, buf):
    """Bytes read from @s into @buf until EOF (a TLS peer's close without close_notify too)."""
    got = 0
    while True:
        try:
            n = s.recv_into(buf)
        except (ssl.SSLEOFError, ssl.SSLZeroReturnError):
            break
        if not n:
            break
        got += n
    return got


def http_request(path, host, port):
    return b"GET %s HTTP/1.1\r\nHost: %s:%d\r\nAuthorization: Bearer %s\r\n\r\n" % (
        path, host.encode(), port, os.environ.get("AI_API_TOKEN", "none").encode())


def hbulk(label, mode, host, port):
    s = hdial(mode, host, port)
    t = time.time()
    s.sendall(http_request(b"/bulk", host, port))
    got = recv_all(s, bytearray(1 << 20))
    dt = time.time() - t
    ru = resource.getrusage(resource.RUSAGE_SELF)
    print("%s %.3f s %.0f MiB/s (%d bytes) client_cpu %.3f s" % (label, dt, got / dt / (1 << 20), got,
                                                                   ru.ru_utime + ru.ru_stime))


def httfb(label, mode, host, port, n):
    xs = []
    for _ in range(n):
        t = time.perf_counter()
        s = hdial(mode, host, port)
        s.sendall(http_request(b"/", host, port))
        s.recv(1)
        xs.append((time.perf_counter() - t) * 1000)
        s.close()
    xs.sort()
    print("%s ttfb median %.3f ms p90 %.3f ms (n=%d)" % (label, statistics.median(xs), xs[int(len(xs) * 0.9)], n))


def bulk(mode, host, port):
    s = dial("direct" if mode == "floor" else mode, host, port)
    t = time.time()
    s.sendall(b"bulk\n")
    got = 0
    if os.environ.get("SINK") == "splice":
        pr, pw = os.pipe()
        fcntl.fcntl(pw, 1031, 1 << 20)  # F_SETPIPE_SZ
        null = os.open("/dev/null", os.O_WRONLY)
        while True:
            n = os.splice(s.fileno(), pw, 1 << 20)
            if not n:
                break
            got += n
            while n:
                n -= os.splice(pr, null, n)
    else:
        buf = bytearray(1 << 20)
        while True:
            n = s.recv_into(buf)
            if not n:
                break
            got += n
    dt = time.time() - t
    got -= 3
    ru = resource.getrusage(resource.RUSAGE_SELF)
    print("%s %.3f s %.0f MiB/s (%d bytes) client_cpu %.3f s" % (mode, dt, got / dt / (1 << 20), got,
                                                                   ru.ru_utime + ru.ru_stime))


def ttfb(mode, host, port, n):
    """From connect() to the first byte. A name (transparent mode's svc.test) is resolved before
    the clock starts, as the direct column's 127.0.0.1 needs no lookup; the lookup itself (the
    gate's DNS stub, through glibc) is timed apart and printed as resolve_ms."""
    xs, rs = [], []
    for _ in range(n):
        dest = host
        if mode != "connect" and not host[0].isdigit():
            t = time.perf_counter()
            dest = socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
            rs.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        s = dial(mode, dest, port)
        s.recv(3)
        xs.append((time.perf_counter() - t) * 1000)
        s.close()
    xs.sort()
    extra = " resolve_ms %.3f" % statistics.median(rs) if rs else ""
    print("%s ttfb median %.3f ms p90 %.3f ms (n=%d)%s" % (mode, statistics.median(xs), xs[int(len(xs) * 0.9)], n, extra))


def many(mode, host, port, n):
    socks, ok = [], 0
    t = time.time()
    for _ in range(n):
        try:
            socks.append(dial(mode, host, port))
        except Exception as e:
            print("dial failed:", e, file=sys.stderr)
            break
    for s in socks:
        s.settimeout(10)
        try:
            if s.recv(3) == b"hi\n":
                ok += 1
        except Exception:
            pass
    print("%s %d of %d concurrent connections open and answered in %.2f s" % (mode, ok, n, time.time() - t))
    time.sleep(float(os.environ.get("HOLD", "0")))
    for s in socks:
        s.close()


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "serve":
        asyncio.run(serve(int(sys.argv[2])))
    elif cmd == "bulk":
        bulk(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif cmd == "ttfb":
        ttfb(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif cmd == "serve-http":
        asyncio.run(serve_http(int(sys.argv[2]), *sys.argv[3:5]))
    elif cmd == "hbulk":
        hbulk(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    elif cmd == "httfb":
        httfb(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]))
    elif cmd == "many":
        many(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
