#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/lint/userns.sh — one module makes user namespaces and writes id maps (issue 13).
#
#   userns.sh SRCDIR        exit 1 naming every use of CLONE_NEWUSER or an id map outside it
#   userns.sh --self-test   prove the check catches a planted unshare (and passes a clean tree)
#
# src/ns/userns.c is that module; src/ns/seccomp.c names the flag only to deny it. Comments are
# not code and are left out, and so is the flag in a message (a string literal); a map file is
# named in a string (a path), so there it counts. `make lint` runs both modes.
set -u

ALLOWED="src/ns/userns.c src/ns/seccomp.c"

check() {
	local root=$1 bad=0 f rel hits
	while IFS= read -r f; do
		rel=${f#"$root"/}
		case " $ALLOWED " in *" $rel "*) continue ;; esac
		# code only: drop /* ... */ on one line, comment continuation lines and // comments; the
		# flag outside string literals (messages name it), a map file inside them (a path)
		hits=$( (sed -e 's|/\*.*\*/||g' -e 's|^[[:space:]]*/\?\*.*||' -e 's|//.*||' -e 's|"[^"]*"|""|g' "$f" |
				grep -nE 'CLONE_NEWUSER'
			 sed -e 's|/\*.*\*/||g' -e 's|^[[:space:]]*/\?\*.*||' -e 's|//.*||' "$f" |
				grep -nE '"[^"]*(uid_map|gid_map)') | cut -d: -f1 | sort -un |
			while read -r n; do printf '%s:%s\n' "$n" "$(sed -n "${n}p" "$f")"; done) || true
		if [ -n "$hits" ]; then
			printf '%s\n' "$hits" | sed "s|^|userns: $rel:|; s|\$|  (use src/ns/userns.h)|" >&2
			bad=1
		fi
	done < <(find "$root/src" -name '*.[ch]' | sort)
	return $bad
}

self_test() {
	local t rc
	t=$(mktemp -d) || return 1
	# shellcheck disable=SC2064 # expand $t now
	trap "rm -rf '$t'" RETURN
	mkdir -p "$t/src/ns" "$t/src/build" "$t/src/cli"
	printf 'int f(void) { return unshare(CLONE_NEWUSER); }\n' >"$t/src/ns/userns.c"
	printf '/* CLONE_NEWUSER is denied */\nconst char *m = "allow CLONE_NEWUSER";\n' >"$t/src/build/ok.c"
	if ! check "$t" 2>/dev/null; then
		echo "userns: self-test: a clean tree was refused" >&2
		return 1
	fi
	printf 'int g(void)\n{\n\treturn unshare(CLONE_NEWUSER | CLONE_NEWNS);\n}\n' >"$t/src/build/planted.c"
	printf 'int h(int d)\n{\n\treturn write_file_at(d, "uid_map", "0 0 1", 5, 0);\n}\n' >"$t/src/cli/map.c"
	check "$t" 2>"$t/err"; rc=$?
	if [ $rc -eq 0 ] || ! grep -q 'src/build/planted.c:3:' "$t/err" || ! grep -q 'src/cli/map.c:3:' "$t/err"; then
		echo "userns: self-test: a planted unshare(CLONE_NEWUSER) or uid_map write was not caught" >&2
		return 1
	fi
	echo "userns: self-test ok (planted unshare caught, clean tree passed)"
}

case ${1:-} in
--self-test) self_test ;;
"") echo "usage: $0 SRCDIR | --self-test" >&2; exit 2 ;;
*) check "$1" && echo "userns: one module (src/ns/userns.c)" ;;
esac
