#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_nomalloc_reporter.sh - the reporter's part of the malloc-free
# allocation path: tests/unit/nomalloc with the reporter switched on
# by hand, then with ALLOY_CONF's trace, event log, exit report and call
# stacks (a malloc that aborts while armed; see tests/unit/nomalloc.c).
set -u
# Run from the build directory, as make check does.
# nomalloc exits 77 where it cannot run (a sanitizer owns malloc): so do we.
for mode in --reporter --traced; do
	./tests/unit/nomalloc $mode
	rc=$?
	[ $rc = 0 ] || exit $rc
done
