#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_front_process.sh - what `alloy run` keeps of a program's
# process as glibc's malloc does, on every CPU backend:
#   - a block made in a library's constructor, before the front is set up
#     (the bootstrap allocator's), keeps every usable byte across realloc;
#   - fork works while that library's fork handlers free and allocate
#     (a hang is a failure: each run is bounded by timeout);
#   - malloc_trim gives freed memory back and says so;
#   - under an address-space limit (ulimit -v) the program starts without
#     a word from alloy and gets what it gets without alloy, within 5%.
# Each program prints the same with and without alloy, and the report
# counts its allocations on the backend: alloy was in its path.
set -u
out=$(mktemp) err=$(mktemp) base=$(mktemp) rep=$(mktemp)
trap 'rm -f "$out" "$err" "$base" "$rep"' EXIT
. "$(dirname "$0")/clitest.sh"
. "$(dirname "$0")/fronttest.sh"
front_require
unset ALLOY_CONF
LIMIT_S=60

boot_prog=$tests/boot_ctor_prog
trim_prog=$tests/trim_prog
as_prog=$tests/aslimit_prog

# Baselines without alloy.
timeout $LIMIT_S "$boot_prog" >"$base" 2>/dev/null
check "boot_ctor_prog runs without alloy" '[ $? = 0 ]'
check "without alloy realloc keeps the usable bytes and forks work" \
	'grep -q "kept by realloc: all" "$base" && grep -q "worked on both sides: 4 of 4" "$base"'
trim_base=$("$trim_prog" 2>/dev/null)

for b in $(front_backends); do
	timeout $LIMIT_S "$ALLOY" run --conf "cpu:$b" --report "$rep" -- \
		"$boot_prog" >"$out" 2>"$err"
	rc=$?
	check "$b: boot_ctor_prog exits 0, no hang (rc $rc)" '[ $rc = 0 ]'
	check "$b: boot_ctor_prog prints what it prints without alloy" \
		'cmp -s "$out" "$base"'
	n=$(report_allocs "$rep" "$b")
	check "$b: the report counts boot_ctor_prog's allocations ($n)" \
		'[ "${n:-0}" -ge 1000 ]'

	# jemalloc purges on a timer too: off, so that what trim gives back
	# does not depend on how long the frees took on a loaded machine
	MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1 \
		timeout $LIMIT_S "$ALLOY" run --conf "cpu:$b" --report "$rep" -- \
		"$trim_prog" >"$out" 2>"$err"
	check "$b: malloc_trim answers and gives memory back as without alloy ($(cat "$err"))" \
		'[ "$(cat "$out")" = "$trim_base" ]'
	n=$(report_allocs "$rep" "$b")
	check "$b: the report counts trim_prog's allocations ($n)" \
		'[ "${n:-0}" -ge 800000 ]'
done

# The address-space limits: what a program gets of 100 MB and 1 GB of
# address space in blocks of 1 MiB on the default backend, against the
# same run without alloy: alloy's own reservations leave it 95% at least.
# (The per-block header's share of small blocks is the front's footprint,
# measured by `alloy bench`, not here.)  Start-up under a tight limit
# says nothing: the simulated CUDA device is made on first use only.
for limit in 100000 1000000; do
	plain=$(ulimit -v $limit && "$as_prog")
	got=$(ulimit -v $limit && "$ALLOY" run -- "$as_prog" 2>"$err")
	check "default under ulimit -v $limit: $got MiB of $plain without alloy (>= 95%)" \
		'[ -n "$got" ] && [ $((got * 100)) -ge $((plain * 95)) ] && [ ! -s "$err" ]'
done
# The backend modules against the library preloaded directly, in blocks
# of 1000 bytes and of 1 MiB (an exact size-class size, which a header
# would move up a class): the blocks are the backend's own.
for m in jemalloc mimalloc; do
	lib=/usr/lib/$(gcc -print-multiarch 2>/dev/null)/lib$m.so.2
	if [ ! -f "$top/.libs/alloy_$m.so" ] || [ ! -f "$lib" ]; then
		echo "skipped: cpu:$m under ulimit -v (alloy_$m.so or lib$m.so.2 missing)"
		continue
	fi
	plain=$(ulimit -v 1000000 && LD_PRELOAD=$lib "$as_prog" 1000)
	got=$(ulimit -v 1000000 && "$ALLOY" run --conf "cpu:$m" -- "$as_prog" 1000 2>"$err")
	check "$m under ulimit -v 1000000, blocks of 1000 bytes: $got MiB of $plain preloaded directly (>= 95%)" \
		'[ -n "$got" ] && [ $((got * 100)) -ge $((plain * 95)) ] && [ ! -s "$err" ]'
	plain=$(ulimit -v 1000000 && LD_PRELOAD=$lib "$as_prog")
	got=$(ulimit -v 1000000 && "$ALLOY" run --conf "cpu:$m" -- "$as_prog" 2>"$err")
	check "$m under ulimit -v 1000000, blocks of 1 MiB: $got MiB of $plain preloaded directly (>= 95%)" \
		'[ -n "$got" ] && [ $((got * 100)) -ge $((plain * 95)) ] && [ ! -s "$err" ]'
	got=$(ulimit -v 100000 && "$ALLOY" run --conf "cpu:$m" -- "$as_prog" 2>"$err")
	check "$m under ulimit -v 100000 starts without a word from alloy and allocates ($got MiB)" \
		'[ "${got:-0}" -gt 0 ] && [ ! -s "$err" ]'
done
got=$(ulimit -v 40000 && "$ALLOY" run -- "$as_prog" 2>"$err")
check "under ulimit -v 40000 a program starts without a word from alloy and allocates ($got MiB)" \
	'[ "${got:-0}" -gt 0 ] && [ ! -s "$err" ]'

clitest_done test_front_process
