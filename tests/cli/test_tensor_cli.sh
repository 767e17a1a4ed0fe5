#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_tensor_cli.sh - `alloy bench tensor` prints its figures (the
# demo's own test is tests/cli/test_demo.sh).
set -u
ALLOY=${ALLOY:-./alloy}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
failed=0

expect() { # description, then a grep -E pattern that $out must match
	if ! grep -Eq -- "$2" "$out"; then
		echo "FAIL: $1 (no line matching '$2')"
		sed 's/^/  | /' "$out" | head -40
		failed=1
	fi
}

"$ALLOY" bench --quick --json tensor >"$out" 2>&1 || { echo "FAIL: bench tensor exited $?"; failed=1; }
expect "bench: resize allocations after warm-up are zero" '"metric": "resize loop: allocations after warm-up, keep_on_shrink on", "value": 0,.*"met": true'
expect "bench: extend counts its buffers" '"metric": "extend by 1 to 50000 \(growth 50%\): buffers allocated", "value": [0-9]+'
expect "bench: copy_from is compared with memcpy" '"metric": "copy_from 16 MiB: speed vs memcpy"'

[ $failed = 0 ] && echo "tensor cli: all passed"
exit $failed
