#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_expandable.sh - expandable segments as a user meets them
# on the simulated device: the bundled traces replayed reserve at most 2%
# over what they allocate and make no device call once warm (alloy bench
# cuda), ALLOY_CONF turns them on for alloy replay, and the torch snapshot
# shows the expandable segments.
set -u
. "$(dirname "$0")/clitest.sh"
srcdir=${srcdir:-.}
if ! /usr/bin/python3 -c "import json" 2>/dev/null; then
	echo "skipped: no /usr/bin/python3 to read the JSON"
	exit 77
fi
clitest_scratch

rc=$(ALLOY_TRACES_DIR="$srcdir/traces" run bench --quick --json cuda)
check "alloy bench cuda runs" '[ "$rc" = 0 ]'
cat >"$dir/goals.py" <<'PY'
import json, sys
res = {r["metric"]: r for r in json.load(open(sys.argv[1]))["results"]}
bad = []
for t in ("transformer_step", "resnet_step", "varlen_step"):
    frag = res["expandable, %s: fragmentation reserved/allocated" % t]["value"]
    calls = res["expandable, %s: device calls, repetitions 2-5" % t]["value"]
    fixed = res["%s: fragmentation reserved/allocated" % t]["value"]
    if not (frag <= 1.02 and calls == 0 and frag <= fixed):
        bad.append((t, frag, calls, fixed))
print(bad)
sys.exit(1 if bad else 0)
PY
check "expandable: every trace reserves <= 1.02 x allocated, no device call once warm" \
	'/usr/bin/python3 "$dir/goals.py" "$out" >"$dir/goals.out"'

# alloy replay with the option from ALLOY_CONF.
tr=$srcdir/traces/varlen_step.trace
ALLOY_CONF=cuda_caching_sim.expandable_segments:1 "$ALLOY" replay "$tr" --allocator cuda_caching_sim --repeat 3 --json >"$out" 2>"$err"
st=$?
check "replay with expandable_segments:1 reserves <= 1.02 x allocated" \
	'[ "$st" = 0 ] && /usr/bin/python3 -c "import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(not d[\"max_reserved_bytes\"] <= 1.02 * d[\"peak_requested_bytes\"])" "$out"'
ALLOY_CONF=cuda_caching_sim.expandable_segments:maybe "$ALLOY" replay "$tr" --allocator cuda_caching_sim >"$out" 2>"$err"
check "a bad value is named and ignored" 'grep -q "expandable_segments \"maybe\" must be 0 or 1" "$err"'

# The snapshot of the moment: expandable segments, fewer bytes reserved.
rc=$(run report "$tr" --format torch-snapshot -o "$dir/fixed.pickle")
rc2=$(run report "$tr" --format torch-snapshot --option expandable_segments:1 -o "$dir/exp.pickle")
cat >"$dir/cmp.py" <<'PY'
import pickle, sys
fixed = pickle.load(open(sys.argv[1], "rb"))
exp = pickle.load(open(sys.argv[2], "rb"))
ok = (all(s["is_expandable"] for s in exp) and not any(s["is_expandable"] for s in fixed)
      and len(exp) <= 4 and sum(s["total_size"] for s in exp) < sum(s["total_size"] for s in fixed)
      and sum(s["requested_size"] for s in exp) == sum(s["requested_size"] for s in fixed))
sys.exit(0 if ok else 1)
PY
check "the snapshot shows a few expandable segments holding less" \
	'[ "$rc" = 0 ] && [ "$rc2" = 0 ] && /usr/bin/python3 "$dir/cmp.py" "$dir/fixed.pickle" "$dir/exp.pickle"'
clitest_done test_expandable
