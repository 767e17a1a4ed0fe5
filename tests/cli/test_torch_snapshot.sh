#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_torch_snapshot.sh - `alloy report --format torch-snapshot`:
# the pickle read back by Python's own pickle, its segments tiled by their
# blocks, its totals those of the trace, frames where the trace has stacks,
# and bad requests refused.  PyTorch's viewer on it: test_torch_viewer.sh.
set -u
. "$(dirname "$0")/clitest.sh"
srcdir=${srcdir:-.}
if ! /usr/bin/python3 -c "import pickle" 2>/dev/null; then
	echo "skipped: no /usr/bin/python3 to read the pickle back"
	exit 77
fi
clitest_scratch
tr=$srcdir/traces/transformer_step.trace

# Reads the pickle; checks its shape; prints segments, reserved,
# allocated, requested, inactive and the frames' file names.
cat >"$dir/read.py" <<'PY'
import pickle, sys
snap = pickle.load(open(sys.argv[1], "rb"))
assert isinstance(snap, list)
seg_keys = {"device", "address", "total_size", "allocated_size", "active_size",
            "requested_size", "stream", "segment_type", "segment_pool_id",
            "is_expandable", "frames", "blocks"}
tot = dict(reserved=0, allocated=0, requested=0, inactive=0)
files = set()
for s in snap:
    assert set(s) == seg_keys, sorted(s)
    assert s["segment_type"] in ("small", "large")
    addr, alloc, active, req = s["address"], 0, 0, 0
    for b in s["blocks"]:
        assert b["address"] == addr, "blocks tile the segment"
        addr += b["size"]
        assert b["state"] in ("active_allocated", "active_pending_free", "inactive")
        if b["state"] == "active_allocated":
            alloc += b["size"]
            req += b["requested_size"]
            assert 0 < b["requested_size"] <= b["size"]
            assert b["history"][0]["real_size"] == b["requested_size"]
        if b["state"] != "inactive":
            active += b["size"]
        else:
            tot["inactive"] += b["size"]
        for f in b["frames"]:
            assert set(f) == {"filename", "line", "name"}
            files.add(f["filename"].split("/")[-1])
    assert addr == s["address"] + s["total_size"]
    assert (alloc, active, req) == (s["allocated_size"], s["active_size"], s["requested_size"])
    tot["reserved"] += s["total_size"]
    tot["allocated"] += alloc
    tot["requested"] += req
print(len(snap), tot["reserved"], tot["allocated"], tot["requested"], tot["inactive"],
      ",".join(sorted(files)) or "-")
PY
# read.py's figures into nseg, res, alloc, req, inact and files.
snap() {
	set -- $(/usr/bin/python3 "$dir/read.py" "$1" 2>/dev/null) x x x x x x
	nseg=$1 res=$2 alloc=$3 req=$4 inact=$5 files=$6
}

rc=$(run report "$tr" --format torch-snapshot -o "$dir/s.pickle")
check "torch-snapshot of the transformer trace exits 0" '[ "$rc" = 0 ] && [ -s "$dir/s.pickle" ]'
cp "$err" "$dir/totals"
/usr/bin/python3 "$dir/read.py" "$dir/s.pickle" >/dev/null 2>"$err"
st=$?
check "the pickle is a list of segments whose blocks tile them" '[ "$st" = 0 ]'
snap "$dir/s.pickle"
check "the totals on stderr are the pickle's" \
	'grep -q ": $nseg segments, reserved $res bytes, allocated $alloc bytes in [0-9]* blocks (requested $req bytes), inactive $inact bytes" "$dir/totals"'
run report "$tr" --format json >/dev/null
peak=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["all"]["peak_bytes"])' "$out" 2>/dev/null)
check "what the snapshot holds was requested is the trace's peak" '[ -n "$peak" ] && [ "$req" = "$peak" ]'
check "reserved holds the allocated, rounded blocks" '[ "$res" -ge "$alloc" ] && [ "$alloc" -ge "$req" ]'
rc=$(run replay "$tr" --allocator cuda_caching_sim --json)
maxres=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["max_reserved_bytes"])' "$out" 2>/dev/null)
check "the snapshot reserves what a replay reserves by then" '[ -n "$maxres" ] && [ "$res" -le "$maxres" ]'

# A moment by time: after the trace's first event (1 us) one block lives.
rc=$(run report "$tr" --format torch-snapshot --at 1us -o "$dir/t.pickle")
snap "$dir/t.pickle"
check "--at a time snapshots that moment" '[ "$rc" = 0 ] && [ "$req" = 102926336 ]'
rc=$(run report "$tr" --format torch-snapshot --at 10s -o "$dir/t.pickle")
check "--at past the end is refused" '[ "$rc" = 1 ] && grep -q "past the end" "$err"'

# Options of the replaying allocator: power-of-two rounding reserves
# blocks of fewer sizes; a bad option is named.
rc=$(run report "$tr" --format torch-snapshot --option roundup_power2_divisions:4 -o "$dir/r.pickle")
snap "$dir/r.pickle"
check "--option sets the replaying allocator's option" '[ "$rc" = 0 ] && [ "$req" = "$peak" ]'
rc=$(run report "$tr" --format torch-snapshot --option no_such:1 -o "$dir/r.pickle")
check "an unknown --option is refused by name" '[ "$rc" = 1 ] && grep -q "no_such" "$err"'
rc=$(run report "$tr" --option roundup_power2_divisions:4)
check "--option without torch-snapshot is a usage error" '[ "$rc" = 2 ]'
rc=$(run report "$tr" --format torch-snapshot --option novalue)
check "--option without a colon is a usage error" '[ "$rc" = 2 ]'

# Frames: the demo's trace with stacks names the demo's sources.  A
# trace with no CUDA blocks gives an empty list.
ALLOY_CONF=backtrace:1 "$ALLOY" demo --quick --out "$dir/demo" >"$out" 2>"$err"
rc=$(run report "$dir/demo/trace.alloy" --format torch-snapshot -o "$dir/d.pickle")
snap "$dir/d.pickle"
check "the demo's simulated GPU blocks are in the snapshot" '[ "$rc" = 0 ] && [ "$nseg" -ge 1 ]'
check_stacks "blocks carry the frames that made them" 'echo "$files" | grep -q "demo_net.c"'
printf 'alloy-trace 2 pid=1 clock=monotonic unit=ns\nT 1 1\nS 1 default cpu:0 64\na 10 1 1 1000 100\nend 40 1\n' >"$dir/cpu.trace"
rc=$(run report "$dir/cpu.trace" --format torch-snapshot -o "$dir/c.pickle")
check "a trace without CUDA blocks gives no segments" \
	'[ "$rc" = 0 ] && /usr/bin/python3 -c "import pickle, sys; sys.exit(pickle.load(open(sys.argv[1], \"rb\")) != [])" "$dir/c.pickle"'
clitest_done test_torch_snapshot
