// SPDX-License-Identifier: MIT
/*
 * bench/bench_reporter.c - what recording costs: the same alloc/free
 * workload with the reporter off and on, at 1 and 2 threads, in
 * alternating rounds of one run (best round of each kept).
 *
 * Each thread keeps a ring of 16 live blocks of 64 B to 4 KiB and replaces
 * the oldest on every step, so every step is one allocation and one free
 * and the pointer table holds a realistic handful of blocks per thread.
 * The trace and event log are off: this measures the accounting.  The
 * ratio is the median over rounds of on/off measured back to back, which
 * holds up on a loaded machine better than a ratio of two bests.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <alloy/alloy.h>

#include "bench.h"

#define ROUNDS 15
#define RING   16

struct worker {
	pthread_t thread;
	struct alloy_allocator *a;
	pthread_barrier_t *start;
	long iters;
	double cpu_ns; /* this thread's CPU time for the loop */
	int rc;
};

static double thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct alloy_data_ptr ring[RING] = { 0 };

	double t0;

	pthread_barrier_wait(w->start);
	t0 = thread_cpu_ns();
	for (long i = 0; i < w->iters; i++) {
		struct alloy_data_ptr *d = &ring[i % RING];

		alloy_data_ptr_free(d);
		w->rc = alloy_alloc(w->a, (size_t)64 << (i % 7), 0, 0, d);
		if (w->rc)
			break;
		*(volatile char *)d->ptr = 1;
	}
	for (int i = 0; i < RING; i++)
		alloy_data_ptr_free(&ring[i]);
	w->cpu_ns = thread_cpu_ns() - t0;
	return NULL;
}

struct rate {
	double wall; /* pairs per second of elapsed time, all threads */
	double cpu;  /* pairs per second of each thread's CPU time, summed */
};

/* One round; false on failure. */
static bool round_rate(struct alloy_allocator *a, int nthreads, long iters,
		       struct rate *out)
{
	struct worker w[2];
	pthread_barrier_t start;
	double t0, t;
	int rc = 0;

	pthread_barrier_init(&start, NULL, (unsigned)nthreads + 1);
	for (int i = 0; i < nthreads; i++) {
		w[i] = (struct worker){ .a = a,
					.start = &start,
					.iters = iters };
		if (pthread_create(&w[i].thread, NULL, work, &w[i]))
			return false;
	}
	t0 = bench_now_ns();
	pthread_barrier_wait(&start);
	out->cpu = 0;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].thread, NULL);
		rc |= w[i].rc;
		out->cpu += (double)iters / (w[i].cpu_ns * 1e-9);
	}
	t = bench_now_ns() - t0;
	pthread_barrier_destroy(&start);
	out->wall = (double)nthreads * (double)iters / (t * 1e-9);
	return rc == 0;
}

static int run_reporter(const struct bench_opts *opts)
{
	struct alloy_allocator *a = alloy_find_allocator("default");
	long iters = bench_iters(opts, 200000);
	bool was_on = alloy_reporter_enabled();

	if (!a)
		return -1;
	for (int nthreads = 1; nthreads <= 2; nthreads++) {
		double best_off = 0, best_on = 0, wall[ROUNDS], cpu[ROUNDS];
		const char *th = nthreads > 1 ? "threads" : "thread";
		struct rate r[2];
		char metric[96];

		for (int round = 0; round < ROUNDS; round++) {
			/* Alternate which goes first: the heap state is shared.
			 */
			for (int k = 0; k < 2; k++) {
				int on = (round + k) & 1;

				if (on ? alloy_reporter_enable()
				       : alloy_reporter_disable())
					return -1;
				if (!round_rate(a, nthreads, iters, &r[on]))
					return -1;
			}
			best_off = r[0].wall > best_off ? r[0].wall : best_off;
			best_on = r[1].wall > best_on ? r[1].wall : best_on;
			/* Each ratio from two back-to-back runs: load hits
			 * both. */
			wall[round] = r[1].wall / r[0].wall;
			cpu[round] = r[1].cpu / r[0].cpu;
		}
		snprintf(metric, sizeof(metric),
			 "%d %s reporter off (best, wall)", nthreads, th);
		bench_result("reporter", metric, best_off / 1e6, "Mpairs/s",
			     GOAL_NONE, 0);
		snprintf(metric, sizeof(metric),
			 "%d %s reporter on (best, wall)", nthreads, th);
		bench_result("reporter", metric, best_on / 1e6, "Mpairs/s",
			     GOAL_NONE, 0);
		snprintf(metric, sizeof(metric),
			 "%d %s ratio on/off (median, wall)", nthreads, th);
		bench_result("reporter", metric, bench_median(wall, ROUNDS),
			     "x", GOAL_NONE, 0);
		/*
		 * Per-thread CPU time leaves out time other processes took
		 * the core, but keeps what sharing cache lines costs us.
		 */
		snprintf(metric, sizeof(metric),
			 "%d %s ratio on/off (median, cpu time)", nthreads, th);
		bench_result("reporter", metric, bench_median(cpu, ROUNDS), "x",
			     nthreads == 2 ? GOAL_AT_LEAST : GOAL_NONE, 0.80);
	}
	if (was_on)
		alloy_reporter_enable();
	else
		alloy_reporter_disable();
	return 0;
}

const struct bench bench_reporter = {
	.name = "reporter",
	.help = "alloc/free throughput with the reporter off vs on, 1 and 2 threads",
	.run = run_reporter,
};
