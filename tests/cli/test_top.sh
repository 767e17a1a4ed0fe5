#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_top.sh - `alloy top`: one frame for scripts (--once), every
# process of the user, a process that is not there, and the live view on
# a terminal (tmux, read back with capture-pane; q quits).
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
	'[ "$rc" = 0 ] && grep -q "^PID $pid  resident [0-9.]* [KMG]iB  reporter: live" "$out" && grep -q "ALLOCATOR  *DEVICE  *DEFAULT  *LIVE BLOCKS  *LIVE BYTES  *ALLOCS/S  *FREES/S" "$out"'
check "the default's row counts allocations a second while the threads run" \
	'awk "\$1 == \"default\" && \$3 == \"yes\" && \$(NF-1) > 100 { ok = 1 } END { exit !ok }" "$out"'
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
