#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_torch_viewer.sh - PyTorch's own memory viewer
# (torch.cuda._memory_viz, Debian's python3-torch) on alloy's snapshots:
# `stats` runs and its totals are alloy's; `segments` and `memory` turn
# every byte into a flame graph line.  Those two hand their lines to
# FlameGraph's flamegraph.pl at /tmp/UID_flamegraph.pl, which they fetch
# from the network when it is not there: without it they are called from
# Python with the lines kept instead of drawn.
set -u
. "$(dirname "$0")/clitest.sh"
srcdir=${srcdir:-.}
if ! /usr/bin/python3 -c "import torch.cuda._memory_viz" 2>/dev/null; then
	echo "skipped: python3-torch not installed"
	exit 77
fi
clitest_scratch
tr=$srcdir/traces/transformer_step.trace

rc=$(run report "$tr" --format torch-snapshot -o "$dir/s.pickle")
check "torch-snapshot exits 0" '[ "$rc" = 0 ]'
set -- $(sed -n 's/.*: \([0-9]*\) segments, reserved \([0-9]*\) bytes, allocated \([0-9]*\) bytes.*inactive \([0-9]*\) bytes$/\1 \2 \3 \4/p' "$err")
segs=${1:-x} reserved=${2:-x} allocated=${3:-x} inactive=${4:-x}
/usr/bin/python3 -W ignore -m torch.cuda._memory_viz stats "$dir/s.pickle" >"$out" 2>"$err"
st=$?
check "PyTorch's viewer runs stats on it" '[ "$st" = 0 ]'
cat >"$dir/bytes.py" <<'PY'
import ast, re, sys
text = open(sys.argv[1]).read()
unit = {"": 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
# Bytes print as 6.5GiB: one decimal, so compare within half a unit.
def val(key):
    m = re.search(r"'%s': ([0-9.]+)(\w*)B" % key, text)
    return (float(m.group(1)), unit[m.group(2)]) if m else (0.0, 1)
def near(key, n):
    v, u = val(key)
    return abs(v * u - int(n)) <= 0.05 * u + 1
segs = re.search(r"'segments': (\d+)", text)
ok = (segs and segs.group(1) == sys.argv[2] and near("total_size", sys.argv[3])
      and near("active_allocated", sys.argv[4]) and near("inactive", sys.argv[5]))
sys.exit(0 if ok else 1)
PY
check "its segments, total size, allocated and inactive are alloy's" \
	'/usr/bin/python3 "$dir/bytes.py" "$out" "$segs" "$reserved" "$allocated" "$inactive"'

# The viewer's own segments() and memory(): every byte of every segment
# in a line, and the demo's frames in the lines of its blocks.
ALLOY_CONF=backtrace:1 "$ALLOY" demo --quick --out "$dir/demo" >/dev/null 2>&1
run report "$dir/demo/trace.alloy" --format torch-snapshot -o "$dir/d.pickle" >/dev/null
cat >"$dir/lines.py" <<'PY'
import pickle, sys
import torch.cuda._memory_viz as viz
snap = pickle.load(open(sys.argv[1], "rb"))
keep = lambda lines: lines
for fn in (viz.segments, viz.memory):
    lines = fn(snap, format_flamegraph=keep).splitlines()
    total = sum(int(l.rsplit(" ", 1)[1]) for l in lines)
    assert total == sum(s["total_size"] for s in snap), fn.__name__
    print(fn.__name__, total, any("demo_net.c" in l for l in lines))
PY
/usr/bin/python3 -W ignore "$dir/lines.py" "$dir/s.pickle" >"$out" 2>"$err"
check "segments() and memory() account for every reserved byte" \
	'grep -q "^segments $reserved " "$out" && grep -q "^memory $reserved " "$out"'
/usr/bin/python3 -W ignore "$dir/lines.py" "$dir/d.pickle" >"$out" 2>"$err"
check_stacks "the demo's blocks show the frames that made them" 'grep -q "^memory [0-9]* True" "$out"'
fg=/tmp/$(id -u)_flamegraph.pl
if [ -x "$fg" ]; then
	for what in segments memory; do
		/usr/bin/python3 -W ignore -m torch.cuda._memory_viz $what "$dir/s.pickle" -o "$dir/$what.svg" >"$out" 2>"$err"
		st=$?
		check "the viewer draws $what" '[ "$st" = 0 ] && grep -q "<svg" "$dir/$what.svg"'
	done
else
	echo "test_torch_viewer: $fg absent: segments and memory checked without drawing"
fi
clitest_done test_torch_viewer
