#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/test_run.sh - real programs under `alloy run` on every CPU backend
# (default, jemalloc, mimalloc, the debug wrapper), each with the report
# on: `ls -laR` of a tree it makes, `sort` of a generated file, `tar`
# making a gzip'd archive of that tree (tar execs gzip), `gcc` compiling
# and linking a C program (the driver execs cc1, as, collect2 and ld), git
# init/add/commit/log in a new repository, NumPy array work in Debian's
# python3, front_prog (a threaded program of ours that forks and execs)
# and late_cxx (a C program of ours that loads C++ code after start, as
# Python does).  Each must exit as it does without alloy, print the same,
# and write a report per process (--report PATH.%p) that counts its
# allocations on the backend: alloy was in the path of the program and of
# every child it ran.
set -u
out=$(mktemp) err=$(mktemp) base=$(mktemp) work=$(mktemp -d)
reps=$(mktemp -d)
trap 'rm -rf "$out" "$err" "$base" "$work" "$reps"' EXIT
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

hello_c='#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void)
{
	char *s = malloc(64);
	strcpy(s, "hello from a program gcc built under alloy");
	puts(s);
	free(s);
	return 3;
}'

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
prog_tar() {
	# The bytes of the archive: fixed names, owners, times and order; gzip
	# from a pipe stores neither name nor time.  Then the archive read back.
	prog_ls true >/dev/null || return 1
	(cd "$work" && "$@" tar --sort=name --mtime=@0 --owner=0 --group=0 \
		--numeric-owner --format=gnu -czf - tree) >"$work/tree.tgz" &&
		od -An -tx1 "$work/tree.tgz" | cksum &&
		"$@" tar -tvzf "$work/tree.tgz" --numeric-owner
}
prog_gcc() {
	# The driver runs cc1, as, collect2 and ld: five processes.  The
	# program it builds is run without alloy.
	printf '%s\n' "$hello_c" >"$work/hello.c" &&
		"$@" gcc -O1 -Wall -o "$work/hello" "$work/hello.c" &&
		"$@" gcc -O1 -S -o - "$work/hello.c" | grep -v '\.ident' | cksum
	"$work/hello"
	echo "hello exited $?"
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
prog_late_cxx() {
	# C++ loaded after start, as Python loads extensions.
	"$@" "$tests/late_cxx" "$tests/.libs/late_cxx_lib.so"
}

available() {
	case $1 in
	tar | gcc) command -v $1 >/dev/null || { echo "skipped: $1: not installed"; return 1; } ;;
	git) command -v git >/dev/null || { echo "skipped: git: not installed"; return 1; } ;;
	numpy) "$py" -c 'import numpy' 2>/dev/null || { echo "skipped: numpy: no NumPy for $py"; return 1; } ;;
	esac
	return 0
}

# Reports of one run, one per process: each counts allocations on backend
# $1, and all together count more than the one block the front itself
# allocates in each process at start (gzip allocates nothing of its own):
# the program's memory went through alloy.  The number of reports on
# stdout, or nothing when that does not hold.  An empty file is a forked
# child that left by _exit(), which runs no exit handler: no report.
reports_counted() {
	n=0 total=0
	for r in "$reps"/r.*; do
		[ -s "$r" ] || continue
		a=$(report_allocs "$r" "$1")
		[ -n "$a" ] && [ "$a" -gt 0 ] || return 1
		n=$((n + 1)) total=$((total + a))
	done
	[ $total -gt $n ] && echo $n
}

# The fewest processes a run has: the program and the children it execs.
min_procs() {
	case $1 in
	tar) echo 2 ;;        # tar and gzip
	gcc) echo 5 ;;        # gcc, cc1, as, collect2, ld
	front_prog) echo 3 ;; # and the two children that exec it again
	*) echo 1 ;;
	esac
}

ran=0
for p in ls sort tar gcc git numpy front_prog late_cxx; do
	available $p || continue
	brc=0
	"prog_$p" >"$base" 2>/dev/null || brc=$?
	check "$p runs without alloy" '[ -s "$base" ]'
	for b in $(front_backends); do
		rc=0
		rm -f "$reps"/r.*
		"prog_$p" timeout 600 "$ALLOY" run --conf "cpu:$b" \
			--report "$reps/r.%p" -- >"$out" 2>"$err" || rc=$?
		check "$p on $b exits as without alloy ($brc)" '[ $rc = $brc ]'
		check "$p on $b prints the same" 'cmp -s "$base" "$out"'
		nrep=$(reports_counted "$b")
		check "$p on $b: each process's report counts its allocations" \
			'[ -n "$nrep" ] && [ "$nrep" -ge "$(min_procs $p)" ]'
		check "$p on $b: nothing from alloy on stderr" \
			'! grep -q "^alloy: " "$err"'
		ran=$((ran + 1))
	done
done
[ $ran -gt 0 ] || { echo "skipped: no program could run"; exit 77; }
clitest_done run
