# SPDX-License-Identifier: MIT
# tests/clitest.sh - helpers for shell tests of the alloy command; source
# it, then set $out and $err (files for the command's output) or call
# clitest_scratch:
#   check DESCRIPTION 'shell condition'   count a pass, or print the failure
#   rc=$(run ARGS...)                     run $ALLOY, exit status on stdout
#   clitest_done NAME                     print the tally; false on failures
#   clitest_scratch                       a directory $dir, removed at exit,
#                                         with $out and $err in it
ALLOY=${ALLOY:-./alloy}
pass=0
fail=0

check() {
	desc=$1
	shift
	if eval "$@"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: $desc"
		echo "  stdout: $(head -c 600 "$out")"
		echo "  stderr: $(head -c 600 "$err")"
	fi
}

run() {
	"$ALLOY" "$@" >"$out" 2>"$err"
	echo $?
}

clitest_done() {
	echo "$1: $pass passed, $fail failed"
	[ "$fail" = 0 ]
}

clitest_scratch() {
	dir=$(mktemp -d)
	out=$dir/out err=$dir/err
	trap 'rm -rf "$dir"' EXIT
}
