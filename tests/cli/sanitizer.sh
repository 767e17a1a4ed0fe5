# SPDX-License-Identifier: MIT
# tests/cli/sanitizer.sh - sourced by shell tests run from the build directory.
# sanitizer_build: true when liballoy was built with a sanitizer.  Such a
# build cannot be preloaded into another program (the sanitizer's runtime
# must be the process's first library and is its malloc), nor run under
# valgrind or a memory limit; the tests that need those skip there and
# run in the normal build.
sanitizer_build() {
	nm -D .libs/liballoy.so 2>/dev/null | grep -q __asan_init
}
