# SPDX-License-Identifier: MIT
# tests/cli/clitest.sh - helpers for shell tests of the alloy command; source
# it, then set $out and $err (files for the command's output) or call
# clitest_scratch:
#   check DESCRIPTION 'shell condition'   count a pass, or print the failure
#   rc=$(run ARGS...)                     run $ALLOY, exit status on stdout
#   clitest_done NAME                     print the tally; false on failures
#   clitest_scratch                       a directory $dir, removed at exit,
#                                         with $out and $err in it
#   clitest_stacks                        true where this build records call
#                                         stacks (backtrace:1)
#   check_stacks DESCRIPTION 'condition'  check, where there are call stacks;
#                                         elsewhere counted as skipped
#   json FILE 'expression'                true where the Python expression
#                                         over d, FILE's JSON, is true
ALLOY=${ALLOY:-./alloy}
pass=0
fail=0
skip_stacks=0

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

# Call stacks need libunwind.  What configure decided (the build
# directory's config.h) says whether they are expected, rather than
# whether alloy accepts backtrace:1: a build that should have them and
# refuses fails its checks instead of skipping them.  Without config.h
# they are expected.
clitest_stacks() {
	conf_h=$(dirname "$ALLOY")/config.h
	[ ! -f "$conf_h" ] || grep -q '^#define HAVE_LIBUNWIND 1' "$conf_h"
}

check_stacks() {
	if clitest_stacks; then
		check "$@"
	else
		skip_stacks=$((skip_stacks + 1))
	fi
}

json() {
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"
}

clitest_done() {
	echo "$1: $pass passed, $fail failed"
	if [ "$skip_stacks" != 0 ]; then
		echo "$1: skipped: $skip_stacks checks of call stacks (built without libunwind)"
	fi
	[ "$fail" = 0 ]
}

clitest_scratch() {
	dir=$(mktemp -d)
	out=$dir/out err=$dir/err
	trap 'rm -rf "$dir"' EXIT
}
