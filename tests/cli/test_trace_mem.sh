#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_trace_mem.sh - compressed traces (a trace path ending in
# .zst): the same report as from the text of the same run, a trace cut
# short inside a frame read up to its last whole record, garbage after
# zstd's magic refused with a clear error, a build without zstd refusing
# both sides in one line.  Run from the build directory (make check does).
set -u
. "$(dirname "$0")/clitest.sh"
clitest_scratch
PROG=./tests/programs/memprog

# JSON summary of a trace without the "trace" key (the file's name).
summary() { # trace, output
	"$ALLOY" report "$1" --format json 2>"$err" |
		python3 -c 'import json,sys; d=json.load(sys.stdin); d.pop("trace"); print(json.dumps(d, sort_keys=True))' >"$2"
}

conf_h=$(dirname "$ALLOY")/config.h
if [ -f "$conf_h" ] && ! grep -q '^#define HAVE_ZSTD 1' "$conf_h"; then
	ALLOY_CONF="trace:$dir/t.trace.zst" $PROG churn 10 >"$out" 2>"$err"
	check "without zstd, a .zst trace path is refused in one line" \
		'grep -q "ends in .zst, and this alloy was built without zstd" "$err" && [ ! -s "$dir/t.trace.zst" ]'
	printf '\050\265\057\375garbage' >"$dir/z.trace"
	rc=$(run report "$dir/z.trace")
	check "without zstd, a compressed trace is refused: decompress it first" \
		'[ "$rc" = 1 ] && grep -q "built without zstd.*zstd -d" "$err"'
	clitest_done test_trace_mem || exit 1
	echo "skipped: built without zstd"
	exit 77
fi

# ---- a compressed trace and the text in it -----------------------------
ALLOY_CONF="trace:$dir/c.trace.zst" $PROG churn 20000 >"$out" 2>"$err"
check "memprog runs with a .zst trace" '[ $? = 0 ] && grep -q done "$out"'
check "the file starts with zstd's magic" \
	'[ "$(head -c 4 "$dir/c.trace.zst" | od -An -tx1 | tr -d " ")" = 28b52ffd ]'
rc=$(run report "$dir/c.trace.zst")
check "alloy report reads it: 80000 events, complete, no warning" \
	'[ "$rc" = 0 ] && grep -Eq "^trace .*: version [0-9]+, pid [0-9]+, 80000 events over" "$out" && [ ! -s "$err" ]'
ALLOY_CONF="trace:$dir/t.trace" $PROG churn 20000 >"$out" 2>"$err"
text=$(wc -c <"$dir/t.trace")
comp=$(wc -c <"$dir/c.trace.zst")
# How small it gets depends on the times between events (more digits in
# a slower build, under a sanitizer a fifth where it is an eighth
# otherwise): `alloy bench profiler` measures bytes per event; here it
# must be well under the text.
check "compressed, the trace is under a third of the text ($comp of $text bytes)" \
	'[ $((comp * 3)) -lt "$text" ]'

if command -v zstd >/dev/null 2>&1; then
	# The writer's stream is zstd's own format: the zstd tool opens it,
	# and the report of its text is the report of the compressed file.
	zstd -q -d -c "$dir/c.trace.zst" >"$dir/c.trace" 2>"$err"
	check "zstd -d decompresses the writer's file into a text trace" \
		'[ $? = 0 ] && head -n 1 "$dir/c.trace" | grep -q "^alloy-trace " && tail -n 1 "$dir/c.trace" | grep -q "^end "'
	summary "$dir/c.trace.zst" "$dir/c.json"
	summary "$dir/c.trace" "$dir/t.json"
	check "round trip: report --format json the same from the compressed file and its text" \
		'[ -s "$dir/c.json" ] && cmp -s "$dir/c.json" "$dir/t.json"'
	# The reader against zstd's tool: a text trace compressed by it.
	zstd -q -c "$dir/t.trace" >"$dir/tz.trace" 2>"$err"
	summary "$dir/t.trace" "$dir/a.json"
	summary "$dir/tz.trace" "$dir/b.json"
	check "a text trace compressed by zstd reads the same (no .zst name needed)" \
		'[ -s "$dir/a.json" ] && cmp -s "$dir/a.json" "$dir/b.json"'
else
	echo "skipped: the round trips through the zstd tool (apt-get install zstd)"
fi

# ---- cut short ----------------------------------------------------------
# A cut inside a frame: the trace is read to its last whole record.
half=$((comp / 2))
head -c "$half" "$dir/c.trace.zst" >"$dir/cut.trace.zst"
rc=$(run report "$dir/cut.trace.zst" --format json -o "$dir/cut.json")
check "a compressed trace cut in half is read, said cut short, exit 0" \
	'[ "$rc" = 0 ] && grep -q "is cut short (its compressed data ends inside a frame" "$err"'
check "it holds some of the events, not all, and is not complete" \
	'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if 0 < d[\"events\"] < 80000 and not d[\"complete\"] else 1)" "$dir/cut.json"'
head -c 20 "$dir/c.trace.zst" >"$dir/cut2.trace.zst"
rc=$(run report "$dir/cut2.trace.zst")
check "cut before its first whole record: refused, said so" \
	'[ "$rc" = 1 ] && grep -q "cut short before its first whole record" "$err"'
# A program killed: every write-out before the kill is in the file.
ALLOY_CONF="trace:$dir/k.trace.zst" $PROG kill 20000 >"$out" 2>"$err"
rc=$(run report "$dir/k.trace.zst" --format json -o "$dir/k.json")
check "a program killed: its compressed trace is read, cut short" \
	'[ "$rc" = 0 ] && grep -q "is cut short" "$err"'
check "it holds the events up to the last flush (at least 75000 of 80000)" \
	'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d[\"events\"] >= 75000 else 1)" "$dir/k.json"'

# ---- bad input ------------------------------------------------------------
printf '\050\265\057\375this is no zstd frame at all' >"$dir/g.trace"
rc=$(run report "$dir/g.trace")
check "garbage after zstd's magic: exit 1, corrupt zstd data named" \
	'[ "$rc" = 1 ] && grep -q "g.trace: corrupt zstd data at byte [0-9]* (.*): not a compressed alloy trace, or damaged" "$err"'
printf 'hello, no trace here\n' | zstd -q -c >"$dir/h.trace" 2>/dev/null &&
	{
		rc=$(run report "$dir/h.trace")
		check "compressed text that is no trace: not an alloy trace" \
			'[ "$rc" = 1 ] && grep -q "not an alloy trace" "$err"'
	}

clitest_done test_trace_mem
