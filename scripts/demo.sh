#!/usr/bin/env bash
# Quick start, first command: install what is missing, build, run the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
[ -x configure ] || autoreconf -fi
mkdir -p build
(
	cd build
	[ -f Makefile ] || ../configure
	make -j"$(nproc)"
)
# The files go to ./alloy-demo/, beside the user, not inside build/.
build/alloy demo
