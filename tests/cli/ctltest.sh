# SPDX-License-Identifier: MIT
# tests/cli/ctltest.sh - helpers for the tests of the control socket; source
# it after clitest.sh and fronttest.sh, once clitest_scratch made $dir:
#   the programs started from here get their sockets in $sockets, a
#   directory of this test's own ($XDG_RUNTIME_DIR/alloy)
#   wait_socket PID     true once process PID listens (waits up to 10 s)
XDG_RUNTIME_DIR=$dir/xdg
export XDG_RUNTIME_DIR
mkdir -m 700 "$XDG_RUNTIME_DIR"
sockets=$XDG_RUNTIME_DIR/alloy

wait_socket() {
	i=0
	while [ ! -S "$sockets/$1.sock" ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -S "$sockets/$1.sock" ]
}
