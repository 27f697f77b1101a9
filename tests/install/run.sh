#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/install/run.sh — issue 14's tests against a configured build dir: `make install` into a
# DESTDIR (file list; the installed binary runs a sandbox, as the caller and, when that is root,
# as an unprivileged user too), the man pages' flag coverage, and the bash completion driven
# through COMP_WORDS/COMP_CWORD. TAP output; run by `make check` (AISB_BUILDDIR, AISB_SRCDIR).
set -u
here=$(cd "$(dirname "$0")" && pwd)
export AISB_BUILDDIR=${AISB_BUILDDIR:-$PWD}
export AISB_SRCDIR=${AISB_SRCDIR:-$(cd "$here/../.." && pwd)}
command -v bats >/dev/null || { echo "tests/install/run.sh: bats is not installed (apt-get install bats)" >&2; exit 1; }
[ -x "$AISB_BUILDDIR/aisb" ] || { echo "tests/install/run.sh: no aisb in '$AISB_BUILDDIR'" >&2; exit 1; }
exec bats --tap ${AISB_INSTALL_FILTER:+--filter "$AISB_INSTALL_FILTER"} "$here"/*.bats
