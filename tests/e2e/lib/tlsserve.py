# SPDX-License-Identifier: GPL-2.0-or-later
"""tlsserve.py — the HTTPS side the e2e mocks share (key-mock.py, mock-model.py).

server(addr, handler, cert, key, on_tls, hello=None): a ThreadingHTTPServer that does the TLS
handshake in the connection's thread (TLS 1.2 at least, ALPN http/1.1 only, as the tlsgate
asks), and sends close_notify before the close: an answer that ends with the connection (the SSE
streams, Connection: close) is complete only then for rustls and node clients. on_tls(facts,
conn, error) is called once per handshake: conn is None when it failed, with error its text;
facts is what hello(raw socket) read before the handshake ({} without hello).
"""
import ssl
from http.server import ThreadingHTTPServer


class _TLSServer(ThreadingHTTPServer):
    ctx = None
    on_tls = None
    hello = None

    def finish_request(self, request, client_address):
        facts = self.hello(request) if self.hello else {}
        request.settimeout(30)
        try:
            conn = self.ctx.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as e:
            self.on_tls(facts, None, str(e))
            return
        self.on_tls(facts, conn, None)
        conn.settimeout(None)
        try:
            super().finish_request(conn, client_address)
        finally:
            try:
                conn.settimeout(2)
                conn.unwrap()
            except (ssl.SSLError, OSError, ValueError):
                pass
            conn.close()


def server(addr, handler, cert, key, on_tls, hello=None):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(["http/1.1"])
    srv = _TLSServer(addr, handler)
    srv.ctx, srv.on_tls, srv.hello = ctx, on_tls, hello
    return srv
