#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_cli_profile.sh - the profiler as a user meets it: a program of
# known sites and owners (tests/programs/profprog.c) traced with call stacks,
# `alloy report --at` with exact bytes per site and per owner in text and
# JSON, the flame graph files, bad input (older traces, cut stack tables,
# objects that are gone, times outside the trace, sizes that would wrap,
# bad alignments), and the reporter's files: %p, write errors, paths that
# cannot be opened, a closed stderr, leak summaries, a forked child.
# Run from the build directory (make check does).
set -u
. "$(dirname "$0")/clitest.sh"
clitest_scratch
PROG=./tests/programs/profprog

# Without libunwind there are no call stacks: the programs run traced
# without them, the checks of owners and bytes still hold, and those of
# sites and frames are skipped (check_stacks).
bt=backtrace:1
if ! clitest_stacks; then
	bt=backtrace:0
	ALLOY_CONF="trace:$dir/refused.trace,backtrace:1" $PROG >"$out" 2>"$err"
	check "without libunwind, backtrace:1 is said to record no call stacks" \
		'grep -q "^alloy: ALLOY_CONF: backtrace:1: this alloy was built without libunwind; no call stacks are recorded" "$err"'
	rc=$(ALLOY_CONF=backtrace:1 run conf)
	check "without libunwind, alloy conf calls backtrace:1 an error (exit 1)" \
		'[ "$rc" = 1 ] && grep -q "backtrace:1: this alloy was built without libunwind" "$err"'
fi

# ---- the at-peak report of a program of known sites and owners --------
ALLOY_CONF="trace:$dir/p.trace,$bt" $PROG >"$out" 2>"$err"
check "profprog runs traced" '[ $? = 0 ] && grep -q done "$out"'
check "the trace is version 4 (unit ns) with owners" \
	'head -n 1 "$dir/p.trace" | grep -q "^alloy-trace 4 .*unit=ns" && grep -q "^o [0-9]* model/layer1$" "$dir/p.trace" && tail -n 1 "$dir/p.trace" | grep -q "^end "'
check_stacks "the trace has stacks and a module map" \
	'grep -q "^s " "$dir/p.trace" && grep -q "^M .*profprog$" "$dir/p.trace"'

rc=$(run report "$dir/p.trace" --at peak)
check "report --at peak exits 0" '[ "$rc" = 0 ]'
check "the peak: 34089 bytes in 7 blocks" 'grep -q "^peak of cpu:0: 34089 bytes (33.29 KiB) in 7 blocks" "$out"'
# A site row is "bytes share blocks" followed by its frames, innermost first.
site() { # bytes, blocks, innermost function, its caller
	awk -v b="$1" -v n="$2" -v f="$3" -v c="$4" '
		$1 == b && $3 == n && NF == 3 { want = 1; next }
		want == 1 { ok = index($0, "  " f " (profprog.c:") > 0; want = ok ? 2 : 0; next }
		want == 2 { if (index($0, "< " c " (profprog.c:") > 0) found = 1; want = 0 }
		END { exit found ? 0 : 1 }' "$out"
}
check_stacks "site make_activations < build_model: 20000 bytes, 2 blocks" 'site 20000 2 make_activations build_model'
check_stacks "site make_weights < build_model: 12288 bytes, 3 blocks" 'site 12288 3 make_weights build_model'
check_stacks "site make_tensor < main: 1024 bytes, 1 block" 'site 1024 1 make_tensor main'
check_stacks "site scratch_buffer < main: 777 bytes, 1 block" 'site 777 1 scratch_buffer main'
check_stacks "exactly four sites (an unrolled loop is one site)" 'grep -q "^by site (4 sites)" "$out"'
owner() { grep -Eq "^ +$1 +[0-9.]+% +$2  $3\$" "$out"; }
check "owner model/layer2: 20000 bytes, 2 blocks" 'owner 20000 2 model/layer2'
check "owner model/layer1: 12288 bytes, 3 blocks" 'owner 12288 3 model/layer1'
check "owner model/fc1_w (a workspace blob): 1024 bytes" 'owner 1024 1 model/fc1_w'
check "no owner: 777 bytes" 'owner 777 1 "\(no owner\)"'

rc=$(run report "$dir/p.trace" --at peak --format json -o "$dir/p.json")
check "report --at peak --format json exits 0" '[ "$rc" = 0 ]'
check_stacks "JSON: the peak's bytes, blocks and four sites" \
	'json "$dir/p.json" "d[\"devices\"][0][\"bytes\"] == 34089 and d[\"devices\"][0][\"blocks\"] == 7 and len(d[\"devices\"][0][\"sites\"]) == 4"'
check_stacks "JSON: bytes per site by innermost function" \
	'json "$dir/p.json" "{s[\"stack\"][0][\"function\"]: (s[\"bytes\"], s[\"blocks\"]) for s in d[\"devices\"][0][\"sites\"]} == {\"make_activations\": (20000, 2), \"make_weights\": (12288, 3), \"make_tensor\": (1024, 1), \"scratch_buffer\": (777, 1)}"'
check_stacks "JSON: file and line of a frame" \
	'json "$dir/p.json" "all(s[\"stack\"][0][\"file\"].endswith(\"profprog.c\") and s[\"stack\"][0][\"line\"] > 0 for s in d[\"devices\"][0][\"sites\"])"'
check "JSON: bytes and share per owner" \
	'json "$dir/p.json" "{o[\"owner\"]: o[\"bytes\"] for o in d[\"devices\"][0][\"owners\"]} == {\"model/layer2\": 20000, \"model/layer1\": 12288, \"model/fc1_w\": 1024, None: 777} and abs(sum(o[\"share\"] for o in d[\"devices\"][0][\"owners\"]) - 1) < 1e-3"'

# --at a time: the start (nothing live), the end, and outside the trace.
rc=$(run report "$dir/p.trace" --at 0)
check "--at 0: nothing live yet" '[ "$rc" = 0 ] && grep -q "^live on cpu:0: 0 bytes" "$out"'
end_ns=$(awk '$1 == "end" { print $2 }' "$dir/p.trace")
rc=$(run report "$dir/p.trace" --at "${end_ns}ns")
check "--at the end: nothing live any more" '[ "$rc" = 0 ] && grep -q "^live on cpu:0: 0 bytes" "$out"'
rc=$(run report "$dir/p.trace" --at 1000s)
check "--at past the end is a clear error (exit 1)" '[ "$rc" = 1 ] && grep -q "past the end of the trace, which lasts" "$err"'
rc=$(run report "$dir/p.trace" --at soon)
check "--at that is no time is a usage error (exit 2)" '[ "$rc" = 2 ] && grep -q "wants \"peak\" or a time" "$err"'
rc=$(run report "$dir/p.trace" --format svg --at peak)
check "--at with the timeline is a usage error" '[ "$rc" = 2 ]'

# ---- C++ frames: named from the symbol table, demangled ------------------
if [ -x ./tests/programs/profprog_cxx ]; then
	ALLOY_CONF="trace:$dir/cxx.trace,$bt" ./tests/programs/profprog_cxx >"$out" 2>"$err"
	check "profprog_cxx runs traced" '[ $? = 0 ] && grep -q done "$out"'
	rc=$(run report "$dir/cxx.trace" --at peak --format json -o "$dir/cxx.json")
	check_stacks "C++ site at peak: 4321 bytes in alloy_test::Layer::forward(int), called from the template run<Layer>" \
		'[ "$rc" = 0 ] && json "$dir/cxx.json" "[[f[\"function\"] for f in s[\"stack\"][:2]] for v in d[\"devices\"] for s in v[\"sites\"] if s[\"bytes\"] == 4321] == [[\"alloy_test::Layer::forward(int)\", \"void* alloy_test::run<alloy_test::Layer>(alloy_test::Layer&, int)\"]]"'
else
	echo "skipped: C++ frames (tests/programs/profprog_cxx not built: no C++ demangler)"
fi

# ---- alloy demo: its workspace blobs are the owners at the peak ---------
ALLOY_CONF="trace:$dir/demo.trace,$bt" "$ALLOY" demo >"$out" 2>"$err"
check "alloy demo runs traced" '[ $? = 0 ]'
rc=$(run report "$dir/demo.trace" --at peak --format json -o "$dir/demo.json")
check "demo at peak: the net's blobs own the CPU peak, and the owners add up to it" \
	'[ "$rc" = 0 ] && json "$dir/demo.json" "[(set(o[\"owner\"] for o in v[\"owners\"]) >= {\"data\", \"fc0_w\", \"fc0_w_grad\", \"relu0\"}, sum(o[\"bytes\"] for o in v[\"owners\"]) == v[\"bytes\"]) for v in d[\"devices\"] if v[\"device\"] == \"cpu:0\"] == [(True, True)]"'
check_stacks "demo at peak: its sites name the demo's functions" \
	'json "$dir/demo.json" "any(f[\"function\"] == \"demo_net_step\" for v in d[\"devices\"] for s in v[\"sites\"] for f in s[\"stack\"])"'

# ---- the flame graph files (their rendering: test_flamegraph.sh) --------
rc=$(run report "$dir/p.trace" --format flamegraph -o "$dir/f.html")
check_stacks "flamegraph page written, self-contained" \
	'[ "$rc" = 0 ] && grep -q "<script>" "$dir/f.html" && grep -q "make_activations" "$dir/f.html" && ! grep -Eq "(src|href)=" "$dir/f.html" && ! grep -q "http[s]*://" "$dir/f.html"'
rc=$(run report "$dir/p.trace" --format flamegraph-svg -o "$dir/f.svg")
check_stacks "flamegraph SVG has a box with a title per site" \
	'[ "$rc" = 0 ] && grep -q "<title>make_weights (profprog.c:[0-9]*) in " "$dir/f.svg" && tail -n 1 "$dir/f.svg" | grep -q "</svg>"'
rc=$(run report "$dir/p.trace" --format flamegraph-svg --by owner -o "$dir/fo.svg")
check "flamegraph by owner has the owners as boxes" \
	'[ "$rc" = 0 ] && grep -q "<title>model/layer2 &#10;19.53 KiB (20000 bytes) in 2 blocks" "$dir/fo.svg"'
rc=$(run report "$dir/p.trace" --format svg -o "$dir/t.svg")
check_stacks "timeline labels the peak with its top sites and owners" \
	'[ "$rc" = 0 ] && grep -q ">at the peak, top sites:<" "$dir/t.svg" && grep -q ">1. make_activations &lt; build_mod[a-z.]* 58.7%<" "$dir/t.svg" && grep -q ">1. model/layer2 58.7%<" "$dir/t.svg"'

# ---- bad input --------------------------------------------------------------
# An object named by the module map that is gone: raw addresses, report goes on.
sed 's|\(^M .*\)/profprog$|\1/gone-profprog|' "$dir/p.trace" >"$dir/gone.trace"
rc=$(run report "$dir/gone.trace" --at peak)
check_stacks "a module that is gone: said once, frames raw, bytes exact" \
	'[ "$rc" = 0 ] && [ "$(grep -c "gone-profprog: No such file" "$err")" = 1 ] && grep -q "gone-profprog+0x" "$out" && grep -q "^peak of cpu:0: 34089 bytes" "$out" && owner 20000 2 model/layer2'
# Without addr2line, functions still come from the symbol tables.
ALLOY_ADDR2LINE=/nonexistent "$ALLOY" report "$dir/p.trace" --at peak >"$out" 2>"$err"
check_stacks "without addr2line: function names without lines" \
	'[ $? = 0 ] && grep -q "  make_activations (profprog)$" "$out"'
# A cut stack table: every stack line gone, or only the root of the tree.
grep -v "^s " "$dir/p.trace" >"$dir/nostacks.trace"
rc=$(run report "$dir/nostacks.trace" --at peak)
check_stacks "stack table gone: a warning, sites unknown, bytes exact" \
	'[ "$rc" = 0 ] && grep -q "name stacks the trace does not define" "$err" && grep -q "unknown (its stack is missing from the trace)" "$out" && grep -q "^peak of cpu:0: 34089 bytes" "$out"'
grep -v "^s 1 0 " "$dir/p.trace" >"$dir/cut.trace"
rc=$(run report "$dir/cut.trace" --at peak)
check_stacks "stack table cut at its root: the stacks end in a marker" \
	'[ "$rc" = 0 ] && grep -q "frames missing: the trace.s stack table is cut" "$out" && grep -q "make_weights" "$out"'
# A version 1 trace still reads; its sites are unknown.
printf 'alloy-trace 1 pid=7\na 10 1 0x10 100 64 default cpu:0\na 20 1 0x20 50 64 default cpu:0\nf 30 1 0x10 100 64 default cpu:0\nend 40 3\n' >"$dir/v1.trace"
rc=$(run report "$dir/v1.trace" --at peak)
check "version 1 trace: at peak with sites unknown" \
	'[ "$rc" = 0 ] && grep -q "^peak of cpu:0: 150 bytes" "$out" && grep -q "unknown (no call stack recorded: backtrace:1)" "$out"'
# Sizes and sums that would wrap, and alignments that are no power of two
# are refused by report as by replay.
printf 'alloy-trace 1 pid=7\na 1 1 0x10 9223372036854775808 64 x cpu:0\na 2 1 0x20 9223372036854775808 64 x cpu:0\n' >"$dir/huge.trace"
rc=$(run report "$dir/huge.trace")
check "two blocks of 2^63 bytes: refused" '[ "$rc" = 1 ] && grep -q "huge.trace:2: (byte 20) size 9223372036854775808 is larger than any block" "$err"'
printf 'alloy-trace 1 pid=7\n' >"$dir/wrap.trace"
for i in 1 2 3 4; do echo "a $i 1 0x$i 4611686018427387904 64 x cpu:0" >>"$dir/wrap.trace"; done
rc=$(run report "$dir/wrap.trace")
check "four blocks of 2^62 bytes: the live sum is refused" '[ "$rc" = 1 ] && grep -q "wrap.trace:5: .* live bytes pass 2^64" "$err"'
printf 'alloy-trace 1 pid=7\na 1 1 0x10 100 48 x cpu:0\n' >"$dir/align.trace"
rc=$(run report "$dir/align.trace")
check "alignment 48: refused by report" '[ "$rc" = 1 ] && grep -q "alignment 48 is not a power of two" "$err"'
rc=$(run replay "$dir/align.trace" --allocator default)
check "alignment 48: refused by replay the same way" '[ "$rc" = 1 ] && grep -q "alignment 48 is not a power of two" "$err"'
printf 'alloy-trace 2 pid=7\nT 1 7\nS 1 x cpu:0 3\n' >"$dir/align2.trace"
rc=$(run report "$dir/align2.trace")
check "version 2: series alignment 3 refused" '[ "$rc" = 1 ] && grep -q "align2.trace:3: .*alignment 3 is not a power of two" "$err"'

# ---- the reporter's files -----------------------------------------------------
# %p: each process its own file.
ALLOY_CONF="trace:$dir/pid.%p.trace" "$ALLOY" demo >"$out" 2>"$err"
f=$(ls "$dir"/pid.*.trace 2>/dev/null | head -n 1)
check "%p in a path is the process id" \
	'[ -n "$f" ] && [ "$f" = "$dir/pid.$(head -n 1 "$f" | sed "s/.*pid=\([0-9]*\).*/\1/").trace" ]'
# A forked child with %p writes its own trace, starting with what it inherited.
ALLOY_CONF="trace:$dir/fork.%p.trace,$bt" $PROG --fork >"$out" 2>"$err"
check "profprog --fork runs" '[ $? = 0 ]'
child=$(grep -l "forked_from=" "$dir"/fork.*.trace 2>/dev/null | head -n 1)
check "the forked child wrote a trace of its own" '[ -n "$child" ] && [ "$(ls "$dir"/fork.*.trace | wc -l)" = 2 ]'
rc=$(run report "$child" --at peak)
check "the child's trace reads and holds what it inherited" \
	'[ "$rc" = 0 ] && grep -q "^peak of cpu:0: 33612 bytes" "$out" && owner 12288 3 model/layer1'
# A program that closes stderr still gets its report (a saved copy of it).
ALLOY_CONF="report:stderr" $PROG --close-stderr >"$out" 2>"$err"
check "exit report written although the program closed stderr" \
	'[ $? = 0 ] && grep -q "^alloy reporter: memory by allocator and device" "$err" && grep -q "no leaks" "$err"'
# Leaks in summary: count, bytes and the sites holding them.
ALLOY_CONF="report:stderr,leaks:summary,$bt" $PROG --leak >"$out" 2>"$err"
check_stacks "leaks:summary: count, bytes and top sites, named from the symbol table" \
	'grep -q "^blocks live at exit: 2 blocks, 8192 bytes$" "$err" && [ "$(grep -c "^  4096 bytes in 1 blocks, allocated$" "$err")" = 2 ] && grep -q "^      at make_weights+0x[0-9a-f]* (profprog)$" "$err" && grep -q "^      at build_model+0x" "$err" && ! grep -q "^leaks (blocks still live)" "$err"'
ALLOY_CONF="report:stderr,leaks:off" $PROG --leak >"$out" 2>"$err"
check "leaks:off: the table only" 'grep -q "^(all) " "$err" && ! grep -q "live at exit\|still live" "$err"'
ALLOY_CONF="report:stderr,leaks:full" $PROG --leak >"$out" 2>"$err"
check "leaks:full: each block, with its owner" 'grep -q "^leaks (blocks still live):" "$err" && grep -q "4096 bytes from default (cpu:0) owned by model/layer1" "$err" && grep -q "2 blocks, 8192 bytes" "$err"'
# Output that cannot be written is said once, at the first failure.
for what in trace log report; do
	ALLOY_CONF="$what:/dev/full" "$ALLOY" demo >"$out" 2>"$err"
	check "$what:/dev/full: one line on stderr at the first failure" \
		'[ "$(grep -c "^alloy: $what:/dev/full: write failed (No space left on device)" "$err")" = 1 ]'
done
# Paths that cannot be opened: said at start, and alloy conf exits 1.
for what in trace log report; do
	ALLOY_CONF="$what:$dir/no/such/dir/x" "$ALLOY" conf >"$out" 2>"$err"
	rc=$?
	check "$what: to a path that cannot be opened: alloy conf exits 1" \
		'[ "$rc" = 1 ] && grep -q "$what:$dir/no/such/dir/x: .*cannot open" "$err"'
done

clitest_done test_cli_profile
