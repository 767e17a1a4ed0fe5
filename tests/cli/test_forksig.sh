#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_forksig.sh - fork from a signal handler while the program
# allocates (glibc's tst-mallocfork2 pattern, tests/programs/forksig_prog.c),
# under `alloy run` on every CPU backend.  glibc makes fork async-signal-safe
# with respect to malloc in a single-threaded program; each backend must
# keep that.  Each run is bounded by `timeout`: a hang fails, it does not
# stop the suite.
#
# The program runs as `alloy run` leaves it by default (control:auto): the
# control socket waits for the program's first thread, since its thread
# would make the program multi-threaded, and glibc's fork then takes
# malloc's locks, which the interrupted code may hold.
#
# jemalloc is left out: libjemalloc's own fork handler takes its arena
# locks, and a fork from a handler that interrupted it deadlocks with no
# alloy in the process at all (LD_PRELOAD=libjemalloc.so.2 alone).
set -u
. "$(dirname "$0")/clitest.sh"
. "$(dirname "$0")/fronttest.sh"
front_require
clitest_scratch
unset ALLOY_CONF
prog=$tests/forksig_prog

for b in $(front_backends); do
	if [ "$b" = jemalloc ]; then
		echo "skipped: cpu:jemalloc (libjemalloc's fork handler deadlocks on this pattern by itself)"
		continue
	fi
	rc=$(run run --conf "cpu:$b" -- timeout 60 "$prog" 300 10)
	check "cpu:$b: fork from a signal handler, children exit and exec" \
		'[ "$rc" = 0 ] && grep -q "forks from the handler: [1-9]" "$out"'
done
clitest_done test_forksig
