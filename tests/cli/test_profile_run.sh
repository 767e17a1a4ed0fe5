#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_profile_run.sh - the profiler on a program nobody here wrote:
# a NumPy script under `alloy run --conf backtrace:1 --trace`.  It prints
# the same as without alloy, and `alloy report --at peak` finds its one
# 8 MiB array as the widest site, one block of exactly 8388608 bytes, in
# NumPy's extension called from the interpreter (which proves alloy's
# front served it: without the front the trace would hold nothing of
# NumPy's).  Then the same script with `with alloy.owner("hold"):` gives
# that array to the owner "hold", and the flame graph page of the run
# names NumPy's object.  Skipped (exit 77) without the Python module,
# NumPy or libunwind.  Run from the build directory (make check does).
set -u
. "$(dirname "$0")/sanitizer.sh"
if sanitizer_build; then
	echo "skipped: a sanitizer build (alloy run cannot preload it)"
	exit 77
fi
py=./python/uninstalled
if [ ! -x "$py" ]; then
	echo "skipped: built without the Python module (see configure's python line)"
	exit 77
fi
if ! "$py" -c 'import numpy' >/dev/null 2>&1; then
	echo "skipped: no NumPy for the module's interpreter (apt-get install python3-numpy)"
	exit 77
fi
. "$(dirname "$0")/clitest.sh"
if ! clitest_stacks; then
	echo "skipped: built without libunwind (the checks are of the script's call stacks, backtrace:1)"
	exit 77
fi
clitest_scratch

# The array is made in a function of the script and held past the peak.
cat >"$dir/hold.py" <<'EOF'
import numpy as np
def hold():
    return np.ones(1 << 20)    # 8 MiB of float64
x = hold()
print(x.sum(), x.nbytes)
EOF
"$py" "$dir/hold.py" >"$dir/plain.out" 2>"$err"
check "the script runs without alloy" '[ $? = 0 ] && [ "$(cat "$dir/plain.out")" = "1048576.0 8388608" ]'
rc=$(run run --conf backtrace:1 --trace "$dir/py.trace" -- "$py" "$dir/hold.py")
check "under alloy run it prints the same" '[ "$rc" = 0 ] && cmp -s "$out" "$dir/plain.out"'

rc=$(run report "$dir/py.trace" --at peak --format json -o "$dir/py.json")
check "report --at peak reads the run's trace" '[ "$rc" = 0 ]'
# The widest site: the array, from NumPy's extension, called from the
# interpreter's evaluation loop (named from python3's symbol table).
widest='d["devices"][0]["sites"][0]'
check "the widest site at the peak is the array: 8388608 bytes in 1 block" \
	'json "$dir/py.json" "$widest[\"bytes\"] == 8388608 and $widest[\"blocks\"] == 1"'
check "its innermost frame is in NumPy's _multiarray_umath" \
	'json "$dir/py.json" "\"/_multiarray_umath\" in $widest[\"stack\"][0][\"module\"]"'
check "the interpreter's evaluation loop is among its callers" \
	'json "$dir/py.json" "any(f[\"function\"] == \"_PyEval_EvalFrameDefault\" for f in $widest[\"stack\"])"'
check "the peak holds the interpreter's own blocks too (the front served them)" \
	'json "$dir/py.json" "d[\"devices\"][0][\"blocks\"] > 100"'

# The same run with every stack walked by libunwind: alloy's own walk of
# the unwind tables (the default) must give the very same site, frame for
# frame (object and offset or name; the addresses move with ASLR),
# through CPython, NumPy and libc.
rc=$(run run --conf backtrace:1,unwinder:libunwind --trace "$dir/lu.trace" -- "$py" "$dir/hold.py")
check "with unwinder:libunwind it prints the same" '[ "$rc" = 0 ] && cmp -s "$out" "$dir/plain.out"'
rc=$(run report "$dir/lu.trace" --at peak --format json -o "$dir/lu.json")
check "the widest site's stack is the same by libunwind, frame for frame" \
	'[ "$rc" = 0 ] && python3 -c "import json,sys; a, b = (json.load(open(f))[\"devices\"][0][\"sites\"][0] for f in sys.argv[1:]); sys.exit(0 if a[\"bytes\"] == b[\"bytes\"] and len(a[\"stack\"]) > 5 and [(f[\"module\"], f[\"name\"]) for f in a[\"stack\"]] == [(f[\"module\"], f[\"name\"]) for f in b[\"stack\"]] else 1)" "$dir/py.json" "$dir/lu.json"'

rc=$(run report "$dir/py.trace" --format flamegraph -o "$dir/py.html")
check "the flame graph page of the run names NumPy's object" \
	'[ "$rc" = 0 ] && grep -q "_multiarray_umath" "$dir/py.html"'

# The script's own name for the array: an owner label from alloy's module,
# imported by a program that runs under the front.
cat >"$dir/owned.py" <<'EOF'
import alloy
import numpy as np
def hold():
    with alloy.owner("hold"):
        return np.ones(1 << 20)
x = hold()
print(x.sum(), x.nbytes)
EOF
rc=$(run run --conf backtrace:1 --trace "$dir/owned.trace" -- "$py" "$dir/owned.py")
check "the script with alloy.owner runs under alloy run" '[ "$rc" = 0 ] && cmp -s "$out" "$dir/plain.out"'
rc=$(run report "$dir/owned.trace" --at peak --format json -o "$dir/owned.json")
check "owner \"hold\" holds the array at the peak: 8388608 bytes, 1 block" \
	'[ "$rc" = 0 ] && json "$dir/owned.json" "[(o[\"bytes\"], o[\"blocks\"]) for o in d[\"devices\"][0][\"owners\"] if o[\"owner\"] == \"hold\"] == [(8388608, 1)]"'

clitest_done test_profile_run
