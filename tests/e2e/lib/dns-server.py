#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/lib/dns-server.py ADDR PORT NAME A_ADDR AAAA_ADDR LOG — a tiny authoritative DNS server
# for the network tests (UDP and TCP): NAME gets A_ADDR / AAAA_ADDR, anything else NXDOMAIN;
# every question is appended to LOG as "TYPE NAME". Test traffic only, never the real network.
import socket, struct, sys, threading

addr, port, name, a4, a6, log = sys.argv[1], int(sys.argv[2]), sys.argv[3].lower().rstrip("."), sys.argv[4], sys.argv[5], sys.argv[6]

def answer(q):
    tid, flags, qd = struct.unpack("!HHH", q[:6])
    i, labels = 12, []
    while q[i]:
        labels.append(q[i + 1:i + 1 + q[i]].decode("ascii", "replace"))
        i += 1 + q[i]
    qname, (qtype, qclass) = ".".join(labels).lower(), struct.unpack("!HH", q[i + 1:i + 5])
    question = q[12:i + 5]
    with open(log, "a") as f:
        f.write("%s %s\n" % ({1: "A", 28: "AAAA"}.get(qtype, str(qtype)), qname))
    rrs = b""
    if qname == name and qtype in (1, 28):
        fam, text = (socket.AF_INET, a4) if qtype == 1 else (socket.AF_INET6, a6)
        rdata = socket.inet_pton(fam, text)
        rrs = b"\xc0\x0c" + struct.pack("!HHIH", qtype, 1, 60, len(rdata)) + rdata
    rcode = 0 if qname == name else 3
    head = struct.pack("!HHHHHH", tid, 0x8180 | rcode, 1, 1 if rrs else 0, 0, 0)
    return head + question + rrs

fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
u = socket.socket(fam, socket.SOCK_DGRAM)
u.bind((addr, port))
t = socket.socket(fam, socket.SOCK_STREAM)
t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
t.bind((addr, port))
t.listen(16)

def tcp():
    while True:
        c, _ = t.accept()
        try:
            n = struct.unpack("!H", c.recv(2))[0]
            q = b""
            while len(q) < n:
                q += c.recv(n - len(q))
            r = answer(q)
            c.sendall(struct.pack("!H", len(r)) + r)
        except Exception:
            pass
        c.close()

threading.Thread(target=tcp, daemon=True).start()
while True:
    q, peer = u.recvfrom(4096)
    try:
        u.sendto(answer(q), peer)
    except Exception:
        pass
