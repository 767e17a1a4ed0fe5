// SPDX-License-Identifier: MIT
/*
 * tools/bench_core.c - the framework's own cost: alloc+free pairs through
 * alloy (default allocator, reporter off) against posix_memalign + free
 * with the same alignment, for sizes from 64 B to 1 MiB.
 *
 * The two are measured in alternating rounds and each keeps its best
 * round, so that a burst of noise on a shared machine hits both alike.
 */
#include <stdio.h>
#include <stdlib.h>

#include <alloy/alloy.h>

#include "bench.h"

#define ROUNDS 9

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
	static const size_t sizes[] = { 64, 256, 1024, 4096, 16384, 65536,
					262144, 1048576 };
	size_t align = alloy_conf_align();
	struct alloy_allocator *def = alloy_find_allocator("default");
	double worst = 0;

	if (!def || alloy_set_default(ALLOY_DEVICE_CPU, def))
		return -1;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		long iters = bench_iters(opts, sizes[s] >= 262144 ? 20000 : 200000);
		double best_direct = 1e300, best_fw = 1e300, d, f, ratio;
		char metric[96];

		for (int r = 0; r < ROUNDS; r++) {
			/* Alternate who goes first: the heap state is shared. */
			if (r & 1) {
				f = framework_round(sizes[s], iters);
				d = direct_round(sizes[s], align, iters);
			} else {
				d = direct_round(sizes[s], align, iters);
				f = framework_round(sizes[s], iters);
			}
			if (d < 0 || f < 0)
				return -1;
			best_direct = d < best_direct ? d : best_direct;
			best_fw = f < best_fw ? f : best_fw;
		}
		ratio = best_fw / best_direct;
		worst = ratio > worst ? ratio : worst;
		snprintf(metric, sizeof(metric), "%zu B direct posix_memalign+free",
			 sizes[s]);
		bench_result("core", metric, best_direct, "ns/pair", GOAL_NONE, 0);
		snprintf(metric, sizeof(metric), "%zu B alloy alloc+free", sizes[s]);
		bench_result("core", metric, best_fw, "ns/pair", GOAL_NONE, 0);
		snprintf(metric, sizeof(metric), "%zu B ratio alloy/direct", sizes[s]);
		bench_result("core", metric, ratio, "x", GOAL_AT_MOST, 1.05);
	}
	bench_result("core", "worst ratio alloy/direct", worst, "x", GOAL_AT_MOST,
		     1.05);
	return 0;
}

const struct bench bench_core = {
	.name = "core",
	.help = "alloc+free through alloy vs posix_memalign+free (64 B..1 MiB)",
	.run = run_core,
};
