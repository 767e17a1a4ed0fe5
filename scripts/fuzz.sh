#!/usr/bin/env bash
# Build alloy's libFuzzer targets with clang (ASan+UBSan) and run them from
# their seed corpora in fuzz/corpus/<target>/.
#
#   scripts/fuzz.sh --runs [TARGET...]
#       CI's mode: a fixed seed and a fixed number of executions per target
#       (RUNS below), starting from the checked-in corpus only, so that a
#       commit always gets the same verdict whatever the machine's speed or
#       load.  New inputs go to a scratch directory that is emptied first.
#   scripts/fuzz.sh --time SECONDS [--seed N] [TARGET...]
#       Developers' mode, before resolving an issue: each target for
#       SECONDS with a random seed (or N), growing build-fuzz/corpus/<t>/
#       across runs.  Not for CI: its verdict depends on luck and load.
#
# A crash leaves build-fuzz/crash-* and fails the script.  Copy the input
# into fuzz/corpus/<target>/ with its fix: `make check` replays that
# directory through fuzz/replay.c, and --runs starts from it, so it stays a
# regression test.  Prints "fuzz: TARGET: N executions" lines that
# docs/RELIABILITY.md quotes.
set -euo pipefail
cd "$(dirname "$0")/.."

# Executions per target in --runs mode: about 30 s each on CI's 2 cores
# (docs/RELIABILITY.md has the measured rates).
declare -A RUNS=([conf]=1000000 [trace]=300000 [ops]=8000000 [plugin]=2000000 [ctl]=1000000)

mode=
secs=
seed=
case ${1:-} in
--runs) mode=runs; shift ;;
--time) mode=time; secs=${2:?--time needs SECONDS}; shift 2 ;;
*) echo "usage: scripts/fuzz.sh --runs [TARGET...] | --time SECONDS [--seed N] [TARGET...]" >&2; exit 2 ;;
esac
if [ "$mode" = time ] && [ "${1:-}" = --seed ]; then
	seed=${2:?--seed needs N}
	shift 2
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(conf trace ops plugin ctl)
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
			CFLAGS="-g -O1 -fno-omit-frame-pointer $san -fsanitize=fuzzer-no-link"
	fi
	# clang's warnings differ from gcc's; the normal build shows those.
	make -j"$(nproc)" liballoy.la >/dev/null 2>make.err ||
		{ cat make.err; exit 1; }
)
# The static library has no constructor run for it unless something pulls
# it in: take the whole archive, as a program linked with it would.
# What liballoy itself links with (libunwind for the reporter's stacks),
# as configure found it.
deplibs=$(sed -n 's/^LIBUNWIND_LIBS = //p' "$build/Makefile")
libs="-Wl,--whole-archive $build/.libs/liballoy.a -Wl,--no-whole-archive $deplibs -lpthread -ldl -lm"
inc="-D_GNU_SOURCE -I. -Iinclude -I$build/include -I$build"
# The trace reader decompresses zstd traces where configure found libzstd.
zstdlibs=$(sed -n 's/^ZSTD_LIBS = //p' "$build/Makefile")
declare -A extra=([conf]="" [trace]="analysis/trace.c $zstdlibs" [ops]="" [ctl]=""
	[plugin]="-rdynamic -ldl -DFUZZ_PLUGIN_PATH=\"$PWD/$build/fuzz_plugin_so.so\"")

# The plugin whose descriptor fuzz_plugin writes; liballoy's symbols come
# from the fuzzer itself (-rdynamic).
# shellcheck disable=SC2086
"$cc" -g -O1 -fPIC -shared $san -fsanitize=fuzzer-no-link $inc \
	fuzz/fuzz_plugin_so.c -o "$build/fuzz_plugin_so.so"

# Addresses feed hash tables whose paths count as coverage: without ASLR
# the same inputs take the same paths on every run.
norandom=()
if setarch "$(uname -m)" -R true 2>/dev/null; then
	norandom=(setarch "$(uname -m)" -R)
fi

status=0
for t in "${targets[@]}"; do
	bin="$build/fuzz_$t"
	# shellcheck disable=SC2086
	"$cc" -g -O1 $san -fsanitize=fuzzer $inc "fuzz/fuzz_$t.c" ${extra[$t]} \
		$libs -o "$bin"
	log="$build/fuzz_$t.log"
	if [ "$mode" = runs ]; then
		out="scratch/$t"
		rm -rf "$build/$out"
		limit=(-runs="${RUNS[$t]}" -seed=1 -reload=0)
		what="${RUNS[$t]} executions, seed 1"
	else
		out="corpus/$t"
		limit=(-max_total_time="$secs" -seed="${seed:-0}")
		what="${secs}s, seed ${seed:-random}"
	fi
	mkdir -p "$build/$out"
	start=$(date +%s)
	if ! (cd "$build" && ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
		"${norandom[@]}" "./fuzz_$t" "${limit[@]}" -print_final_stats=1 \
		-rss_limit_mb=2048 -max_len=8192 "$out" "../fuzz/corpus/$t") \
		>"$log" 2>&1; then
		status=1
		echo "fuzz: $t: FAILED, see $log"
		grep -E "ERROR|SUMMARY|Test unit written|failed:" "$log" | head -5 || true
	fi
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	seedline=$(sed -n 's/^INFO: Seed: //p' "$log" | head -1)
	echo "fuzz: $t: ${execs:-?} executions ($what; libFuzzer seed ${seedline:-?}) in $(($(date +%s) - start)) s, corpus $(ls "$build/$out" | wc -l) new + $(ls "fuzz/corpus/$t" | wc -l) seeds"
done
exit $status
