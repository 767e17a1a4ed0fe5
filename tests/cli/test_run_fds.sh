#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_run_fds.sh - the descriptors alloy keeps open in a program
# under `alloy run` (the report, the trace, the event log, the copies of
# stderr) never take the program's numbers nor end up in its files:
# scripts that `exec 3>FILE` and `exec 4>FILE` with --report, --trace,
# log: and --report stderr, and tests/programs/fdprog, which closes 3..1023,
# opens two files of its own (at alloy's old numbers too, with --fill) and
# checks that no descriptor of alloy's is below 100 in /proc/self/fd
# (none at all with --report FILE and control:0; CPython's test_pass_fds_redirected
# too).  The program's files must equal a run without alloy; the report,
# trace and log must still arrive whole (opened again; the report counts
# the program's allocations: alloy was in its path), or a line on stderr
# must say why the report could not be written.
set -u
. "$(dirname "$0")/clitest.sh"
. "$(dirname "$0")/fronttest.sh"
front_require
unset ALLOY_CONF
clitest_scratch

# fdprog fills the numbers up to 1023: the limit must reach them.
[ "$(ulimit -n)" = 1024 ] || ulimit -n 1024 2>/dev/null || {
	echo "skipped: cannot set the descriptor limit to 1024"
	exit 77
}

fdprog=$tests/fdprog
r=$dir/r.txt t=$dir/t.trace l=$dir/l.log a=$dir/A b=$dir/B c=$dir/C

# What a script writes into its own descriptor, alone.
has_only() {
	[ "$(cat "$1")" = "$2" ]
}

# The report counts allocations on default: alloy was in the path.
counted() {
	allocs=$(report_allocs "$1" default)
	[ -n "$allocs" ] && [ "$allocs" -gt 0 ]
}

# The trace reads whole, to its end record.
trace_whole() {
	tail -n 1 "$1" | grep -q '^end ' &&
		"$ALLOY" report "$1" >"$dir/trace.out" 2>&1
}

if command -v bash >/dev/null; then
	for n in 3 4; do
		rm -f "$r" "$b"
		under_front --report "$r" -- \
			bash -c "exec $n>\"$b\"; echo mine >&$n"
		check "--report FILE, script's exec $n>: its file is its own" \
			'has_only "$b" mine'
		check "--report FILE, script's exec $n>: the report counts allocations" \
			'counted "$r"'

		rm -f "$t" "$b"
		under_front --trace "$t" -- \
			bash -c "exec $n>\"$b\"; echo mine >&$n; echo two >&$n"
		check "--trace FILE, script's exec $n>: its file is its own" \
			'has_only "$b" "mine
two"'
		check "--trace FILE, script's exec $n>: the trace is whole" \
			'trace_whole "$t"'

		rm -f "$l" "$b"
		under_front --conf "log:$l" -- \
			bash -c "exec $n>\"$b\"; echo mine >&$n"
		check "log:FILE, script's exec $n>: its file is its own" \
			'has_only "$b" mine'
		check "log:FILE, script's exec $n>: the log has lines" \
			'[ -s "$l" ]'

		rm -f "$b"
		under_front --report stderr -- \
			bash -c "exec $n>\"$b\"; echo mine >&$n"
		check "--report stderr, script's exec $n>: its file is its own" \
			'has_only "$b" mine'
		check "--report stderr, script's exec $n>: the report is on stderr" \
			'counted "$err"'
	done
	# Both numbers and a third file, with everything on.
	rm -f "$r" "$t" "$l" "$a" "$b" "$c"
	under_front --report "$r" --trace "$t" --conf "log:$l" -- \
		bash -c "exec 3>\"$a\" 4>\"$b\" 5>\"$c\"; echo 3 >&3; echo 4 >&4; echo 5 >&5"
	check "report, trace and log, script's 3, 4, 5: its files are its own" \
		'has_only "$a" 3 && has_only "$b" 4 && has_only "$c" 5'
	check "report, trace and log, script's 3, 4, 5: alloy's files are whole" \
		'counted "$r" && trace_whole "$t" && [ -s "$l" ]'
else
	echo "skipped: the script cases (no bash)"
fi

# The program's files without alloy.
base=$dir/base
mkdir "$base"
rc=0
"$fdprog" --min-fd 100 "$base/A" "$base/B" >"$out" 2>"$err" || rc=$?
check "fdprog runs without alloy" '[ "$rc" = 0 ] && [ -s "$base/B" ]'

same_files() {
	cmp -s "$a" "$base/A" && cmp -s "$b" "$base/B"
}

for fill in "" --fill; do
	what="fdprog $fill closing 3..1023"
	rm -f "$r" "$t" "$l" "$a" "$b"
	rc=0
	under_front --report "$r" --trace "$t" --conf "log:$l" -- \
		"$fdprog" --min-fd 100 $fill "$a" "$b" || rc=$?
	check "$what: exits 0, no descriptor of alloy's below 100" \
		'[ "$rc" = 0 ]'
	check "$what: its files are as without alloy" 'same_files'
	check "$what: the report, opened again, counts allocations" \
		'counted "$r"'
	check "$what: the trace, opened again, is whole" 'trace_whole "$t"'
	check "$what: the log, opened again, has its last lines" \
		'[ "$(wc -l <"$l")" -gt 2000 ]'
	check "$what: nothing said on stderr" '[ ! -s "$err" ]'

	rm -f "$a" "$b"
	rc=0
	under_front --report stderr -- \
		"$fdprog" --min-fd 100 $fill "$a" "$b" || rc=$?
	check "$what, --report stderr: exits 0" '[ "$rc" = 0 ]'
	check "$what, --report stderr: its files are as without alloy" \
		'same_files'
	check "$what, --report stderr: the report is on stderr" \
		'counted "$err"'
done

# The report's path is another file when alloy comes to write it: the
# report is added to it, the program's line kept.
rm -f "$r" "$a" "$b"
rc=0
under_front --report "$r" -- \
	"$fdprog" --min-fd 100 --fill --replace "$r" "$a" "$b" || rc=$?
check "fdprog, the report's path replaced: exits 0" '[ "$rc" = 0 ]'
check "fdprog, the report's path replaced: its files are as without alloy" \
	'same_files'
check "fdprog, the report's path replaced: the program's line kept, the report after it" \
	'[ "$(head -n 1 "$r")" = "not alloy'"'"'s" ] && counted "$r"'
check "fdprog, the report's path replaced: nothing said on stderr" \
	'[ ! -s "$err" ]'

# The report's path leads nowhere at exit: stderr says so.
mkdir "$dir/sub"
rm -f "$a" "$b"
rc=0
under_front --report "$dir/sub/r.txt" -- \
	"$fdprog" --min-fd 100 --fill --remove "$dir/sub/r.txt" "$a" "$b" ||
	rc=$?
check "fdprog, the report's directory removed: exits 0" '[ "$rc" = 0 ]'
check "fdprog, the report's directory removed: its files are as without alloy" \
	'same_files'
check "fdprog, the report's directory removed: stderr says the report is lost" \
	'grep -qx "alloy: report:$dir/sub/r.txt: cannot open it at exit (No such file or directory); no exit report is written" "$err"'

# With --report FILE alone nothing of alloy's is open in a single-threaded
# program until it exits (control:auto, the default, opens no socket
# there; control:0 none anywhere): a program listing every descriptor it
# has sees none.  With the control socket opened at start (control:1),
# that socket is the one descriptor it sees.
rm -f "$r" "$a" "$b"
rc=0
under_front --conf control:0 --report "$r" -- "$fdprog" --min-fd 1000000 "$a" "$b" || rc=$?
check "fdprog, --report FILE, control:0: no descriptor of alloy's at all" \
	'[ "$rc" = 0 ] && counted "$r"'
rm -f "$r" "$a" "$b"
rc=0
under_front --report "$r" -- "$fdprog" --min-fd 1000000 "$a" "$b" || rc=$?
check "fdprog, --report FILE, control:auto: no descriptor of alloy's at all" \
	'[ "$rc" = 0 ] && counted "$r"'
rm -f "$r" "$a" "$b"
rc=0
under_front --conf control:1 --report "$r" -- "$fdprog" --min-fd 1000000 "$a" "$b" || rc=$?
check "fdprog, --report FILE, control:1: the control socket is the one descriptor of alloy's" \
	'[ "$rc" = 3 ] && [ "$(grep -c "was opened before main, close-on-exec" "$err")" = 1 ] && grep -q "(socket:" "$err"'

# CPython's own test of the descriptors a child gets, where its test
# package is installed.
py=python3
if $py -c 'import test.test_subprocess' 2>/dev/null; then
	rm -f "$r"
	rc=0
	under_front --report "$r" -- $py -m unittest \
		test.test_subprocess.POSIXProcessTestCase.test_pass_fds_redirected ||
		rc=$?
	check "CPython test_pass_fds_redirected under --report FILE" \
		'[ "$rc" = 0 ] && counted "$r"'
else
	echo "skipped: CPython's test_subprocess (no test package)"
fi

# A low limit: the descriptors still go as high as it allows.
rm -f "$r" "$a" "$b"
rc=0
(ulimit -n 64 && "$ALLOY" run --report "$r" -- \
	"$fdprog" --min-fd 20 "$a" "$b" >"$out" 2>"$err") || rc=$?
check "fdprog under a limit of 64: exits 0, nothing of alloy's below 20" \
	'[ "$rc" = 0 ]'
check "fdprog under a limit of 64: the report counts allocations" \
	'counted "$r"'

clitest_done test_run_fds
