#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/e2e/smoke.bats — the binary runs a command in a sandbox at all.
load lib/common

setup() { common_setup; }
teardown() { common_teardown; }

@test "smoke: a command runs and its output and exit code come back" {
	run "$AISB" -- sh -c 'echo hello; exit 7'
	[ "$status" -eq 7 ]
	[ "$output" = "hello" ]
}
