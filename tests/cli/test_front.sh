#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_front.sh - the LD_PRELOAD front and `alloy run`: the malloc
# family's contract with glibc and under the front on every backend,
# blocks made before the front was ready, pointers malloc never made,
# threads that come and go, locales, a program that closes stderr, the
# leak report of a foreign program, and the command's bad input.
set -u
out=$(mktemp) err=$(mktemp) rep=$(mktemp)
trap 'rm -f "$out" "$err" "$rep"' EXIT
. "$(dirname "$0")/clitest.sh"
. "$(dirname "$0")/fronttest.sh"
front_require
unset ALLOY_CONF

# ---- the contract: the same program, glibc's malloc and the front's

rc=0
"$tests/front_api" >"$out" 2>"$err" || rc=$?
check "front_api holds with glibc's malloc" \
	'[ $rc = 0 ] && grep -q "glibc, all held" "$out"'
for b in $(front_backends); do
	rc=0
	under_front --conf "cpu:$b" --report "$rep" -- "$tests/front_api" || rc=$?
	check "front_api holds under the front on $b" \
		'[ $rc = 0 ] && grep -q "front, all held" "$out"'
	check "the report counts front_api's blocks on $b" \
		'[ "$(report_allocs "$rep" "$b")" -gt 10 ]'
done

# ---- pointers malloc never made

# On a backend with a malloc family the front adds nothing between the
# program and the backend: a pointer malloc never made gets glibc's own
# answer on default, as without alloy.
rc=0
under_front -- "$tests/front_api" bad || rc=$?
check "bad pointers on default: glibc's own answer, as without alloy" \
	'[ $rc != 0 ] && grep -q "free(): invalid pointer" "$err"'
rc=0
under_front --conf cpu:debug -- "$tests/front_api" bad || rc=$?
check "bad pointers under debug: the program goes on" '[ $rc = 0 ]'
check "debug names each bad free with its caller" \
	'[ "$(grep -c "^alloy: free(0x[0-9a-f]*): not a block from malloc" "$err")" = 2 ] && grep -q "called from" "$err" && grep -q "front_api" "$err"'
check "debug names the bad realloc" \
	'grep -q "^alloy: realloc(0x[0-9a-f]*): not a block from malloc" "$err"'

# ---- threads give their records back; fork; locales

rc=0
under_front --conf cpu:default -- "$tests/front_prog" threads 100 || rc=$?
check "100 rounds of threads: alloy's own memory does not grow" \
	'[ $rc = 0 ] && grep -q "100 rounds" "$out"'
# front_prog forks while four threads allocate: a lock an allocator held
# at that moment stays held in the child unless it is held across fork.
# The race is hit in some runs only (the debug wrapper's lock, before
# it was held across fork, hung 3 runs of 40): 15 runs per backend, each
# must exit.
for b in $(front_backends); do
	hung=0
	for i in $(seq 1 15); do
		timeout 60 "$ALLOY" run --conf "cpu:$b" -- "$tests/front_prog" work \
			>/dev/null 2>&1 || hung=$((hung + 1))
	done
	check "fork while threads allocate on $b: 15 runs, none hangs ($hung did)" \
		'[ $hung = 0 ]'
done
for b in $(front_backends); do
	rc=0
	FRONT_PROG_MODULE=
	[ "$b" = jemalloc ] || [ "$b" = mimalloc ] && FRONT_PROG_MODULE=alloy_$b.so
	export FRONT_PROG_MODULE
	timeout 120 "$ALLOY" run --conf "cpu:$b" -- "$tests/front_prog" locale \
		>"$out" 2>"$err" || rc=$?
	check "locales from 4 threads on $b, alloy ready before main" \
		'[ $rc = 0 ] && grep -q "locales: ok" "$out"'
done
unset FRONT_PROG_MODULE

# ---- the exit report of a program that closed stderr (ls does)

rc=0
under_front --report stderr -- ls / || rc=$?
check "ls closes stderr, the report still comes" \
	'[ $rc = 0 ] && grep -q "^alloy reporter" "$err" && [ "$(report_allocs "$err" default)" -gt 0 ]'

# ---- paths without %p: the program keeps them, what it starts adds .PID
# front_prog work execs two children (each reports at exit) and forks one
# that leaves by _exit (no report; its trace ends without an end record).

pdir=$(mktemp -d)
rc=0
(cd "$pdir" && "$ALLOY" run --report r --trace t -- "$tests/front_prog" work) \
	>"$out" 2>"$err" || rc=$?
top=$("$ALLOY" report "$pdir/t" 2>/dev/null | sed -n 's/^trace .*: version [0-9]*, pid \([0-9]*\),.*/\1/p')
check "without %p the program's report and trace keep their paths" \
	'[ $rc = 0 ] && [ "$(grep -c "^alloy reporter" "$pdir/r")" = 1 ] && [ -n "$top" ] && [ "$(report_allocs "$pdir/r" default)" -gt 1000 ]'
check "each exec'd child reports to PATH.PID, whole" \
	'[ "$(ls "$pdir" | grep -c "^r\.[0-9]*$")" = 2 ] && for f in "$pdir"/r.*; do [ "$(grep -c "^alloy reporter" "$f")" = 1 ] || exit 1; done'
check "and traces to PATH.PID, readable, with its own pid" \
	'for f in "$pdir"/r.*; do p=${f##*.}; [ "$p" != "$top" ] && "$ALLOY" report "$pdir/t.$p" 2>/dev/null | grep -q "pid $p," || exit 1; done'
check "the forked child's trace is its own file too" \
	'[ "$(ls "$pdir" | grep -c "^t\.[0-9]*$")" = 3 ]'
rm -rf "$pdir"
rc=0
"$ALLOY" run --conf run_pid:abc -- true >"$out" 2>"$err" || rc=$?
check "run_pid that is not a number: exit 2, named" \
	'[ "$rc" = 2 ] && grep -q "run_pid" "$err"'

# ---- blocks live at exit: a count and top sites, unless asked for each

rc=0
if clitest_stacks; then
	under_front --conf backtrace:1 --report "$rep" -- ls / || rc=$?
else
	# The refusal is what such a build promises: said, and nothing run.
	under_front --conf backtrace:1 --report "$rep" -- ls / || rc=$?
	check "without libunwind, backtrace:1 is refused and the program not run" \
		'[ $rc != 0 ] && grep -q "backtrace:1: this alloy was built without libunwind" "$err" && [ ! -s "$out" ]'
	rc=0
	under_front --report "$rep" -- ls / || rc=$?
fi
check "live blocks of a foreign program: a count, not a list" \
	'[ $rc = 0 ] && grep -q "^blocks live at exit: [1-9][0-9]* blocks" "$rep" && ! grep -q "^leaks (blocks still live)" "$rep"'
check_stacks "and the sites holding the most, with their call stacks" \
	'grep -q "^  [0-9]* bytes in [0-9]* blocks, allocated" "$rep" && grep -q "^      at .*ls" "$rep"'
rc=0
under_front --conf leaks:full --report "$rep" -- ls / || rc=$?
check "leaks:full lists each block" \
	'[ $rc = 0 ] && grep -q "^leaks (blocks still live)" "$rep" && grep -q "bytes from default (cpu:0)" "$rep"'
rc=0
ALLOY_CONF=leaks:off under_front --report "$rep" -- ls / || rc=$?
check "leaks in the environment's ALLOY_CONF win over alloy run's" \
	'[ $rc = 0 ] && ! grep -q "^blocks live at exit" "$rep" && ! grep -q "^leaks" "$rep"'

# ---- bad input to alloy run

rc=$(run run)
check "no program: usage error, exit 2" \
	'[ "$rc" = 2 ] && grep -q "no program to run" "$err"'
rc=$(run run --)
check "-- and nothing: exit 2" '[ "$rc" = 2 ]'
rc=$(run run -- /nonexistent/prog)
check "a program that does not exist: one line, exit 127" \
	'[ "$rc" = 127 ] && [ "$(wc -l <"$err")" = 1 ] && grep -q "/nonexistent/prog: command not found" "$err"'
rc=$(run run -- no-such-program-anywhere)
check "a name not on PATH: exit 127" '[ "$rc" = 127 ]'
chmod 644 "$rep"
rc=$(run run -- "$rep")
check "a file that cannot be run: exit 126" '[ "$rc" = 126 ]'
rc=$(run run --conf cpu:nosuch -- true)
check "a bad --conf: one clear line, exit 2, the program not run" \
	'[ "$rc" = 2 ] && [ "$(wc -l <"$err")" = 1 ] && grep -q "nosuch" "$err" && grep -q "not running true" "$err"'
rc=$(run run --conf align:3 -- true)
check "a bad value in --conf: exit 2" '[ "$rc" = 2 ] && grep -q "align:3" "$err"'
rc=$(run run --report a,b -- true)
check "a report path with a comma: exit 2" '[ "$rc" = 2 ] && grep -q comma "$err"'
rc=$(run run --bogus -- true)
check "an unknown option: exit 2" '[ "$rc" = 2 ] && grep -q -- --bogus "$err"'
rc=$(run run --conf)
check "an option without its value: exit 2" '[ "$rc" = 2 ]'
rc=$(run run -- sh -c 'exit 5')
check "the program's exit status is alloy run's" '[ "$rc" = 5 ]'
rc=$(run run -- sh -c 'echo "$LD_PRELOAD"')
check "the front is first in LD_PRELOAD" 'grep -q "liballoy_preload.so" "$out"'

# ---- the bench: both workloads run under every way (figures, no verdict)

rc=$(run bench --quick --json front)
check "bench front runs both workloads" \
	'[ "$rc" = 0 ] && grep -q "\"metric\": \"throughput Python JSON: alloy run / no front\"" "$out" && grep -q "\"metric\": \"throughput gcc -O2: alloy run / no front\"" "$out"'

clitest_done front
