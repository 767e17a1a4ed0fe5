#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_front_swap.sh - how a free finds its allocator under
# `alloy run` (docs/PRELOAD.md): an unmodified program's blocks across hot
# swaps of the CPU default, each freed by its maker from any thread, the
# accounting exact per allocator, and a program's sizes and footprint as
# with the backend preloaded directly.
set -u
out=$(mktemp) err=$(mktemp) rep=$(mktemp)
trap 'rm -f "$out" "$err" "$rep"' EXIT
. "$(dirname "$0")/clitest.sh"
. "$(dirname "$0")/fronttest.sh"
front_require
unset ALLOY_CONF
prog=$tests/swap_prog
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)

# The allocators a swap goes through: every backend built, debug (no
# malloc family: its blocks carry alloy's header) between two of them.
names="default"
for m in jemalloc mimalloc; do
	[ -f "$top/.libs/alloy_$m.so" ] && names="$names $m"
done
names="$names debug $names"

# ---- ownership across swaps, and exact accounting

plain=$("$prog" swap $names)
rc=0
under_front --report "$rep" -- "$prog" swap $names || rc=$?
check "swaps ($names): the program's output is that of a run without alloy" \
	'[ $rc = 0 ] && [ "$(cat "$out")" = "$plain" ] && [ ! -s "$err" ]'
# Per allocator: allocs = frees + live, and each served the program.
for a in $(echo "$names" | tr ' ' '\n' | sort -u); do
	row=$(awk -v n="$a" '$1 == n && $2 == "cpu:0" { print $6, $7, $8 }' "$rep")
	made=${row%% *} rest=${row#* }
	freed=${rest%% *} live=${rest#* }
	check "$a: blocks made ($made) = freed ($freed) + live ($live)" \
		'[ -n "$row" ] && [ $((freed + live)) = "$made" ]'
	check "$a: it served the program (over 4096 blocks)" \
		'[ -n "$row" ] && [ "$made" -gt 4096 ]'
done
check "no unknown or double frees" \
	'grep -q "unknown frees 0, double frees 0" "$rep"'

# The same without the reporter: the front's own counts (no report to
# read) and the program's output.
rc=0
under_front -- "$prog" swap $names || rc=$?
check "swaps without the reporter: the same output" \
	'[ $rc = 0 ] && [ "$(cat "$out")" = "$plain" ]'

# An allocator that served the program stays registered.
rc=0
under_front --conf cpu:debug -- "$prog" swap default || rc=$?
check "swap to default and back under debug: the same output" \
	'[ $rc = 0 ] && [ "$(cat "$out")" = "$("$prog" swap default)" ]'

# ---- sizes and footprint: as the backend preloaded directly

lib_of() {
	case $1 in
	default) echo "" ;;
	*) echo "/usr/lib/$multiarch/lib$1.so.2" ;;
	esac
}

for b in default jemalloc mimalloc; do
	lib=$(lib_of "$b")
	if [ "$b" != default ] &&
		{ [ ! -f "$top/.libs/alloy_$b.so" ] || [ ! -f "$lib" ]; }; then
		echo "skipped: cpu:$b sizes and footprint (alloy_$b.so or lib$b.so.2 missing)"
		continue
	fi
	direct=$(LD_PRELOAD=$lib "$prog" sizes)
	under_front --conf "cpu:$b" -- "$prog" sizes
	check "$b: malloc_usable_size answers as the backend preloaded directly" \
		'[ "$(cat "$out")" = "$direct" ]'
	for kind in small page valloc memalign posix; do
		d=$(LD_PRELOAD=$lib "$prog" footprint $kind)
		under_front --conf "cpu:$b" -- "$prog" footprint $kind
		a=$(cat "$out")
		check "$b: resident after $kind blocks: $a KiB, $d KiB preloaded directly (within 5%)" \
			'[ -n "$a" ] && [ -n "$d" ] && [ $((a * 100)) -le $((d * 105)) ]'
	done
done

clitest_done test_front_swap
