#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_pyframes.sh - Python's frames in the call stacks: a
# NumPy script with known functions run under `python3 -m alloy` with
# backtrace:1 and a trace.  The widest site at the peak is NumPy's array
# made by make_layer() called from a list comprehension in build(): its
# stack holds NumPy's native frames innermost, then make_layer, the
# comprehension, build and the module at their lines, then the
# interpreter's native frames that run the script (exec), then runpy's
# Python frames; an array made in a worker thread shows the worker's
# function and threading's.  The text report, the flame graph, pprof and
# a compressed trace name them too; python_frames:0 shows none.  Then
# leaks: alloy.leaks(since=mark) finds the line of a loop that keeps an
# array per iteration, and none for a loop that keeps nothing, and
# `python3 -m alloy --leaks` lists that line at exit.  Skipped (exit
# 77) without the Python module, NumPy, CPython 3.11 or libunwind.  Run
# from the build directory (make check does).
set -u
py=./python/uninstalled
if [ ! -x "$py" ]; then
	echo "skipped: built without the Python module (see configure's python line)"
	exit 77
fi
if ! "$py" -c 'import numpy' >/dev/null 2>&1; then
	echo "skipped: no NumPy for the module's interpreter (apt-get install python3-numpy)"
	exit 77
fi
if ! "$py" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
	echo "skipped: Python's frames are read for CPython 3.11 only"
	exit 77
fi
. "$(dirname "$0")/clitest.sh"
if ! clitest_stacks; then
	echo "skipped: built without libunwind (Python's frames go into call stacks, backtrace:1)"
	exit 77
fi
clitest_scratch

cat >"$dir/layers.py" <<'EOF'
import threading
import numpy as np
def make_layer():
    return np.zeros(1 << 20)
def build():
    return [make_layer() for _ in range(4)]
def worker(out):
    out.append(np.ones(1 << 19))
layers = build()
out = []
t = threading.Thread(target=worker, args=(out,))
t.start()
t.join()
print(len(layers), len(out))
EOF

rc=$("$py" -m alloy --conf backtrace:1,trace:"$dir/t.trace" "$dir/layers.py" >"$out" 2>"$err"; echo $?)
check "the script runs under python3 -m alloy with backtrace:1" '[ "$rc" = 0 ] && [ "$(cat "$out")" = "4 1" ]'
rc=$(run report "$dir/t.trace" --at peak --format json -o "$dir/t.json")
check "report --at peak reads the trace" '[ "$rc" = 0 ]'

# The stack of the widest site, as (function, file's base, line, module).
stack='[(f["function"], (f["file"] or "").split("/")[-1], f["line"], (f["module"] or "").split("/")[-1]) for f in d["devices"][0]["sites"][0]["stack"]]'
cat >"$dir/order.py" <<EOF
import json, sys
d = json.load(open(sys.argv[1]))
s = $stack
names = [f[0] for f in s]
def at(name, line):
    return [i for i, f in enumerate(s) if f[0] == name and f[1] == "layers.py" and f[2] == line]
assert d["devices"][0]["sites"][0]["bytes"] == 4 * 8388608, d["devices"][0]["sites"][0]["bytes"]
ml, lc, bd, mo = at("make_layer", 4), at("build.<locals>.<listcomp>", 6), at("build", 6), at("<module>", 9)
assert ml and lc and bd and mo, s
# innermost first: native frames (NumPy's, the call), then the script's functions
assert ml[0] + 1 == lc[0] and lc[0] + 1 == bd[0] and bd[0] + 1 == mo[0], s
assert ml[0] > 0 and "_multiarray_umath" in s[0][3] and all(f[3] for f in s[:ml[0]]), s
# outside the script: exec's native frames, then runpy's Python frames
run = [i for i, f in enumerate(s) if f[0] == "_run_code" and "runpy" in f[1]]
assert run and any(f[3].startswith("python3") for f in s[mo[0] + 1:run[0]]), s
assert "_PyEval_EvalFrameDefault" not in names, s
EOF
check "the widest site: NumPy, make_layer:4, <listcomp>:6, build:6, <module>:9, exec, runpy, in order" \
	'python3 "$dir/order.py" "$dir/t.json" 2>"$dir/order.err"'

cat >"$dir/thread.py" <<EOF
import json, sys
d = json.load(open(sys.argv[1]))
sites = d["devices"][0]["sites"]
w = [s for s in sites if s["bytes"] == 4194304]
assert w, [s["bytes"] for s in sites]
f = [(x["function"], (x["file"] or "").split("/")[-1], x["line"]) for x in w[0]["stack"]]
assert ("worker", "layers.py", 8) in f and ("Thread.run", "threading.py") in [x[:2] for x in f], f
assert [x[0] for x in f].index("worker") < [x[0] for x in f].index("Thread.run"), f
EOF
check "the worker thread's array: worker:8 called from threading's Thread.run" \
	'python3 "$dir/thread.py" "$dir/t.json" 2>"$dir/thread.err"'

rc=$(run report "$dir/t.trace" --at peak)
check "the text report names make_layer (layers.py:4) and build (layers.py:6)" \
	'[ "$rc" = 0 ] && grep -q "< build (layers.py:6)" "$out" && grep -q "make_layer (layers.py:4)" "$out"'
rc=$(run report "$dir/t.trace" --format flamegraph -o "$dir/f.html")
check "the flame graph has make_layer and build" \
	'[ "$rc" = 0 ] && grep -q "make_layer" "$dir/f.html" && grep -q "\"build\"" "$dir/f.html"'
rc=$(run report "$dir/t.trace" --format pprof -o "$dir/p.pb.gz")
if [ "$rc" = 0 ]; then
	check "the pprof profile names make_layer and layers.py" \
		'gzip -dc "$dir/p.pb.gz" | grep -aq make_layer && gzip -dc "$dir/p.pb.gz" | grep -aq "layers.py"'
fi
check "the trace declares the functions (c) and their nodes (p), version 4" \
	'head -n1 "$dir/t.trace" | grep -q "^alloy-trace 4 " && grep -q "^c [0-9]* make_layer .*layers.py$" "$dir/t.trace" && grep -q "^p [0-9]* [0-9]* [0-9]* 4$" "$dir/t.trace"'

# The same, compressed.
rc=$("$py" -m alloy --conf backtrace:1,trace:"$dir/t.trace.zst" "$dir/layers.py" >"$out" 2>"$err"; echo $?)
if [ "$rc" = 0 ]; then
	rc=$(run report "$dir/t.trace.zst" --at peak --format json -o "$dir/z.json")
	check "a compressed trace has the same stack" \
		'[ "$rc" = 0 ] && python3 "$dir/order.py" "$dir/z.json"'
elif grep -q "zstd" "$err"; then
	echo "test_pyframes: skipped: the compressed trace (built without zstd)"
else
	check "the script runs with a compressed trace" false
fi

# python_frames:0: native frames only.
rc=$("$py" -m alloy --conf backtrace:1,python_frames:0,trace:"$dir/n.trace" "$dir/layers.py" >"$out" 2>"$err"; echo $?)
rc2=$(run report "$dir/n.trace" --at peak --format json -o "$dir/n.json")
check "python_frames:0: no Python frame, the evaluation loop instead" \
	'[ "$rc" = 0 ] && [ "$rc2" = 0 ] && ! grep -q "^[cp] " "$dir/n.trace" && json "$dir/n.json" "not any((f[\"file\"] or \"\").endswith(\".py\") for s in d[\"devices\"][0][\"sites\"] for f in s[\"stack\"]) and any(f[\"function\"] == \"_PyEval_EvalFrameDefault\" for f in d[\"devices\"][0][\"sites\"][0][\"stack\"])"'

# Leaks of a loop: one keeps an array per iteration at line 8, one not.
cat >"$dir/loop.py" <<'EOF'
import alloy
import numpy as np
kept = []
def step(i, keep):
    a = np.full(1000, i)
    b = a * 2
    if keep:
        kept.append(np.zeros(1000))
    return float(b.sum())
def loop(keep):
    m = alloy.mark()
    for i in range(200):
        step(i, keep)
    return alloy.leaks(since=m)
flat, leaky = loop(False), loop(True)
print(sum(r["bytes"] for r in flat))
top = leaky[0]
print(top["file"].split("/")[-1], top["line"], top["function"], top["blocks"], top["bytes"])
EOF
rc=$("$py" -m alloy --conf backtrace:1,report:"$dir/r.txt" "$dir/loop.py" >"$out" 2>"$err"; echo $?)
check "leaks(since=mark): a flat loop keeps nothing" '[ "$rc" = 0 ] && [ "$(sed -n 1p "$out")" = 0 ]'
check "leaks(since=mark): the leaky loop's top line is step's line 8, 200 arrays of 8000 bytes" \
	'[ "$(sed -n 2p "$out")" = "loop.py 8 step 200 1600000" ]'

cat >"$dir/leak2.py" <<'EOF'
import numpy as np
kept = []
for i in range(50):
    x = np.ones(2000)
    kept.append(np.ones(1000))
EOF
rc=$("$py" -m alloy --leaks "$dir/leak2.py" >"$out" 2>"$err"; echo $?)
check "python3 -m alloy --leaks lists line 5 with its 50 arrays at exit" \
	'[ "$rc" = 0 ] && grep -q "^ *400000 *50  .*leak2.py:5 <module>$" "$err"'
check "... and line 4, whose arrays were freed, with only its last" \
	'grep -q "^ *16000 *1  .*leak2.py:4 <module>$" "$err" && [ "$(grep -c "leak2.py" "$err")" = 2 ]'

clitest_done test_pyframes
