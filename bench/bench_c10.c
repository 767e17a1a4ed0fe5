// SPDX-License-Identifier: MIT
/*
 * bench/bench_c10.c - `alloy bench c10`: alloy's default CPU pair
 * (alloy_alloc_default + alloy_data_ptr_free, "default" allocator, 64-byte
 * alignment) against c10's (c10::GetCPUAllocator()->allocate() and the
 * DataPtr's release, PyTorch 1.13's DefaultCPUAllocator: posix_memalign
 * of 64, the fill flags, the memory-usage reporter), 64 B to 1 MiB, side
 * by side in one run: alternating chunks, median of each.
 *
 * c10's side lives in bench/bench_c10_pairs.cc, built as a module where
 * configure found libtorch; this file opens it, or says why it cannot.
 */
#include <dlfcn.h>
#include <stdio.h>

#include <alloy/alloy.h>

#include "bench.h"

static int (*c10_pairs)(size_t size, long pairs);

/* Open the c10 side; NULL, or why it is not there. */
static const char *load_c10(void)
{
#ifdef ALLOY_BENCH_C10_SO
	static char why[512];
	void *so;

	if (c10_pairs)
		return NULL;
	so = dlopen(ALLOY_BENCH_C10_SO, RTLD_NOW | RTLD_LOCAL);
	if (!so) {
		snprintf(why, sizeof(why), "%s", dlerror());
		return why;
	}
	*(void **)&c10_pairs = dlsym(so, "alloy_bench_c10_pairs");
	return c10_pairs ? NULL : "alloy_bench_c10_pairs not found";
#else
	return "configured without libtorch (--with-libtorch)";
#endif
}

static double c10_round(const void *arg, size_t size, long iters)
{
	double t0 = bench_now_ns();

	(void)arg;
	if (c10_pairs(size, iters))
		return -1;
	return (bench_now_ns() - t0) / (double)iters;
}

static const struct bench_versus versus_c10 = {
	.group = "c10",
	.other = "c10 CPU allocator pair",
	.other_short = "c10",
	.round = c10_round,
	.goal = 0.60,
	.goal_text = "<= 0.60",
	.figure = "alloy default pair / c10 CPU pair, 64 B - 1 MiB (time)",
};

static struct bench_cg_case cases[2 * BENCH_VERSUS_NSIZES];

static int c10_callgrind_child(void)
{
	if (load_c10() || bench_use_default())
		return -1;
	bench_versus_cases(&versus_c10, cases);
	return bench_cg_cases(cases, 2 * BENCH_VERSUS_NSIZES);
}

static int run_c10(const struct bench_opts *opts)
{
	const char *why = load_c10();
	double ins[2 * BENCH_VERSUS_NSIZES];

	if (why) {
		bench_note("c10: skipped: %s", why);
		return 0;
	}
	if (bench_use_default())
		return -1;
	bench_versus_cases(&versus_c10, cases);
	bench_instructions(opts, "c10", cases, 2 * BENCH_VERSUS_NSIZES, ins);
	return bench_versus_run(opts, &versus_c10, ins);
}

const struct bench bench_c10 = {
	.name = "c10",
	.help = "alloy's default CPU pair vs c10::GetCPUAllocator() (needs libtorch)",
	.run = run_c10,
	.callgrind_child = c10_callgrind_child,
};
