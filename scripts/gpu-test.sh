#!/usr/bin/env bash
# Build alloy with the CUDA module and run everything CUDA on this machine:
# the real-GPU suite and its benchmark (tests/cuda_gpu --bench), the policy
# suites on the simulated device, and `alloy bench cuda`.  One command for a
# machine with an NVIDIA GPU (docs/CUDA.md):
#
#   scripts/gpu-test.sh [CUDA_DIR]        (default /usr/local/cuda)
#
# Needs a C compiler, autoconf, automake, libtool, pkg-config and check
# (scripts/deps.sh installs them on Debian).  Writes build-gpu/gpu-test.log.
# Exit status: 0 all passed, 77 no usable GPU (the real-GPU part skipped,
# never counted as passed), 1 a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
cuda=${1:-/usr/local/cuda}
log=build-gpu/gpu-test.log
mkdir -p build-gpu
: >"$log"
say() { echo "$@" | tee -a "$log"; }

[ -e configure ] || autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
(
	cd build-gpu
	../configure -q --with-cuda="$cuda" 2>&1 | grep -v "cannot remove 'core'" || true
	make -j"$(nproc)" >/dev/null
	make -j"$(nproc)" tests/runner tests/cuda_gpu >/dev/null
) || { say "gpu-test: build failed"; exit 1; }

say "== machine"
{ uname -srm; nproc; command -v nvidia-smi >/dev/null &&
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } \
	2>&1 | tee -a "$log" || true

say "== policy suites on the simulated device"
for s in cuda_caching cuda_host syncedmem; do
	CK_RUN_SUITE=$s build-gpu/tests/runner 2>&1 | grep -E '^[0-9]+%|:F:|:E:' | tee -a "$log"
done

say "== real GPU: tests/cuda_gpu --bench"
set +e
build-gpu/tests/cuda_gpu --bench 2>&1 | tee -a "$log"
gpu=${PIPESTATUS[0]}
set -e

say "== alloy bench cuda (simulated device)"
build-gpu/alloy bench cuda 2>&1 | tee -a "$log"

case $gpu in
0) say "gpu-test: passed" ;;
77) say "gpu-test: real-GPU part skipped (no CUDA device); not a pass"; exit 77 ;;
*) say "gpu-test: real-GPU suite FAILED (status $gpu)"; exit 1 ;;
esac
