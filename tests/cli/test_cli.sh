#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_cli.sh - the alloy command as a user runs it: exit codes,
# help, configuration errors, JSON output.
set -u
out=$(mktemp) err=$(mktemp) bad=
trap 'rm -f "$out" "$err" "$out$bad"' EXIT
. "$(dirname "$0")/clitest.sh"
. "$(dirname "$0")/sanitizer.sh"

rc=$(run --help)
check "--help exits 0" '[ "$rc" = 0 ]'
check "--help lists the commands" 'grep -q "list" "$out" && grep -q "bench" "$out" && grep -q "Exit status" "$out"'
rc=$(run conf --help)
check "per-command help" '[ "$rc" = 0 ] && grep -q "usage: alloy conf" "$out"'

# alloy run's options end at the program: -h and --help after it are the
# program's.  The program's own output needs the front (not in a sanitizer
# build, see tests/cli/fronttest.sh); alloy's usage must never come out.
rc=$(run run --help)
check "run --help prints run's usage" '[ "$rc" = 0 ] && grep -q "usage: alloy run" "$out"'
rc=$(run run --conf cpu:default -h)
check "run -h after an option's value prints run's usage" '[ "$rc" = 0 ] && grep -q "usage: alloy run" "$out"'
front=false
if [ -f "$(dirname "$ALLOY")/.libs/liballoy_preload.so" ] && ! sanitizer_build; then
	front=true
fi
for args in "-- sh -c" "sh -c"; do
	# shellcheck disable=SC2086 # $args is split on purpose
	rc=$(run run $args 'echo "prog got $*"' sh -h --help)
	check "run $args PROG -h --help: no usage of alloy's" '! grep -q "usage: alloy" "$out" "$err"'
	if $front; then
		check "run $args PROG -h --help runs PROG with them" \
			'[ "$rc" = 0 ] && [ "$(cat "$out")" = "prog got -h --help" ]'
	fi
done
rc=$(run report -- --help)
check "--help after -- is no request for help" '! grep -q "usage: alloy" "$out"'

rc=$(run frobnicate)
check "unknown command exits 2" '[ "$rc" = 2 ] && grep -q frobnicate "$err"'
rc=$(run list --bogus)
check "unknown option exits 2" '[ "$rc" = 2 ] && grep -q -- --bogus "$err"'
rc=$(run)
check "no command exits 2" '[ "$rc" = 2 ]'

unset ALLOY_CONF
rc=$(run conf)
check "clean conf exits 0" '[ "$rc" = 0 ] && [ ! -s "$err" ]'
check "conf shows the default allocator" 'grep -Eq "^cpu +default" "$out"'

export ALLOY_CONF="align:48,cpu:default"
rc=$(run conf)
check "bad conf exits 1" '[ "$rc" = 1 ]'
check "one stderr line names the bad part and the fallback" \
	'[ "$(wc -l <"$err")" = 1 ] && grep -q "align:48" "$err" && grep -q "using 64" "$err"'
rc=$(run conf --json)
check "conf --json carries the error" '[ "$rc" = 1 ] && grep -q "\"errors\": \[" "$out" && grep -q "align:48" "$out"'

# JSON is UTF-8: a value's valid UTF-8 goes out as it is, each byte that
# is not part of it as U+FFFD.  A report path may be any bytes, here
# Latin-1 e-acute, UTF-8 e-acute, half a UTF-8 euro sign, an encoded
# surrogate and an overlong slash.  Parsed by a strict parser.  (conf
# writes its exit report there: removed after.)
bad=$(printf '.r\351\303\251\342\202.\355\240\200\300\257')
export ALLOY_CONF="report:$out$bad"
rc=$(run conf --json)
check "conf --json of a path that is not UTF-8: exit 0" '[ "$rc" = 0 ]'
check "conf --json of a path that is not UTF-8 is UTF-8 JSON, the bad bytes U+FFFD" \
	'/usr/bin/python3 -c "import json, sys
d = json.load(open(sys.argv[1], encoding=\"utf-8\"))
want = sys.argv[1] + \".r\ufffd\u00e9\ufffd\ufffd.\ufffd\ufffd\ufffd\ufffd\ufffd\"
sys.exit(d[\"settings\"][\"report\"][\"value\"] != want)" "$out"'
rm -f "$out$bad"

export ALLOY_CONF="cpu:nosuch"
rc=$(run demo --quick --out "$out.d")
check "demo with an unknown allocator still completes" '[ "$rc" = 0 ]'
check "exactly one clear line about nosuch" \
	'[ "$(grep -c nosuch "$err")" = 1 ] && grep -q "using \"default\"" "$err"'
check "demo ran on the default allocator" 'grep -q "first on the configured CPU default, \"default\"" "$out"'
rm -rf "$out.d"
unset ALLOY_CONF

rc=$(run list --json)
check "list --json names default as builtin" \
	'[ "$rc" = 0 ] && grep -q "\"name\": \"default\", \"device\": \"cpu\", \"origin\": \"builtin\"" "$out"'
rc=$(run bench --quick --json core)
check "bench --json prints the core ratios" \
	'[ "$rc" = 0 ] && grep -q "\"metric\": \"worst ratio alloy/direct\"" "$out"'
rc=$(run bench nosuch)
check "bench of an unknown benchmark exits 2" '[ "$rc" = 2 ]'

clitest_done cli
