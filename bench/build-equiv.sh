#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/build-equiv.sh OLD NEW — the same builds give the same images with two aisb binaries
# (issue 25: the build pipeline moved from src/cli to src/build). Each native build (COPY only,
# RUN, --timestamp, SOURCE_DATE_EPOCH, gzip/zstd/none and levels, a build arg, a cache hit)
# runs in a fresh store per binary; what is compared: the exit status, stdout (the built name,
# a content hash of the inputs), every pin's manifest digest, and stderr (the store's path
# masked). Then --dry-run and
# --print-containerfile output, and the status and stderr of refusals of build and push.
# Prints one line per case and "equiv: N same, M different"; exit 1 when any differs. KEEP=1
# keeps the outputs.
#   bench/build-equiv.sh /tmp/aisb-old build/aisb
set -u
old=$(realpath "$1") new=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
w=$(mktemp -d /tmp/aisb-equiv.XXXXXX)
if [ -n "${KEEP:-}" ]; then echo "equiv: keeping $w"; else trap 'rm -rf "$w"' EXIT; fi
same=0 diff=0

"$here/../tests/e2e/lib/images/mk-busybox-oci.sh" "$w/bb" latest >/dev/null || { echo "equiv: no busybox layout" >&2; exit 2; }
mkdir -p "$w/ctx/app"
printf 'hello\n' >"$w/ctx/app/a.txt"
printf 'two\n' >"$w/ctx/app/b.txt"
touch -d @1500000000 "$w/ctx/app/a.txt" "$w/ctx/app/b.txt"
cat >"$w/copy.cf" <<EOF
FROM oci:$w/bb:latest
ENV GREETING=hi
WORKDIR /srv
COPY app /srv/app
LABEL org.example=x
EOF
cat >"$w/run.cf" <<EOF
FROM oci:$w/bb:latest
ARG WHO=nobody
COPY app/a.txt /a.txt
RUN mkdir -p /out && echo "built by \$WHO" >/out/who && cat /a.txt >/out/copy
WORKDIR /out
RUN echo second >second
CMD ["cat", "/out/who"]
EOF

printf 'FROM oci:%s/bb:latest\nVOLUME /x\n' "$w" >"$w/bad.cf"

# run_in NAME TAG ENV... -- CMD ARGS...: CMD run by binary TAG (old, new) in its own fresh store and
# state dir for case NAME, in $w, with ENV; stdout and stderr to $out/stdout and $out/stderr
run_in() {
	local name=$1 tag=$2 bin envs=()
	shift 2
	while [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	[ "$tag" = old ] && bin=$old || bin=$new
	out=$w/$name.$tag
	mkdir -p "$out/cache" "$out/state"
	(cd "$w" && env XDG_CACHE_HOME="$out/cache" XDG_STATE_HOME="$out/state" "${envs[@]}" "$bin" "$@" \
		>>"$out/stdout" 2>>"$out/stderr"; echo "status $?" >>"$out/stdout")
}

# case_build NAME ENV... -- ARGS...: `aisb build ARGS` with each binary, each in its own fresh
# store, then the same again (a cache hit: the same name), then every pin and its digest
case_build() {
	local name=$1 tag out e=()
	shift
	while [ "$1" != "--" ]; do e+=("$1"); shift; done
	shift
	for tag in old new; do
		run_in "$name" "$tag" "${e[@]}" -- build "$@"
		run_in "$name" "$tag" "${e[@]}" -- build "$@"
		run_in "$name" "$tag" -- images -a --format '{{.Name}} {{.Digest}}'
		sed -i "s|$out|OUT|g" "$out/stderr"
	done
	compare "$name" stdout
	compare "$name" stderr
}

# compare NAME FILE: old vs new
compare() {
	if cmp -s "$w/$1.old/$2" "$w/$1.new/$2"; then
		same=$((same + 1))
		echo "same: $1 ($2): $(grep -v '^status\|^oci:' "$w/$1.new/$2" | grep -c .) line(s), e.g. $(grep -m1 'aisb-build' "$w/$1.new/$2" || head -1 "$w/$1.new/$2")"
	else
		diff=$((diff + 1))
		echo "DIFFERENT: $1 ($2):"
		diff "$w/$1.old/$2" "$w/$1.new/$2" | head -20
	fi
}

# case_out NAME ENV... -- CMD ARGS...: the status, stdout and stderr of one command
case_out() {
	local name=$1 tag out e=()
	shift
	while [ "$1" != "--" ]; do e+=("$1"); shift; done
	shift
	for tag in old new; do
		run_in "$name" "$tag" "${e[@]}" -- "$@"
		sed -i "s|$out|OUT|g" "$out/stdout" "$out/stderr"
	done
	compare "$name" stdout
	compare "$name" stderr
}

case_build copy-gzip -- -f "$w/copy.cf" -t equiv/copy "$w/ctx"
case_build run-gzip -- -f "$w/run.cf" "$w/ctx"
case_build run-buildarg -- -f "$w/run.cf" --build-arg WHO=equiv -t equiv/run "$w/ctx"
case_build run-timestamp -- -f "$w/run.cf" --timestamp 1700000000 "$w/ctx"
case_build run-sde SOURCE_DATE_EPOCH=1600000000 -- -f "$w/run.cf" "$w/ctx"
case_build run-zstd -- -f "$w/run.cf" --compression-format zstd "$w/ctx"
case_build run-zstd-19 -- -f "$w/run.cf" --compression-format zstd --compression-level 19 "$w/ctx"
case_build copy-gzip-1 -- -f "$w/copy.cf" --compression-level 1 "$w/ctx"
case_build copy-none -- -f "$w/copy.cf" --compression-format none --timestamp 5 "$w/ctx"
case_build podman-refused -- -f "$w/run.cf" --builder podman --timestamp 7 "$w/ctx"

case_out dry-run -- build --dry-run -f "$w/run.cf" --build-arg WHO=x --allow example.com -t t "$w/ctx"
case_out dry-run-podman -- build --dry-run --builder podman -f "$w/copy.cf" "$w/ctx"
case_out dry-run-default -- build --dry-run --default --install jq "$w/ctx"
case_out print-cf -- build --print-containerfile --default --install jq "$w/ctx"
case_out bad-recipe -- build -f "$w/bad.cf" "$w/ctx"
case_out bad-recipe-print -- build --print-containerfile -f "$w/bad.cf" "$w/ctx"
case_out bad-build-arg -- build -f "$w/run.cf" --build-arg NOPE=1 "$w/ctx"
case_out unknown-flag -- build --no-such-flag
case_out unknown-flag-value -- build --passwd=canary "$w/ctx"
case_out missing-context -- build "$w/nonexistent"
case_out context-is-file -- build "$w/copy.cf"
case_out two-contexts -- build "$w/ctx" "$w/ctx"
case_out bad-builder -- build --builder docker "$w/ctx"
case_out podman-timestamp -- build --builder podman --timestamp 1 -f "$w/copy.cf" "$w/ctx"
case_out podman-tls -- build --builder podman --tls-verify=false -f "$w/copy.cf" "$w/ctx"
case_out bad-tls -- build --tls-verify=maybe "$w/ctx"
case_out bad-sde SOURCE_DATE_EPOCH=yesterday -- build -f "$w/copy.cf" "$w/ctx"
case_out bad-level -- build --compression-format none --compression-level 3 "$w/ctx"
case_out bad-timestamp -- build --timestamp -1 "$w/ctx"
case_out f-and-default -- build -f "$w/copy.cf" --default "$w/ctx"
case_out install-with-f -- build -f "$w/copy.cf" --install jq "$w/ctx"
case_out bad-tag -- build -t '-x' -f "$w/copy.cf" "$w/ctx"
case_out bad-install -- build --default --install 'Bad!' --dry-run "$w/ctx"
case_out ip-allow -- build --allow 10.0.0.1 -f "$w/run.cf" "$w/ctx"
case_out copy-missing -- build --dry-run -f "$w/copy.cf" "$w/bb"
case_out build-help -- build --help
case_out push-no-args -- push
case_out push-bad-dest -- push equiv/copy localhost/x
case_out push-digest-dest -- push equiv/copy 127.0.0.1:1/x@sha256:0000000000000000000000000000000000000000000000000000000000000000
case_out push-no-image -- push equiv/nothing 127.0.0.1:1/x
case_out push-level-alone -- push --compression-level 3 a 127.0.0.1:1/x
case_out push-none -- push --compression-format none a 127.0.0.1:1/x
case_out push-bad-level -- push --compression-format gzip --compression-level 12 a 127.0.0.1:1/x
case_out push-help -- push --help
case_out save-no-image -- save equiv/nothing -o "$w/x.tar"

echo "equiv: $same same, $diff different"
[ "$diff" -eq 0 ]
