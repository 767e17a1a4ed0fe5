#!/usr/bin/env bash
# Regenerate what the README shows of `alloy demo`: its real output (the
# block between <!-- demo:begin --> and <!-- demo:end -->) and the picture
# of its timeline (docs/demo-timeline.png), from a run made now, so that
# the Quick start stays true.  Needs a build in build/ and Chromium
# (bash scripts/deps.sh --timeline).
#
#   scripts/readme-demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/alloy ] || { echo "readme-demo: build first (bash scripts/demo.sh)" >&2; exit 1; }
browser=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$browser" ] || { echo "readme-demo: no chromium (bash scripts/deps.sh --timeline)" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

(cd "$dir" && "$OLDPWD/build/alloy" demo) >"$dir/out.txt"
"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--user-data-dir="$dir/profile" --hide-scrollbars --window-size=1100,620 \
	--screenshot="$PWD/docs/demo-timeline.png" \
	"file://$dir/alloy-demo/timeline.html" >/dev/null 2>&1
[ -s docs/demo-timeline.png ] || { echo "readme-demo: no screenshot" >&2; exit 1; }

python3 - "$dir/out.txt" <<'PY'
import re, sys
out = open(sys.argv[1]).read().rstrip("\n")
readme = open("README.md").read()
block = ("<!-- demo:begin -->\n```\n$ bash scripts/demo.sh\n...\n" + out +
         "\n```\n<!-- demo:end -->")
new, n = re.subn(r"<!-- demo:begin -->.*?<!-- demo:end -->", lambda m: block,
                 readme, flags=re.S)
if n != 1:
    sys.exit("readme-demo: README.md has no demo:begin/end block")
open("README.md", "w").write(new)
PY
echo "readme-demo: README.md and docs/demo-timeline.png regenerated"
