// SPDX-License-Identifier: MIT
/*
 * bench/bench_debug.c - `alloy bench debug`: the debug wrapper's
 * bookkeeping with a million blocks live.
 *
 * One round allocates N blocks of 32 bytes through an allocator, keeping
 * them all live, then frees them all: the pattern of a program that
 * builds a large structure and tears it down.  Rounds go through "debug"
 * (over "default") and through "default" itself, alternating, and each
 * keeps its median round.  The figure is debug's time over default's:
 * with a table whose cost grows with the number of live blocks it grows
 * with N; with O(1) bookkeeping it stays what debug's own work per block
 * costs (two backtraces, redzones and fills, the quarantine).
 */
#include <stdio.h>
#include <stdlib.h>

#include <alloy/alloy.h>

#include "bench.h"

#define BLOCKS 1000000L
#define SIZE   32
#define ROUNDS 5
#define GOAL   10.0

/* One round: ns per block (alloc + free), or -1 if an allocation failed. */
static double round_ns(struct alloy_allocator *a, struct alloy_data_ptr *dp,
		       long n)
{
	double t0 = bench_now_ns();

	for (long i = 0; i < n; i++) {
		if (alloy_alloc(a, SIZE, 0, 0, &dp[i])) {
			while (i--)
				alloy_data_ptr_free(&dp[i]);
			return -1;
		}
		*(volatile char *)dp[i].ptr = 1;
	}
	for (long i = 0; i < n; i++)
		alloy_data_ptr_free(&dp[i]);
	return (bench_now_ns() - t0) / (double)n;
}

static int run(const struct bench_opts *opts)
{
	struct alloy_allocator *dbg = alloy_find_allocator("debug");
	struct alloy_allocator *def = alloy_find_allocator("default");
	long n = bench_iters(opts, BLOCKS);
	double t_dbg[ROUNDS], t_def[ROUNDS], md, mf, ratio;
	struct alloy_data_ptr *dp;
	char metric[96], measured[96];

	if (!dbg || !def) {
		bench_note("skipped: no \"debug\" or \"default\" allocator");
		return 0;
	}
	dp = calloc((size_t)n, sizeof(*dp));
	if (!dp)
		return -1;
	/* A round of each first: the inner's heap and debug's records grown. */
	if (round_ns(dbg, dp, n) < 0 || round_ns(def, dp, n) < 0)
		goto fail;
	alloy_allocator_trim(dbg);
	for (int r = 0; r < ROUNDS; r++) {
		t_dbg[r] = round_ns(dbg, dp, n);
		/* The quarantine is not part of the next round's work. */
		alloy_allocator_trim(dbg);
		t_def[r] = round_ns(def, dp, n);
		if (t_dbg[r] < 0 || t_def[r] < 0)
			goto fail;
	}
	free(dp);
	md = bench_median(t_dbg, ROUNDS);
	mf = bench_median(t_def, ROUNDS);
	ratio = md / mf;
	snprintf(metric, sizeof(metric), "debug, %ld live blocks, ns/block", n);
	bench_result("debug", metric, md, "ns", GOAL_NONE, 0);
	snprintf(metric, sizeof(metric), "default, %ld live blocks, ns/block",
		 n);
	bench_result("debug", metric, mf, "ns", GOAL_NONE, 0);
	bench_result("debug", "debug/default time", ratio, "x", GOAL_AT_MOST,
		     GOAL);
	snprintf(measured, sizeof(measured), "%.1fx (%.0f / %.0f ns a block)",
		 ratio, md, mf);
	snprintf(metric, sizeof(metric),
		 "debug vs default, %ld blocks live then freed", n);
	bench_summary(metric, "<= 10x", measured, "n/a",
		      bench_verdict(ratio <= GOAL));
	return 0;
fail:
	free(dp);
	return -1;
}

const struct bench bench_debug = {
	.name = "debug",
	.help = "the debug wrapper against default with a million blocks live",
	.run = run,
};
