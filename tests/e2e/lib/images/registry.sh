#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# registry.sh — Debian's docker-registry on 127.0.0.1 for the image tests.
#   registry.sh start DIR [tls|urls]  start one (plain HTTP, or TLS from a fresh test CA + htpasswd
#                                 basic auth user "aisb" / password in DIR/password; urls: plain HTTP
#                                 taking manifests whose layers list http(s) "urls", which the
#                                 registry refuses by default); prints the port
#   registry.sh stop DIR          stop it
# DIR/log holds the access log (one line per request); DIR/ca/ca.crt is the test CA.
set -eu
cmd=$1
dir=$2
case "$cmd" in
start)
	mode=${3:-plain}
	mkdir -p "$dir/data"
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	{
		echo "version: 0.1"
		echo "log: {level: info, accesslog: {disabled: false}}"
		echo "storage: {filesystem: {rootdirectory: $dir/data}, delete: {enabled: true}}"
		echo "http:"
		echo "  addr: 127.0.0.1:$port"
		if [ "$mode" = urls ]; then
			echo "validation: {manifests: {urls: {allow: ['^https?://']}}}"
		fi
	} >"$dir/config.yml"
	if [ "$mode" = tls ]; then
		mkdir -p "$dir/ca"
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=aisb test CA" \
			-keyout "$dir/ca.key" -out "$dir/ca/ca.crt" 2>/dev/null
		openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$dir/server.key" \
			-out "$dir/server.csr" 2>/dev/null
		printf 'subjectAltName=IP:127.0.0.1\n' >"$dir/san.ext"
		openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca/ca.crt" -CAkey "$dir/ca.key" \
			-CAcreateserial -CAserial "$dir/ca.srl" -days 2 -extfile "$dir/san.ext" -out "$dir/server.crt" 2>/dev/null
		python3 -c 'import secrets; print(secrets.token_hex(8))' >"$dir/password"
		htpasswd -Bbn aisb "$(cat "$dir/password")" >"$dir/htpasswd"
		{
			echo "  tls: {certificate: $dir/server.crt, key: $dir/server.key}"
			echo "auth: {htpasswd: {realm: aisb-test, path: $dir/htpasswd}}"
		} >>"$dir/config.yml"
	fi
	# no inherited fds: a test runner waiting on its pipes must not wait for the registry
	docker-registry serve "$dir/config.yml" </dev/null >"$dir/log" 2>&1 3>&- 4>&- 5>&- &
	echo $! >"$dir/pid"
	i=0
	until curl -s -o /dev/null ${mode:+--cacert "$dir/ca/ca.crt"} "$( [ "$mode" = tls ] && echo https || echo http)://127.0.0.1:$port/v2/" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 100 ] || { echo "registry did not start" >&2; cat "$dir/log" >&2; exit 1; }
		sleep 0.1
	done
	echo "$port" >"$dir/port"
	echo "$port"
	;;
stop)
	if [ -f "$dir/pid" ]; then
		kill "$(cat "$dir/pid")" 2>/dev/null || true
	fi
	rm -f "$dir/pid"
	;;
*)
	echo "usage: registry.sh start|stop DIR [tls]" >&2
	exit 2
	;;
esac
