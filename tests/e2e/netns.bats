#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/netns.bats — what needs a real IP path (pasta): IPv6 entries, catch-all entries against
# loopback/link-local/metadata, --net full's DNS and IPv6. Each test runs aisb inside a test network
# of its own (lib/testnet.sh: unshare -Urnm, a veth pair to a peer namespace with TEST-NET and
# 2001:db8:: addresses), so pasta's "host" is that network: no packet reaches the real one.
load lib/common

setup() {
	common_setup
	require_feature "python3" command -v python3
	require_feature "curl" command -v curl
	require_feature "pasta" command -v pasta
	require_feature "unshare -Urnm" unshare -Urnm true
	require_feature "ip" command -v ip
	chmod 755 "$WORK"
	TESTNET="$BATS_TEST_DIRNAME/lib/testnet.sh"
	export AISB
}

teardown() { common_teardown; }

# in_testnet: the script on stdin runs in the test network; its output in $output
in_testnet() {
	cat >"$WORK/net.sh"
	run unshare -Urnm --fork "$TESTNET" "$WORK/net.sh"
	echo "$output"
}

# Before: the output chain dropped neighbour discovery, so an allowed [v6]:port never connected
# (the peer's neighbour entry stayed FAILED) while its IPv4 twin did.
@test "netns: an allowed [v6]:port connects like its IPv4 twin; other ports and addresses stay refused" {
	in_testnet <<'EOS'
peer python3 -m http.server 8080 --bind :: >/dev/null 2>&1 3>&- &
srv=$!
peer_wait "http://[2001:db8:1::1]:8080/" || echo "no server"
C="curl --noproxy * -sS -m 5 -o /dev/null -w %{http_code}"
"$AISB" --allow '[2001:db8:1::1]:8080' --allow 192.0.2.1:8080 -- sh -c "
	echo v6=\$($C http://[2001:db8:1::1]:8080/)
	echo v4=\$($C http://192.0.2.1:8080/)
	echo v6port=\$($C http://[2001:db8:1::1]:8081/)"
"$AISB" --allow '[2001:db8:1::1]:8081' --allow 192.0.2.1:8081 -- sh -c "
	echo v6off=\$($C http://[2001:db8:1::1]:8080/)
	echo v4off=\$($C http://192.0.2.1:8080/)"
kill $srv
EOS
	[[ "$output" == *"v6=200"* ]]
	[[ "$output" == *"v4=200"* ]]
	[[ "$output" == *"v6port=000"* ]]
	[[ "$output" == *"v6off=000"* ]]
	[[ "$output" == *"v4off=000"* ]]
}

# A catch-all entry covers the host's loopback and the metadata address without naming them.
@test "netns: a catch-all IP entry reaches neither the host's 127.0.0.1 nor the metadata address; entries naming them do" {
	in_testnet <<'EOS'
echo host-loopback >index.html
python3 -m http.server 18080 --bind 127.0.0.1 >/dev/null 2>&1 3>&- &
lo=$!
# the metadata address, inside the peer namespace only
peer ip addr add 169.254.169.254/32 dev lo
mkdir -p md && echo metadata >md/index.html
peer python3 -m http.server 80 --bind 169.254.169.254 --directory md >/dev/null 2>&1 3>&- &
md=$!
peer python3 -m http.server 8080 --bind 192.0.2.1 --directory md >/dev/null 2>&1 3>&- &
tn=$!
wait_http http://127.0.0.1:18080/ || echo "no loopback server"
peer_wait http://169.254.169.254/ || echo "no metadata server"
peer_wait http://192.0.2.1:8080/ || echo "no test-net server"
C="curl -sS -m 5 -o /dev/null -w %{http_code}"
for all in "--allow 0.0.0.0/0" "--allow 0.0.0.0/1 --allow 128.0.0.0/1" "--allow 0.0.0.0/0:18080 --allow 0.0.0.0/0:8080"; do
	"$AISB" $all -- sh -c "
		echo gate-loopback=\$($C --noproxy '' -x http://127.0.0.1:3128 http://127.0.0.1:18080/)
		echo gate-metadata=\$($C --noproxy '' -x http://127.0.0.1:3128 http://169.254.169.254/)
		echo direct-metadata=\$($C --noproxy '*' http://169.254.169.254/)
		echo direct-testnet=\$($C --noproxy '*' http://192.0.2.1:8080/)"
done
# the controls: entries that name them
"$AISB" --allow 0.0.0.0/0 --allow 127.0.0.1:18080 --allow 169.254.169.254 --allow 192.0.2.0/24:8080 -- sh -c "
	echo named-loopback=\$($C --noproxy '' -x http://127.0.0.1:3128 http://127.0.0.1:18080/)
	echo named-metadata=\$($C --noproxy '*' http://169.254.169.254/)
	echo named-testnet=\$($C --noproxy '*' http://192.0.2.1:8080/)"
"$AISB" --allow-host-port 18080 -- sh -c "echo host-port=\$($C http://host.aisb.internal:18080/)"
kill $lo $md $tn
EOS
	[[ "$output" != *"no "*"server"* ]]
	[ "$(grep -c '^gate-loopback=403$' <<<"$output")" -eq 3 ]
	[ "$(grep -c '^gate-metadata=403$' <<<"$output")" -eq 3 ]
	[ "$(grep -c '^direct-metadata=000$' <<<"$output")" -eq 3 ]
	[ "$(grep -c '^direct-testnet=000$' <<<"$output")" -eq 3 ]
	[[ "$output" == *"named-loopback=200"* ]]
	[[ "$output" == *"named-metadata=200"* ]]
	[[ "$output" == *"named-testnet=200"* ]]
	[[ "$output" == *"host-port=200"* ]]
}

@test "netns: ::/0 does not open the peer's documentation range or ::1; an entry naming it does" {
	in_testnet <<'EOS'
peer python3 -m http.server 8080 --bind :: >/dev/null 2>&1 3>&- &
srv=$!
peer_wait "http://[2001:db8:1::1]:8080/" || echo "no server"
C="curl --noproxy * -sS -m 5 -o /dev/null -w %{http_code}"
"$AISB" --allow '[::/0]:8080' -- sh -c "echo catch-all=\$($C http://[2001:db8:1::1]:8080/)
	echo gate-v6-loopback=\$(curl -sS -m 5 -o /dev/null -w %{http_code} --noproxy '' -x http://127.0.0.1:3128 http://[::1]:8080/)"
"$AISB" --allow '[::/0]:8080' --allow '[2001:db8::/32]:8080' -- sh -c "echo named=\$($C http://[2001:db8:1::1]:8080/)"
kill $srv
EOS
	[[ "$output" == *"catch-all=000"* ]]
	[[ "$output" == *"gate-v6-loopback=403"* ]]
	[[ "$output" == *"named=200"* ]]
}

# Before: /etc/resolv.conf named 127.0.0.53 where nothing answers, and pasta ran --ipv4-only.
@test "netns: --net full resolves names with the host's resolver (through pasta) and has IPv6" {
	export TESTNET_RESOLV="nameserver 192.0.2.1"
	in_testnet <<EOS
peer python3 "$BATS_TEST_DIRNAME/lib/dns-server.py" 192.0.2.1 53 svc.test 192.0.2.1 2001:db8:1::1 "$WORK/dns.log" 3>&- &
dns=\$!
peer python3 -m http.server 8080 --bind :: >/dev/null 2>&1 3>&- &
srv=\$!
peer_wait "http://[2001:db8:1::1]:8080/" || echo "no server"
"\$AISB" --net full -- sh -c '
	grep nameserver /etc/resolv.conf
	getent ahosts svc.test | sort -u | sed "s/^/resolved /"
	getent hosts nothere.test || echo nothere=NXDOMAIN
	echo v6=\$(curl -6 -sS -m 5 -o /dev/null -w %{http_code} http://svc.test:8080/)
	echo v4=\$(curl -4 -sS -m 5 -o /dev/null -w %{http_code} http://svc.test:8080/)'
kill \$dns \$srv
EOS
	[[ "$output" == *"nameserver 169.254.0.53"* ]]
	[[ "$output" == *"resolved 192.0.2.1 "* ]]
	[[ "$output" == *"resolved 2001:db8:1::1 "* ]]
	[[ "$output" == *"nothere=NXDOMAIN"* ]]
	[[ "$output" == *"v6=200"* ]]
	[[ "$output" == *"v4=200"* ]]
	# the answers came from the host's resolver (the peer's server), which saw the questions
	grep -q '^A svc.test$' "$WORK/dns.log"
	grep -q '^AAAA nothere.test$' "$WORK/dns.log"
}

# The SNI check is for names on port 443 (docs/networking.md): the server has to own 443, which
# the test's own network namespace allows for every caller (its loopback, never the host's).
@test "netns: a TLS ClientHello whose SNI is not the allowed name is refused before the gate dials, over CONNECT and transparently" {
	cp "$BATS_TEST_DIRNAME/lib/tls-hello.py" "$PROJ/"
	export ACC="$BATS_TEST_DIRNAME/lib/accept-counter.py" W="$WORK"
	in_testnet <<'EOS'
: >"$W/accepts"
python3 "$ACC" 443 "$W/acc.port" "$W/accepts" >/dev/null 2>&1 3>&- &
for _ in $(seq 100); do [ -s "$W/acc.port" ] && break; sleep 0.05; done
sb() { "$AISB" --add-host svc.test=127.0.0.1 --allow svc.test "$@"; }
# the attack: an allowed CONNECT (or an allowed pool address) carrying a TLS handshake for another
# name (domain fronting); the gate must read the SNI first and never connect to the server
sb --keep -- sh -c 'python3 tls-hello.py connect svc.test 443 other.test; python3 tls-hello.py direct svc.test 443 other.test' 2>&1
echo "fronted accepts=$(wc -l <"$W/accepts")"
cat "$XDG_STATE_HOME"/aisb/sessions/*/egress.jsonl
# control: the same handshakes with the allowed name reach the server, once each
sb -- sh -c 'python3 tls-hello.py connect svc.test 443 svc.test; python3 tls-hello.py direct svc.test 443 svc.test' 2>&1
echo "matching accepts=$(wc -l <"$W/accepts")"
EOS
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "connect: HTTP/1.1 200"* ]]
	[[ "$output" == *"aisb: network: denied 2 request(s): svc.test:443 (2x)"* ]]
	[[ "$output" == *"fronted accepts=0"* ]]
	[[ "$output" == *'"kind":"connect"'*"TLS server name 'other.test' differs from the checked host svc.test"* ]]
	[[ "$output" == *'"kind":"transparent"'*"TLS server name 'other.test' differs from the checked host svc.test"* ]]
	[[ "$output" == *"matching accepts=2"* ]]
	[[ "$output" != *"handshake done"* ]]
}
