#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_flamegraph.sh - the profiler's pages in a real browser: the
# flame graph of tests/programs/profprog's peak and the timeline page, loaded
# in headless Chromium (flags as scripts/check-timeline.sh), their script run,
# and the resulting document read back (--dump-dom): no script errors, a
# box for each known site, the search marking what matches with its share,
# a zoom keeping only what is under the zoomed box, and the timeline's
# breakdown of a chosen moment.  On a tall tree of some 70,000 frames
# (tests/programs/deep_prog.c) the page is under 1 MB, the narrow
# frames are merged into "other" boxes that zoom open, and the widest
# site's box is inside the first screen at 1400x900 and at 800x600.  The SVG picture is screenshotted and must
# not be blank.  Skipped (exit 77) where Chromium is not installed
# (bash scripts/deps.sh --timeline installs it), or in a build without
# libunwind (its boxes are call stacks).  Run from the build directory.
set -u
. "$(dirname "$0")/clitest.sh"
if ! clitest_stacks; then
	echo "skipped: built without libunwind (the flame graph's boxes are call stacks, backtrace:1)"
	exit 77
fi
browser=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$browser" ]; then
	echo "skipped: no chromium (bash scripts/deps.sh --timeline installs it)"
	exit 77
fi
clitest_scratch

flags="--headless --no-sandbox --disable-gpu --disable-background-networking --hide-scrollbars --enable-logging=stderr --v=0"
# The document after its script ran; console errors into $dir/console.
dom() { # file, hash
	timeout 120 "$browser" $flags --dump-dom "file://$1$2" 2>"$dir/console"
}
no_script_errors() {
	! grep -Eq "Uncaught|SyntaxError|TypeError|ReferenceError" "$dir/console"
}

ALLOY_CONF="trace:$dir/p.trace,backtrace:1" ./tests/programs/profprog >"$out" 2>"$err"
check "profprog traced" '[ $? = 0 ]'
rc=$(run report "$dir/p.trace" --format flamegraph -o "$dir/f.html")
check "flamegraph page written" '[ "$rc" = 0 ]'

dom "$dir/f.html" "" >"$dir/dom"
check "the page ran its script without errors" \
	'grep -q "<body data-errors=\"0\" data-rendered=\"yes\"" "$dir/dom" && no_script_errors'
for f in make_weights make_activations make_tensor scratch_buffer build_model main; do
	check "a box for $f" 'grep -q "class=\"fr\" data-name=\"$f\"" "$dir/dom"'
done
check "the boxes fill the width: the top box is 100%, on the first row" \
	'grep -q "data-name=\"all (cpu:0)\" data-node=\"0\" style=\"left: 0%; width: 100%; top: 0px;" "$dir/dom"'

dom "$dir/f.html" "#search=make_w" >"$dir/dom"
check "search marks the matching function and says its share" \
	'grep -q "class=\"fr match\" data-name=\"make_weights\"" "$dir/dom" && ! grep -q "class=\"fr match\" data-name=\"make_activations\"" "$dir/dom" && grep -q ">matched 12.00 KiB (36.0% of all)<" "$dir/dom" && no_script_errors'

node=$(dom "$dir/f.html" "" | sed -n 's/.*data-name="build_model" data-node="\([0-9]*\)".*/\1/p' | head -n 1)
dom "$dir/f.html" "#zoom=$node" >"$dir/dom"
check "zoom into build_model: its callees stay, scratch_buffer goes" \
	'[ -n "$node" ] && grep -q "data-name=\"build_model\" data-node=\"$node\" style=\"left: 0%; width: 100%;" "$dir/dom" && grep -q "data-name=\"make_weights\"" "$dir/dom" && ! grep -q "data-name=\"scratch_buffer\"" "$dir/dom" && grep -q "class=\"fr above\" data-name=\"main\"" "$dir/dom" && no_script_errors'

rc=$(run report "$dir/p.trace" --format flamegraph --by owner -o "$dir/fo.html")
dom "$dir/fo.html" "" >"$dir/dom"
check "by owner: the owners are boxes right under the whole" \
	'[ "$rc" = 0 ] && grep -q "data-name=\"model/layer2\"" "$dir/dom" && grep -q "data-name=\"model/fc1_w\"" "$dir/dom" && no_script_errors'

rc=$(run report "$dir/p.trace" --format flamegraph-svg -o "$dir/f.svg")
timeout 120 "$browser" --headless --no-sandbox --disable-gpu \
	--disable-background-networking --hide-scrollbars \
	--window-size=1240,300 --screenshot="$dir/f.png" "file://$dir/f.svg" \
	>/dev/null 2>&1
size=$(wc -c <"$dir/f.png" 2>/dev/null || echo 0)
check "the flame graph SVG renders (screenshot not blank: $size bytes)" \
	'[ "$rc" = 0 ] && [ "$size" -gt 8000 ]'

rc=$(run report "$dir/p.trace" --format html -o "$dir/t.html")
run report "$dir/p.trace" --at peak --format json -o "$dir/p.json" >/dev/null
peak_ns=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["devices"][0]["t_ns"])' "$dir/p.json")
dom "$dir/t.html" "#t=$peak_ns" >"$dir/dom"
check "the timeline page shows what was live at a chosen moment" \
	'[ "$rc" = 0 ] && grep -q "data-errors=\"0\" data-rendered=\"yes\"" "$dir/dom" && grep -q "<div id=\"at\" data-col=\"[0-9]*\">" "$dir/dom" && grep -q "class=\"row\" data-name=\"make_activations (profprog.c:[0-9]*) &lt; build_model\"" "$dir/dom" && grep -q "class=\"row\" data-name=\"model/layer2\"" "$dir/dom" && grep -q "alloy report .*p.trace --at [0-9]*ns" "$dir/dom" && no_script_errors'

# A tall tree (a narrow site 120 calls deep) with a wide site two calls
# from main, and some 70,000 frames: the widest boxes are on the first
# screen at any window size, and the page stays small.
ALLOY_CONF="trace:$dir/d.trace,backtrace:1" ./tests/programs/deep_prog >"$out" 2>"$err"
check "deep_prog traced" '[ $? = 0 ] && [ "$(cat "$out")" = 1 ]'
rc=$(run report "$dir/d.trace" --format flamegraph -o "$dir/d.html")
size=$(wc -c <"$dir/d.html")
check "the page of 70,000 frames is under 1 MB ($size bytes)" \
	'[ "$rc" = 0 ] && [ "$size" -lt 1048576 ]'
for win in 1400,900 800,600; do
	timeout 120 "$browser" $flags --window-size=$win --dump-dom \
		"file://$dir/d.html#where=wide_site" >"$dir/dom" 2>"$dir/console"
	where=$(sed -n 's/.*<body [^>]*data-where="\([-0-9 ]*\)".*/\1/p' "$dir/dom")
	check "at $win the widest site's box is inside the first screen ($where)" \
		'[ -n "$where" ] && echo "$where" | awk "{ exit !(\$1 >= 0 && \$2 >= 0 && \$3 <= \$5 && \$4 <= \$6 && \$3 > \$1) }" && no_script_errors'
done
dom "$dir/d.html" "" >"$dir/dom"
check "the narrow frames are merged into \"other\" boxes; the deep site stays" \
	'grep -q "data-name=\"other\"" "$dir/dom" && grep -q "data-name=\"narrow_site\"" "$dir/dom" && no_script_errors'
node=$(sed -n 's/.*data-name="other" data-node="\([0-9]*\)".*/\1/p' "$dir/dom" | head -n 1)
dom "$dir/d.html" "#zoom=$node" >"$dir/dom"
check "an \"other\" box zooms open to the widest frames it holds" \
	'[ -n "$node" ] && grep -q "data-name=\"other\" data-node=\"$node\" style=\"left: 0%; width: 100%;" "$dir/dom" && grep -q "class=\"fr\" data-name=\"fan[0-9]*\" data-node=\"$((node + 1))\"" "$dir/dom" && no_script_errors'

clitest_done test_flamegraph
