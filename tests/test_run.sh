#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/test_run.sh - real programs under `alloy run` on every CPU backend
# (default, jemalloc, mimalloc, the debug wrapper), each with the report
# on: `ls -laR` of a tree it makes, `sort` of a generated file, git
# init/add/commit/log in a new repository, NumPy array work in Debian's
# python3, and front_prog (a threaded program of ours that forks and
# execs).  Each must exit as it
# does without alloy, print the same, and its report must count its
# allocations on the backend: alloy was in the path.
set -u
out=$(mktemp) err=$(mktemp) rep=$(mktemp) base=$(mktemp) work=$(mktemp -d)
trap 'rm -rf "$out" "$err" "$rep" "$base" "$work"' EXIT
. "$(dirname "$0")/clitest.sh"
. "$(dirname "$0")/fronttest.sh"
front_require
unset ALLOY_CONF

# Fixed identities and dates: git's output is then the same every run.
GIT_AUTHOR_NAME=alloy GIT_AUTHOR_EMAIL=alloy@example.org
GIT_COMMITTER_NAME=alloy GIT_COMMITTER_EMAIL=alloy@example.org
GIT_AUTHOR_DATE=2024-01-01T00:00:00Z GIT_COMMITTER_DATE=2024-01-01T00:00:00Z
GIT_CONFIG_NOSYSTEM=1 HOME=$work
export GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL
export GIT_AUTHOR_DATE GIT_COMMITTER_DATE GIT_CONFIG_NOSYSTEM HOME

awk 'BEGIN { s = 7; for (i = 0; i < 50000; i++) { s = (s * 1103515245 + 12345) % 2147483648; print s % 100000, "line", i } }' \
	>"$work/unsorted"

py=/usr/bin/python3
numpy_work='import numpy as np
a = np.arange(200000, dtype=np.float64).reshape(400, 500)
b = (a @ a.T)[:3, :3]
c = np.sort(np.sin(a).ravel())[-5:]
d = [np.ones(i) for i in range(1, 2000)]
print(b.sum(), round(float(c.sum()), 6), sum(x.size for x in d), np.unique(a % 7).tolist())'

git_session() {
	rm -rf "$work/repo" && mkdir "$work/repo" && cd "$work/repo" &&
		"$@" git init -q . && echo hello >a.txt && seq 1 1000 >b.txt &&
		"$@" git add a.txt b.txt && "$@" git commit -q -m first &&
		seq 1 2000 >b.txt && "$@" git commit -q -a -m second &&
		"$@" git --no-pager log --format='%H %s' --stat
	rc=$?
	cd "$work" || exit 1
	return $rc
}

# The programs, by name; each runs "$@" PROG ARGS (prefix empty or alloy run).
prog_ls() {
	# A tree of the test's own (a directory like / changes while other
	# things run: its total, link counts, new entries); no times.
	if [ ! -d "$work/tree" ]; then
		for d in 1 2 3 4 5 6 7 8; do
			mkdir -p "$work/tree/dir$d" || return 1
			for f in $(seq 1 60); do
				head -c $((f * d * 37)) /dev/zero >"$work/tree/dir$d/f$f"
			done
			ln -s "dir$d/f1" "$work/tree/link$d"
		done
	fi
	(cd "$work/tree" && "$@" ls -laR --time-style=+ .)
}
prog_sort() {
	"$@" sort -n -k1,1 -k3,3n "$work/unsorted"
}
prog_git() {
	git_session "$@"
}
prog_numpy() {
	"$@" "$py" -c "$numpy_work"
}
prog_front_prog() {
	"$@" "$tests/front_prog" work
}

available() {
	case $1 in
	git) command -v git >/dev/null || { echo "skipped: git: not installed"; return 1; } ;;
	numpy) "$py" -c 'import numpy' 2>/dev/null || { echo "skipped: numpy: no NumPy for $py"; return 1; } ;;
	esac
	return 0
}

ran=0
for p in ls sort git numpy front_prog; do
	available $p || continue
	brc=0
	"prog_$p" >"$base" 2>/dev/null || brc=$?
	check "$p runs without alloy" '[ -s "$base" ]'
	for b in $(front_backends); do
		rc=0
		"prog_$p" timeout 600 "$ALLOY" run --conf "cpu:$b" \
			--report "$rep" -- >"$out" 2>"$err" || rc=$?
		check "$p on $b exits as without alloy ($brc)" '[ $rc = $brc ]'
		check "$p on $b prints the same" 'cmp -s "$base" "$out"'
		check "$p on $b: the report counts its allocations" \
			'[ "$(report_allocs "$rep" "$b")" -gt 0 ]'
		check "$p on $b: nothing from alloy on stderr" \
			'! grep -q "^alloy: " "$err"'
		ran=$((ran + 1))
	done
done
[ $ran -gt 0 ] || { echo "skipped: no program could run"; exit 77; }
clitest_done run
