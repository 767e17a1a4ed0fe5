#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_cli_report.sh - the reporter as a user meets it: the demo's
# exit report and trace, `alloy report` in every format, `alloy replay`
# reproducing the demo's peak, and bad traces refused without clobbering.
set -u
. "$(dirname "$0")/clitest.sh"
clitest_scratch

# The demo with the reporter on: a summary per allocator, no leaks.
ALLOY_CONF="report:stderr,trace:$dir/t.trace" "$ALLOY" demo >"$out" 2>"$err"
rc=$?
check "demo with report and trace exits 0" '[ "$rc" = 0 ]'
check "exit report has the summary table" 'grep -q "^allocator .*current .*peak" "$err" && grep -q "^default  *cpu:0" "$err"'
check "exit report finds no leaks" 'grep -q "0 blocks, 0 bytes: no leaks" "$err"'
check "trace ends with its end record" 'tail -n 1 "$dir/t.trace" | grep -q "^end "'
demo_peak=$(awk '$1 == "(all)" { print $3 }' "$err")
check "exit report has a peak" '[ -n "$demo_peak" ] && [ "$demo_peak" -gt 0 ]'

ALLOY_CONF="report:$dir/r.json,report_format:json" "$ALLOY" demo >"$out" 2>"$err"
check "JSON exit report written to a file" 'grep -q "\"leaked_blocks\": 0" "$dir/r.json"'

rc=$(run report "$dir/t.trace")
check "report text exits 0" '[ "$rc" = 0 ]'
check "report text has the same peak" 'grep -q "^peak $demo_peak bytes" "$out"'
rc=$(run report "$dir/t.trace" --format json)
check "report json has the peak" '[ "$rc" = 0 ] && grep -q "\"peak_bytes\": $demo_peak" "$out"'
rc=$(run report "$dir/t.trace" --format svg -o "$dir/t.svg")
check "report svg writes a picture" '[ "$rc" = 0 ] && grep -q "<svg" "$dir/t.svg" && grep -q "peak" "$dir/t.svg" && tail -n 1 "$dir/t.svg" | grep -q "</svg>"'
rc=$(run report "$dir/t.trace" --format html -o "$dir/t.html")
check "report html is one offline page" '[ "$rc" = 0 ] && grep -q "<svg" "$dir/t.html" && ! grep -q "http[s]*://[^w]" "$dir/t.html"'

rc=$(run replay "$dir/t.trace" --allocator default)
check "replay reproduces the demo peak in requested bytes" '[ "$rc" = 0 ] && grep -q "^requested bytes *$demo_peak .*live at the peak, as in the trace" "$out"'
check "replay labels usable and reserved bytes" \
	'grep -q "^usable bytes  " "$out" && grep -q "^reserved bytes  .*held from the system" "$out" && ! grep -q "^allocated" "$out"'
check "replay prints no progress into a pipe" '! grep -q "replay:" "$err"'
rc=$(run replay "$dir/t.trace" --allocator no_such_allocator)
check "replay with an unknown allocator exits 1" '[ "$rc" = 1 ] && grep -q no_such_allocator "$err"'
rc=$(run replay "$dir/t.trace")
check "replay without --allocator is a usage error" '[ "$rc" = 2 ]'
# Reserved and usable "at most" hold at least the peak, here a 16 MiB
# block freed two events later, long before a periodic sample of the
# stats; the 100 bytes left at the end are requested bytes at the end.
printf 'alloy-trace 2 pid=1 clock=monotonic unit=ns\nT 1 1\nS 1 default cpu:0 64\na 10 1 1 1000 16777216\nf 10 1 1000\na 10 1 1 2000 100\nend 40 3\n' >"$dir/p.trace"
for a in default cuda_caching_sim; do
	rc=$(run replay "$dir/p.trace" --allocator $a --json)
	check "replay on $a: reserved and usable at most hold the peak" \
		'[ "$rc" = 0 ] && /usr/bin/python3 -c "import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(not (d[\"peak_requested_bytes\"] == d[\"trace_peak_bytes\"] == 16777216 and d[\"end_requested_bytes\"] == 100 and d[\"peak_usable_bytes\"] >= 16777216 and d[\"end_usable_bytes\"] >= 100 and d[\"max_reserved_bytes\"] >= 16777216))" "$out"'
done
# --repeat: the steps of a loop.  The caching allocator's later passes
# reuse what the first reserved: no more at most than after one pass.
rc=$(run replay "$dir/p.trace" --allocator cuda_caching_sim --json)
one=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["max_reserved_bytes"])' "$out")
rc=$(run replay "$dir/p.trace" --allocator cuda_caching_sim --repeat 5 --json)
check "replay --repeat 5: five passes, each with the trace's peak, no more reserved than one" \
	'[ "$rc" = 0 ] && /usr/bin/python3 -c "import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(not (d[\"repeat\"] == 5 and d[\"later_seconds_median\"] > 0 and d[\"peak_requested_bytes\"] == 16777216 and d[\"max_reserved_bytes\"] == int(sys.argv[2])))" "$out" "$one"'
rc=$(run replay "$dir/p.trace" --allocator default --repeat 3)
check "replay --repeat prints the first pass and the later ones' median" \
	'[ "$rc" = 0 ] && grep -q "the first pass$" "$out" && grep -q "^later passes .*the median of 2$" "$out"'
# jemalloc rounds 100 bytes up to its 112-byte class: requested and
# usable bytes part, each named.  Ten blocks, then five freed.
if [ -f "$(dirname "$ALLOY")/.libs/alloy_jemalloc.so" ]; then
	{
		printf 'alloy-trace 2 pid=1 clock=monotonic unit=ns\nT 1 1\nS 1 default cpu:0 16\n'
		for i in 1 2 3 4 5 6 7 8 9 10; do printf 'a 10 1 1 %x 100\n' $((i * 4096)); done
		for i in 1 2 3 4 5; do printf 'f 10 1 %x\n' $((i * 4096)); done
		printf 'end 200 15\n'
	} >"$dir/r.trace"
	rc=$(run replay "$dir/r.trace" --allocator jemalloc --json)
	check "replay on jemalloc: requested 1000 at the peak, 500 at the end; usable 1120 and 560" \
		'[ "$rc" = 0 ] && /usr/bin/python3 -c "import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(not (d[\"peak_requested_bytes\"] == 1000 and d[\"end_requested_bytes\"] == 500 and d[\"peak_usable_bytes\"] == 1120 and d[\"end_usable_bytes\"] == 560 and d[\"usable_size_op\"]))" "$out"'
	rc=$(run replay "$dir/r.trace" --allocator jemalloc)
	check "replay on jemalloc prints the rounding as a share of the requested bytes" \
		'[ "$rc" = 0 ] && grep -q "^usable bytes *1120 .*(+12.0%: size classes and rounding); 560 " "$out"'
else
	echo "skipped: alloy_jemalloc.so not built (the rounding checks)"
fi
for bad in 0 -1 1001 x ""; do
	rc=$(run replay "$dir/p.trace" --allocator default --repeat "$bad")
	check "replay --repeat \"$bad\" is a usage error naming the option" \
		'[ "$rc" = 2 ] && grep -q -- "--repeat wants a count" "$err"'
done

# A cut trace: refused with line and offset, and -o left alone.
# Cut inside the fifth line, as a disk-full or a killed copy would.
head -c $(($(head -n 5 "$dir/t.trace" | wc -c) - 3)) "$dir/t.trace" >"$dir/cut.trace"
echo "old picture" >"$dir/keep.svg"
rc=$(run report "$dir/cut.trace" --format svg -o "$dir/keep.svg")
check "cut trace is refused with line and byte" '[ "$rc" = 1 ] && grep -q "cut.trace:[0-9]*: (byte [0-9]*) truncated line" "$err"'
check "a refused trace writes nothing over -o" 'grep -q "old picture" "$dir/keep.svg" && [ "$(ls "$dir" | grep -c tmp)" = 0 ]'
rc=$(run report "$dir/missing.trace")
check "missing trace exits 1" '[ "$rc" = 1 ] && grep -q "missing.trace" "$err"'

# A crashed program's trace (no end record) still reports, with a warning.
grep -v "^end " "$dir/t.trace" >"$dir/crash.trace"
rc=$(run report "$dir/crash.trace")
check "trace without end record reports with a warning" '[ "$rc" = 0 ] && grep -q "no end record" "$err" && grep -q "^peak $demo_peak" "$out"'

# Endless input that is no trace is refused at its first bytes, not read
# until memory runs out.  A memory limit keeps a regression from taking the
# machine down with it; a sanitizer's shadow memory cannot live under one,
# so a sanitizer build runs without.
. "$(dirname "$0")/sanitizer.sh"
limited() { # KiB, command...
	kib=$1
	shift
	if sanitizer_build; then
		"$@"
	else
		(ulimit -v "$kib" && "$@")
	fi
}
for dev in /dev/zero /dev/full; do
	rc=$(limited 1048576 run report $dev)
	check "report $dev is refused as no trace" '[ "$rc" = 1 ] && grep -q "$dev: not an alloy trace" "$err"'
done
# A demo whose trace goes to a full device: said once, no timeline drawn.
rc=$(export ALLOY_CONF=trace:/dev/full; limited 4194304 run demo --quick --out "$dir/full-demo")
check "demo with trace:/dev/full says so and exits 1" '[ "$rc" = 1 ] && [ "$(grep -c "trace:/dev/full: write failed" "$err")" = 1 ] && grep -q "/dev/full: not an alloy trace" "$err"'

# A trace's path and owner names are bytes; JSON and SVG are UTF-8: the
# bytes that are not UTF-8 come out as U+FFFD, the rest as it is (and a
# control byte, which XML cannot carry, as U+FFFD in SVG, escaped in
# JSON).  Read by strict parsers.
ntrace=$(printf '%s/n\351.trace' "$dir")
printf 'alloy-trace 2 pid=1 clock=monotonic unit=ns\nT 1 1\nS 1 default cpu:0 64\no 1 lay\351r/\303\251t\001\na 10 1 1 1000 100 0 1\nend 20 1\n' >"$ntrace"
rc=$(run report "$ntrace" --format json)
check "report --format json of a path that is not UTF-8 is UTF-8 JSON" \
	'[ "$rc" = 0 ] && /usr/bin/python3 -c "import json, sys
d = json.load(open(sys.argv[1], encoding=\"utf-8\"))
sys.exit(d[\"trace\"] != sys.argv[2] + \"/n\ufffd.trace\")" "$out" "$dir"'
rc=$(run report "$ntrace" --at peak --format json)
check "report --at peak --format json: an owner that is not UTF-8 is UTF-8 JSON" \
	'[ "$rc" = 0 ] && /usr/bin/python3 -c "import json, sys
d = json.load(open(sys.argv[1], encoding=\"utf-8\"))
sys.exit(d[\"devices\"][0][\"owners\"][0][\"owner\"] != \"lay\ufffdr/\u00e9t\x01\")" "$out"'
rc=$(run report "$ntrace" --format flamegraph-svg --by owner -o "$dir/n.svg")
check "flamegraph-svg of an owner that is not UTF-8 is XML" \
	'[ "$rc" = 0 ] && /usr/bin/python3 -c "import sys, xml.etree.ElementTree as E
text = \"\".join(E.parse(sys.argv[1]).getroot().itertext())
sys.exit(\"lay\ufffdr/\u00e9t\ufffd\" not in text)" "$dir/n.svg"'

# A trace cut while it is read (a rerun of the program with the same
# trace: path truncates it) is an error naming the file, not a SIGBUS.
# The shim cuts it right after alloy first reads or maps it; the trace is
# larger than one read of the reader (1 MiB), so the cut falls between
# two.  Preloading needs a build without a sanitizer.
awk 'BEGIN { print "alloy-trace 2 pid=1 clock=monotonic unit=ns"; print "T 1 1"
	print "S 1 default cpu:0 64"
	for (i = 1; i <= 40000; i++) { print "a 10 1 1 " i " 100"; print "f 10 1 " i }
	print "end 800000 80000" }' >"$dir/cut.trace"
rc=$(run report "$dir/cut.trace")
check "the trace to cut is a valid one over 1 MiB" \
	'[ "$rc" = 0 ] && [ "$(wc -c <"$dir/cut.trace")" -gt 1048576 ]'
if ! sanitizer_build; then
	for cmd in report "replay -a default"; do
		cp "$dir/cut.trace" "$dir/cutting.trace"
		# shellcheck disable=SC2086 # $cmd is split on purpose
		rc=$(LD_PRELOAD="$(dirname "$ALLOY")/tests/programs/.libs/shrink_shim.so" \
			SHRINK_PATH="$dir/cutting.trace" SHRINK_TO=4096 \
			run $cmd "$dir/cutting.trace")
		check "$cmd of a trace cut while read: exit 1, the file named" \
			'[ "$rc" = 1 ] && grep -q "$dir/cutting.trace: the trace shrank from [0-9]* to 4096 bytes while being read" "$err"'
		check "$cmd of a trace cut while read: it was cut" \
			'[ "$(wc -c <"$dir/cutting.trace")" = 4096 ]'
	done
fi

clitest_done test_cli_report
