#!/usr/bin/env bash
# Programs nobody here wrote, on alloy from Python, each compared with the
# same run without alloy (docs/PYTHON.md, "Tests against other code"):
#
#   1. NumPy's own numpy/core tests with alloy's handler process-wide
#      (python3 -m alloy) under cpu:default, cpu:jemalloc, cpu:mimalloc:
#      pass/skip/xfail/fail counts equal to NumPy's run on its own
#      allocator, and the exit report proves the arrays came through alloy;
#   2. a PyTorch CPU workload (an MLP, 100 steps, fixed seed) with and
#      without alloy as PyTorch's CPU allocator, on each backend: identical
#      losses, and the report shows torch's memory;
#   3. DLPack round trips alloy -> NumPy -> alloy and alloy -> torch ->
#      alloy on one buffer, with a leak report of 0 under report:.
#
#   scripts/python-clients.sh [--build DIR] [--slice full|ci] [--backends "default jemalloc mimalloc"]
#
# --slice ci runs the NumPy files that fit CI's time (see SLICES).  Exit 0
# when everything matched, 1 on a mismatch, 77 when the module or NumPy is
# missing.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
slice=full
backends="default jemalloc mimalloc"
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2; shift 2 ;;
	--slice) slice=$2; shift 2 ;;
	--backends) backends=$2; shift 2 ;;
	*) echo "python-clients: unknown option $1" >&2; exit 2 ;;
	esac
done
py=$build/python/uninstalled
if [ ! -x "$py" ]; then
	echo "skipped: $py missing (configure found no Python module to build)"
	exit 77
fi
py=$(cd "$build" && pwd)/python/uninstalled
npdir=$("$py" -c 'import numpy, os; print(os.path.dirname(numpy.__file__))' 2>/dev/null) || {
	echo "skipped: NumPy is not installed for $py"
	exit 77
}
tests=$npdir/core/tests

# Deselected in every run, alloy's or not, so the counts stay comparable:
#  - test_thread_locality asserts that a new thread starts with NumPy's
#    default handler; alloy.numpy.enable() covers new threads on purpose
#    (docs/PYTHON.md, "Threads"), so under alloy it fails by design.
#  - test_new_policy re-runs all of numpy.core and numpy.ma under a test
#    handler, but only when it starts from NumPy's default handler: in the
#    run without alloy, not in alloy's.  It passes either way; the rerun
#    is NumPy testing its own handler and costs most of the baseline.
# By name (-k), not --deselect: --deselect takes node ids relative to the
# rootdir pytest picks (numpy/core), and an absolute path there matches
# nothing, silently.  Each run's summary must say "2 deselected".
deselect=(-k "not test_thread_locality and not test_new_policy")
# A few of NumPy's tests skip themselves when MemAvailable is below what
# they need (6 GiB, 9 GB, 18 GB): on a shared machine that changes from
# run to run, and so would the counts.  One figure for every run: the
# caller's NPY_AVAILABLE_MEM, else MemAvailable now, at most 12 GB (the
# 18 GB tests stay skipped: the machine they run on is shared).
if [ -z "${NPY_AVAILABLE_MEM:-}" ]; then
	kb=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
	[ "$kb" -gt 11718750 ] && kb=11718750 # 12 GB
	export NPY_AVAILABLE_MEM="$kb kib"
fi

case $slice in
full) files="test_multiarray test_numeric test_indexing test_ufunc test_dlpack test_mem_policy test_regression" ;;
ci) files="test_indexing test_dlpack test_mem_policy test_regression" ;;
*) echo "python-clients: --slice full or ci" >&2; exit 2 ;;
esac
paths=()
for f in $files; do paths+=("$tests/$f.py"); done

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
say() { printf '%s\n' "$*"; }
bad() { say "MISMATCH: $*"; fail=1; }

# "3757 passed, 17 skipped, 13 xfailed, 3 warnings in ..." -> sorted counts
counts() {
	tail -n 1 "$1" | tr ',' '\n' | sed -n 's/^ *\([0-9][0-9]*\) \(passed\|failed\|skipped\|xfailed\|xpassed\|errors\?\)\b.*/\2=\1/p' |
		sed 's/^error=/errors=/' | sort | tr '\n' ' '
}

# The two tests named above, and only they, were left out of run $1.
deselected() {
	tail -n 1 "$1" | grep -q ' 2 deselected' ||
		bad "$1: not exactly the 2 tests deselected: $(tail -n 1 "$1")"
}

# The row of allocator $2 in the text report $1: "allocs frees"
report_row() {
	awk -v a="$2" '$1 == a && $2 ~ /^cpu:/ { print $6, $7 }' "$1"
}

pytest_args=(-q -rs -p no:cacheprovider -o addopts= "${deselect[@]}" "${paths[@]}")

# What run $1 skipped and run $2 did not, and the other way round.
skips_differ() {
	diff <(grep '^SKIPPED' "$1" | sort) <(grep '^SKIPPED' "$2" | sort) | grep '^[<>]' | head -20
}

say "=== NumPy's numpy/core tests ($slice: $files; NPY_AVAILABLE_MEM=$NPY_AVAILABLE_MEM)"
t0=$SECONDS
(cd "$out" && "$py" -m pytest "${pytest_args[@]}" >"$out/numpy.base" 2>&1) || true
base=$(counts "$out/numpy.base")
say "without alloy:          $base ($((SECONDS - t0)) s)"
[ -n "$base" ] || bad "no summary line in NumPy's own run: $(tail -n 3 "$out/numpy.base")"
deselected "$out/numpy.base"
for b in $backends; do
	rep=$out/report.$b
	t0=$SECONDS
	(cd "$out" && "$py" -m alloy --conf "cpu:$b,report:$rep" \
		-m pytest "${pytest_args[@]}" >"$out/numpy.$b" 2>&1) || true
	got=$(counts "$out/numpy.$b")
	deselected "$out/numpy.$b"
	row=$(report_row "$rep" "$b" 2>/dev/null || true)
	say "alloy cpu:$b: $got (allocs frees through $b: ${row:-none}; $((SECONDS - t0)) s)"
	if [ "$got" != "$base" ]; then
		bad "cpu:$b counts differ from NumPy's own run"
		skips_differ "$out/numpy.base" "$out/numpy.$b"
		grep -E '^(FAILED|ERROR) ' "$out/numpy.$b" | head -20
	fi
	[ -n "$row" ] && [ "${row%% *}" -gt 100000 ] ||
		bad "cpu:$b: the report does not show NumPy's arrays under $b"
done

say "=== PyTorch: an MLP trained 100 steps, with and without alloy, on each backend"
mlp=$PWD/scripts/torch-mlp.py
if "$py" -c 'import torch, alloy; assert alloy.torch.library()' 2>/dev/null; then
	"$py" "$mlp" >"$out/mlp.base"
	# On every backend: jemalloc's module once made libstdc++, loaded
	# with it, free torch's blocks on the wrong allocator.
	for b in $backends; do
		"$py" -m alloy --torch --no-numpy \
			--conf "cpu:$b,report:$out/report.mlp.$b" \
			"$mlp" >"$out/mlp.$b" 2>"$out/mlp.$b.err"
		if cmp -s "$out/mlp.base" "$out/mlp.$b"; then
			say "cpu:$b: losses identical over $(wc -l <"$out/mlp.base") steps (last: $(tail -n 1 "$out/mlp.$b"))"
		else
			bad "cpu:$b: PyTorch losses differ with alloy ($(tail -n 1 "$out/mlp.$b.err"))"
			diff "$out/mlp.base" "$out/mlp.$b" | head -5
		fi
		row=$(report_row "$out/report.mlp.$b" "$b")
		say "cpu:$b: torch's CPU tensors through alloy: allocs frees $row"
		[ -n "$row" ] && [ "${row%% *}" -gt 1000 ] ||
			bad "cpu:$b: the report does not show PyTorch's tensors"
	done
else
	say "skipped: PyTorch or alloy's adapter is missing"
fi

say "=== DLPack round trips on one buffer, deleters once"
cat >"$out/roundtrip.py" <<'EOF'
import gc, sys
import numpy as np
import alloy
for i in range(100):
    t = alloy.empty((256, 256), "float32")
    np.asarray(t)[...] = i
    a = np.from_dlpack(t)                       # alloy -> NumPy
    back = alloy.from_dlpack(np.asarray(t))     # NumPy -> alloy
    assert a.ctypes.data == back.data_ptr == t.data_ptr
    assert a[255, 255] == i
    if "torch" in sys.argv:
        import torch
        x = torch.from_dlpack(t)                # alloy -> torch
        again = alloy.from_dlpack(x)            # torch -> alloy
        assert x.data_ptr() == again.data_ptr == t.data_ptr
        del x, again
    del t, a, back
gc.collect()
print("100 round trips on one buffer each")
EOF
extra=
"$py" -c 'import torch' 2>/dev/null && extra=torch
"$py" -m alloy --no-numpy --conf "report:$out/report.rt" "$out/roundtrip.py" $extra
if grep -q "0 blocks, 0 bytes: no leaks" "$out/report.rt"; then
	say "leak report: 0 blocks ($(report_row "$out/report.rt" default) allocs frees)"
else
	bad "DLPack round trips left blocks live"
	cat "$out/report.rt"
fi

[ "$fail" = 0 ] && say "python-clients: all matched" || say "python-clients: FAILED"
exit "$fail"
