#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/lib/test-ca.sh DIR LEAF NAME... — a throwaway CA for the TLS mocks (lib/mock-model.py
# --tls-cert): DIR/ca.pem and DIR/ca.key (EC P-256, CA:true, made once per DIR), and DIR/LEAF.pem
# with DIR/LEAF.key, a server certificate for the DNS names NAME... signed by it (valid 2 days).
# A test trusts DIR/ca.pem where it wants the mock trusted (SSL_CERT_FILE of aisb's caller, a
# harness's CA option) and nowhere else; a second LEAF for another name makes a mismatch.
set -eu
[ $# -ge 3 ] || { echo "usage: test-ca.sh DIR LEAF NAME..." >&2; exit 2; }
d=$1 leaf=$2
shift 2
umask 077
mkdir -p "$d"
if [ ! -s "$d/ca.pem" ]; then
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$d/ca.key" \
		-out "$d/ca.pem" -days 2 -subj "/CN=aisb e2e test CA" \
		-addext basicConstraints=critical,CA:true -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
fi
san=""
for n in "$@"; do san="${san:+$san,}DNS:$n"; done
printf 'subjectAltName=%s\nbasicConstraints=critical,CA:false\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n' \
	"$san" >"$d/$leaf.ext"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$d/$leaf.key" -out "$d/$leaf.csr" \
	-subj "/CN=$1" 2>/dev/null
openssl x509 -req -in "$d/$leaf.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial -days 2 \
	-extfile "$d/$leaf.ext" -out "$d/$leaf.pem" 2>/dev/null
rm -f "$d/$leaf.csr" "$d/$leaf.ext"
chmod 644 "$d/ca.pem" "$d/$leaf.pem"
