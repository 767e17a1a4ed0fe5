#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/test_tensor_cli.sh - `alloy demo` runs its workload on the tensor
# layer and `alloy bench tensor` prints its figures.
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

"$ALLOY" demo >"$out" 2>&1 || { echo "FAIL: demo exited $?"; failed=1; }
expect "every iteration ran" '^  iter 5  batch 128 '
expect "int32 -> float reused the buffer" 'mask default \(int32->float in place\)'
expect "the flat view shares fc_out" 'fc_out shared by 2'
expect "history extended then shrunk to 4" 'iter 5 .* history 4/20 B'
expect "the workspace listed its blobs, sorted" '^workspace: 10 blobs: data fc_b fc_out fc_out_flat fc_w fc_w_snapshot history labels mask relu_out$'
expect "the reporter's summary, nothing left live" '^default +cpu:0 +0 +[0-9]+ +[0-9]+ +([0-9]+) +\1 +0$'

"$ALLOY" demo --swap debug >"$out" 2>&1 || { echo "FAIL: demo --swap exited $?"; failed=1; }
expect "the swap is announced" 'CPU default swapped to "debug"'
expect "growing tensors after the swap come from debug" '^  iter 3  batch  64  data debug +fc_out debug'
expect "debug freed all it made" '^debug +cpu:0 +0 +[0-9]+ +[0-9]+ +([0-9]+) +\1 +0$'
expect "default freed all it made" '^default +cpu:0 +0 +[0-9]+ +[0-9]+ +([0-9]+) +\1 +0$'

"$ALLOY" demo --swap nosuch >"$out" 2>&1
[ $? = 1 ] || { echo "FAIL: demo --swap nosuch should exit 1"; failed=1; }
expect "a bad swap names the allocator" 'nosuch'

"$ALLOY" bench --quick --json tensor >"$out" 2>&1 || { echo "FAIL: bench tensor exited $?"; failed=1; }
expect "bench: resize allocations after warm-up are zero" '"metric": "resize loop: allocations after warm-up, keep_on_shrink on", "value": 0,.*"met": true'
expect "bench: extend counts its buffers" '"metric": "extend by 1 to 50000 \(growth 50%\): buffers allocated", "value": [0-9]+'
expect "bench: copy_from is compared with memcpy" '"metric": "copy_from 16 MiB: speed vs memcpy"'

[ $failed = 0 ] && echo "tensor cli: all passed"
exit $failed
