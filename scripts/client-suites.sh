#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/client-suites.sh - NumPy's own tests under `alloy run`, on each
# CPU backend, against the same tests without alloy: the counts of
# passed, skipped, failed, xfailed, xpassed and errors must be equal, and
# the report of each run must count the allocations on its backend.
#
# usage: scripts/client-suites.sh [--ci] [--build DIR] [--backends "LIST"]
#                                 [--mem SIZE]
#   --ci        a smaller slice (CI runs it; about a minute a run)
#   --build     the build tree with the alloy command (default: build)
#   --backends  default: default jemalloc mimalloc debug (those built)
#   --mem       the memory NumPy's tests may count on (NPY_AVAILABLE_MEM,
#               default 4GB): the tests that need more are skipped
#
# NumPy's requires_memory tests skip themselves when the machine's free
# memory (MemAvailable) is below what they need at the moment they start:
# on a shared machine that changes from one run to the next, and the
# counts with it (two tests of 18 GB were skipped without alloy and ran
# under jemalloc).  Every run here is told the same NPY_AVAILABLE_MEM.
#
# The slice: numpy/core/tests/ test_multiarray, test_numeric, test_ufunc,
# test_indexing and test_regression, with Debian's /usr/bin/python3 -m
# pytest (python3-numpy, python3-pytest).  Exit 0 when every count
# matches, 1 when one differs, 77 when NumPy or pytest is missing.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
build=build
ci=no
backends="default jemalloc mimalloc debug"
mem=4GB
while [ $# -gt 0 ]; do
	case $1 in
	--ci) ci=yes ;;
	--build) build=$2; shift ;;
	--backends) backends=$2; shift ;;
	--mem) mem=$2; shift ;;
	*) echo "client-suites: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
case $build in /*) ;; *) build=$repo/$build ;; esac
if ! printf '%s' "$mem" | grep -Eiq '^[0-9]+(\.[0-9]+)? ?([kmgt](i?b)?|b)?$'; then
	echo "client-suites: --mem $mem: a size such as 4GB or 512MiB" >&2
	exit 2
fi
alloy=$build/alloy
py=/usr/bin/python3
# report_allocs, as the tests read a report.
ALLOY=$alloy . "$repo/tests/cli/fronttest.sh"
if [ ! -x "$alloy" ]; then
	echo "client-suites: no alloy command in $build (build first)" >&2
	exit 2
fi
if ! numpy_dir=$("$py" -c 'import numpy, os, pytest; print(os.path.dirname(numpy.__file__))' 2>/dev/null); then
	echo "skipped: NumPy or pytest missing for $py (apt-get install python3-numpy python3-pytest)"
	exit 77
fi
t=$numpy_dir/core/tests
if [ "$ci" = yes ]; then
	# Three whole files and quick classes of the other two (some 3,500
	# tests, seconds a run), less the three tests that allocate
	# gigabytes, which 2 cores and CI's memory cannot afford five times
	# over under debug's fill and quarantine.
	suite=("$t/test_indexing.py" "$t/test_regression.py" "$t/test_numeric.py"
		"$t/test_multiarray.py::TestResize" "$t/test_multiarray.py::TestNewaxis"
		"$t/test_multiarray.py::TestAttributes" "$t/test_multiarray.py::TestCreation"
		"$t/test_multiarray.py::TestFromBuffer" "$t/test_multiarray.py::TestPickling"
		"$t/test_ufunc.py::TestUfuncKwargs" "$t/test_ufunc.py::TestUfuncGenericLoops"
		-k "not test_memoryleak and not test_dot_big_stride and not test_to_ctypes")
else
	suite=("$t/test_multiarray.py" "$t/test_numeric.py" "$t/test_ufunc.py"
		"$t/test_indexing.py" "$t/test_regression.py")
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 2
export PYTHONDONTWRITEBYTECODE=1 PYTHONHASHSEED=0 NPY_AVAILABLE_MEM=$mem
unset ALLOY_CONF

# The counts from pytest's last line, as "passed skipped failed xfailed
# xpassed errors"; a missing kind is 0.
counts() {
	tail -n 1 "$1" | awk '{
		for (i = 1; i < NF; i++) {
			k = $(i + 1); sub(/[,;]$/, "", k)
			if (k == "errors") k = "error"
			if ($i ~ /^[0-9]+$/) n[k] = $i
		}
		printf "%d %d %d %d %d %d\n", n["passed"], n["skipped"], n["failed"],
			n["xfailed"], n["xpassed"], n["error"] }'
}

# pytest over the slice, prefixed by "$@"; its output in $work/$name.log.
run_suite() { # name prefix...
	local name=$1
	shift
	local t0=$SECONDS
	"$@" "$py" -m pytest -q -p no:cacheprovider -o addopts= "${suite[@]}" \
		>"$work/$name.log" 2>&1
	echo $((SECONDS - t0)) >"$work/$name.secs"
}


slice=full
[ "$ci" = yes ] && slice="CI slice"
echo "client-suites: NumPy $("$py" -c 'import numpy; print(numpy.__version__)'), $slice, NPY_AVAILABLE_MEM=$mem"
run_suite baseline
base=$(counts "$work/baseline.log")
printf '%-10s %8s %8s %8s %8s %8s %8s %10s %7s  %s\n' run passed skipped failed \
	xfailed xpassed errors allocs secs verdict
read -r p s f xf xp e <<<"$base"
printf '%-10s %8s %8s %8s %8s %8s %8s %10s %7s  %s\n' "no alloy" "$p" "$s" "$f" \
	"$xf" "$xp" "$e" - "$(cat "$work/baseline.secs")" baseline
if [ "$p" = 0 ]; then
	echo "client-suites: the baseline ran no test:" >&2
	tail -20 "$work/baseline.log" >&2
	exit 1
fi

status=0
for b in $backends; do
	if [ "$b" = jemalloc ] || [ "$b" = mimalloc ]; then
		if [ ! -f "$build/.libs/alloy_$b.so" ]; then
			echo "skipped: $b (alloy_$b.so not built)"
			continue
		fi
	fi
	conf=cpu:$b
	# debug keeps 256 freed blocks poisoned; test_memoryleak frees 100 MB
	# arrays a thousand times: 25 GB held.  A shallower quarantine.
	[ "$b" = debug ] && conf=$conf,debug.quarantine:4
	run_suite "$b" "$alloy" run --conf "$conf" --report "$work/$b.report" --
	got=$(counts "$work/$b.log")
	allocs=$(report_allocs "$work/$b.report" "$b")
	verdict=same
	if [ "$got" != "$base" ]; then
		verdict=DIFFERENT
		status=1
	elif [ -z "$allocs" ] || [ "$allocs" -le 0 ]; then
		verdict="NO REPORT (alloy not in the path?)"
		status=1
	fi
	read -r p s f xf xp e <<<"$got"
	printf '%-10s %8s %8s %8s %8s %8s %8s %10s %7s  %s\n' "$b" "$p" "$s" "$f" \
		"$xf" "$xp" "$e" "${allocs:--}" "$(cat "$work/$b.secs")" "$verdict"
	if [ "$verdict" != same ]; then
		echo "--- the last lines of the $b run:"
		tail -25 "$work/$b.log"
	fi
done
exit $status
