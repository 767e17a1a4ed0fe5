#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/test_demo_render.sh - the files `alloy demo` writes render in a
# real browser: headless Chromium loads the timeline page and its DOM has
# the chart (one path per allocator series) and no script errors.
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
page="file://$(cd "$dir/d" && pwd)/timeline.html"
"$browser" --headless --no-sandbox --disable-gpu --disable-quic \
	--no-first-run --disable-background-networking \
	--disable-component-update --disable-sync \
	--user-data-dir="$dir/profile" --enable-logging=stderr --v=0 \
	--dump-dom "$page" >"$dir/dom" 2>"$dir/log" ||
	{ echo "FAIL: chromium could not load $page"; tail -5 "$dir/log"; exit 1; }
failed=0
grep -q '<svg' "$dir/dom" || { echo "FAIL: no svg in the page"; failed=1; }
series=$(grep -o '<path[^>]*stroke' "$dir/dom" | wc -l)
[ "$series" -ge 4 ] || { echo "FAIL: $series series drawn, want >= 4"; failed=1; }
if grep -q 'Uncaught\|CONSOLE(.*error' "$dir/log"; then
	echo "FAIL: script errors:"; grep 'Uncaught\|CONSOLE' "$dir/log" | head -5
	failed=1
fi
[ $failed = 0 ] && echo "test_demo_render: the timeline renders with $series series"
exit $failed
