#!/bin/sh
# SPDX-License-Identifier: MIT
#
# scripts/check-timeline.sh - check that the timeline picture renders in a
# real browser: run the demo with a trace, draw it with `alloy report
# --format svg` (and html), and screenshot both in headless Chromium.
#
#   scripts/check-timeline.sh [OUT_DIR]        (run from a build directory)
#
# Environment: ALLOY (default ./alloy), CHROMIUM (default: chromium or
# chromium-browser on PATH).  Needs the Debian package "chromium".  Writes
# OUT_DIR/timeline.svg, timeline.html, timeline.png and timeline-html.png
# (OUT_DIR defaults to a fresh temporary directory) and exits non-zero if
# a step fails or a screenshot is missing or blank.  Nothing is fetched
# from the network: the SVG and the page are self-contained, and Chromium
# runs with background networking off.
set -eu
ALLOY=${ALLOY:-./alloy}
out=${1:-$(mktemp -d)}
mkdir -p "$out"
browser=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$browser" ]; then
	echo "check-timeline: no chromium found (bash scripts/deps.sh --timeline)" >&2
	exit 77
fi

ALLOY_CONF="trace:$out/demo.trace" "$ALLOY" demo >/dev/null
"$ALLOY" report "$out/demo.trace" --format svg -o "$out/timeline.svg"
"$ALLOY" report "$out/demo.trace" --format html -o "$out/timeline.html"

shot() { # file, png, height
	"$browser" --headless --no-sandbox --disable-gpu \
		--disable-background-networking --hide-scrollbars \
		--window-size=1060,"$3" --screenshot="$2" "file://$1" \
		>/dev/null 2>&1
	size=$(wc -c <"$2" 2>/dev/null || echo 0)
	# An empty white page compresses to a few KiB; a chart does not.
	if [ "$size" -lt 12000 ]; then
		echo "check-timeline: $2 missing or blank ($size bytes)" >&2
		exit 1
	fi
	echo "check-timeline: $2 ($size bytes)"
}

shot "$(cd "$out" && pwd)/timeline.svg" "$out/timeline.png" 540
shot "$(cd "$out" && pwd)/timeline.html" "$out/timeline-html.png" 900
