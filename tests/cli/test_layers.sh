#!/bin/sh
# The folders depend only downward, and docs/ARCHITECTURE.md's diagram is
# the one the build shows (scripts/check-layers.py).
srcdir=${srcdir:-.}
if ! command -v python3 >/dev/null 2>&1; then
	echo "skipped: no python3 to run scripts/check-layers.py"
	exit 77
fi
exec python3 "$srcdir/scripts/check-layers.py" --build . --top "$srcdir"
