# SPDX-License-Identifier: MIT
# tests/cli/fronttest.sh - helpers for the tests of the LD_PRELOAD front and
# `alloy run`; source it after tests/cli/clitest.sh.
#   front_require             skip (exit 77) where the front cannot be tested
#   front_missing             true where it cannot, and prints why
#   front_backends            the CPU backends to run programs on
#   report_allocs FILE NAME   allocations the report FILE counts on NAME
#   under_front ARGS...       alloy run ARGS..., stdout and stderr to $out, $err
top=$(dirname "$ALLOY")
tests=$top/tests/programs

front_missing() {
	# A sanitizer's runtime must be the first library of a process and
	# replaces malloc itself: no front can go before it.
	if nm -D "$top/.libs/liballoy.so" 2>/dev/null | grep -q __asan_init; then
		echo "a sanitizer build (its runtime must come first in the process and is its malloc)"
		return 0
	fi
	if [ ! -f "$top/.libs/liballoy_preload.so" ]; then
		echo "liballoy_preload.so was not built"
		return 0
	fi
	return 1
}

front_require() {
	if why=$(front_missing); then
		echo "skipped: $why"
		exit 77
	fi
}

front_backends() {
	echo default
	for m in jemalloc mimalloc; do
		if [ -f "$top/.libs/alloy_$m.so" ]; then
			echo "$m"
		else
			echo "skipped: cpu:$m (alloy_$m.so not built)" >&2
		fi
	done
	echo debug
}

# The allocs column of NAME's cpu row in a text report.
report_allocs() {
	awk -v n="$2" '$1 == n && $2 == "cpu:0" { print $6; exit }' "$1"
}

under_front() {
	"$ALLOY" run "$@" >"$out" 2>"$err"
}
