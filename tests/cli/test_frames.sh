#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_frames.sh - every address the report prints can be handed
# to addr2line with its module.  A small program (tests/programs/
# frames_prog.c) built as a PIE and as an executable linked at a fixed
# address (-no-pie, as Debian's python3.11 and cc1 are) runs under
# `alloy run --conf backtrace:1`; its widest site at the peak is
# grow_table.  The JSON's module_address of that frame, and the
# MODULE+ADDRESS the text report prints for a stripped copy (no function
# name to show), must both lead addr2line to grow_table in the unstripped
# build; the flame graph's box and the timeline's label of that frame
# start with the address.  Skipped (exit 77) without libunwind, addr2line or strip, and in
# sanitizer builds.  Run from the build directory (make check does).
set -u
. "$(dirname "$0")/sanitizer.sh"
if sanitizer_build; then
	echo "skipped: a sanitizer build (alloy run cannot preload it)"
	exit 77
fi
. "$(dirname "$0")/clitest.sh"
if ! clitest_stacks; then
	echo "skipped: built without libunwind (the checks are of call stacks, backtrace:1)"
	exit 77
fi
for tool in addr2line strip readelf; do
	if ! command -v $tool >/dev/null 2>&1; then
		echo "skipped: no $tool (apt-get install binutils)"
		exit 77
	fi
done
clitest_scratch

json_value() { # file, python expression over `d`; prints it
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# The function addr2line names at ADDRESS in FILE.
func_at() {
	addr2line -f -e "$1" "$2" | head -n 1
}

widest='d["devices"][0]["sites"][0]'
for kind in pie nopie; do
	prog=./tests/programs/frames_$kind
	type=$(readelf -h "$prog" | awk '/Type:/ { print $2 }')
	case $kind in
	pie) check "frames_$kind is a PIE" '[ "$type" = DYN ]' ;;
	nopie) check "frames_$kind is linked at a fixed address" '[ "$type" = EXEC ]' ;;
	esac
	rc=$(run run --conf backtrace:1 --trace "$dir/$kind.trace" -- "$prog")
	check "$kind: runs under alloy run" '[ "$rc" = 0 ] && [ "$(cat "$out")" = 1 ]'
	rc=$(run report "$dir/$kind.trace" --at peak --format json -o "$dir/$kind.json")
	check "$kind: report --at peak reads the trace" '[ "$rc" = 0 ]'
	fn=$(json_value "$dir/$kind.json" "$widest[\"stack\"][0][\"function\"]")
	addr=$(json_value "$dir/$kind.json" "$widest[\"stack\"][0][\"module_address\"]")
	check "$kind: the widest site is grow_table's 1 MiB" \
		'[ "$fn" = grow_table ] && [ "$(json_value "$dir/$kind.json" "$widest[\"bytes\"]")" = 1048576 ]'
	check "$kind: addr2line at its module_address $addr names grow_table" \
		'[ "$(func_at "$prog" "$addr")" = grow_table ]'

	# Stripped, the frame has no name to show: the report prints
	# MODULE+ADDRESS, which addr2line must resolve in the unstripped file.
	strip -o "$dir/frames_$kind" "$prog"
	rc=$(run run --conf backtrace:1 --trace "$dir/$kind-s.trace" -- "$dir/frames_$kind")
	check "$kind stripped: runs under alloy run" '[ "$rc" = 0 ]'
	rc=$(run report "$dir/$kind-s.trace" --at peak --top 1)
	printed=$(grep -o "frames_$kind+0x[0-9a-f]*" "$out" | head -n 1)
	check "$kind stripped: the report prints the frame as module+address" \
		'[ -n "$printed" ]'
	check "$kind stripped: addr2line at $printed names grow_table" \
		'[ "$(func_at "$prog" "${printed#*+}")" = grow_table ]'
	# Boxes and one-line labels, which may be cut, start with what
	# differs: the address, then the object.
	rc=$(run report "$dir/$kind-s.trace" --format flamegraph -o "$dir/$kind.html")
	check "$kind stripped: the flame graph's box says ${printed#*+} (frames_$kind)" \
		'[ "$rc" = 0 ] && grep -q "\"${printed#*+} (frames_$kind)\"" "$dir/$kind.html"'
	rc=$(run report "$dir/$kind-s.trace" --format svg -o "$dir/$kind.svg")
	check "$kind stripped: the timeline's top site starts with its address" \
		'[ "$rc" = 0 ] && grep -q ">1\. ${printed#*+} (frames_" "$dir/$kind.svg"'
done
# The fixed-address executable's frame is its run-time address itself:
# nothing subtracted, so it lies above its first segment's address.
nopie_addr=$(json_value "$dir/nopie.json" "int($widest[\"stack\"][0][\"module_address\"], 16)")
nopie_base=$(readelf -lW ./tests/programs/frames_nopie | awk '$1 == "LOAD" { print $3; exit }')
check "nopie: the address is not made relative to the load address" \
	'[ "$nopie_addr" -gt "$(printf %d "$nopie_base")" ] && [ "$(printf %d "$nopie_base")" -gt 0 ]'
clitest_done test_frames
