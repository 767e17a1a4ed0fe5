#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_modules.sh - the modules and the example plugin through the
# alloy command, as a user runs it: cpu:jemalloc and cpu:mimalloc need
# nothing else, `alloy list` shows where each allocator came from, the
# out-of-tree example serves `alloy demo` through ALLOY_PLUGINS, and a
# broken plugin is one clear line while the demo goes on.
set -u
out=$(mktemp) err=$(mktemp) demo=$(mktemp -d)
trap 'rm -rf "$out" "$err" "$demo"' EXIT
. "$(dirname "$0")/clitest.sh"
top=$(dirname "$ALLOY")

have() { # module built?
	[ -f "$top/.libs/alloy_$1.so" ]
}

for m in jemalloc mimalloc; do
	if ! have $m; then
		echo "skipped: alloy_$m.so not built"
		continue
	fi
	rc=0
	ALLOY_CONF=cpu:$m "$ALLOY" demo --quick --out "$demo" >"$out" 2>"$err" || rc=$?
	check "cpu:$m demo exits 0" '[ $rc -eq 0 ]'
	check "cpu:$m demo starts on $m" "grep -q 'first on the configured CPU default, \"$m\"' \"\$out\""
	check "cpu:$m table has a row for $m" \
		"grep -E '^  $m +[0-9.]+ ms' \"\$out\" >/dev/null"
	check "cpu:$m prints nothing on stderr" '[ ! -s "$err" ]'
	ALLOY_CONF=cpu:$m "$ALLOY" list >"$out" 2>"$err"
	check "list shows $m's module path as origin" \
		"grep -E '^$m .*/alloy_$m\\.so\$' \"\$out\" >/dev/null"
done

plugin=$top/examples/plugin/alloy_arena.so
rc=0
ALLOY_PLUGINS=$plugin ALLOY_CONF=cpu:arena "$ALLOY" demo --quick --out "$demo" >"$out" 2>"$err" || rc=$?
check "example plugin demo exits 0" '[ $rc -eq 0 ]'
check "example plugin serves the demo" "grep -q 'first on the configured CPU default, \"arena\"' \"\$out\""
ALLOY_PLUGINS=$plugin "$ALLOY" list >"$out" 2>"$err"
check "list shows the plugin path" "grep -q 'alloy_arena.so' \"\$out\""

rc=0
ALLOY_PLUGINS=/nonexistent/x.so:$plugin ALLOY_CONF=cpu:arena "$ALLOY" demo \
	--quick --out "$demo" >"$out" 2>"$err" || rc=$?
check "a missing plugin does not stop the demo" '[ $rc -eq 0 ]'
check "... which the next plugin still serves" "grep -q 'first on the configured CPU default, \"arena\"' \"\$out\""
check "... and is one clear stderr line" \
	"[ \$(wc -l <\"\$err\") -eq 1 ] && grep -q 'ALLOY_PLUGINS: .*/nonexistent/x.so: no such file' \"\$err\""

ALLOY_CONF=cpu:nosuch "$ALLOY" demo --quick --out "$demo" >"$out" 2>"$err"
check "an unknown allocator falls back to default" "grep -q 'first on the configured CPU default, \"default\"' \"\$out\""
check "... saying where it looked" "grep -q 'no alloy_nosuch.so in' \"\$err\""

# A wrapper's inner may be an ALLOY_PLUGINS allocator, as cpu: may.
rc=0
ALLOY_PLUGINS=$plugin ALLOY_CONF=cpu:fail,fail.inner:arena "$ALLOY" conf \
	>"$out" 2>"$err" || rc=$?
check "fail.inner names a plugin's allocator" '[ $rc -eq 0 ] && [ ! -s "$err" ]'

# liballoy loaded late (as Python would): the jemalloc module cannot come,
# and the error says how to fix it; the process goes on with mimalloc.
if ldd "$top/.libs/liballoy.so" 2>/dev/null | grep -q libasan; then
	echo "skipped: late-load check (an ASan liballoy cannot be loaded late)"
elif have jemalloc && command -v python3 >/dev/null; then
	python3 - "$top/.libs/liballoy.so" >"$out" 2>"$err" <<'PY'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.alloy_request_allocator.restype = ctypes.c_void_p
lib.alloy_last_error.restype = ctypes.c_char_p
print("jemalloc:", "loaded" if lib.alloy_request_allocator(b"jemalloc")
      else lib.alloy_last_error().decode())
PY
	check "late-loaded liballoy: jemalloc refused with the fix" \
		"grep -q 'static TLS block; that library must be loaded at process start: link the program with -Wl,--no-as-needed,-lc,-l:libjemalloc.so.2,--as-needed' \"\$out\""
	check "... or the tunable" \
		"grep -q 'GLIBC_TUNABLES=glibc.rtld.optional_static_tls=' \"\$out\""
	GLIBC_TUNABLES=glibc.rtld.optional_static_tls=16384 python3 - \
		"$top/.libs/liballoy.so" >"$out" 2>"$err" <<'PY'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.alloy_request_allocator.restype = ctypes.c_void_p
print("jemalloc:", "loaded" if lib.alloy_request_allocator(b"jemalloc") else "no")
PY
	check "... and the tunable works" "grep -q 'jemalloc: loaded' \"\$out\""
else
	echo "skipped: late-load check (no jemalloc module or no python3)"
fi

# liballoy loaded late with a module as the CPU default, then C++ code
# loaded after it, as in Python importing alloy and then torch: blocks
# libstdc++ makes are freed by the library's inlined code and the other
# way round.  A backend library that needs the C++ runtime (Debian's
# jemalloc) must not take over libstdc++'s own calls to new and delete.
late=$top/tests/programs/late_cxx lib=$top/tests/programs/.libs/late_cxx_lib.so
if ldd "$top/.libs/liballoy.so" 2>/dev/null | grep -q libasan; then
	echo "skipped: C++ loaded late (an ASan liballoy cannot be loaded late)"
else
	base=$("$late" "$lib")
	check "late_cxx runs without alloy" '[ -n "$base" ]'
	for m in jemalloc mimalloc; do
		have $m || continue
		rc=0
		GLIBC_TUNABLES=glibc.rtld.optional_static_tls=16384 \
			ALLOY_MODULE_PATH="$top/.libs" "$late" "$lib" \
			"$top/.libs/liballoy.so" $m >"$out" 2>"$err" || rc=$?
		check "C++ loaded after the $m module: exits 0" '[ $rc -eq 0 ]'
		check "... and computes what it does without alloy" \
			'[ "$(cat "$out")" = "$base" ] && [ ! -s "$err" ]'
	done
fi

# liballoy loaded after threads started: its fast paths' thread-local
# pointer starts on "no record", copied into the running threads at the
# load (tests/programs/late_alloy.c).
if ldd "$top/.libs/liballoy.so" 2>/dev/null | grep -q libasan; then
	echo "skipped: liballoy loaded late (an ASan liballoy cannot be loaded late)"
else
	rc=0
	"$top/tests/programs/late_alloy" "$top/.libs/liballoy.so" >"$out" 2>"$err" ||
		rc=$?
	check "threads running before liballoy's load allocate through it" \
		'[ $rc -eq 0 ] && grep -q "threads that predate" "$out"'
fi

clitest_done test_modules
