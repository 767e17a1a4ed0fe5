// SPDX-License-Identifier: MIT
/*
 * bench/bench_cuda.c - `alloy bench cuda`: the caching allocator's policy
 * on the simulated device (no GPU needed).
 *
 *  - cached alloc+free pair latency through alloy_alloc (CPU time), side
 *    by side with the plain allocator (a device call per alloc and per
 *    free) on the same simulated device;
 *  - device-source calls while a training-step trace repeats: the first
 *    repetition fills the cache, the later ones must make none;
 *  - fragmentation: peak reserved / peak allocated over those repetitions.
 *
 * The traces are the bundled ones (traces/, made by scripts/gen-traces.py);
 * ALLOY_TRACES_DIR overrides where they are looked for.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <alloy/alloy.h>

#include "analysis/trace.h"
#include "bench.h"

#define ROUNDS	7
#define REPEATS 5

#ifndef ALLOY_TRACES_DIR
#define ALLOY_TRACES_DIR "traces"
#endif

static void *volatile sink;

/*
 * The pairs are timed in this thread's CPU time: they never block, so
 * it equals their wall time on an idle machine, and on a shared one
 * (CI, several builds at once) other processes' time is left out.
 */
static double cpu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double pair_round(struct alloy_allocator *a, size_t size, long iters)
{
	double t0 = cpu_now_ns();

	for (long i = 0; i < iters; i++) {
		struct alloy_data_ptr dp;

		if (alloy_alloc(a, size, 0, 0, &dp))
			return -1;
		sink = dp.ptr;
		alloy_data_ptr_free(&dp);
	}
	return (cpu_now_ns() - t0) / (double)iters;
}

/* A caching allocator on sim with expandable segments on. */
static int register_expandable(struct alloy_cuda_sim *sim, const char *name,
			       struct alloy_allocator **out)
{
	if (alloy_cuda_caching_register_sim(sim, name, out))
		return -1;
	return alloy_allocator_ops(*out)->set_option(
		alloy_allocator_ctx(*out), "expandable_segments", "1");
}

static int latency(const struct bench_opts *opts, struct alloy_cuda_sim *sim)
{
	static const size_t sizes[] = { 512, 65536, 4 << 20, 64 << 20 };
	struct alloy_allocator *cc, *plain, *ex;
	double worst = 0, worst_ratio = 0;

	if (alloy_cuda_caching_register_sim(sim, "bench_cuda_caching", &cc) ||
	    alloy_cuda_plain_register_sim(sim, "bench_cuda_plain", &plain) ||
	    register_expandable(sim, "bench_cuda_expandable", &ex))
		return -1;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		long n_cc = bench_iters(opts, 1000000),
		     n_pl = bench_iters(opts, 5000);
		double best_cc = 1e300, best_pl = 1e300, best_ex = 1e300, c, p,
		       e;
		char metric[96];

		for (int r = 0; r < ROUNDS; r++) {
			c = pair_round(cc, sizes[s], n_cc);
			p = pair_round(plain, sizes[s], n_pl);
			e = pair_round(ex, sizes[s], n_cc);
			if (c < 0 || p < 0 || e < 0)
				return -1;
			best_cc = c < best_cc ? c : best_cc;
			best_pl = p < best_pl ? p : best_pl;
			best_ex = e < best_ex ? e : best_ex;
		}
		snprintf(metric, sizeof(metric),
			 "%zu B expandable segments alloc+free", sizes[s]);
		bench_result("cuda", metric, best_ex, "ns/pair", GOAL_NONE, 0);
		if (best_ex / best_cc > worst_ratio)
			worst_ratio = best_ex / best_cc;
		worst = best_cc > worst ? best_cc : worst;
		snprintf(metric, sizeof(metric), "%zu B cached alloc+free",
			 sizes[s]);
		bench_result("cuda", metric, best_cc, "ns/pair", GOAL_AT_MOST,
			     150);
		snprintf(metric, sizeof(metric),
			 "%zu B plain (device call each) alloc+free", sizes[s]);
		bench_result("cuda", metric, best_pl, "ns/pair", GOAL_NONE, 0);
		snprintf(metric, sizeof(metric), "%zu B speedup cached/plain",
			 sizes[s]);
		bench_result("cuda", metric, best_pl / best_cc, "x", GOAL_NONE,
			     0);
	}
	bench_result("cuda", "worst cached alloc+free", worst, "ns/pair",
		     GOAL_AT_MOST, 150);
	bench_result("cuda", "worst pair cost, expandable/fixed segments",
		     worst_ratio, "x", GOAL_AT_MOST, 1.10);
	return 0;
}

static uint64_t device_calls(struct alloy_cuda_sim *sim)
{
	struct alloy_cuda_sim_counts c;

	alloy_cuda_sim_counts(sim, &c);
	return c.dev_mallocs + c.dev_frees;
}

static int one_trace(const char *name, const char *label,
		     struct alloy_allocator *cc, struct alloy_cuda_sim *sim,
		     double *worst_frag, double frag_goal)
{
	struct alloy_cuda_stats st = { .size = sizeof(st),
				       .version = ALLOY_CUDA_STATS_VERSION };
	struct replay_result rr;
	struct trace_summary *sum;
	struct trace tr;
	char path[1024], err[512], metric[96];
	const char *dir = getenv("ALLOY_TRACES_DIR");
	uint64_t c0, c1, c2;
	double ns = 0, frag;

	snprintf(path, sizeof(path), "%s/%s.trace",
		 dir ? dir : ALLOY_TRACES_DIR, name);
	if (trace_read(path, &tr, err, sizeof(err))) {
		fprintf(stderr, "alloy bench cuda: %s (set ALLOY_TRACES_DIR)\n",
			err);
		return -1;
	}
	sum = malloc(sizeof(*sum));
	if (!sum) {
		trace_free(&tr);
		return -1;
	}
	trace_summarize(&tr, sum);
	/* A cold cache for each trace. */
	alloy_cuda_caching_empty_cache(cc);
	alloy_cuda_caching_reset_peaks(cc, 0);
	c0 = device_calls(sim);
	for (int rep = 0; rep < REPEATS; rep++) {
		if (trace_replay(&tr, sum, cc, 0, &rr, NULL, NULL)) {
			fprintf(stderr, "alloy bench cuda: %s: %s\n", path,
				alloy_last_error());
			free(sum);
			trace_free(&tr);
			return -1;
		}
		if (rep == 0)
			c1 = device_calls(sim);
		else
			ns += rr.seconds * 1e9 / (double)(rr.allocs + rr.frees);
	}
	c2 = device_calls(sim);
	alloy_cuda_caching_stats(cc, 0, &st);
	frag = (double)st.reserved_bytes[ALLOY_CUDA_POOL_ALL].peak /
	       (double)st.allocated_bytes[ALLOY_CUDA_POOL_ALL].peak;
	*worst_frag = frag > *worst_frag ? frag : *worst_frag;
	snprintf(metric, sizeof(metric), "%s%s: events per repetition", label,
		 name);
	bench_result("cuda", metric, (double)tr.nev, "events", GOAL_NONE, 0);
	snprintf(metric, sizeof(metric), "%s%s: device calls, first repetition",
		 label, name);
	bench_result("cuda", metric, (double)(c1 - c0), "calls", GOAL_NONE, 0);
	snprintf(metric, sizeof(metric), "%s%s: device calls, repetitions 2-%d",
		 label, name, REPEATS);
	bench_result("cuda", metric, (double)(c2 - c1), "calls", GOAL_AT_MOST,
		     0);
	snprintf(metric, sizeof(metric), "%s%s: peak allocated", label, name);
	bench_result("cuda", metric,
		     (double)st.allocated_bytes[ALLOY_CUDA_POOL_ALL].peak /
			     (1 << 20),
		     "MiB", GOAL_NONE, 0);
	snprintf(metric, sizeof(metric), "%s%s: peak reserved", label, name);
	bench_result("cuda", metric,
		     (double)st.reserved_bytes[ALLOY_CUDA_POOL_ALL].peak /
			     (1 << 20),
		     "MiB", GOAL_NONE, 0);
	snprintf(metric, sizeof(metric),
		 "%s%s: fragmentation reserved/allocated", label, name);
	bench_result("cuda", metric, frag, "x", GOAL_AT_MOST, frag_goal);
	snprintf(metric, sizeof(metric), "%s%s: replay, warm cache", label,
		 name);
	bench_result("cuda", metric, ns / (REPEATS - 1), "ns/event", GOAL_NONE,
		     0);
	free(sum);
	trace_free(&tr);
	return 0;
}

static int run_cuda(const struct bench_opts *opts)
{
	static const char *const traces[] = { "transformer_step", "resnet_step",
					      "varlen_step" };
	struct alloy_cuda_sim *sim;
	struct alloy_allocator *cc, *ex;
	double worst = 0, worst_ex = 0;

	/* 64 GiB of simulated device: untouched pages cost nothing. */
	if (alloy_cuda_sim_create((size_t)64 << 30, &sim))
		return -1;
	if (latency(opts, sim))
		return -1;
	if (alloy_cuda_caching_register_sim(sim, "bench_cuda_traces", &cc) ||
	    register_expandable(sim, "bench_cuda_traces_expandable", &ex))
		return -1;
	for (size_t i = 0; i < sizeof(traces) / sizeof(traces[0]); i++)
		if (one_trace(traces[i], "", cc, sim, &worst, 1.2))
			return -1;
	bench_result("cuda", "worst fragmentation", worst, "x", GOAL_AT_MOST,
		     1.2);
	/* The same traces with expandable segments: one growing range per
	 * pool instead of fixed segments. */
	alloy_cuda_caching_empty_cache(cc);
	for (size_t i = 0; i < sizeof(traces) / sizeof(traces[0]); i++)
		if (one_trace(traces[i], "expandable, ", ex, sim, &worst_ex,
			      1.02))
			return -1;
	bench_result("cuda", "expandable, worst fragmentation", worst_ex, "x",
		     GOAL_AT_MOST, 1.02);
	return 0;
}

const struct bench bench_cuda = {
	.name = "cuda",
	.help = "CUDA caching allocator on the simulated device: pair latency, "
		"steady-state device calls, fragmentation on training-step traces",
	.run = run_cuda,
};
