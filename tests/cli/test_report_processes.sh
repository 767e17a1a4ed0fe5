#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_report_processes.sh - `alloy report` of several processes'
# traces as one job: two hand-written traces whose sum is known exactly
# (the peak of the sum, its time, who held it), a real job under
# `alloy run --trace DIR/%p.trace` read as a directory, the job's
# timeline (a lane per process, the sum's lane at the peak of the sum),
# and the errors (a trace without a start time, a format the job's
# summary has not).
set -u
. "$(dirname "$0")/clitest.sh"
. "$(dirname "$0")/fronttest.sh"
clitest_scratch

# ---- exact: two processes whose blocks overlap for 30 us ---------------

# alpha holds 100 bytes from 1.000 to 1.050 ms, beta 200 bytes from
# 1.020 to 1.120 ms of the machine's monotonic clock: the sum is 300
# bytes at 0.020 ms of the job.
printf '%s\n' 'alloy-trace 2 pid=100 clock=monotonic unit=ns start=1000000 comm=alpha' \
	'T 1 100' 'S 1 default cpu:0 16' 'o 1 job/a' 'a 0 1 1 1000 100 0 1' \
	'f 50000 1 1000' 'end 60000 2' >"$dir/a.trace"
printf '%s\n' 'alloy-trace 2 pid=200 clock=monotonic unit=ns start=1020000 comm=beta' \
	'T 1 200' 'S 1 default cpu:0 16' 'o 1 job/b' 'a 0 1 1 2000 200 0 1' \
	'f 100000 1 2000' 'end 110000 2' >"$dir/b.trace"
rc=$(run report "$dir/a.trace" "$dir/b.trace")
check "two traces: a line per process, the peak of the sum" \
	'[ "$rc" = 0 ] && grep -q "^2 processes" "$out" && grep -Eq "^100 +alpha +0.000 +0.060 +100 " "$out" && grep -Eq "^200 +beta +0.020 +0.130 +200 " "$out" && grep -q "^peak of the sum 300 bytes (300 B) at 0.020 ms" "$out"'
check "who held the peak, by owner" \
	'grep -Eq "^ +200 +200 B +66.7% +1 blocks +job/b$" "$out" && grep -Eq "^ +100 +100 B +33.3% +1 blocks +job/a$" "$out"'
rc=$(run report "$dir/a.trace" "$dir/b.trace" --format json)
check "as JSON: the peak, its time, each process's share" \
	'[ "$rc" = 0 ] && json "$out" "d[\"peak_bytes\"] == 300 and d[\"peak_t_ns\"] == 20000 and [p[\"at_job_peak_bytes\"] for p in d[\"processes\"]] == [100, 200] and [p[\"start_ns\"] for p in d[\"processes\"]] == [0, 20000] and d[\"peak_owners\"][0] == {\"label\": \"job/b\", \"bytes\": 200, \"blocks\": 1}"'

# Beta 40 us later: the blocks no longer overlap, the peak is beta's.
sed 's/start=1020000/start=1060000/' "$dir/b.trace" >"$dir/late.trace"
rc=$(run report "$dir/a.trace" "$dir/late.trace" --format json)
check "apart in time: the peak of the sum is the larger one alone" \
	'[ "$rc" = 0 ] && json "$out" "d[\"peak_bytes\"] == 200 and d[\"peak_t_ns\"] == 60000 and [p[\"at_job_peak_bytes\"] for p in d[\"processes\"]] == [0, 200]"'

# gamma, 10 us before alpha, never frees its 50 bytes and ends 20 us
# later: its memory goes back to the system with it, and it holds
# nothing at the peak (alpha and beta, 30 us after gamma's start).
printf '%s\n' 'alloy-trace 2 pid=300 clock=monotonic unit=ns start=990000 comm=gamma' \
	'T 1 300' 'S 1 default cpu:0 16' 'a 0 1 1 3000 50' 'end 20000 1' \
	>"$dir/c.trace"
rc=$(run report "$dir/a.trace" "$dir/b.trace" "$dir/c.trace" --format json)
check "a process that ended holds nothing after: its leak is not in the peak" \
	'[ "$rc" = 0 ] && json "$out" "d[\"peak_bytes\"] == 300 and d[\"peak_t_ns\"] == 30000 and [p[\"at_job_peak_bytes\"] for p in d[\"processes\"]] == [100, 200, 0] and [p[\"live_at_end_bytes\"] for p in d[\"processes\"]] == [0, 0, 50]"'

# ---- the job's timeline: a lane per process under the sum's ----------

# lane COUNT FILE: the lanes of processes; sum_peak FILE: the sum's peak.
lanes() { grep -c '<g class="lane" ' "$1"; }
sum_peak() { sed -n 's/.*<g class="lane sum" [^>]*data-peak="\([0-9]*\)".*/\1/p' "$1"; }
rc=$(run report "$dir/a.trace" "$dir/b.trace" "$dir/c.trace" --format svg -o "$dir/job.svg")
check "svg: a lane per process, the sum's lane peaks at the peak of the sum" \
	'[ "$rc" = 0 ] && [ "$(lanes "$dir/job.svg")" = 3 ] && [ "$(sum_peak "$dir/job.svg")" = 300 ] && grep -q "data-pid=\"200\" data-name=\"beta\" data-peak=\"200\"" "$dir/job.svg" && grep -q "peak of the sum 300 B at 0.030 ms" "$dir/job.svg"'
check "svg: a well-formed document, who held the peak beside it" \
	'python3 -c "import sys, xml.dom.minidom as m; m.parse(sys.argv[1])" "$dir/job.svg" && grep -q ">1. 200 beta 66.7%<" "$dir/job.svg" && grep -q ">1. job/b 66.7%<" "$dir/job.svg"'
rc=$(run report "$dir/a.trace" "$dir/b.trace" --format html -o "$dir/job.html")
check "html: the picture and the job's summary in one page" \
	'[ "$rc" = 0 ] && [ "$(lanes "$dir/job.html")" = 2 ] && [ "$(sum_peak "$dir/job.html")" = 300 ] && grep -q "^peak of the sum 300 bytes (300 B) at 0.020 ms" "$dir/job.html" && grep -q "^2 processes" "$dir/job.html"'

# ---- errors -----------------------------------------------------------

sed 's/ start=1000000//' "$dir/a.trace" >"$dir/old.trace"
rc=$(run report "$dir/old.trace" "$dir/b.trace")
check "a trace without a start time: exit 1, named" \
	'[ "$rc" = 1 ] && grep -q "old.trace has no start time in its header" "$err"'
rc=$(run report "$dir/a.trace" "$dir/b.trace" --format flamegraph)
check "several traces with a per-trace format: a usage error" \
	'[ "$rc" = 2 ] && grep -q "several traces (or a directory) give the job.s summary or timeline: --format text, json, svg or html" "$err"'
rc=$(run report "$dir/a.trace" "$dir/b.trace" --format svg --at peak)
check "the job's timeline with --at: a usage error" \
	'[ "$rc" = 2 ] && grep -q "without --at or --by" "$err"'
mkdir "$dir/empty"
echo "not a trace" >"$dir/empty/notes.txt"
rc=$(run report "$dir/empty")
check "a directory without traces: exit 1, said" \
	'[ "$rc" = 1 ] && grep -q "no trace in $dir/empty" "$err"'

# ---- a real job under alloy run, read as a directory ------------------

if why=$(front_missing); then
	echo "skipped: the job under alloy run ($why)"
else

	# The program itself, not libtool's wrapper script (whose shell and sed
	# would be processes of the job too).
	prog=./tests/programs/.libs/profprog
	[ -x "$prog" ] || prog=./tests/programs/profprog
	mkdir "$dir/job"
	LD_LIBRARY_PATH=$PWD/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
		"$ALLOY" run --trace "$dir/job/%p.trace" -- \
		sh -c "$prog >/dev/null; $prog >/dev/null" >"$out" 2>"$err"
	check "the job ran: a trace per process" \
		'[ $? = 0 ] && [ "$(find "$dir/job" -type f -size +0 | wc -l)" -ge 2 ]'
	rc=$(run report "$dir/job" --format json)
	cp "$out" "$out.json"
	# The shell ends by _exit() before its trace's first write-out: an
	# empty file, which the report says it leaves out.
	n=$(find "$dir/job" -type f -size +0 | wc -l)
	check "the directory's traces, one entry each; the peak is the sum's" \
		'[ "$rc" = 0 ] && [ "$(grep -c "is empty (its process wrote nothing); left out" "$err")" = "$(find "$dir/job" -type f -size 0 | wc -l)" ] && json "$out" "len(d[\"processes\"]) == $n and sum(p[\"at_job_peak_bytes\"] for p in d[\"processes\"]) == d[\"peak_bytes\"] >= max(p[\"peak_bytes\"] for p in d[\"processes\"])"'
	rc=$(run report "$dir/job" --format svg -o "$dir/jobt.svg")
	check "the directory's timeline: a lane per process, the sum's peak is the summary's" \
		'[ "$rc" = 0 ] && [ "$(lanes "$dir/jobt.svg")" = "$n" ] && json "$out.json" "d[\"peak_bytes\"] == $(sum_peak "$dir/jobt.svg")"'
	check "the program's owners held the job's peak (its runs do not overlap)" \
		'json "$out.json" "{o[\"label\"]: o[\"bytes\"] for o in d[\"peak_owners\"]}.get(\"model/layer2\") == 20000 and sum(p[\"name\"] == \"profprog\" for p in d[\"processes\"]) == 2"'
fi
clitest_done test_report_processes
