#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_top.sh - `alloy top`: one frame for scripts (--once), every
# process of the user, a process that is not there, the reporter's owners
# and sites, bytes that are not counted, and the live view on a terminal
# (tmux, read back with capture-pane; q quits).
set -u
. "$(dirname "$0")/clitest.sh"
. "$(dirname "$0")/fronttest.sh"
front_require
clitest_scratch
unset ALLOY_CONF ALLOY_PLUGINS ALLOY_MODULE_PATH
. "$(dirname "$0")/ctltest.sh"

"$ALLOY" run --conf report:stderr -- "$tests/ctl_prog" "$dir/stop" 2 \
	>"$dir/prog.out" 2>"$dir/prog.err" &
pid=$!
wait_socket $pid

rc=$(run top "$pid" --once)
check "top PID --once: one frame of that process" \
	'[ "$rc" = 0 ] && grep -q "^PID $pid  resident [0-9.]* [KMG]iB  reporter: live" "$out" && grep -q "ALLOCATOR  *DEVICE  *DEFAULT  *LIVE BLOCKS  *LIVE BYTES  *PEAK  *ALLOCS/S  *FREES/S" "$out"'
check "the default's row counts allocations a second while the threads run" \
	'awk "\$1 == \"default\" && \$3 == \"yes\" && \$(NF-1) > 100 { ok = 1 } END { exit !ok }" "$out"'
check "with the reporter on, the default's live and peak bytes are counted" \
	'awk "\$1 == \"default\" && \$3 == \"yes\" && \$5 ~ /^[0-9.]+\$/ && \$7 ~ /^[0-9.]+\$/ { ok = 1 } END { exit !ok }" "$out"'
check "and its blocks, without call stacks, are one site saying so" \
	'grep -q "SITE (top 1 by live bytes)" "$out" && grep -q "(no call stack: backtrace on records them)" "$out"'
check "no escape sequences in a frame for a script" '! grep -q "$(printf "\033")" "$out"'
# Other programs of this user (other tests' under alloy run, with their
# sockets in /tmp/alloy-UID) may be listed too, and end while it runs.
rc=$(run top --once)
check "top --once: every process of the user with a socket" \
	'grep -q "^alloy top: [1-9][0-9]* process" "$out" && grep -q "^PID $pid  resident" "$out"'
rc=$(run top 2147480000 --once)
check "top of a process without a socket: exit 1, said in the frame" \
	'[ "$rc" = 1 ] && grep -q "no control socket for process 2147480000" "$out"'
rc=$(run top --bogus)
check "an unknown option is a usage error" '[ "$rc" = 2 ]'

# ---- the sites and owners holding the most, live ----------------------

# Without the reporter the front counts malloc's blocks, not their bytes.
"$ALLOY" run --conf cpu:default -- "$tests/ctl_prog" "$dir/stop2" 2 \
	>"$dir/prog2.out" 2>&1 &
pid2=$!
wait_socket $pid2
rc=$(run top "$pid2" --once)
check "reporter off: malloc's bytes and peak read \"-\", not 0" \
	'[ "$rc" = 0 ] && awk "\$1 == \"default\" && \$4 > 0 && \$5 == \"-\" && \$6 == \"-\" { ok = 1 } END { exit !ok }" "$out"'
touch "$dir/stop2"
wait $pid2

if clitest_stacks; then
	"$ALLOY" run --conf report:/dev/null,backtrace:1 -- "$tests/ctl_prog" \
		"$dir/stop3" 2 >"$dir/prog3.out" 2>&1 &
	pid3=$!
	wait_socket $pid3
	sleep 0.5
	rc=$(run top "$pid3" --once)
	check "backtrace:1: the sites are the program's own frames" \
		'[ "$rc" = 0 ] && grep -A2 "SITE (top" "$out" | grep -q "^ *[0-9.]* [KM]*i*B  *[0-9]*  work+0x[0-9a-f]* (ctl_prog)"'
	touch "$dir/stop3"
	wait $pid3
else
	check_stacks "backtrace:1: the sites" false
fi

py=$top/python/uninstalled
if [ -x "$py" ] && "$py" -c 'import numpy' 2>/dev/null; then
	"$py" -m alloy --conf report:/dev/null -c '
import os, sys, time
import numpy as np
import alloy
with alloy.owner("model/cache"):
    kept = [np.ones(125000) for _ in range(16)]
small = [np.ones(1000) for _ in range(4)]
open(sys.argv[2], "w").close()
while not os.path.exists(sys.argv[1]):
    time.sleep(0.05)
' "$dir/stop4" "$dir/ready4" >"$dir/py.out" 2>&1 &
	pid4=$!
	wait_socket $pid4
	# top looks once every array is made, not while they are being made
	i=0
	while [ $i -lt 600 ] && [ ! -e "$dir/ready4" ]; do
		sleep 0.05
		i=$((i + 1))
	done
	rc=$(run top "$pid4" --once)
	check "python3 -m alloy: the owner holding 16 MB comes first" \
		'grep -A1 "OWNER (top" "$out" | tail -1 | grep -q "^ *1[45]\.[0-9] MiB  *16  model/cache$"'
	touch "$dir/stop4"
	wait $pid4
else
	echo "skipped: owners under python3 -m alloy (no Python module or NumPy)"
fi

if command -v tmux >/dev/null; then
	tm="tmux -L alloy-test-$$ -f /dev/null"
	$tm new-session -d -x 120 -y 40 \
		"env XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR $ALLOY top $pid; echo top-exited-\$?; sleep 5"
	sleep 3
	$tm capture-pane -p >"$dir/pane1.txt"
	$tm send-keys q
	sleep 1.5
	$tm capture-pane -p >"$dir/pane2.txt"
	$tm kill-server 2>/dev/null
	out=$dir/pane1.txt
	check "on a terminal: the frame drawn in place, refreshed, q quits" \
		'grep -q "^alloy top: 1 process; every 1 s, q quits" "$dir/pane1.txt" && grep -q "^  default  *cpu  *yes" "$dir/pane1.txt"'
	out=$dir/pane2.txt
	check "q ends it with status 0" 'grep -q "top-exited-0" "$dir/pane2.txt"'
else
	echo "skipped: the terminal view (tmux is not installed)"
fi

touch "$dir/stop"
wait $pid
check "the program ran on to its end" '[ $? = 0 ]'
clitest_done test_top
