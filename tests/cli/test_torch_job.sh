#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_torch_job.sh - a two-rank PyTorch job (torch.distributed
# over gloo on the loopback, CPU tensors; tests/programs/torch_ranks.py)
# under `alloy run --trace DIR/%p.trace`: its result is the one it gives
# without alloy, each rank's process is in the job's report with the
# 4 MiB tensor it holds, both at once at the peak of the sum, and the
# directory draws as one timeline with a lane per process.
set -u
. "$(dirname "$0")/clitest.sh"
. "$(dirname "$0")/fronttest.sh"
front_require
py=/usr/bin/python3
if ! "$py" -c 'import torch.distributed as d; assert d.is_available() and d.is_gloo_available()' 2>/dev/null; then
	echo "skipped: python3-torch with gloo not installed (apt-get install python3-torch)"
	exit 77
fi
clitest_scratch
prog=$(cd "$(dirname "$0")/../programs" && pwd)/torch_ranks.py
held=4194304 # each rank's tensor, bytes

# The job without alloy, beside the one under alloy run (each finds a
# port of its own): the result to compare with, and whether gloo can
# bind on this machine at all.
timeout 150 "$py" "$prog" >"$dir/plain.out" 2>"$dir/plain.err" &
plain=$!
mkdir "$dir/job"
LD_LIBRARY_PATH=$PWD/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
	timeout 200 "$ALLOY" run --trace "$dir/job/%p.trace" -- \
	"$py" "$prog" >"$dir/alloy.out" 2>"$dir/alloy.err"
rc=$?
wait "$plain"
plain_rc=$?
if [ "$plain_rc" = 3 ]; then
	echo "skipped: gloo cannot bind on 127.0.0.1 here: $(tail -1 "$dir/plain.err")"
	exit 77
fi
out=$dir/plain.out err=$dir/plain.err
check "the job runs without alloy: two ranks, the all_reduce's sum" \
	'[ "$plain_rc" = 0 ] && [ "$(grep -c "sum 1498500.0 first 0.0 3.0 6.0 9.0" "$out")" = 2 ]'
out=$dir/alloy.out err=$dir/alloy.err
check "under alloy run: the same result, rank for rank" \
	'[ "$rc" = 0 ] && [ "$(sed "s/ pid [0-9]*//" "$dir/alloy.out")" = "$(sed "s/ pid [0-9]*//" "$dir/plain.out")" ]'

pids=$(sed -n 's/^rank [0-9] pid \([0-9]*\) .*/\1/p' "$dir/alloy.out" | tr '\n' ' ')
out=$dir/out err=$dir/err
rc=$(run report "$dir/job" --format json)
cp "$out" "$dir/job.json"
check "the report reads the directory as one job, the ranks among its processes" \
	'[ "$rc" = 0 ] && json "$out" "len(d[\"processes\"]) >= 3 and all(p in [q[\"pid\"] for q in d[\"processes\"]] for p in [int(x) for x in \"$pids\".split()]) and len(\"$pids\".split()) == 2"'
check "alloy counted each rank's blocks: its 4 MiB tensor and more" \
	'json "$out" "all(q[\"peak_bytes\"] > $held for q in d[\"processes\"] if str(q[\"pid\"]) in \"$pids\".split())"'
check "both ranks hold their tensors at once (the barrier): the sum's peak has both" \
	'json "$out" "d[\"peak_bytes\"] >= 2 * $held and sum(q[\"at_job_peak_bytes\"] >= $held for q in d[\"processes\"] if str(q[\"pid\"]) in \"$pids\".split()) == 2"'
nproc=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["processes"]))' "$dir/job.json")
peak=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["peak_bytes"])' "$dir/job.json")
rc=$(run report "$dir/job" --format html -o "$dir/job.html")
check "the job's timeline: a lane per process, the sum's lane at the summary's peak" \
	'[ "$rc" = 0 ] && [ "$(grep -c "<g class=\"lane\" " "$dir/job.html")" = "$nproc" ] && grep -q "<g class=\"lane sum\" [^>]*data-peak=\"$peak\"" "$dir/job.html"'
clitest_done test_torch_job
