#!/usr/bin/env bash
# The reliability stages of CI (docs/RELIABILITY.md), run by
# scripts/test.sh --ci after the normal and ASan+UBSan suites:
#
#   1. every suite that starts threads, under ThreadSanitizer (build-tsan/)
#   2. the single-threaded core of the suite under valgrind memcheck,
#      on the normal build that scripts/test.sh made (build/)
#   3. the whole check suite with the debug allocator as CPU default
#   4. each libFuzzer target for a fixed number of executions
#      (scripts/fuzz.sh, build-fuzz/)
#
# Usage: scripts/reliability.sh [tsan] [valgrind] [debug] [fuzz]
#        (default: all)
# Each stage prints its wall time; on 2 cores they take about five
# minutes together, well inside CI's 90.
set -euo pipefail
cd "$(dirname "$0")/.."
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(tsan valgrind debug fuzz)
jobs=$(nproc)

# Suites whose tests start threads: tests/unit/test_<suite>.c calls
# pthread_create.
threaded_suites() {
	local f s
	for f in tests/unit/test_*.c; do
		s=$(basename "$f" .c)
		s=${s#test_}
		grep -q pthread_create "$f" && grep -q "X($s)" tests/unit/suites.h &&
			echo "$s"
	done
}

# Suites for valgrind: no threads (their interleavings are TSan's job, and
# valgrind serialises them slowly; default_cache's few are short) and no
# multi-second time bounds.
VALGRIND_SUITES=(error conf default default_cache context fail debug sweep)

run_suites() { # label runner-command... ; suites in $suites
	local label=$1 failed=0 s
	shift
	for s in $suites; do
		if ! CK_RUN_SUITE=$s "$@" >"$log_dir/$label-$s.log" 2>&1 ||
			grep -q -E "ThreadSanitizer|ERROR SUMMARY: [1-9]" \
				"$log_dir/$label-$s.log"; then
			echo "$label: suite $s FAILED:"
			tail -60 "$log_dir/$label-$s.log"
			failed=1
		fi
		grep -h -E '^[0-9]+%: Checks' "$log_dir/$label-$s.log" |
			sed "s/^/$label: $s: /" || true
	done
	return $failed
}

stage_tsan() {
	mkdir -p build-tsan
	(
		cd build-tsan
		[ -f Makefile ] || ../configure -q --without-cuda \
			--without-jemalloc --without-mimalloc \
			CFLAGS="-O1 -g -fsanitize=thread" \
			LDFLAGS="-fsanitize=thread"
		# Everything make check builds (test plugins too), running
		# nothing; warnings were shown by the normal build.
		make -j"$jobs" all >/dev/null 2>make.err &&
			make -j"$jobs" check TESTS= >/dev/null 2>>make.err ||
			{ cat make.err; exit 1; }
	)
	log_dir=build-tsan suites=$(threaded_suites) \
		TSAN_OPTIONS="halt_on_error=1 exitcode=66 allocator_may_return_null=1 second_deadlock_stack=1" \
		run_suites tsan build-tsan/tests/unit/runner
}

stage_valgrind() {
	[ -x build/tests/unit/runner ] || [ -f build/tests/unit/runner ] || {
		echo "valgrind: build/tests/unit/runner missing (run scripts/test.sh first)"
		return 1
	}
	# check forks a child per test; valgrind follows it and each child
	# exits 99 on a memory error or a definite leak, failing that test.
	log_dir=build suites="${VALGRIND_SUITES[*]}" CK_TIMEOUT_MULTIPLIER=30 \
		run_suites valgrind build/libtool --mode=execute valgrind \
		--quiet --error-exitcode=99 --leak-check=full \
		--show-leak-kinds=definite --errors-for-leak-kinds=definite \
		build/tests/unit/runner
}

# The whole check suite with "debug" as the CPU allocator, aborting on the
# first misuse.  Tests that set their own ALLOY_CONF keep it, and a few
# assert that the default is "default": so a test failing is not this
# stage's business, a debug report or an abort is.
stage_debug() {
	local log=build/debug-stage.log

	[ -f build/tests/unit/runner ] || {
		echo "debug: build/tests/unit/runner missing (run scripts/test.sh first)"
		return 1
	}
	ALLOY_CONF=cpu:debug,debug.abort:1 build/tests/unit/runner >"$log" 2>&1 || true
	# Not check's own summary line: a few tests expect the built-in
	# default by design and fail here, which is not this stage's verdict.
	grep -h -E '^[0-9]+%: Checks' "$log" |
		sed -E 's/^[0-9]+%: Checks: ([0-9]+).*/debug: \1 checks ran with cpu:debug/'
	if grep -q -E "alloy: debug:|Received signal" "$log"; then
		echo "debug: misuse found:"
		grep -A12 -E "alloy: debug:|Received signal" "$log" | head -60
		return 1
	fi
	echo "debug: no misuse reported"
}

stage_fuzz() {
	bash scripts/fuzz.sh --runs
}

status=0
for st in "${stages[@]}"; do
	start=$(date +%s)
	echo "=== $st"
	"stage_$st" || status=1
	echo "=== $st: $(($(date +%s) - start)) s"
done
exit $status
