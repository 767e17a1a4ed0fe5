#!/usr/bin/env bash
# Everything CUDA on a machine with an NVIDIA GPU (docs/CUDA.md, "Tests"):
#
#   scripts/gpu-test.sh [CUDA_DIR]            build in build-gpu/ first
#   scripts/gpu-test.sh --prebuilt DIR        use DIR as it is
#
# The first form configures with the CUDA module (CUDA_DIR, default
# /usr/local/cuda) and builds; it needs a C compiler, autotools and check
# (scripts/deps.sh installs them on Debian).  --prebuilt takes a build
# tree made elsewhere with the module (`make && make check TESTS=`), for a
# GPU machine without those tools; its path must be the one it was built
# at (libtool's wrappers name it).
#
# Then, each step logged to DIR/gpu-test.log:
#   1. the machine and the GPU;
#   2. every check suite (tests/unit/runner) with the GPU present;
#   3. tests/unit/cuda_gpu --bench: the allocators, the context and
#      SyncedMemory on the device, expandable segments on the driver's
#      virtual memory (cuMemCreate, cuMemMap), a CUDA graph captured into
#      a graph pool and replayed, then pairs timed against the runtime;
#   4. compute-sanitizer's memcheck with its leak check over
#      tests/unit/cuda_gpu (so over the above too), where the toolkit
#      has it;
#   5. the bundled training-step traces replayed on the device, ten steps
#      each, by cuda_caching, cuda_async and cuda (cudaMalloc per block);
#   6. where python3 has PyTorch with CUDA: a small training loop, its CUDA
#      memory from alloy (alloy_cuda_malloc through torch's pluggable
#      allocator, on cuda_caching and on cuda_async) and its host memory
#      under `alloy run` on each CPU backend; every run must print the
#      losses of the run without alloy, and its report must count the
#      blocks on the backend; then scripts/gpu-torch-bench.py times
#      training steps with torch's own CUDA allocator against alloy's;
#   7. expandable segments on the driver's virtual memory: the traces
#      replayed by cuda_caching with expandable_segments:1 (reserved at
#      most 1.02 x allocated), and where PyTorch has CUDA the training
#      loop on them (losses identical to the run without alloy), traced,
#      and that trace's torch snapshot read by PyTorch's viewer; then
#      scripts/gpu-torch-expandable.py: a transformer training step of
#      changing sequence lengths on alloy's expandable segments against
#      torch's own with expandable_segments:True (losses identical, peak
#      reserved side by side);
#   8. alloy bench cuda (the simulated device).
#
# Exit status: 0 all passed, 77 no usable GPU (the real-GPU steps skipped,
# never counted as passed), 1 a failure.
set -uo pipefail
cd "$(dirname "$0")/.."
src=$PWD
cuda=/usr/local/cuda
dir=
if [ "${1:-}" = --prebuilt ]; then
	dir=${2:?--prebuilt needs the build directory}
	dir=$(cd "$dir" && pwd) || exit 1
else
	cuda=${1:-$cuda}
	dir=$src/build-gpu
	mkdir -p "$dir"
	[ -e configure ] || autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
	(
		cd "$dir" &&
			../configure -q --with-cuda="$cuda" &&
			make -j"$(nproc)" >/dev/null &&
			make -j"$(nproc)" check TESTS= >/dev/null
	) || { echo "gpu-test: build failed"; exit 1; }
fi
if [ ! -x "$dir/tests/unit/cuda_gpu" ] || [ ! -x "$dir/tests/unit/runner" ]; then
	echo "gpu-test: $dir has no tests/unit/cuda_gpu or tests/unit/runner: build it with the CUDA module (configure --with-cuda) and check (make check TESTS=)" >&2
	exit 1
fi
log=$dir/gpu-test.log
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
: >"$log"
failed=0
say() { echo "$@" | tee -a "$log"; }
bad() { say "FAIL: $*"; failed=1; }
step() { say; say "== $*"; }
export LD_LIBRARY_PATH=$dir/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export ALLOY_MODULE_PATH=$dir/.libs ALLOY=$dir/alloy

step "machine"
{
	uname -srm
	echo "$(nproc) CPUs"
	command -v nvidia-smi >/dev/null &&
		nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
} 2>&1 | tee -a "$log"

step "every check suite, the GPU present (tests/unit/runner)"
CK_DEFAULT_TIMEOUT=120 "$dir/tests/unit/runner" >"$work/runner" 2>&1 || bad "tests/unit/runner"
grep -E '^[0-9]+%|:F:|:E:' "$work/runner" | tee -a "$log"

step "the device: tests/unit/cuda_gpu --bench"
"$dir/tests/unit/cuda_gpu" --bench 2>&1 | tee -a "$log"
gpu=${PIPESTATUS[0]}
case $gpu in
0) ;;
77) say "gpu-test: skipped: no CUDA device (the real-GPU steps are not run; not a pass)"
    exit 77 ;;
*) bad "tests/unit/cuda_gpu (status $gpu)" ;;
esac

step "compute-sanitizer memcheck, leak check, over tests/unit/cuda_gpu"
san=$(command -v compute-sanitizer || ls "$cuda/bin/compute-sanitizer" 2>/dev/null)
if [ -n "$san" ]; then
	# The OOM test's failed cudaMalloc is an API error on purpose.
	"$san" --tool memcheck --leak-check full --report-api-errors no \
		--error-exitcode 9 "$dir/tests/unit/.libs/cuda_gpu" >"$work/memcheck" 2>&1 ||
		bad "memcheck (status $?)"
	grep -E "ERROR SUMMARY|LEAK SUMMARY|^=+ +(Invalid|Leaked)" "$work/memcheck" | head -20 | tee -a "$log"
else
	say "skipped: compute-sanitizer not found"
fi

step "training-step traces replayed on the device, ten steps each"
for t in "$src"/traces/*.trace; do
	for a in cuda_caching cuda_async cuda; do
		say "-- $(basename "$t" .trace) on $a"
		"$ALLOY" replay "$t" --allocator "$a" --repeat 10 >"$work/replay" 2>&1 ||
			bad "replay of $t on $a"
		grep -E "^(time|later|peak|reserved)" "$work/replay" | tee -a "$log"
	done
done

step "PyTorch on the GPU through alloy"
py=${PYTHON:-python3}
if "$py" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
	loop=("$src/scripts/torch-mlp.py" --device cuda --steps 200 --batch 4096)
	export CUBLAS_WORKSPACE_CONFIG=:4096:8
	"$py" "${loop[@]}" >"$work/base" 2>"$work/err" || bad "the loop without alloy: $(tail -n 1 "$work/err")"
	"$py" "${loop[@]}" >"$work/base2" 2>&1
	if ! cmp -s "$work/base" "$work/base2"; then
		say "skipped: the loop is not deterministic here (two runs without alloy differ)"
	else
		say "without alloy: $(wc -l <"$work/base") steps, last $(tail -n 1 "$work/base")"
		# The count in column 6 of NAME's DEV row of a report, or nothing.
		allocs() { awk -v n="$2" -v d="$3" '$1 == n && $2 == d { print $6 " allocs, " $7 " frees" }' "$1"; }
		for cu in cuda_caching cuda_async; do
			ALLOY_CONF="cuda:$cu,report:$work/r.$cu" "$py" "${loop[@]}" \
				--alloy-cuda "$dir/.libs/liballoy.so" >"$work/out" 2>"$work/err" ||
				bad "CUDA memory from $cu: $(tail -n 1 "$work/err")"
			got=$(allocs "$work/r.$cu" "$cu" cuda:0)
			cmp -s "$work/base" "$work/out" && [ -n "$got" ] &&
				say "CUDA memory from $cu: losses identical; report: $got" ||
				bad "CUDA memory from $cu: losses differ or no report row ($got)"
		done
		for b in default jemalloc mimalloc; do
			[ -f "$dir/.libs/alloy_$b.so" ] || [ $b = default ] || continue
			"$ALLOY" run --conf "cpu:$b,cuda:cuda_caching" --report "$work/r.$b" -- \
				"$py" "${loop[@]}" --alloy-cuda "$dir/.libs/liballoy.so" >"$work/out" 2>"$work/err" ||
				bad "alloy run on $b: $(tail -n 1 "$work/err")"
			got="$(allocs "$work/r.$b" "$b" cpu:0); cuda_caching $(allocs "$work/r.$b" cuda_caching cuda:0)"
			unknown=$(grep -c "^unknown frees 0," "$work/r.$b")
			cmp -s "$work/base" "$work/out" && [ "$unknown" = 1 ] &&
				! grep -q "^alloy: " "$work/err" &&
				say "alloy run, host memory on $b, CUDA memory on cuda_caching: losses identical; $got" ||
				bad "alloy run on $b: losses differ, unknown frees or a message ($got)"
		done
	fi
	say "-- training steps timed, torch's own CUDA allocator against alloy's"
	"$py" "$src/scripts/gpu-torch-bench.py" "$dir/.libs/liballoy.so" 2>&1 |
		tee -a "$log" || bad "scripts/gpu-torch-bench.py"
else
	say "skipped: $py has no PyTorch with CUDA"
fi

step "expandable segments on the device (cuMemCreate, cuMemMap)"
for t in "$src"/traces/*.trace; do
	say "-- $(basename "$t" .trace) on cuda_caching, expandable_segments:1"
	ALLOY_CONF=cuda_caching.expandable_segments:1 "$ALLOY" replay "$t" \
		--allocator cuda_caching --repeat 10 --json >"$work/replay" 2>"$work/err" ||
		bad "expandable replay of $t: $(tail -n 1 "$work/err")"
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
r, a = d["max_reserved_bytes"], d["peak_requested_bytes"]
print("reserved %d, allocated %d: %.3f x" % (r, a, r / a))
sys.exit(r > 1.02 * a)' "$work/replay" 2>&1 | tee -a "$log" ||
		bad "expandable: $t reserved more than 1.02 x allocated"
done
if "$py" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' 2>/dev/null &&
	[ -s "$work/base" ]; then
	conf="cuda:cuda_caching,cuda_caching.expandable_segments:1,trace:$work/exp.trace"
	ALLOY_CONF=$conf "$py" "${loop[@]}" --alloy-cuda "$dir/.libs/liballoy.so" \
		>"$work/out" 2>"$work/err" || bad "loop on expandable segments: $(tail -n 1 "$work/err")"
	cmp -s "$work/base" "$work/out" &&
		say "PyTorch loop on expandable segments: losses identical" ||
		bad "PyTorch loop on expandable segments: losses differ"
	"$ALLOY" report "$work/exp.trace" --format torch-snapshot \
		--option expandable_segments:1 -o "$work/snap.pickle" 2>&1 | tee -a "$log"
	"$py" -W ignore -m torch.cuda._memory_viz stats "$work/snap.pickle" 2>&1 | tee -a "$log" ||
		bad "PyTorch's viewer on the loop's snapshot"
fi
if "$py" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
	say "-- a transformer step on expandable segments, torch's own against alloy's"
	"$py" "$src/scripts/gpu-torch-expandable.py" "$dir/.libs/liballoy.so" 2>&1 |
		tee -a "$log" || bad "scripts/gpu-torch-expandable.py"
else
	say "skipped: $py has no PyTorch with CUDA (the transformer step on expandable segments)"
fi

step "alloy bench cuda (the simulated device)"
"$ALLOY" bench cuda 2>&1 | tee -a "$log"

if [ $failed = 0 ]; then
	say "gpu-test: passed"
else
	say "gpu-test: FAILED (above)"
	exit 1
fi
