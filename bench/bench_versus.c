// SPDX-License-Identifier: MIT
/*
 * bench/bench_versus.c - alloy's default CPU pair against another CPU
 * allocator's pair, 64 B to 1 MiB: posix_memalign(64) for bench core,
 * c10's CPU allocator for bench c10.  Per size: both sides' median chunk
 * (bench_side_by_side), the time ratio alloy/other against its goal, the
 * instructions per pair of both; then the worst ratio and a summary row.
 */
#include <math.h>
#include <stdio.h>

#include "bench.h"

const size_t bench_versus_sizes[BENCH_VERSUS_NSIZES] = { 64,	 256,	 1024,
							 4096,	 16384,	 65536,
							 262144, 1048576 };

#define CHUNKS 101

static void cg_alloy(const struct bench_cg_case *c, long pairs)
{
	bench_default_round(NULL, c->size, pairs);
}

static void cg_other(const struct bench_cg_case *c, long pairs)
{
	const struct bench_versus *v = c->arg;

	v->round(NULL, c->size, pairs);
}

void bench_versus_cases(const struct bench_versus *v,
			struct bench_cg_case *cases)
{
	for (size_t s = 0; s < BENCH_VERSUS_NSIZES; s++) {
		/* Fewer pairs of the sizes glibc may map: syscalls each. */
		long pairs = bench_versus_sizes[s] >= 262144 ? 200 : 0;

		cases[2 * s] = (struct bench_cg_case){
			.label = "alloy default",
			.run = cg_alloy,
			.size = bench_versus_sizes[s],
			.pairs = pairs,
		};
		cases[2 * s + 1] = (struct bench_cg_case){
			.label = v->other_short,
			.run = cg_other,
			.size = bench_versus_sizes[s],
			.arg = v,
			.pairs = pairs,
		};
	}
}

/* One size: time both, print the figures; the ratio alloy/other. */
static double versus_size(const struct bench_opts *opts,
			  const struct bench_versus *v, size_t size,
			  const double *ins)
{
	const struct bench_way ways[2] = { { bench_default_round, NULL },
					   { v->round, NULL } };
	long iters = bench_iters(opts, size >= 262144 ? 400 : 4000);
	double med[2], ratio;
	char metric[128];

	if (bench_side_by_side(ways, 2, size, iters, CHUNKS, med))
		return -1;
	ratio = med[0] / med[1];
	snprintf(metric, sizeof(metric), "%zu B %s", size, v->other);
	bench_result(v->group, metric, med[1], "ns/pair", GOAL_NONE, 0);
	snprintf(metric, sizeof(metric), "%zu B alloy alloc+free", size);
	bench_result(v->group, metric, med[0], "ns/pair", GOAL_NONE, 0);
	snprintf(metric, sizeof(metric), "%zu B ratio alloy/%s", size,
		 v->other_short);
	bench_result(v->group, metric, ratio, "x", GOAL_AT_MOST, v->goal);
	if (isnan(ins[0]) || isnan(ins[1]))
		return ratio;
	snprintf(metric, sizeof(metric), "%zu B instructions: %s", size,
		 v->other_short);
	bench_result(v->group, metric, ins[1], "instr", GOAL_NONE, 0);
	snprintf(metric, sizeof(metric), "%zu B instructions: alloy", size);
	bench_result(v->group, metric, ins[0], "instr", GOAL_NONE, 0);
	return ratio;
}

int bench_versus_run(const struct bench_opts *opts,
		     const struct bench_versus *v, const double *ins)
{
	double ratio[BENCH_VERSUS_NSIZES], ia[BENCH_VERSUS_NSIZES],
		io[BENCH_VERSUS_NSIZES], lo, hi, alo, ahi, olo, ohi;
	char metric[128], measured[64], instr[128];

	for (size_t s = 0; s < BENCH_VERSUS_NSIZES; s++) {
		ratio[s] = versus_size(opts, v, bench_versus_sizes[s],
				       &ins[2 * s]);
		if (ratio[s] < 0)
			return -1;
		ia[s] = ins[2 * s];
		io[s] = ins[2 * s + 1];
	}
	bench_range(ratio, BENCH_VERSUS_NSIZES, &lo, &hi);
	snprintf(metric, sizeof(metric), "worst ratio alloy/%s",
		 v->other_short);
	bench_result(v->group, metric, hi, "x", GOAL_AT_MOST, v->goal);
	snprintf(measured, sizeof(measured), "%.2f - %.2f", lo, hi);
	bench_range(ia, BENCH_VERSUS_NSIZES, &alo, &ahi);
	bench_range(io, BENCH_VERSUS_NSIZES, &olo, &ohi);
	if (isnan(alo) || isnan(olo))
		snprintf(instr, sizeof(instr), "n/a");
	else
		snprintf(instr, sizeof(instr),
			 "alloy %.0f - %.0f, %s %.0f - %.0f", alo, ahi,
			 v->other_short, olo, ohi);
	bench_summary(v->figure, v->goal_text, measured, instr,
		      bench_verdict(hi <= v->goal));
	return 0;
}
