#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/tlsgate.sh — the tlsgate's cost (docs/key-via-gate-tls.md, open question 6): time to first
# byte and throughput of one TLS connection through the tlsgate against the same through a plain
# relay, on this machine (bench/tlsgate.c says what runs).
#
#   bench/tlsgate.sh [BUILDDIR [CONNECTIONS [MIB]]]    (default: ./build, 200, 256)
#
# Needs a built tree (libaisb.a) and libssl-dev. Set TLSGATE_BENCH_PIN=1 to pin it to CPU 0
# (taskset), as bench/gate.sh does on a loaded machine.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck disable=SC2046
cc -O2 -pthread -include "$build/config.h" -I"$here/../src" -o "$work/tlsgate-bench" "$here/tlsgate.c" \
	"$build/libaisb.a" "$build/libaisb-filters.a" $(pkg-config --libs libssl libcrypto json-c) -ldl
pin=()
[ "${TLSGATE_BENCH_PIN:-0}" = 1 ] && pin=(taskset -c 0)
echo "bench: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(openssl version 2>/dev/null || echo libssl)"
"${pin[@]}" "$work/tlsgate-bench" "${2:-200}" "${3:-256}"
