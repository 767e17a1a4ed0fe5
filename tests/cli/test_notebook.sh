#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_notebook.sh - the notebook magics with a real kernel:
# tests/python/notebook.ipynb (%load_ext alloy, a %%alloy_flamegraph cell,
# a %%alloy_peak cell) executed by `nbconvert --execute --to html` under
# the build tree's interpreter (python/uninstalled, which its kernel
# inherits), then the HTML opened in headless Chromium: each flame graph
# frame must have run its script without errors, the site graph's top box
# must be the whole, and the owner graph must give model_weights 4 MiB of
# the cell's 5 MiB peak (80%) and activations the rest; the %%alloy_peak
# table must list both owners with their bytes.  Skipped (exit 77)
# without Jupyter's nbconvert, nbclient and ipykernel or without Chromium
# (bash scripts/deps.sh --ci installs them).  Run from the build directory.
set -u
srcdir=${srcdir:-.}
. "$(dirname "$0")/sanitizer.sh"
if sanitizer_build; then
	echo "skipped: a sanitizer build (the module's tests run in the normal build)"
	exit 77
fi
py=./python/uninstalled
if [ ! -x "$py" ]; then
	echo "skipped: built without the Python module (see configure's python line)"
	exit 77
fi
if ! "$py" -c 'import IPython, ipykernel, nbclient, nbconvert, nbformat' 2>/dev/null; then
	echo "skipped: no Jupyter for the module's interpreter (apt-get install python3-ipython python3-ipykernel python3-nbclient jupyter-nbconvert)"
	exit 77
fi
browser=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$browser" ]; then
	echo "skipped: no chromium (bash scripts/deps.sh --timeline installs it)"
	exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0
check() { # name, condition
	if eval "$2"; then
		echo "ok: $1"
	else
		echo "FAIL: $1"
		failed=1
	fi
}

unset ALLOY_CONF
# The kernel's debugger warns about frozen modules on stderr; harmless.
PYDEVD_DISABLE_FILE_VALIDATION=1 timeout 300 "$py" -m nbconvert --execute \
	--to html --output-dir "$tmp" --output nb \
	"$srcdir/tests/python/notebook.ipynb" >"$tmp/nbconvert.log" 2>&1
rc=$?
# A cell that raises stops it (no --allow-errors).
check "nbconvert ran the notebook, no cell raised" '[ "$rc" = 0 ] && [ -s "$tmp/nb.html" ]'
[ "$rc" = 0 ] || { cat "$tmp/nbconvert.log"; exit 1; }

# --dump-dom writes the top document only: a script of the test's copies
# each frame's rendered body (same origin: srcdoc) into it.
cat >"$tmp/copy.js" <<'JSEOF'
<script>
window.addEventListener("load", function () {
	var frames = document.querySelectorAll(".alloy-flamegraph iframe");
	for (var i = 0; i < frames.length; i++) {
		var body = frames[i].contentDocument && frames[i].contentDocument.body;
		var copy = document.createElement("div");
		copy.className = "frame-copy";
		copy.setAttribute("data-by", frames[i].parentNode.getAttribute("data-by"));
		copy.setAttribute("data-state", body ? "rendered=" +
			body.getAttribute("data-rendered") + " errors=" +
			body.getAttribute("data-errors") : "none");
		if (body)
			copy.innerHTML = body.innerHTML;
		document.body.appendChild(copy);
	}
});
</script>
JSEOF
sed "/<\/body>/e cat $tmp/copy.js" "$tmp/nb.html" >"$tmp/check.html"
# Nothing from the network: any host fails at once.
timeout 120 "$browser" --headless --no-sandbox --disable-gpu \
	--disable-background-networking --hide-scrollbars \
	--enable-logging=stderr --v=0 --host-resolver-rules="MAP * ~NOTFOUND" \
	--dump-dom "file://$tmp/check.html" >"$tmp/dom" 2>"$tmp/console"
check "Chromium loaded the page" '[ -s "$tmp/dom" ]'
for by in site owner; do
	check "the $by graph's page ran its script without errors" \
		'grep -q "class=\"frame-copy\" data-by=\"$by\" data-state=\"rendered=yes errors=0\"" "$tmp/dom"'
done
# The copies in page order: site first, then owner.
sed -n '/class="frame-copy" data-by="site"/,/class="frame-copy" data-by="owner"/p' \
	"$tmp/dom" >"$tmp/site"
sed -n '/class="frame-copy" data-by="owner"/,$p' "$tmp/dom" >"$tmp/owner"
check "the site graph's top box is the whole peak" \
	'grep -q "data-name=\"all (cpu:0)\" data-node=\"0\" style=\"left: 0%; width: 100%; top: 0px;" "$tmp/site"'
check "the owner graph: model_weights 80% of the peak, under the whole" \
	'grep -q "data-name=\"all (cpu:0)\" data-node=\"0\" style=\"left: 0%; width: 100%; top: 0px;" "$tmp/owner" && grep -Eq "data-name=\"model_weights\" data-node=\"1\" style=\"left: 0%; width: (79\.9|80)[0-9.]*%; top: 18px;" "$tmp/owner"'
check "the owner graph: activations the other 20%" \
	'grep -Eq "data-name=\"activations\" data-node=\"[0-9]+\" style=\"left: (79\.9|80)[0-9.]*%; width: (20|19\.9)[0-9.]*%; top: 18px;" "$tmp/owner"'
check "%%alloy_peak: the table by owner" \
	'grep -Eq "^ +4194304 +66\.7% +8 +model_weights" "$tmp/nb.html" && grep -Eq "^ +20971[0-9]{2} +33\.3% +[0-9]+ +scratch" "$tmp/nb.html"'
exit $failed
