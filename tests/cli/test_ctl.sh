#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_ctl.sh - `alloy ctl` against running programs: a threaded
# workload (tests/programs/ctl_prog.c) swapped default -> jemalloc ->
# mimalloc -> default, traced for a window and reported while it runs,
# printing what it prints without alloy; two clients at once; bad
# requests; a stale socket of a killed process; the program exiting in the
# middle of a command; control:0; another user refused.
set -u
. "$(dirname "$0")/clitest.sh"
. "$(dirname "$0")/fronttest.sh"
front_require
clitest_scratch
unset ALLOY_CONF ALLOY_PLUGINS ALLOY_MODULE_PATH
prog=$tests/ctl_prog
libs=$top/.libs
. "$(dirname "$0")/ctltest.sh"

ctl() {
	"$ALLOY" ctl "$@" >"$out" 2>"$err"
	echo $?
}

# The report row's column N of allocator NAME on cpu:0.
column() {
	awk -v n="$2" -v c="$3" '$1 == n && $2 == "cpu:0" { print $c; exit }' "$1"
}

# ---- the workload, swapped while it runs ------------------------------

touch "$dir/stop_now"
"$prog" "$dir/stop_now" >"$dir/plain.out" 2>&1
check "the workload runs without alloy" '[ $? = 0 ] && [ -s "$dir/plain.out" ]'

swaps=""
plugins=""
for m in jemalloc mimalloc; do
	if [ -f "$libs/alloy_$m.so" ]; then
		swaps="$swaps $m"
		plugins="$plugins${plugins:+:}$libs/alloy_$m.so"
	else
		echo "skipped: swap to $m (alloy_$m.so not built)"
	fi
done
# Without the modules, the built-in debug wrapper is what is swapped in.
[ -n "$swaps" ] || swaps=" debug"
# The modules are loaded at start, so that no loader data is made on a
# backend that is swapped in later: every block on them is the workload's.
ALLOY_PLUGINS=$plugins "$ALLOY" run --conf "report:$dir/report.txt" -- \
	"$prog" "$dir/stop" 4 >"$dir/ctl.out" 2>"$dir/ctl.err" &
pid=$!
check "the program listens on a socket named by its pid" 'wait_socket $pid'
check "the socket's directory is 0700" \
	'[ "$(stat -c %a "$sockets")" = 700 ]'
rc=$(ctl "$pid" conf)
check "conf: the effective settings" \
	'[ "$rc" = 0 ] && grep -q "^control  *auto" "$out" && grep -q "^default of cpu  *default" "$out"'
alloy_abs=$(cd "$(dirname "$ALLOY")" && pwd)/$(basename "$ALLOY")
rc=$(cd "$dir" && "$alloy_abs" ctl "$pid" trace start trace.alloy >"$out" 2>"$err"; echo $?)
check "trace start: a relative FILE is the client's" \
	'[ "$rc" = 0 ] && grep -q "tracing to $dir/trace.alloy" "$out"'
for b in $swaps default; do
	sleep 0.5
	rc=$(ctl "$pid" swap "cpu:$b")
	check "swap cpu:$b while the threads allocate" \
		'[ "$rc" = 0 ] && grep -q "cpu default .* -> $b in" "$out"'
done
rc=$(ctl "$pid" trace stop)
check "trace stop" '[ "$rc" = 0 ] && grep -q "trace closed" "$out"'
rc=$(ctl "$pid" report --format json)
check "report --format json: the program's reporter, as JSON" \
	'[ "$rc" = 0 ] && python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$out"'
rc=$(ctl "$pid" report --at peak)
check "report --at peak: the peaks" \
	'[ "$rc" = 0 ] && grep -q "^default  *cpu:0" "$out" && grep -q "^(all)" "$out"'
rc=$(ctl "$pid" reset-peaks)
check "reset-peaks" '[ "$rc" = 0 ] && grep -q "peaks reset" "$out"'
rc=$(ctl "$pid" backtrace off)
check "backtrace off" '[ "$rc" = 0 ] && grep -q "call stacks off" "$out"'

# Two clients at once: one holds its connection open and asks twice,
# another is served in between.
python3 - "$sockets/$pid.sock" >"$dir/held.out" 2>&1 <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile("rw")
print(f.readline().strip())
for req in ("ping", "stats"):
    f.write("alloy/1 %s\n" % req)
    f.flush()
    while True:
        line = f.readline()
        print(line.strip())
        if not line or not line.startswith("."):
            break
    time.sleep(1)
PY
held=$!
sleep 0.3
rc=$(ctl "$pid" ping)
check "a second client is served while the first holds its connection" \
	'[ "$rc" = 0 ] && grep -q "pong $pid" "$out"'
wait $held
check "the first client got both of its answers" \
	'head -1 "$dir/held.out" | grep -q "^alloy/1 pid $pid" && grep -q "^ok pong" "$dir/held.out" && grep -q "^. rss " "$dir/held.out" && grep -q "^ok stats" "$dir/held.out"'

# Bad requests: refused with the reason, the program unharmed.
rc=$(ctl "$pid" frobnicate)
check "an unknown command is refused" \
	'[ "$rc" = 1 ] && grep -q "unknown command frobnicate" "$err"'
rc=$(ctl "$pid" swap jemalloc)
check "swap without a device is refused" \
	'[ "$rc" = 1 ] && grep -q "expected DEVICE:ALLOCATOR" "$err"'
rc=$(ctl "$pid" swap cpu:no_such_one)
check "a module that cannot be loaded: the loader says why" \
	'[ "$rc" = 1 ] && grep -q "no allocator or module named \"no_such_one\"" "$err"'
rc=$(ctl "$pid" report --at yesterday)
check "a bad option value is refused" \
	'[ "$rc" = 1 ] && grep -q "expected peak or now" "$err"'
rc=$(ctl "$pid" trace start /dev/null)
check "a trace to something other than a file is refused" \
	'[ "$rc" = 1 ] && grep -q "not a regular file" "$err"'
python3 - "$sockets/$pid.sock" >"$dir/raw.out" 2>&1 <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile("rwb")
f.readline()
for req in (b"alloy/9 ping\n", b"alloy/1 ping\x07\n", b"\n", b"x" * 5000 + b"\n"):
    f.write(req)
    f.flush()
    print(f.readline().decode().strip())
PY
check "another protocol version, a control byte, an empty and an overlong line are refused" \
	'sed -n 1p "$dir/raw.out" | grep -q "^error unknown protocol alloy/9" &&
	 sed -n 2p "$dir/raw.out" | grep -q "^error the request holds a control byte" &&
	 sed -n 3p "$dir/raw.out" | grep -q "^error empty request" &&
	 sed -n 4p "$dir/raw.out" | grep -q "^error request longer than"'
rc=$(ctl "$pid" ping)
check "the program still answers after the bad requests" '[ "$rc" = 0 ]'

touch "$dir/stop"
wait $pid
rc=$?
check "the workload exits 0 under alloy" '[ "$rc" = 0 ]'
check "its output is the output of the run without alloy" \
	'cmp -s "$dir/plain.out" "$dir/ctl.out"'
check "its socket is removed at exit" '[ ! -e "$sockets/$pid.sock" ]'
for b in default $swaps; do
	check "the report shows blocks made on $b" \
		'[ "$(column "$dir/report.txt" $b 6)" -gt 1000 ]'
done
for b in $swaps; do
	check "every block of $b was freed by it" \
		'[ "$(column "$dir/report.txt" $b 8)" = 0 ] && [ "$(column "$dir/report.txt" $b 6)" = "$(column "$dir/report.txt" $b 7)" ]'
done
rc=$(run report "$dir/trace.alloy")
check "the trace of the window reads back" '[ "$rc" = 0 ]'
for b in $swaps; do
	check "the traced window saw $b" 'grep -q "$b" "$out"'
done

# ---- a NumPy loop under python3 -m alloy ------------------------------

pyloop='
import os, sys
import numpy as np
total, i = 0.0, 0
while i < 400 or not os.path.exists(sys.argv[1]):
    a = np.arange(1000 + i % 5000, dtype=np.float64)
    total += float((a * 2).sum()) if i < 400 else 0.0
    i += 1
print("numpy loop: %.1f" % total)
'
py=$top/python/uninstalled
if [ -x "$py" ] && "$py" -c 'import numpy' 2>/dev/null; then
	touch "$dir/pystop_now"
	/usr/bin/python3 -c "$pyloop" "$dir/pystop_now" >"$dir/py_plain.out" 2>&1
	"$py" -m alloy --conf "report:$dir/pyreport.txt" -c "$pyloop" \
		"$dir/pystop" >"$dir/py.out" 2>"$dir/py.err" &
	pid=$!
	check "python3 -m alloy listens" 'wait_socket $pid'
	for b in $swaps default; do
		sleep 0.3
		rc=$(ctl "$pid" swap "cpu:$b")
		check "python3 -m alloy: swap cpu:$b while NumPy allocates" \
			'[ "$rc" = 0 ] && grep -q "cpu default .* -> $b in" "$out"'
	done
	touch "$dir/pystop"
	wait $pid
	rc=$?
	check "the NumPy loop prints what it prints without alloy" \
		'[ "$rc" = 0 ] && cmp -s "$dir/py_plain.out" "$dir/py.out"'
	for b in $swaps; do
		check "NumPy's arrays were made on $b and all freed" \
			'[ "$(column "$dir/pyreport.txt" $b 6)" -gt 0 ] && [ "$(column "$dir/pyreport.txt" $b 8)" = 0 ]'
	done
else
	echo "skipped: python3 -m alloy (built without the Python module, or no NumPy)"
fi

# ---- a stale socket of a killed process -------------------------------

"$ALLOY" run --conf control:1 -- sleep 30 &
victim=$!
wait_socket $victim
kill -9 $victim
wait $victim 2>/dev/null
check "a killed process leaves its socket" '[ -S "$sockets/$victim.sock" ]'
rc=$(ctl "$victim" ping)
check "the client removes it and says the process is gone" \
	'[ "$rc" = 1 ] && grep -q "is gone was removed" "$err" && [ ! -e "$sockets/$victim.sock" ]'
"$ALLOY" run --conf control:1 -- sleep 30 &
victim=$!
wait_socket $victim
kill -9 $victim
wait $victim 2>/dev/null
"$ALLOY" run --conf control:1 -- sleep 30 &
next=$!
wait_socket $next
check "a program that starts removes the sockets of processes that are gone" \
	'[ ! -e "$sockets/$victim.sock" ]'
kill $next
wait $next 2>/dev/null

# ---- the program exits in the middle of a command ---------------------

rm -f "$dir/stop" "$dir/mark"
CTL_WAIT_MARK=$dir/mark ALLOY_MODULE_PATH=$top/tests/plugins/.libs:$libs \
	"$ALLOY" run -- "$prog" "$dir/stop" 4 >"$dir/mid.out" 2>"$dir/mid.err" &
pid=$!
wait_socket $pid
"$ALLOY" ctl "$pid" swap cpu:ctl_wait >"$dir/midctl.out" 2>"$dir/midctl.err" &
client=$!
i=0
while [ ! -e "$dir/mark" ] && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
check "the command is running (the module's init started)" '[ -e "$dir/mark" ]'
touch "$dir/stop"
start=$(date +%s)
wait $pid
rc=$?
took=$(($(date +%s) - start))
check "the program exits while the command runs, without waiting for it" \
	'[ "$rc" = 0 ] && [ "$took" -lt 10 ] && cmp -s "$dir/plain.out" "$dir/mid.out"'
wait $client
rc=$?
check "the client says the program exited before answering" \
	'[ "$rc" = 1 ] && grep -q "exited (or closed the connection) before answering" "$dir/midctl.err"'

# ---- off, and the API's answers ----------------------------------------

"$ALLOY" run --conf control:0 -- sleep 2 &
off=$!
sleep 1
check "control:0: no socket" '[ ! -e "$sockets/$off.sock" ]'
wait $off

# control:auto, the default: a single-threaded program stays so, and the
# client says why it has no socket; a threaded one has it once its first
# thread is made (the ctl_prog runs above).
"$ALLOY" run -- sleep 2 &
single=$!
sleep 1
check "control:auto: a single-threaded program has no socket and one thread" \
	'[ ! -e "$sockets/$single.sock" ] && grep -q "^Threads:[[:space:]]*1$" /proc/$single/status'
rc=$(ctl "$single" ping)
check "the client says it runs under alloy run and how to have a socket" \
	'[ "$rc" = 1 ] && grep -q "runs under .alloy run. and has no control socket: with control:auto" "$err" && grep -q "control:1" "$err"'
wait $single
rc=$(ctl "$off" ping)
check "a process without a socket: the client says so" \
	'[ "$rc" = 1 ] && grep -q "no control socket for process $off" "$err"'
rc=$(ctl notapid ping)
check "a PID that is not a number is a usage error" '[ "$rc" = 2 ]'

# ---- another user is refused -------------------------------------------

# A process of user nobody that may still enter the directory (it keeps
# CAP_DAC_OVERRIDE): only the server's peer check stands in its way.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		--inh-caps=+dac_override --ambient-caps=+dac_override true 2>/dev/null; then
	rm -f "$dir/stop"
	"$ALLOY" run -- "$prog" "$dir/stop" 1 >"$dir/user.out" 2>"$dir/user.err" &
	pid=$!
	wait_socket $pid
	for i in 1 2; do
		setpriv --reuid=65534 --regid=65534 --clear-groups \
			--inh-caps=+dac_override --ambient-caps=+dac_override \
			python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
print(s.makefile().readline().strip())' "$sockets/$pid.sock" >"$dir/other$i.out" 2>&1
	done
	rc=$(ctl "$pid" ping)
	touch "$dir/stop"
	wait $pid
	check "another user's connection is refused" \
		'grep -q "^error refused" "$dir/other1.out" && grep -q "^error refused" "$dir/other2.out"'
	check "the refusal is said on the program's stderr, once" \
		'[ "$(grep -c "control: refused a client of user 65534" "$dir/user.err")" = 1 ]'
	check "the program's own user is still served" '[ "$rc" = 0 ]'
else
	echo "skipped: another user's connection (needs root and setpriv with ambient capabilities)"
fi

clitest_done test_ctl
