#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_perfetto_viewer.sh - `alloy report --format perfetto`
# opened in a real viewer: speedscope (npm's package, installed by
# `bash scripts/deps.sh --ci`) in headless Chromium.  speedscope imports
# Chrome's trace-event JSON; the test hands it the export of
# tests/programs/profprog, whose owners ("model/layer1", ...) become
# slices on its thread, and reads back the page speedscope drew: the
# profile's name (the export's file) in the page title, the thread's
# track among its profiles, the flame chart drawn, the owners listed in
# its sandwich view, no import error and no script error.  Skipped without chromium or speedscope.
#
# Run from the build directory (make check does).
set -u
. "$(dirname "$0")/clitest.sh"
browser=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$browser" ]; then
	echo "skipped: no chromium (bash scripts/deps.sh --timeline installs it)"
	exit 77
fi
ss=${SPEEDSCOPE_DIR:-}
if [ -z "$ss" ] && command -v npm >/dev/null 2>&1; then
	ss=$(npm root -g 2>/dev/null)/speedscope
fi
if [ -z "$ss" ] || [ ! -f "$ss/dist/release/index.html" ]; then
	echo "skipped: no speedscope (bash scripts/deps.sh --ci installs it from npm; or set SPEEDSCOPE_DIR)"
	exit 77
fi
clitest_scratch

ALLOY_CONF="trace:$dir/p.trace" ./tests/programs/profprog >"$out" 2>"$err"
check "profprog traced" '[ $? = 0 ]'
rc=$(run report "$dir/p.trace" --format perfetto -o "$dir/alloy-export.json")
check "perfetto export written" '[ "$rc" = 0 ]'
tid=$(sed -n 's/^T 1 \([0-9]*\)$/\1/p' "$dir/p.trace")

# speedscope's page loads a local profile through a script that hands
# it the file's bytes (what its own command-line tool writes), so no
# fetch of a file:// address is needed.
{
	printf 'speedscope.loadFileFromBase64("alloy-export.json", "'
	base64 -w0 "$dir/alloy-export.json"
	printf '");\n'
} >"$dir/load.js"
# The page, and a probe that waits for speedscope to draw, then writes
# what it shows into the document that --dump-dom prints.
cp -r "$ss/dist/release" "$dir/ss"
cat >"$dir/ss/probe.js" <<'JS'
window.addEventListener('error', function (e) {
	document.documentElement.setAttribute('data-errors', String(e.message));
});
// The time-order view draws on canvases; the sandwich view lists the
// frames (here the owners' slices) as text, with their times.
function report() {
	var c = document.querySelectorAll('canvas'), drawn = 0;
	for (var i = 0; i < c.length; i++)
		if (c[i].width > 0 && c[i].height > 0)
			drawn++;
	var r = document.createElement('pre');
	r.id = 'probe';
	r.textContent = 'title=' + document.title + '\ncanvases=' + drawn +
		'\ntext=' + document.body.innerText.replace(/\s+/g, ' ');
	document.body.appendChild(r);
}
setTimeout(function () {
	var all = document.querySelectorAll('div, span, button');
	for (var i = 0; i < all.length; i++)
		if (all[i].textContent.trim().endsWith('Sandwich') &&
		    all[i].children.length <= 1) {
			all[i].click();
			break;
		}
	setTimeout(report, 3000);
}, 6000);
JS
sed 's|</body>|<script src="probe.js"></script></body>|' \
	"$ss/dist/release/index.html" >"$dir/ss/index.html"
timeout 120 "$browser" --headless --no-sandbox --disable-gpu \
	--allow-file-access-from-files --window-size=1400,900 \
	--virtual-time-budget=15000 --dump-dom \
	"file://$dir/ss/index.html#localProfilePath=$dir/load.js" \
	>"$dir/dom" 2>"$dir/console"
check "chromium loaded speedscope's page" '[ $? = 0 ] && grep -q "id=\"probe\"" "$dir/dom"'
out=$dir/dom err=$dir/console
check "speedscope imported the export: its name in the title" \
	'grep -q "title=alloy-export.json - speedscope" "$dir/dom"'
check "the thread's track is a profile of it, the flame chart drawn" \
	'grep -q "thread $tid" "$dir/dom" && grep -Eq "canvases=[1-9]" "$dir/dom"'
check "the sandwich view lists profprog's owners, as slices speedscope read" \
	'grep -q "text=.*model" "$dir/dom" && grep -q "text=.*layer1" "$dir/dom" && grep -q "text=.*layer2" "$dir/dom"'
check "no import error, no script error" \
	'! grep -Eqi "something went wrong|unrecognized format|failed to import" "$dir/dom" && ! grep -q "data-errors=" "$dir/dom"'
clitest_done test_perfetto_viewer
