// SPDX-License-Identifier: MIT
/*
 * tools/bench_backends.c - `alloy bench backends`: the jemalloc and
 * mimalloc modules against calling those libraries directly, and default
 * vs jemalloc vs mimalloc on a larson-style multi-threaded workload.
 *
 * Module vs raw: the same stream of mixed-size alloc/free pairs, in many
 * short chunks alternating between the ways, each keeping its median
 * chunk (as bench_core does), so that heap state and noise hit all alike.
 * The ratio is raw time / module time: the module's throughput relative to
 * the library's own API.  A third way, the module's ops called directly,
 * splits the gap into what the module costs and what alloy_alloc and the
 * DataPtr cost on top (the latter is bench core's subject).
 *
 * Larson-style: each thread owns a set of slots and replaces a random
 * slot's block with one of a random size, round after round; between
 * rounds the sets rotate among the threads, so that (with 2 threads) most
 * blocks are freed by a thread other than the one that allocated them.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <alloy/alloy.h>

#ifdef ALLOY_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif
#ifdef ALLOY_HAVE_MIMALLOC
#include <mimalloc.h>
#endif

#include "bench.h"

#define CHUNKS 41
#define BATCH  32
#define ALIGN  64

/* A fixed mix of small and medium sizes, as tensors' buffers are. */
static const size_t mix[16] = { 16,   64,   96,	  128, 256, 384,  512,	 1024,
				2048, 4096, 8192, 100, 640, 3000, 32768, 200 };

static void *volatile sink;

/* BATCH allocations, then their frees in reverse, iters / BATCH times. */
static double module_round(struct alloy_allocator *a, long iters)
{
	struct alloy_data_ptr dp[BATCH];
	double t0 = bench_now_ns();

	for (long i = 0; i < iters; i += BATCH) {
		for (int b = 0; b < BATCH; b++) {
			if (alloy_alloc(a, mix[(i + b) & 15], ALIGN, 0, &dp[b]))
				return -1;
			sink = dp[b].ptr;
		}
		for (int b = BATCH; b-- > 0;)
			alloy_data_ptr_free(&dp[b]);
	}
	return (bench_now_ns() - t0) / (double)iters;
}

/* The module's own ops called directly: what the module adds to raw. */
static double ops_round(struct alloy_allocator *a, long iters)
{
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(a);
	void *ctx = alloy_allocator_ctx(a);
	void *p[BATCH];
	double t0 = bench_now_ns();

	for (long i = 0; i < iters; i += BATCH) {
		for (int b = 0; b < BATCH; b++) {
			p[b] = ops->alloc(ctx, mix[(i + b) & 15], ALIGN, 0);
			if (!p[b])
				return -1;
			sink = p[b];
		}
		for (int b = BATCH; b-- > 0;)
			ops->free(ctx, p[b], mix[(i + b) & 15], ALIGN);
	}
	return (bench_now_ns() - t0) / (double)iters;
}

#ifdef ALLOY_HAVE_JEMALLOC
static double jemalloc_round(long iters)
{
	const int flags = MALLOCX_LG_ALIGN(6); /* ALIGN */
	void *p[BATCH];
	double t0 = bench_now_ns();

	for (long i = 0; i < iters; i += BATCH) {
		for (int b = 0; b < BATCH; b++) {
			p[b] = mallocx(mix[(i + b) & 15], flags);
			if (!p[b])
				return -1;
			sink = p[b];
		}
		for (int b = BATCH; b-- > 0;)
			sdallocx(p[b], mix[(i + b) & 15], flags);
	}
	return (bench_now_ns() - t0) / (double)iters;
}
#endif

#ifdef ALLOY_HAVE_MIMALLOC
static double mimalloc_round(long iters)
{
	void *p[BATCH];
	double t0 = bench_now_ns();

	for (long i = 0; i < iters; i += BATCH) {
		for (int b = 0; b < BATCH; b++) {
			p[b] = mi_malloc_aligned(mix[(i + b) & 15], ALIGN);
			if (!p[b])
				return -1;
			sink = p[b];
		}
		for (int b = BATCH; b-- > 0;)
			mi_free(p[b]);
	}
	return (bench_now_ns() - t0) / (double)iters;
}
#endif

/* Module vs raw for one backend; raw is NULL when not built in. */
static int module_vs_raw(const struct bench_opts *opts, const char *name,
			 const char *raw_name, double (*raw)(long))
{
	struct alloy_allocator *a = alloy_request_allocator(name);
	long iters = bench_iters(opts, 32 * 1024);
	double r[CHUNKS], m[CHUNKS], o[CHUNKS], mr, mm, mo;
	char metric[96];

	if (!a || !raw) {
		printf("  %s: skipped: %s\n", name,
		       a ? "alloy was built without it" : alloy_last_error());
		return 0;
	}
	for (int c = 0; c < CHUNKS; c++) {
		if (c & 1) {
			m[c] = module_round(a, iters);
			o[c] = ops_round(a, iters);
			r[c] = raw(iters);
		} else {
			r[c] = raw(iters);
			o[c] = ops_round(a, iters);
			m[c] = module_round(a, iters);
		}
		if (r[c] < 0 || m[c] < 0 || o[c] < 0)
			return -1;
	}
	mr = bench_median(r, CHUNKS);
	mm = bench_median(m, CHUNKS);
	mo = bench_median(o, CHUNKS);
	snprintf(metric, sizeof(metric), "%s raw %s", name, raw_name);
	bench_result("backends", metric, mr, "ns/pair", GOAL_NONE, 0);
	snprintf(metric, sizeof(metric), "%s module through alloy_alloc", name);
	bench_result("backends", metric, mm, "ns/pair", GOAL_NONE, 0);
	/* Split the gap: the module's ops alone, and alloy's path on top. */
	snprintf(metric, sizeof(metric), "%s module ops called directly", name);
	bench_result("backends", metric, mo, "ns/pair", GOAL_NONE, 0);
	snprintf(metric, sizeof(metric), "%s module ops/raw throughput", name);
	bench_result("backends", metric, mr / mo, "x", GOAL_NONE, 0);
	snprintf(metric, sizeof(metric), "%s module/raw throughput", name);
	bench_result("backends", metric, mr / mm, "x", GOAL_AT_LEAST, 0.95);
	return 0;
}

/* ---- larson-style ---------------------------------------------------- */

#define SLOTS	    2048
#define MAX_THREADS 2

struct larson {
	struct alloy_allocator *a;
	int nthreads;
	int rounds;
	long ops; /* per thread per round */
	pthread_barrier_t barrier;
	struct alloy_data_ptr sets[MAX_THREADS][SLOTS];
	int failed;
};

struct larson_thread {
	struct larson *l;
	int id;
};

static inline uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* Mostly small, sometimes up to 64 KiB: 16 B..64 KiB, skewed low. */
static size_t larson_size(uint64_t r)
{
	unsigned shift = 4 + (unsigned)(r % 13) * (unsigned)((r >> 8) % 2);

	return ((size_t)1 << (shift > 16 ? 16 : shift)) +
	       (size_t)((r >> 16) % 64);
}

static void *larson_worker(void *arg)
{
	struct larson_thread *t = arg;
	struct larson *l = t->l;
	uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(t->id + 1);

	for (int round = 0; round < l->rounds; round++) {
		/* Rotate: this round's set was another thread's last round. */
		struct alloy_data_ptr *set =
			l->sets[(t->id + round) % l->nthreads];

		for (long i = 0; i < l->ops; i++) {
			uint64_t r = xorshift(&seed);
			struct alloy_data_ptr *dp = &set[r % SLOTS];

			alloy_data_ptr_free(dp);
			if (alloy_alloc(l->a, larson_size(r >> 11), ALIGN, 0,
					dp)) {
				l->failed = 1;
				break;
			}
			*(volatile char *)dp->ptr = (char)r;
		}
		pthread_barrier_wait(&l->barrier);
	}
	return NULL;
}

/* Operations per second of one run; -1 on failure. */
static double larson_run(struct alloy_allocator *a, int nthreads,
			 const struct bench_opts *opts)
{
	struct larson *l = calloc(1, sizeof(*l));
	struct larson_thread th[MAX_THREADS];
	pthread_t tid[MAX_THREADS];
	double t0, ns, total;

	if (!l)
		return -1;
	l->a = a;
	l->nthreads = nthreads;
	l->rounds = 20;
	l->ops = bench_iters(opts, 100000);
	pthread_barrier_init(&l->barrier, NULL, (unsigned)nthreads);
	t0 = bench_now_ns();
	for (int i = 0; i < nthreads; i++) {
		th[i] = (struct larson_thread){ l, i };
		pthread_create(&tid[i], NULL, larson_worker, &th[i]);
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(tid[i], NULL);
	ns = bench_now_ns() - t0;
	for (int s = 0; s < nthreads; s++)
		for (int i = 0; i < SLOTS; i++)
			alloy_data_ptr_free(&l->sets[s][i]);
	pthread_barrier_destroy(&l->barrier);
	total = l->failed ? -1 : (double)l->ops * l->rounds * nthreads;
	free(l);
	return total < 0 ? -1 : total / (ns / 1e9);
}

static int larson(const struct bench_opts *opts)
{
	static const char *const names[] = { "default", "jemalloc",
					     "mimalloc" };
	struct alloy_allocator *a[3];
	double ops[3][3];
	char metric[96];

	for (int n = 0; n < 3; n++) {
		a[n] = alloy_request_allocator(names[n]);
		if (!a[n])
			printf("  larson %s: skipped: %s\n", names[n],
			       alloy_last_error());
	}
	for (int threads = 1; threads <= MAX_THREADS; threads++) {
		double runs[3][5];

		/* Interleave the allocators; keep each one's median run. */
		for (int rep = 0; rep < 5; rep++)
			for (int n = 0; n < 3; n++)
				if (a[n] && (runs[n][rep] = larson_run(
						     a[n], threads, opts)) < 0)
					return -1;
		for (int n = 0; n < 3; n++) {
			if (!a[n])
				continue;
			ops[n][threads] = bench_median(runs[n], 5);
			snprintf(metric, sizeof(metric),
				 "larson %d thread%s %s", threads,
				 threads > 1 ? "s" : "", names[n]);
			bench_result("backends", metric, ops[n][threads] / 1e6,
				     "Mops/s", GOAL_NONE, 0);
		}
		for (int n = 1; n < 3; n++) {
			if (!a[0] || !a[n])
				continue;
			snprintf(metric, sizeof(metric),
				 "larson %d thread%s %s/default throughput",
				 threads, threads > 1 ? "s" : "", names[n]);
			bench_result("backends", metric,
				     ops[n][threads] / ops[0][threads], "x",
				     GOAL_NONE, 0);
		}
	}
	return 0;
}

static int run_backends(const struct bench_opts *opts)
{
	double (*je)(long) = NULL, (*mi)(long) = NULL;

#ifdef ALLOY_HAVE_JEMALLOC
	je = jemalloc_round;
#endif
#ifdef ALLOY_HAVE_MIMALLOC
	mi = mimalloc_round;
#endif
	if (module_vs_raw(opts, "jemalloc", "mallocx+sdallocx", je) ||
	    module_vs_raw(opts, "mimalloc", "mi_malloc_aligned+mi_free", mi))
		return -1;
	return larson(opts);
}

const struct bench bench_backends = {
	.name = "backends",
	.help = "jemalloc/mimalloc modules vs their raw APIs; larson-style threads",
	.run = run_backends,
};
