#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_bench_preload.sh - `alloy bench preload` on three of its
# workloads at the smoke scale: a time, a memory and a footprint row for
# every backend there is (the others say skipped), each a number; no run
# gave a wrong result; the workloads' checksum line is the same plain and
# under alloy run, and another scale gives another line; bad arguments
# are refused.  No timing decides anything here.
set -u
. "$(dirname "$0")/clitest.sh"
clitest_scratch
. "$(dirname "$0")/sanitizer.sh"
if sanitizer_build; then
	echo "skipped: a sanitizer build (its programs cannot be preloaded)"
	exit 77
fi
top=$(dirname "$ALLOY")
prog=$top/bench/preload-workloads
if [ ! -x "$prog" ]; then
	echo "skipped: $prog not built"
	exit 77
fi

num='[0-9][0-9.e+-]*'
rc=$(ALLOY_BENCH_PRELOAD_WORKLOADS="pairs, alloctest footprint16" \
	run bench --quick --json preload)
check "bench preload --quick exits 0" '[ "$rc" = 0 ]'
check "the output is one JSON object" \
	'python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$out" ||
	 ! command -v python3 >/dev/null'
for be in default/glibc jemalloc mimalloc; do
	if grep -q ", $be: skipped" "$err"; then
		echo "note: $be rows skipped: $(grep -m1 ", $be: skipped" "$err")"
		continue
	fi
	for row in "time alloy/direct, pairs" "peak RSS alloy/direct, pairs" \
		"time alloy/direct, alloctest" \
		"resident alloy/direct, footprint16"; do
		check "$row, $be is a number" \
			"grep -q '\"metric\": \"$row, $be\", \"value\": $num,' \"\$out\""
	done
	check "$be has a time geomean" \
		"grep -q '\"metric\": \"time alloy/direct, $be, geomean\", \"value\": $num,' \"\$out\""
	check "$be has a summary row" \
		"grep -q '\"figure\": \"alloy run / direct, $be (time)\"' \"\$out\""
done
check "the default backend is never skipped" \
	'! grep -q ", default/glibc: skipped" "$err"'
for w in pairs alloctest footprint16; do
	check "$w: no wrong results" \
		"grep -q '\"metric\": \"$w: wrong results\", \"value\": 0,' \"\$out\""
done
check "workloads not asked for do not run" '! grep -q "larson" "$out"'
check "no error on stderr" '! grep -q ERROR "$err"'

# The checksum line the bench compares: the same run to run and under
# the front, another at another scale (it depends on the work done).
for w in larson prodcons sh6 aligned; do
	a=$("$prog" $w 0.01 | grep " checksum ")
	b=$("$ALLOY" run -- "$prog" $w 0.01 | grep " checksum ")
	c=$("$prog" $w 0.02 | grep " checksum ")
	check "$w: a checksum line ($a)" '[ -n "$a" ]'
	check "$w: the same under alloy run" '[ "$a" = "$b" ]'
	check "$w: another at another scale" '[ "$a" != "$c" ]'
	check "$w: nothing damaged under alloy run" \
		"\"\$ALLOY\" run -- \"\$prog\" $w 0.01 | grep -qx '$w damaged 0'"
done

# Bad arguments: a clear line and a non-zero status.
rc=0
"$prog" nosuch 1 >"$out" 2>"$err" || rc=$?
check "an unknown workload is refused" \
	'[ $rc -ne 0 ] && grep -q "no workload" "$err"'
rc=0
"$prog" pairs -1 >"$out" 2>"$err" || rc=$?
check "a bad scale is refused" '[ $rc -ne 0 ] && grep -q "bad SCALE" "$err"'
rc=0
"$prog" >"$out" 2>"$err" || rc=$?
check "no arguments print the usage" '[ $rc -ne 0 ] && grep -q usage "$err"'

clitest_done bench_preload
