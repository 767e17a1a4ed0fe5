#!/bin/sh
# Replay every input kept in fuzz/corpus/<target>/ (the seeds and every
# crash ever found) through its fuzz target, built without libFuzzer.
set -e
srcdir=${srcdir:-.}
for t in conf trace ops plugin ctl; do
	./fuzz/replay_$t "$srcdir"/fuzz/corpus/$t/*
done
