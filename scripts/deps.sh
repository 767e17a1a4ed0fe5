#!/usr/bin/env bash
# Install the Debian packages alloy builds and tests with (as root).
# Does nothing when everything is already there.
set -euo pipefail
pkgs=(build-essential autoconf automake libtool pkg-config check
      libjemalloc-dev libmimalloc-dev libunwind-dev binutils python3
      git python3-numpy) # real programs under `alloy run` (tests/test_run.sh)
# --ci: CI's reliability stages (libFuzzer comes with clang; valgrind).
# --timeline: headless Chromium, for scripts/check-timeline.sh only.
# --bench: what `alloy bench` can use beyond the build: valgrind (its
#   instruction counts) and libtorch's c10 (`alloy bench c10`).
for arg in "$@"; do
	case $arg in
	--ci) pkgs+=(clang valgrind python3-pytest) ;; # + NumPy's own tests
	--timeline) pkgs+=(chromium) ;;
	--bench) pkgs+=(valgrind libtorch-dev) ;;
	*) echo "deps: unknown option $arg" >&2; exit 2 ;;
	esac
done
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
