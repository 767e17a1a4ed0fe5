#!/usr/bin/env bash
# Build alloy's libFuzzer targets with clang (ASan+UBSan) and run each for
# a bounded time, starting from its seed corpus in fuzz/corpus/<target>/.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   (default 60, all)
#
# New inputs go to build-fuzz/corpus/<target>/, never into the repository.
# A crash leaves build-fuzz/crash-* and fails the script; copy the input
# into fuzz/corpus/<target>/ once fixed: `make check` replays that
# directory through fuzz/replay.c, so it stays a regression test.
# Prints "fuzz: TARGET: N executions" lines that docs/RELIABILITY.md uses.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(conf trace ops plugin)
build=build-fuzz
cc=${CLANG:-clang}
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"

command -v "$cc" >/dev/null || { echo "fuzz: $cc not found (scripts/deps.sh --ci installs it)"; exit 1; }
[ -x configure ] || autoreconf -fi >/dev/null 2>&1
mkdir -p "$build"
(
	cd "$build"
	if [ ! -f Makefile ]; then
		../configure -q CC="$cc" --disable-shared --without-cuda \
			CFLAGS="-g -O1 -fno-omit-frame-pointer $san -fsanitize=fuzzer-no-link" \
			2>&1 | grep -v "cannot remove 'core'" || true
	fi
	# clang's warnings differ from gcc's; the normal build shows those.
	make -j"$(nproc)" liballoy.la >/dev/null 2>make.err ||
		{ cat make.err; exit 1; }
)
libs="$build/.libs/liballoy.a -lpthread -ldl -lm"
inc="-D_GNU_SOURCE -I. -Iinclude -I$build/include -I$build"
declare -A extra=([conf]="" [trace]="tools/trace.c" [ops]=""
	[plugin]="-rdynamic -ldl -DFUZZ_PLUGIN_PATH=\"$PWD/$build/fuzz_plugin_so.so\"")

# The plugin whose descriptor fuzz_plugin writes; liballoy's symbols come
# from the fuzzer itself (-rdynamic).
# shellcheck disable=SC2086
"$cc" -g -O1 -fPIC -shared $san -fsanitize=fuzzer-no-link $inc \
	fuzz/fuzz_plugin_so.c -o "$build/fuzz_plugin_so.so"

status=0
for t in "${targets[@]}"; do
	bin="$build/fuzz_$t"
	# shellcheck disable=SC2086
	"$cc" -g -O1 $san -fsanitize=fuzzer $inc "fuzz/fuzz_$t.c" ${extra[$t]} \
		$libs -o "$bin"
	mkdir -p "$build/corpus/$t"
	log="$build/fuzz_$t.log"
	if ! (cd "$build" && ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
		"./fuzz_$t" -max_total_time="$secs" -seed=1 -print_final_stats=1 \
		-rss_limit_mb=2048 -max_len=8192 "corpus/$t" "../fuzz/corpus/$t") \
		>"$log" 2>&1; then
		status=1
		echo "fuzz: $t: FAILED, see $log"
		grep -E "ERROR|SUMMARY|Test unit written" "$log" | head -5 || true
	fi
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	echo "fuzz: $t: ${execs:-?} executions in ${secs}s, corpus $(ls "$build/corpus/$t" | wc -l) new + $(ls "fuzz/corpus/$t" | wc -l) seeds"
done
exit $status
