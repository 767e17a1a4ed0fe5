#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_demo.sh - `alloy demo --quick`, the tour, as a newcomer runs
# it: the loop on every CPU allocator built, a live swap whose old blocks
# go back to their maker, the side-by-side table, the simulated GPU's
# avoided device calls, and the files it writes.
set -u
out=$(mktemp) err=$(mktemp) dir=$(mktemp -d)
trap 'rm -rf "$out" "$err" "$dir"' EXIT
. "$(dirname "$0")/clitest.sh"
top=$(dirname "$ALLOY")

rc=0
"$ALLOY" demo --quick --out "$dir/d" >"$out" 2>"$err" || rc=$?
check "demo exits 0" '[ $rc -eq 0 ]'
check "nothing on stderr" '[ ! -s "$err" ]'
check "first on the configured default" 'grep -q "first on the configured CPU default, \"default\"" "$out"'
expected=1
for m in jemalloc mimalloc; do
	[ -f "$top/.libs/alloy_$m.so" ] || continue
	expected=$((expected + 1))
	check "$m has a row with allocations" \
		"grep -Eq '^  $m +[0-9.]+ ms .* [1-9][0-9]*( |\$)' \"\$out\""
done
rows=$(grep -cE '^  [a-z_0-9]+ +[0-9.]+ ms ' "$out")
check "the table has a row per CPU allocator ($expected)" '[ "$rows" = "$expected" ]'
check "one of them is the fastest" '[ "$(grep -c "<- fastest" "$out")" = 1 ]'
if [ "$expected" -gt 1 ]; then
	check "the swap happens while blocks of the old default are live" \
		'grep -Eq "swap: CPU default default -> [a-z]+; [1-9][0-9]* blocks .* of default were live, the old net let go of them: default has 0 left" "$out"'
fi
check "every block went back to its maker" \
	'grep -Eq "every block went back to the allocator that made it: default 0 live" "$out"'
losses=$(sed -n 's/.* steps, loss \([0-9.]*\),.*/\1/p' "$out" | sort -u | wc -l)
check "every allocator trains the net to the same loss" '[ "$losses" = 1 ]'
check "the simulated GPU avoids device calls by caching" \
	'grep -Eq "served by [0-9]+ device mallocs: [1-9][0-9]* device calls avoided by caching" "$out"'
check "the trace is complete" '[ -s "$dir/d/trace.alloy" ] && tail -1 "$dir/d/trace.alloy" | grep -q "^end "'
check "the timeline pictures are written" '[ -s "$dir/d/timeline.html" ] && [ -s "$dir/d/timeline.svg" ]'
check "what held the CPU peak, by blob" \
	'grep -q "^peak of cpu:0: [1-9][0-9]* bytes" "$dir/d/peak.txt" && grep -Eq "^ +[1-9][0-9]* +[0-9.]+% +[1-9][0-9]*  fc0_w$" "$dir/d/peak.txt"'
check "the simulated GPU's peak too" 'grep -q "^peak of cuda:0: [1-9][0-9]* bytes" "$dir/d/peak.txt"'
check "the flame graph of blobs is written" '[ -s "$dir/d/flamegraph.html" ] && grep -q "fc0_w" "$dir/d/flamegraph.html"'
check "it names every file it wrote" \
	'for f in trace.alloy timeline.html timeline.svg peak.txt flamegraph.html; do grep -q "^  $dir/d/$f " "$out" || exit 1; done'
check "it says what to open first" "grep -q '^Open first: $dir/d/timeline.html' \"\$out\""

# A plugin joins the comparison.
plugin=$top/examples/plugin/alloy_arena.so
rc=0
"$ALLOY" demo --quick --out "$dir/p" --plugin "$plugin" >"$out" 2>"$err" || rc=$?
check "--plugin: exits 0" '[ $rc -eq 0 ]'
check "--plugin: arena has a row" "grep -Eq '^  arena +[0-9.]+ ms ' \"\$out\""

# With report: on, one report table (the exit report), not two.
rc=0
ALLOY_CONF=report:stderr "$ALLOY" demo --quick --out "$dir/r" >"$out" 2>"$err" || rc=$?
check "report: exits 0" '[ $rc -eq 0 ]'
check "report: the exit report once, on stderr" '[ "$(grep -c "^(all)" "$err")" = 1 ]'
check "report: not on stdout" '! grep -q "^(all)" "$out"'

rc=0
"$ALLOY" demo --out >"$out" 2>"$err" || rc=$?
check "--out without a directory is a usage error" '[ $rc -eq 2 ]'
rc=0
"$ALLOY" demo --out /proc/nope/x >"$out" 2>"$err" || rc=$?
check "an impossible --out is one clear error" '[ $rc -eq 1 ] && grep -q "cannot make /proc/nope/x" "$err"'
clitest_done test_demo
