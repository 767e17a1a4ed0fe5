// SPDX-License-Identifier: MIT
/*
 * tools/bench_core.c - the framework's own cost: alloc+free pairs through
 * alloy (default allocator, reporter off) against posix_memalign + free
 * with the same alignment, for sizes from 64 B to 1 MiB.
 *
 * The two are measured in many short alternating chunks and each side
 * keeps the median of its chunks, so that drift in the heap's state and
 * bursts of noise on a shared machine hit both alike and a few bad chunks
 * do not move the result.
 */
#include <stdio.h>
#include <stdlib.h>

#include <alloy/alloy.h>

#include "bench.h"

#define CHUNKS 101

/* Keep the compiler from dropping the work. */
static void *volatile sink;

static double direct_round(size_t size, size_t align, long iters)
{
	double t0 = bench_now_ns();

	for (long i = 0; i < iters; i++) {
		void *p;

		if (posix_memalign(&p, align, size))
			return -1;
		*(volatile char *)p = 1;
		sink = p;
		free(p);
	}
	return (bench_now_ns() - t0) / (double)iters;
}

static double framework_round(size_t size, long iters)
{
	double t0 = bench_now_ns();

	for (long i = 0; i < iters; i++) {
		struct alloy_data_ptr dp;

		if (alloy_alloc_default(ALLOY_DEVICE_CPU, size, 0, &dp))
			return -1;
		*(volatile char *)dp.ptr = 1;
		sink = dp.ptr;
		alloy_data_ptr_free(&dp);
	}
	return (bench_now_ns() - t0) / (double)iters;
}

static int run_core(const struct bench_opts *opts)
{
	static const size_t sizes[] = { 64,    256,   1024,   4096,
					16384, 65536, 262144, 1048576 };
	size_t align = alloy_conf_align();
	struct alloy_allocator *def = alloy_find_allocator("default");
	double worst = 0;

	if (!def || alloy_set_default(ALLOY_DEVICE_CPU, def))
		return -1;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		long iters = bench_iters(opts, sizes[s] >= 262144 ? 400 : 4000);
		double direct[CHUNKS], fw[CHUNKS], median_direct, median_fw,
			ratio;
		char metric[96];

		for (int r = 0; r < CHUNKS; r++) {
			/* Alternate who goes first: the heap state is shared.
			 */
			if (r & 1) {
				fw[r] = framework_round(sizes[s], iters);
				direct[r] =
					direct_round(sizes[s], align, iters);
			} else {
				direct[r] =
					direct_round(sizes[s], align, iters);
				fw[r] = framework_round(sizes[s], iters);
			}
			if (direct[r] < 0 || fw[r] < 0)
				return -1;
		}
		median_direct = bench_median(direct, CHUNKS);
		median_fw = bench_median(fw, CHUNKS);
		ratio = median_fw / median_direct;
		worst = ratio > worst ? ratio : worst;
		snprintf(metric, sizeof(metric),
			 "%zu B direct posix_memalign+free", sizes[s]);
		bench_result("core", metric, median_direct, "ns/pair",
			     GOAL_NONE, 0);
		snprintf(metric, sizeof(metric), "%zu B alloy alloc+free",
			 sizes[s]);
		bench_result("core", metric, median_fw, "ns/pair", GOAL_NONE,
			     0);
		snprintf(metric, sizeof(metric), "%zu B ratio alloy/direct",
			 sizes[s]);
		bench_result("core", metric, ratio, "x", GOAL_AT_MOST, 1.05);
	}
	bench_result("core", "worst ratio alloy/direct", worst, "x",
		     GOAL_AT_MOST, 1.05);
	return 0;
}

const struct bench bench_core = {
	.name = "core",
	.help = "alloc+free through alloy vs posix_memalign+free (64 B..1 MiB)",
	.run = run_core,
};
