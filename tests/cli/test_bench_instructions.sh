#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_bench_instructions.sh - `alloy bench` counts instructions per
# pair under callgrind: the framework's figure with a no-op allocator is
# there, at 1 and 2 threads, and is a count of a plausible size (it is
# deterministic: no timing decides anything here); without valgrind the
# bench says so and still prints its time ratios.
set -u
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
. "$(dirname "$0")/clitest.sh"

. "$(dirname "$0")/sanitizer.sh"
if sanitizer_build; then
	echo "skipped: a sanitizer build (valgrind cannot run it)"
	exit 77
fi
if ! command -v valgrind >/dev/null 2>&1; then
	echo "skipped: valgrind not installed"
	exit 77
fi

rc=$(run bench --quick --instructions --json core)
check "bench core --instructions exits 0" '[ "$rc" = 0 ]'
for t in "1 thread" "2 threads"; do
	check "framework instructions per pair, $t, counted" \
		"grep -q '\"metric\": \"framework instructions per pair, $t\", \"value\": [0-9]' \"\$out\""
done
# A pair through alloy is more than an empty loop and far less than glibc.
n=$(sed -n 's/.*"framework instructions per pair, 1 thread", "value": \([0-9.]*\).*/\1/p' "$out")
check "framework count $n is between 10 and 1000" \
	'[ -n "$n" ] && awk "BEGIN { exit !($n > 10 && $n < 1000) }"'
check "the summary row names the figure" \
	'grep -q "\"figure\": \"framework instructions per pair (no-op allocator)\"" "$out"'

# No valgrind on PATH: said on stderr (JSON stays JSON), ratios still come.
rc=$(PATH=/nonexistent run bench --quick --instructions --json core)
check "without valgrind it still exits 0" '[ "$rc" = 0 ]'
check "without valgrind it says so" 'grep -q "cannot run valgrind" "$err"'
check "without valgrind the ratios are there" \
	'grep -q "\"metric\": \"worst ratio alloy/direct\"" "$out"'

clitest_done bench_instructions
