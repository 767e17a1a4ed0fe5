#!/usr/bin/env bash
# Install the Debian packages alloy builds and tests with (as root).
# Does nothing when everything is already there.
set -euo pipefail
pkgs=(build-essential autoconf automake libtool pkg-config check
      libjemalloc-dev libmimalloc-dev libunwind-dev binutils python3
      git) # real programs under `alloy run` (tests/cli/test_run.sh)
# The Python module (python/): headers, NumPy, pytest, DLPack's header;
# hypothesis, which NumPy's own conftest imports (its tests, run by
# scripts/client-suites.sh and python-clients.sh, stop without it).
pkgs+=(python3-dev python3-numpy python3-pytest python3-hypothesis
       libdlpack-dev)
# `alloy report --format pprof`: protobuf-c's library and compiler, zlib.
pkgs+=(libprotobuf-c-dev protobuf-c-compiler zlib1g-dev)
# Compressed traces (a trace path ending in .zst); the zstd tool, with
# which tests/cli/test_trace_mem.sh checks the files (skipped without).
pkgs+=(libzstd-dev zstd)
# --ci: CI's reliability stages (libFuzzer comes with clang; valgrind),
#   clang-format (scripts/check-format.sh), universal-ctags
#   (tests/cli/test_tags.sh skips without it) and headless Chromium, so
#   that the flame graph and demo pages are rendered
#   (tests/cli/test_flamegraph.sh, test_demo_render.sh skip without it),
#   go, whose `go tool pprof` reads the pprof export
#   (tests/cli/test_export.sh skips those checks without it),
#   and python3-torch, whose torch.cuda._memory_viz reads the snapshots
#   of `alloy report --format torch-snapshot` and alloy.cuda
#   (tests/cli/test_torch_viewer.sh, tests/python/test_cuda.py; about
#   three minutes to install, apt-get update included), venv, pip,
#   setuptools and wheel (tests/cli/test_pip_install.sh: pip install of
#   python/ in a fresh venv), and Jupyter's kernel and nbconvert
#   (tests/cli/test_notebook.sh: the notebook magics, run by a kernel),
#   and npm, with which speedscope is installed from the npm registry
#   (npm install -g speedscope): the viewer that
#   tests/cli/test_perfetto_viewer.sh opens the perfetto export in.
# --timeline: headless Chromium alone.
# --bench: what `alloy bench` can use beyond the build: valgrind (its
#   instruction counts) and libtorch's c10 (`alloy bench c10`).
# --torch: PyTorch and libtorch's c10, for the optional PyTorch adapter
#   (about 1 GB; without them its tests say "skipped").
speedscope=
for arg in "$@"; do
	case $arg in
	--ci) pkgs+=(clang clang-format valgrind universal-ctags chromium
		golang-go python3-torch python3-venv python3-pip
		python3-setuptools python3-wheel python3-ipython
		python3-ipykernel python3-nbclient jupyter-nbconvert)
		speedscope=1 ;;
	--torch) pkgs+=(python3-torch libtorch-dev) ;;
	--timeline) pkgs+=(chromium) ;;
	--bench) pkgs+=(valgrind libtorch-dev) ;;
	*) echo "deps: unknown option $arg" >&2; exit 2 ;;
	esac
done
# Debian's npm only where there is no npm: a Node.js from elsewhere
# (NodeSource's nodejs, which carries its own npm) conflicts with it.
if [ -n "$speedscope" ] && ! command -v npm >/dev/null 2>&1; then
	pkgs+=(npm)
fi
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	echo "deps: installing ${missing[*]}"
	SUDO=
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The speedscope version the viewer test was written against.
if [ -n "$speedscope" ] && [ ! -d "$(npm root -g)/speedscope" ]; then
	echo "deps: installing speedscope from npm"
	SUDO=
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	# Without it the viewer's test says why it skipped; the rest runs.
	$SUDO npm install -g --no-audit --no-fund speedscope@1.25.0 >/dev/null ||
		echo "deps: speedscope could not be installed from npm" >&2
fi
