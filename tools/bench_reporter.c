// SPDX-License-Identifier: MIT
/*
 * tools/bench_reporter.c - what recording costs: the same alloc/free
 * workload with the reporter off and on, at 1 and 2 threads, in
 * alternating rounds of one run (best round of each kept).
 *
 * Each thread keeps a ring of 16 live blocks of 64 B to 4 KiB and replaces
 * the oldest on every step, so every step is one allocation and one free
 * and the pointer table holds a realistic handful of blocks per thread.
 * The trace and event log are off: this measures the accounting.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <alloy/alloy.h>

#include "bench.h"

#define ROUNDS 7
#define RING 16

struct worker {
	pthread_t thread;
	struct alloy_allocator *a;
	pthread_barrier_t *start;
	long iters;
	int rc;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	struct alloy_data_ptr ring[RING] = { 0 };

	pthread_barrier_wait(w->start);
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
	return NULL;
}

/* One round: pairs per second over all threads, or < 0 on failure. */
static double round_rate(struct alloy_allocator *a, int nthreads, long iters)
{
	struct worker w[2];
	pthread_barrier_t start;
	double t0, t;
	int rc = 0;

	pthread_barrier_init(&start, NULL, (unsigned)nthreads + 1);
	for (int i = 0; i < nthreads; i++) {
		w[i] = (struct worker){ .a = a, .start = &start, .iters = iters };
		if (pthread_create(&w[i].thread, NULL, work, &w[i]))
			return -1;
	}
	t0 = bench_now_ns();
	pthread_barrier_wait(&start);
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].thread, NULL);
		rc |= w[i].rc;
	}
	t = bench_now_ns() - t0;
	pthread_barrier_destroy(&start);
	return rc ? -1 : (double)nthreads * (double)iters / (t * 1e-9);
}

static int run_reporter(const struct bench_opts *opts)
{
	struct alloy_allocator *a = alloy_find_allocator("default");
	long iters = bench_iters(opts, 400000);
	bool was_on = alloy_reporter_enabled();

	if (!a)
		return -1;
	for (int nthreads = 1; nthreads <= 2; nthreads++) {
		double best_off = 0, best_on = 0, r;
		char metric[96];

		for (int round = 0; round < ROUNDS; round++) {
			/* Alternate which goes first: the heap state is shared. */
			for (int k = 0; k < 2; k++) {
				bool on = (round + k) & 1;

				if (on ? alloy_reporter_enable() :
					 alloy_reporter_disable())
					return -1;
				r = round_rate(a, nthreads, iters);
				if (r < 0)
					return -1;
				if (on)
					best_on = r > best_on ? r : best_on;
				else
					best_off = r > best_off ? r : best_off;
			}
		}
		snprintf(metric, sizeof(metric), "%d thread%s reporter off",
			 nthreads, nthreads > 1 ? "s" : "");
		bench_result("reporter", metric, best_off / 1e6, "Mpairs/s",
			     GOAL_NONE, 0);
		snprintf(metric, sizeof(metric), "%d thread%s reporter on",
			 nthreads, nthreads > 1 ? "s" : "");
		bench_result("reporter", metric, best_on / 1e6, "Mpairs/s",
			     GOAL_NONE, 0);
		snprintf(metric, sizeof(metric), "%d thread%s ratio on/off",
			 nthreads, nthreads > 1 ? "s" : "");
		bench_result("reporter", metric, best_on / best_off, "x",
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
