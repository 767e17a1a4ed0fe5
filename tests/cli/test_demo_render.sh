#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_demo_render.sh - the files `alloy demo` writes render in a
# real browser: headless Chromium loads the timeline page and its DOM has
# the chart (one path per allocator series) and no script errors; the
# flame graph page draws a box per blob of the peak.
# Exits 77 (a skip, never a pass) where Chromium is not installed.
set -u
ALLOY=${ALLOY:-./alloy}
browser=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$browser" ]; then
	echo "skipped: no chromium (bash scripts/deps.sh --timeline installs it)"
	exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$ALLOY" demo --quick --out "$dir/d" >/dev/null || { echo "FAIL: demo"; exit 1; }
load() { # page in the demo's directory -> $dir/dom, $dir/log
	"$browser" --headless --no-sandbox --disable-gpu --disable-quic \
		--no-first-run --disable-background-networking \
		--disable-component-update --disable-sync \
		--user-data-dir="$dir/profile" --enable-logging=stderr --v=0 \
		--dump-dom "file://$(cd "$dir/d" && pwd)/$1" >"$dir/dom" 2>"$dir/log" ||
		{ echo "FAIL: chromium could not load $1"; tail -5 "$dir/log"; exit 1; }
}
script_errors() {
	grep -q 'Uncaught\|CONSOLE(.*error' "$dir/log" || return 1
	echo "FAIL: script errors in $1:"; grep 'Uncaught\|CONSOLE' "$dir/log" | head -5
}
failed=0
load timeline.html
grep -q '<svg' "$dir/dom" || { echo "FAIL: no svg in the page"; failed=1; }
series=$(grep -o '<path[^>]*stroke' "$dir/dom" | wc -l)
[ "$series" -ge 4 ] || { echo "FAIL: $series series drawn, want >= 4"; failed=1; }
script_errors timeline.html && failed=1
load flamegraph.html
grep -q 'data-rendered="yes"' "$dir/dom" || { echo "FAIL: the flame graph did not render"; failed=1; }
for blob in fc0_w fc1_w data; do
	grep -q "class=\"fr[a-z ]*\" data-name=\"$blob\"" "$dir/dom" ||
		{ echo "FAIL: no box for blob $blob in the flame graph"; failed=1; }
done
script_errors flamegraph.html && failed=1
[ $failed = 0 ] && echo "test_demo_render: the timeline renders with $series series, the flame graph with its blobs"
exit $failed
