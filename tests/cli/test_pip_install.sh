#!/bin/sh
# pip install of the package alloy (python/pyproject.toml) against an
# installed liballoy that pkg-config finds: liballoy, its headers and
# alloy.pc installed into a temporary prefix, a fresh venv (with the
# system's site-packages, for NumPy), `pip install --no-build-isolation
# --no-index`, then `python -m alloy --help` and a NumPy array counted by
# the installed module's liballoy (the temporary prefix's, not the build
# tree's).
srcdir=${srcdir:-.}
. "$(dirname "$0")/sanitizer.sh"
if sanitizer_build; then
	echo "skipped: a sanitizer build (the module is built and tested in the normal build)"
	exit 77
fi
if [ ! -x python/uninstalled ]; then
	echo "skipped: built without the Python module (see configure's python line)"
	exit 77
fi
py=$(sed -n 's/^exec "\(.*\)" "\$@"$/\1/p' python/uninstalled)
if ! "$py" -c 'import venv' 2>/dev/null; then
	echo "skipped: $py has no venv module (apt-get install python3-venv)"
	exit 77
fi
if ! "$py" -m pip --version >/dev/null 2>&1; then
	echo "skipped: no pip for $py (apt-get install python3-pip)"
	exit 77
fi
if ! "$py" -c 'import setuptools, wheel' 2>/dev/null; then
	echo "skipped: no setuptools or wheel for $py (apt-get install python3-setuptools python3-wheel)"
	exit 77
fi
if ! pkg-config --version >/dev/null 2>&1; then
	echo "skipped: no pkg-config"
	exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
p=$tmp/prefix
fail() {
	echo "FAIL: $*"
	exit 1
}

# liballoy alone (libtool installs a library linked to another libtool
# library, the PyTorch adapter, only into the configured libdir).
${MAKE:-make} -s install-libLTLIBRARIES install-alloyincludeHEADERS \
	install-nodist_alloyincludeHEADERS install-pkgconfigDATA \
	lib_LTLIBRARIES=liballoy.la prefix="$p" >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log"; fail "make install prefix=$p"; }
# alloy.pc names the configured prefix; this one lives in $p.
sed -i -e "s|^prefix=.*|prefix=$p|" -e "s|^exec_prefix=.*|exec_prefix=$p|" \
	-e "s|^libdir=.*|libdir=$p/lib|" -e "s|^includedir=.*|includedir=$p/include|" \
	-e "s|^bindir=.*|bindir=$p/bin|" "$p/lib/pkgconfig/alloy.pc"

# A copy of the sources: pip builds in the tree it is given.
mkdir "$tmp/src" && cp -R "$srcdir/python/." "$tmp/src/" &&
	rm -rf "$tmp/src/build" "$tmp/src"/*.egg-info || fail "copy python/"
# Without pip of its own: the system's pip installs into the venv.
"$py" -m venv --system-site-packages --without-pip "$tmp/venv" || fail "venv"
vpy=$tmp/venv/bin/python
unset LD_LIBRARY_PATH PYTHONPATH ALLOY_CONF
PKG_CONFIG_PATH=$p/lib/pkgconfig "$vpy" -m pip install -q --no-build-isolation \
	--no-index "$tmp/src" >"$tmp/pip.log" 2>&1 ||
	{ cat "$tmp/pip.log"; fail "pip install"; }

cd "$tmp" || exit 1
"$vpy" -m alloy --help >help.out 2>&1 || { cat help.out; fail "python -m alloy --help"; }
grep -q '^python3 -m alloy \[--conf CONF\]' help.out || { cat help.out; fail "--help's usage"; }

cat >check.py <<'PYEOF'
import sys
import alloy
import numpy as np

venv, prefix = sys.argv[1], sys.argv[2]
assert alloy.__file__.startswith(venv + "/"), alloy.__file__
# What python3 -m alloy puts on its children's PYTHONPATH.
import os
assert os.path.isfile(os.path.join(os.path.dirname(alloy.__file__),
                                   "_child", "sitecustomize.py"))
libs = {line.split()[-1] for line in open("/proc/self/maps")
        if "liballoy.so" in line}
assert libs and all(l.startswith(prefix + "/lib/") for l in libs), libs
alloy.numpy.enable()
with alloy.reporter():
    a = np.ones(1000)
    counts = alloy.snapshot()["total"]
assert np.core.multiarray.get_handler_name(a) == "alloy"
assert counts["live_blocks"] == 1 and counts["current_bytes"] >= 8000, counts
print("installed alloy %s: an array of %d bytes counted" %
      (alloy.version, counts["current_bytes"]))
PYEOF
"$vpy" check.py "$tmp/venv" "$p" || fail "the installed module"
