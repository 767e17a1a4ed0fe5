#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_trace_rss.sh - resident memory beside the heap: a program
# that maps and touches 64 MiB outside malloc (tests/programs/memprog.c)
# is traced; the trace holds "r" samples, `alloy report` prints peak RSS,
# peak heap and their difference (text and JSON), the timeline draws RSS
# under the live bytes, and older versions still read without samples.
# Run from the build directory (make check does).
set -u
. "$(dirname "$0")/clitest.sh"
clitest_scratch
PROG=./tests/programs/memprog

ALLOY_CONF="trace:$dir/m.trace" $PROG mmap 64 >"$out" 2>"$err"
check "memprog maps and touches 64 MiB, traced" '[ $? = 0 ] && grep -q done "$out"'
check "the trace holds resident-memory samples (r DT RESIDENT MAPPED)" \
	'[ "$(grep -c "^r [0-9]* [0-9]* [0-9]*$" "$dir/m.trace")" -ge 3 ]'
rc=$(run report "$dir/m.trace")
check "report prints peak RSS, peak heap and RSS above heap" \
	'[ "$rc" = 0 ] && grep -Eq "^peak RSS [0-9.]+ MiB \([0-9]+ bytes\) at [0-9.]+ ms, peak heap 1.00 MiB: RSS above heap by [0-9.]+ MiB \([0-9]+ samples, mapped at most" "$out"'
rc=$(run report "$dir/m.trace" --format json -o "$dir/m.json")
check "JSON: peak RSS exceeds peak heap by at least 60 MiB" \
	'[ "$rc" = 0 ] && json "$dir/m.json" "d[\"memory\"][\"resident_above_heap_bytes\"] >= 60 << 20 and d[\"memory\"][\"peak_resident_bytes\"] - d[\"all\"][\"peak_bytes\"] == d[\"memory\"][\"resident_above_heap_bytes\"] and d[\"memory\"][\"peak_heap_bytes\"] == d[\"all\"][\"peak_bytes\"]"'
check "JSON: mapped at least resident, a few samples" \
	'json "$dir/m.json" "d[\"memory\"][\"peak_mapped_bytes\"] >= d[\"memory\"][\"peak_resident_bytes\"] and d[\"memory\"][\"samples\"] >= 3"'
rc=$(run report "$dir/m.trace" --format svg -o "$dir/m.svg")
check "the timeline draws RSS (a filled path under the lines, in the legend)" \
	'[ "$rc" = 0 ] && grep -q "<path id=\"rss\" fill=" "$dir/m.svg" && grep -q "resident (RSS)" "$dir/m.svg" && [ "$(grep -n "id=\"rss\"" "$dir/m.svg" | cut -d: -f1)" -lt "$(grep -n "stroke-width=\"1.6\"" "$dir/m.svg" | head -n 1 | cut -d: -f1)" ]'
rc=$(run report "$dir/m.trace" --format html -o "$dir/m.html")
check "the timeline page too" \
	'[ "$rc" = 0 ] && grep -q "id=\"rss\"" "$dir/m.html" && grep -q "^peak RSS" "$dir/m.html"'

# Without samples (version 2, or no /proc) nothing is said of RSS.
printf 'alloy-trace 2 pid=1 clock=monotonic unit=ns\nT 1 1\nS 1 default cpu:0 64\na 10 1 1 1000 100\nend 40 1\n' >"$dir/v2.trace"
rc=$(run report "$dir/v2.trace")
check "a version 2 trace: read, no RSS line" '[ "$rc" = 0 ] && ! grep -q "RSS" "$out"'
rc=$(run report "$dir/v2.trace" --format json -o "$dir/v2.json")
check "its JSON says memory: null" '[ "$rc" = 0 ] && json "$dir/v2.json" "d[\"memory\"] is None"'
# An r record in a version 2 trace is what an older reader would refuse.
printf 'alloy-trace 2 pid=1 clock=monotonic unit=ns\nr 5 4096 8192\nend 40 0\n' >"$dir/v2r.trace"
rc=$(run report "$dir/v2r.trace")
check "an r record in version 2: unknown record, exit 1" \
	'[ "$rc" = 1 ] && grep -q "v2r.trace:2: .*unknown record \"r 5 4096 8192\"" "$err"'
printf 'alloy-trace 3 pid=1 clock=monotonic unit=ns\nr 5 4096\nend 40 0\n' >"$dir/bad.trace"
rc=$(run report "$dir/bad.trace")
check "an r record with a field missing: exit 1, the form named" \
	'[ "$rc" = 1 ] && grep -q "bad.trace:2: .*expected \"r DT RESIDENT MAPPED\"" "$err"'

clitest_done test_trace_rss
