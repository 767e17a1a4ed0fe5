#!/usr/bin/env bash
# Quick start, second command: install what is missing, build, run the whole
# test suite (make check).  With --ci it also runs a slice of NumPy's
# tests under `alloy run`, repeats the suite in a build with every optional
# part left out and in an ASan+UBSan build, then runs scripts/reliability.sh
# (threaded suites under TSan, a subset under valgrind, a short fuzzing run)
# and scripts/check-format.sh (every C source as .clang-format says).
set -euo pipefail
cd "$(dirname "$0")/.."
ci=no
[ "${1:-}" = "--ci" ] && ci=yes
if [ "$ci" = yes ]; then bash scripts/deps.sh --ci; else bash scripts/deps.sh; fi
autoreconf -fi >/dev/null 2>&1 || autoreconf -fi

run_suite() { # builddir configure-args...
	local dir=$1
	shift
	mkdir -p "$dir"
	(
		cd "$dir"
		../configure -q "$@"
		make -j"$(nproc)" >/dev/null
		if ! make -j"$(nproc)" check; then
			cat tests/*/*.log 2>/dev/null | tail -200
			exit 1
		fi
		# Show the check framework's summary line of each run.
		grep -h -E '^[0-9]+%: Checks' tests/unit/*.log || true
	)
}

run_suite build
if [ "$ci" = yes ]; then
	# A slice of NumPy's tests under alloy run on each backend.
	echo "=== NumPy's tests under alloy run (scripts/client-suites.sh --ci)"
	bash scripts/client-suites.sh --ci
	# Each optional part off: the tests of what is missing skip, saying
	# why, and the rest still pass.
	echo "=== again with every optional part left out (build-minimal)"
	run_suite build-minimal --without-libunwind --without-python \
		--without-jemalloc --without-mimalloc --without-libtorch \
		--without-cuda --without-pprof --without-zstd
	echo "=== again under ASan+UBSan"
	run_suite build-asan --enable-sanitizers
	# TSan on the threaded suites, valgrind, bounded fuzzing.
	bash scripts/reliability.sh
	# Every C source, not only the changed ones: the whole tree is
	# formatted, so any file that differs is one to fix.
	echo "=== formatting (scripts/check-format.sh)"
	bash scripts/check-format.sh
	# The verdict of the test command itself comes last.
	echo "=== the suite (scripts/test.sh):"
	grep -h -E '^[0-9]+%: Checks' build/tests/unit/runner.log
fi
