#!/usr/bin/env bash
# Install the Debian packages alloy builds and tests with (as root).
# Does nothing when everything is already there.
set -euo pipefail
pkgs=(build-essential autoconf automake libtool pkg-config check
      libjemalloc-dev libmimalloc-dev)
# Headless Chromium renders the timeline for scripts/check-timeline.sh;
# ALLOY_DEPS_MINIMAL=1 leaves it out.
[ -n "${ALLOY_DEPS_MINIMAL:-}" ] || pkgs+=(chromium)
# CI's reliability stages: libFuzzer comes with clang; valgrind memcheck.
[ "${1:-}" != "--ci" ] || pkgs+=(clang valgrind)
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
