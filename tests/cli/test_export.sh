#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_export.sh - the exports other tools read, on the trace of
# tests/programs/profprog (34089 bytes live at its peak, known sites):
#
#  - `--format perfetto`: Chrome trace-event JSON.  Its structure is
#    checked event by event (a process name, counter events with a time
#    and a byte count, times never going back on a track; owners as
#    slices, nested and closed on their thread), the track of
#    all bytes peaks at the trace's peak and ends at what was live at
#    the end, and on a trace of 65,000 allocations the tracks stay
#    bounded in size with the peak still exact;
#  - `--format pprof`: a gzipped profile that `go tool pprof -top` reads,
#    with the peak's bytes by function (inuse_space), every allocation
#    up to it (alloc_space) and, with --at, a later moment.  Skipped
#    where go is missing (apt-get install golang-go) or alloy was built
#    without libprotobuf-c, protoc-c or zlib.
#
# Run from the build directory (make check does).
set -u
. "$(dirname "$0")/clitest.sh"
clitest_scratch

ALLOY_CONF="trace:$dir/p.trace,backtrace:1" ./tests/programs/profprog >"$out" 2>"$err"
check "profprog traced" '[ $? = 0 ]'
rc=$(run report "$dir/p.trace" --format json -o "$dir/sum.json")
peak=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["all"]["peak_bytes"])' "$dir/sum.json")
check "the trace's peak is profprog's 34089 bytes" '[ "$rc" = 0 ] && [ "$peak" = 34089 ]'

# ---- perfetto -------------------------------------------------------------
cat >"$dir/check_perfetto.py" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
peak, live_end, max_samples = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ev = d["traceEvents"]
assert isinstance(ev, list) and ev, "traceEvents: a list of events"
assert d["displayTimeUnit"] == "ns"
names = [e for e in ev if e["ph"] == "M"]
assert any(e["name"] == "process_name" and e["args"]["name"] for e in names), "a process name"
tracks, open_, last, opened = {}, {}, {}, set()
for e in ev:
    assert e["ph"] in ("M", "C", "B", "E"), e
    assert isinstance(e["pid"], int) and e["pid"] > 0, e
    assert isinstance(e["name"], str) and e["name"], e
    if e["ph"] in ("B", "E"):
        # Slices: on a thread, nested, in time order, each closed.
        assert isinstance(e["tid"], int) and e["tid"] > 0, e
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        k = (e["pid"], e["tid"])
        assert e["ts"] >= last.get(k, 0), ("time goes back", e)
        last[k] = e["ts"]
        st = open_.setdefault(k, [])
        if e["ph"] == "B":
            st.append(e["name"])
            opened.add(e["name"])
        else:
            assert st and st.pop() == e["name"], ("unbalanced", e)
        continue
    if e["ph"] != "C":
        continue
    assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
    b = e["args"]["bytes"]
    assert isinstance(b, int) and b >= 0, e
    tracks.setdefault(e["name"], []).append((e["ts"], b))
assert "live bytes: all" in tracks, sorted(tracks)
assert any(n.startswith("live bytes: default cpu:0") for n in tracks), sorted(tracks)
for n, s in tracks.items():
    assert all(a[0] <= b[0] for a, b in zip(s, s[1:])), "time goes back on " + n
    assert len(s) <= max_samples, (n, len(s))
a = tracks["live bytes: all"]
assert max(b for _, b in a) == peak == d["otherData"]["peak_bytes"], (max(b for _, b in a), peak)
assert a[-1][1] == live_end, (a[-1], live_end)
assert all(not st for st in open_.values()), ("slices left open", open_)
want = set(sys.argv[5].split(",")) if len(sys.argv) > 5 else set()
assert want <= opened, ("owner slices", sorted(opened))
print(len(ev))
PY
rc=$(run report "$dir/p.trace" --format perfetto -o "$dir/p.json")
check "perfetto: written" '[ "$rc" = 0 ]'
check "perfetto: trace-event JSON, a track per allocator and one for all, peaking at 34089" \
	'python3 "$dir/check_perfetto.py" "$dir/p.json" 34089 0 100000 model,layer1,layer2 >"$out" 2>"$err"'
cat >"$dir/nesting.py" <<'PY'
import json, sys
st, parent = [], {}
for e in json.load(open(sys.argv[1]))["traceEvents"]:
    if e["ph"] == "B":
        parent[e["name"]] = st[-1] if st else None
        st.append(e["name"])
    elif e["ph"] == "E":
        st.pop()
sys.exit(parent != {"model": None, "fc1_w": "model", "layer1": "model", "layer2": "model"})
PY
check "perfetto: profprog's owners as slices, model/layer1 inside model" \
	'python3 "$dir/nesting.py" "$dir/p.json"'
rc=$(run report "$dir/p.trace" --format perfetto --at peak)
check "perfetto with --at is a usage error" '[ "$rc" = 2 ] && grep -q "perfetto" "$err"'

# A trace of 65,538 allocations: at most two samples a track in each of
# 20,000 parts of its time, the peak still exact.
ALLOY_CONF="trace:$dir/d.trace" ./tests/programs/deep_prog >"$out" 2>"$err"
run report "$dir/d.trace" --format json -o "$dir/dsum.json" >/dev/null
dpeak=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["all"]["peak_bytes"])' "$dir/dsum.json")
rc=$(run report "$dir/d.trace" --format perfetto -o "$dir/d.json")
check "perfetto of 65,538 allocations: bounded tracks, the peak ($dpeak bytes) exact" \
	'[ "$rc" = 0 ] && python3 "$dir/check_perfetto.py" "$dir/d.json" "$dpeak" 0 40002 >"$out" 2>"$err"'

# ---- pprof ----------------------------------------------------------------
conf_h=$(dirname "$ALLOY")/config.h
if [ -f "$conf_h" ] && ! grep -q '^#define HAVE_PPROF 1' "$conf_h"; then
	rc=$(run report "$dir/p.trace" --format pprof -o "$dir/p.pb.gz")
	check "pprof in a build without it: one clear line, exit 1" \
		'[ "$rc" = 1 ] && grep -q "built without libprotobuf-c" "$err"'
	clitest_done test_export
	echo "skipped: the pprof checks (built without libprotobuf-c, protoc-c or zlib)"
	exit $([ "$fail" = 0 ] && echo 77 || echo 1)
fi
rc=$(run report "$dir/p.trace" --format pprof -o "$dir/p.pb.gz")
check "pprof: written, gzip" \
	'[ "$rc" = 0 ] && [ "$(head -c 2 "$dir/p.pb.gz" | od -An -tx1 | tr -d " ")" = 1f8b ]'
if ! command -v go >/dev/null 2>&1; then
	clitest_done test_export
	echo "skipped: the checks with go tool pprof (apt-get install golang-go)"
	exit $([ "$fail" = 0 ] && echo 77 || echo 1)
fi
pprof() { # profile, options...
	f=$1
	shift
	HOME=$dir GOCACHE=$dir/gocache GOFLAGS= timeout 120 go tool pprof -top "$@" "$f" >"$out" 2>"$err"
}
pprof "$dir/p.pb.gz" -unit=byte -sample_index=inuse_space
check "go tool pprof reads it: 34089 bytes in use at the peak" \
	'grep -q "of 34089B total" "$out"'
check_stacks "the peak's sites by function: make_activations 20000, make_weights 12288" \
	'grep -Eq "^ +20000B .* make_activations$" "$out" && grep -Eq "^ +12288B .* make_weights$" "$out" && grep -Eq "^ +777B .* scratch_buffer$" "$out"'
pprof "$dir/p.pb.gz" -sample_index=inuse_objects
check "inuse_objects: 7 blocks at the peak" 'grep -q "of 7 total" "$out"'
pprof "$dir/p.pb.gz" -unit=byte -sample_index=alloc_space
check "alloc_space: every allocation up to the peak, 34089 bytes" \
	'grep -q "of 34089B total" "$out"'
pprof "$dir/p.pb.gz" -unit=byte -sample_index=inuse_space -tagfocus=owner=model/layer2
check "the owner is a tag: model/layer2 holds 20000 bytes" \
	'grep -q "accounting for 20000B, 58.67% of 34089B total" "$out"'
check_stacks "... all of it from make_activations" \
	'grep -Eq "^ +20000B .* make_activations$" "$out" && ! grep -q make_weights "$out"'
# The end: everything freed, 100 more bytes allocated after the peak.
end_ns=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["duration_ns"])' "$dir/sum.json")
rc=$(run report "$dir/p.trace" --format pprof --at "$end_ns" -o "$dir/end.pb.gz")
pprof "$dir/end.pb.gz" -unit=byte -sample_index=alloc_space
check "--at the end: alloc_space counts the 100 bytes after the peak" \
	'[ "$rc" = 0 ] && grep -q "of 34189B total" "$out"'
pprof "$dir/end.pb.gz" -unit=byte -sample_index=inuse_space
check "--at the end: nothing in use" 'grep -q "Total samples = 0 *$" "$out"'
# Without call stacks every byte is under one "unknown" frame.
ALLOY_CONF="trace:$dir/n.trace" ./tests/programs/profprog >"$out" 2>"$err"
rc=$(run report "$dir/n.trace" --format pprof -o "$dir/n.pb.gz")
pprof "$dir/n.pb.gz" -unit=byte
check "a trace without stacks: 34089 bytes under \"unknown\"" \
	'[ "$rc" = 0 ] && grep -Eq "^ +34089B +100% .* unknown \(no call stack recorded: backtrace:1\)$" "$out"'
rc=$(run report "$dir/p.trace" --format pprof --at 99999s -o "$dir/x.pb.gz")
check "pprof --at past the end: exit 1, the file not written" \
	'[ "$rc" = 1 ] && grep -q "past the end" "$err" && [ ! -e "$dir/x.pb.gz" ]'
clitest_done test_export
