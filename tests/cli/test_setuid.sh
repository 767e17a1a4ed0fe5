#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_setuid.sh - secure-execution mode for real.
#
# A setuid-root copy of tests/programs/setuid_probe, run as an unprivileged
# user with an environment an attacker chose: ALLOY_PLUGINS and
# ALLOY_MODULE_PATH name a planted plugin whose constructor leaves a mark,
# ALLOY_CONF asks for it as the CPU default and for report, trace and log
# files.  The program must load none of it, create none of the files, and
# say so on one stderr line.  The control is the same program without the
# setuid bit, same user, same environment: there the planted code runs and
# the files appear, which shows the test can fail.  Where a setuid program
# cannot be made and run here, it prints why and exits 77 (skip).
set -u
. "$(dirname "$0")/clitest.sh"
top=$(cd "$(dirname "$ALLOY")" && pwd)
probe=$top/tests/programs/setuid_probe
planted=$top/tests/plugins/.libs/planted.so

skip() {
	echo "skipped: $*"
	exit 77
}

[ "$(id -u)" = 0 ] || skip "not root: cannot make a setuid-root program"
[ -f "$probe" ] && [ -f "$planted" ] || skip "$probe or $planted not built"
[ "$(head -c 4 "$probe" | od -An -c | tr -d ' ')" = '177ELF' ] ||
	skip "$probe is not an ELF program (a libtool wrapper?)"
if id nobody >/dev/null 2>&1; then
	user=nobody
elif command -v useradd >/dev/null &&
	useradd --system --no-create-home --shell /usr/sbin/nologin \
		alloy-setuid-test 2>/dev/null; then
	user=alloy-setuid-test
else
	skip "no unprivileged user and none can be created"
fi
uid=$(id -u "$user") gid=$(id -g "$user")
if command -v setpriv >/dev/null; then
	as_user() { setpriv --reuid="$uid" --regid="$gid" --clear-groups -- "$@"; }
elif command -v runuser >/dev/null; then
	as_user() { runuser -u "$user" -- "$@"; }
else
	skip "neither setpriv nor runuser to run as $user"
fi

work=$(mktemp -d /tmp/alloy-setuid-XXXXXX) || skip "no temporary directory"
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
if command -v findmnt >/dev/null &&
	findmnt -n -o OPTIONS --target "$work" | grep -qw nosuid; then
	skip "$work is on a nosuid filesystem"
fi
mkdir "$work/plugins" "$work/modules" "$work/out"
chmod 755 "$work/plugins" "$work/modules"
chmod 1777 "$work/out" # the user's runs write their output here
cp "$planted" "$work/plugins/planted.so"
cp "$planted" "$work/modules/alloy_planted.so"
chmod 644 "$work/plugins/planted.so" "$work/modules/alloy_planted.so"
cp "$probe" "$work/probe-setuid"
cp "$probe" "$work/probe-plain"
chown 0:0 "$work/probe-setuid" "$work/probe-plain"
chmod 4755 "$work/probe-setuid"
chmod 755 "$work/probe-plain"

# run TAG PROGRAM: as the user, with the attacker's environment.
run() {
	o=$work/out/$1
	ALLOY_PLUGINS=$work/plugins/planted.so \
	ALLOY_MODULE_PATH=$work/modules \
	ALLOY_CONF="cpu:planted,report:$o.report,trace:$o.trace,log:$o.log" \
	ALLOY_TEST_MARKER=$o.marker \
		as_user "$work/$2" >"$o.stdout" 2>"$o.stderr"
	echo $?
}

rc=$(run setuid probe-setuid)
out=$work/out/setuid.stdout err=$work/out/setuid.stderr
grep -q 'euid=0 ' "$out" ||
	skip "the setuid bit was not honoured (no_new_privs, or a nosuid mount): $(cat "$out" "$err")"
check "setuid: runs and allocates" '[ "$rc" = 0 ]'
check "setuid: the kernel set AT_SECURE" "grep -q 'at_secure=1 ' \"\$out\""
check "setuid: the planted plugin never ran" '[ ! -e "$work/out/setuid.marker" ]'
check "setuid: the CPU default stays \"default\"" "grep -q ' cpu=default ' \"\$out\""
for f in report trace log; do
	check "setuid: no $f file" "[ ! -e \"\$work/out/setuid.$f\" ]"
done
check "setuid: one stderr line says what was ignored" \
	"[ \$(grep -c 'secure-execution mode' \"\$err\") -eq 1 ]"
for what in ALLOY_PLUGINS ALLOY_MODULE_PATH "report:$work/out/setuid.report" \
	"trace:$work/out/setuid.trace" "log:$work/out/setuid.log"; do
	check "setuid: the line names $what" \
		"grep 'secure-execution mode' \"\$err\" | grep -qF \"$what\""
done
check "setuid: no control socket is opened (-EPERM)" \
	"grep -q ' control=-1\$' \"\$out\""
check "setuid: counted as one configuration error" \
	"grep -q ' errors=[1-9]' \"\$out\""

rc=$(run plain probe-plain)
out=$work/out/plain.stdout err=$work/out/plain.stderr
check "control: runs" '[ "$rc" = 0 ]'
check "control: no AT_SECURE" "grep -q 'at_secure=0 ' \"\$out\""
check "control: the planted plugin ran from ALLOY_PLUGINS" \
	"grep -q 'loaded $work/plugins/planted.so' \"\$work/out/plain.marker\""
check "control: ... and from ALLOY_MODULE_PATH" \
	"grep -q 'loaded $work/modules/alloy_planted.so' \"\$work/out/plain.marker\""
check "control: the planted allocator is the CPU default" \
	"grep -q ' cpu=planted ' \"\$out\""
for f in report trace log; do
	check "control: the $f file is written" "[ -s \"\$work/out/plain.$f\" ]"
done
check "control: the control socket opens" "grep -q ' control=0\$' \"\$out\""
check "control: nothing about secure-execution" \
	"! grep -q 'secure-execution' \"\$err\""

clitest_done test_setuid
