#!/bin/sh
# The Python module under pytest (tests/python): NumPy's allocator handler,
# the reporter, DLPack with NumPy and PyTorch, PyTorch's CPU allocator,
# python3 -m alloy.  Runs against the build tree (python/uninstalled).
srcdir=${srcdir:-.}
py=./python/uninstalled
. "$(dirname "$0")/sanitizer.sh"
if sanitizer_build; then
	# The interpreter is not built with the sanitizer; its runtime would
	# have to be preloaded into Python, whose own leaks it then reports.
	echo "skipped: a sanitizer build (the module's tests run in the normal build)"
	exit 77
fi
if [ ! -x "$py" ]; then
	echo "skipped: built without the Python module (see configure's python line)"
	exit 77
fi
if ! "$py" -m pytest --version >/dev/null 2>&1; then
	echo "skipped: no pytest for the module's interpreter (apt-get install python3-pytest)"
	exit 77
fi
exec "$py" -m pytest -q -p no:cacheprovider -rs "$srcdir/tests/python"
