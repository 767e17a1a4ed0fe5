// SPDX-License-Identifier: MIT
/*
 * bench/bench_backends.c - `alloy bench backends`: the jemalloc and
 * mimalloc modules against calling those libraries directly, and default
 * vs jemalloc vs mimalloc on a larson-style multi-threaded workload.
 *
 * Module vs raw, per size (64 B, 4 KiB .. 1 MiB): alloc+free pairs of one
 * size four ways - the library's own fastest calls (mi_malloc + mi_free;
 * mallocx + sdallocx with flags 0), the module's ops called directly, the
 * module through alloy_alloc + alloy_data_ptr_free at 64-byte alignment,
 * and the module as the CPU default through alloy_alloc_default (the
 * path of a program run with ALLOY_CONF=cpu:NAME) - in many short chunks
 * alternating between the ways, each keeping its median chunk (as bench
 * core does).  The ratio is raw time / module time: the module's
 * throughput relative to the library's own API.  The ops line splits the
 * gap into what the module costs and what alloy's allocation path adds
 * (bench core's subject).  Instructions per pair of the four come from
 * callgrind (bench/callgrind.c).
 *
 * Larson-style: each thread owns a set of slots and replaces a random
 * slot's block with one of a random size, round after round; between
 * rounds the sets rotate among the threads, so that (with 2 threads) most
 * blocks are freed by a thread other than the one that allocated them.
 */
#include <math.h>
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
#define ALIGN  64

static const size_t sizes[] = { 64, 4096, 16384, 65536, 262144, 1048576 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void *volatile sink;

/* The module through alloy's allocation path. */
static double module_round(const void *arg, size_t size, long iters)
{
	struct alloy_allocator *a = (struct alloy_allocator *)arg;
	double t0 = bench_now_ns();

	for (long i = 0; i < iters; i++) {
		struct alloy_data_ptr dp;

		if (alloy_alloc(a, size, ALIGN, 0, &dp))
			return -1;
		*(volatile char *)dp.ptr = 1;
		sink = dp.ptr;
		alloy_data_ptr_free(&dp);
	}
	return (bench_now_ns() - t0) / (double)iters;
}

/*
 * The module as the CPU default: the default path (bench core's framework
 * count) and the configured alignment, as after ALLOY_CONF=cpu:NAME.  The
 * default is set before the clock starts and put back after it stops.
 */
static double default_round(const void *arg, size_t size, long iters)
{
	struct alloy_allocator *a = (struct alloy_allocator *)arg;
	struct alloy_allocator *was = alloy_get_default(ALLOY_DEVICE_CPU);
	double t;

	if (alloy_set_default(ALLOY_DEVICE_CPU, a))
		return -1;
	t = bench_default_round(NULL, size, iters);
	return alloy_set_default(ALLOY_DEVICE_CPU, was) ? -1 : t;
}

/* The module's own ops called directly: what the module adds to raw. */
static double ops_round(const void *arg, size_t size, long iters)
{
	const struct alloy_allocator *a = arg;
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(a);
	void *ctx = alloy_allocator_ctx(a);
	double t0 = bench_now_ns();

	for (long i = 0; i < iters; i++) {
		void *p = ops->alloc(ctx, size, ALIGN, 0);

		if (!p)
			return -1;
		*(volatile char *)p = 1;
		sink = p;
		ops->free(ctx, p, size, ALIGN);
	}
	return (bench_now_ns() - t0) / (double)iters;
}

/*
 * The raw rounds keep one block of the size live while they run, a
 * neighbour of the pair's block, as any program has.  A lone pair takes
 * a slower path of either library: mimalloc's free empties its page
 * every time (its page retire path, about twice a pair's cost), and
 * jemalloc's sdallocx is slower while no other block of the class is
 * live in the process.  A timed run without one would have a neighbour
 * for mimalloc once the module's cache held a block of the size (the
 * ways alternate in one process), not for jemalloc, and callgrind counts
 * the raw way before the others: with the neighbour, the count
 * and the time measure the same path, the library's fastest.
 */
#ifdef ALLOY_HAVE_JEMALLOC
static double jemalloc_round(const void *arg, size_t size, long iters)
{
	void *neighbour = mallocx(size, 0);
	double t0 = bench_now_ns(), t;

	(void)arg;
	if (!neighbour)
		return -1;
	for (long i = 0; i < iters; i++) {
		void *p = mallocx(size, 0);

		if (!p)
			return -1;
		*(volatile char *)p = 1;
		sink = p;
		sdallocx(p, size, 0);
	}
	t = bench_now_ns() - t0;
	sdallocx(neighbour, size, 0);
	return t / (double)iters;
}
#endif

#ifdef ALLOY_HAVE_MIMALLOC
static double mimalloc_round(const void *arg, size_t size, long iters)
{
	void *neighbour = mi_malloc(size);
	double t0 = bench_now_ns(), t;

	(void)arg;
	if (!neighbour)
		return -1;
	for (long i = 0; i < iters; i++) {
		void *p = mi_malloc(size);

		if (!p)
			return -1;
		*(volatile char *)p = 1;
		sink = p;
		mi_free(p);
	}
	t = bench_now_ns() - t0;
	mi_free(neighbour);
	return t / (double)iters;
}
#endif

struct backend {
	const char *name;
	const char *raw_name;
	bench_round_fn raw; /* NULL: not built in */
};

static struct backend backends[2] = {
	{ "mimalloc", "mi_malloc+mi_free", NULL },
	{ "jemalloc", "mallocx+sdallocx flags 0", NULL },
};
#define NBACKENDS 2

static void find_raw_calls(void)
{
#ifdef ALLOY_HAVE_MIMALLOC
	backends[0].raw = mimalloc_round;
#endif
#ifdef ALLOY_HAVE_JEMALLOC
	backends[1].raw = jemalloc_round;
#endif
}

/* ---- instruction counts: raw, ops, module per backend and size ------ */

enum { WAY_RAW, WAY_OPS, WAY_MODULE, WAY_DEFAULT, NWAYS };
#define NCASES	      (NBACKENDS * NSIZES * NWAYS)
#define CASE(b, s, w) (((b)*NSIZES + (s)) * NWAYS + (w))

/* The label says the way: these very strings. */
static const char *const way_names[NWAYS] = { "raw", "ops", "module",
					      "as default" };
/* The same ways in the figures' words. */
static const char *const way_what[NWAYS] = {
	[WAY_RAW] = "raw",
	[WAY_OPS] = "module ops directly",
	[WAY_MODULE] = "module through alloy_alloc",
	[WAY_DEFAULT] = "module as the CPU default",
};

static void cg_way(const struct bench_cg_case *c, long pairs)
{
	const struct backend *b = c->arg;
	struct alloy_allocator *a = alloy_find_allocator(b->name);

	if (!a || !b->raw)
		return;
	if (c->label == way_names[WAY_RAW])
		b->raw(NULL, c->size, pairs);
	else if (c->label == way_names[WAY_OPS])
		ops_round(a, c->size, pairs);
	else if (c->label == way_names[WAY_MODULE])
		module_round(a, c->size, pairs);
	else
		default_round(a, c->size, pairs);
}

static struct bench_cg_case cases[NCASES];

static void make_cases(void)
{
	for (size_t b = 0; b < NBACKENDS; b++)
		for (size_t s = 0; s < NSIZES; s++)
			for (int w = 0; w < NWAYS; w++)
				cases[CASE(b, s, w)] = (struct bench_cg_case){
					.label = way_names[w],
					.run = cg_way,
					.size = sizes[s],
					.arg = &backends[b],
					.pairs = sizes[s] >= 262144 ? 500 : 0,
				};
}

static int backends_callgrind_child(void)
{
	find_raw_calls();
	for (size_t b = 0; b < NBACKENDS; b++)
		alloy_request_allocator(backends[b].name);
	make_cases();
	return bench_cg_cases(cases, NCASES);
}

/* ---- module vs raw: the figures --------------------------------------- */

/*
 * Throughput ratios raw/way per way and size of one backend (ratio[w][s];
 * WAY_RAW's is 1); NAN if skipped.
 */
static int module_vs_raw(const struct bench_opts *opts, size_t bi,
			 const double *ins, double ratio[NWAYS][NSIZES])
{
	const struct backend *b = &backends[bi];
	struct alloy_allocator *a = alloy_request_allocator(b->name);
	char metric[128];

	for (int w = 0; w < NWAYS; w++)
		for (size_t s = 0; s < NSIZES; s++)
			ratio[w][s] = NAN;
	if (!a || !b->raw) {
		bench_note("%s: skipped: %s", b->name,
			   a ? "alloy was built without it"
			     : alloy_last_error());
		return 0;
	}
	for (size_t s = 0; s < NSIZES; s++) {
		long iters =
			bench_iters(opts, sizes[s] >= 262144 ? 1000 : 4000);
		const double *in = &ins[CASE(bi, s, 0)];
		size_t sz = sizes[s];
		const struct bench_way ways[NWAYS] = {
			[WAY_RAW] = { b->raw, NULL },
			[WAY_OPS] = { ops_round, a },
			[WAY_MODULE] = { module_round, a },
			[WAY_DEFAULT] = { default_round, a },
		};
		double med[NWAYS];

		if (bench_side_by_side(ways, NWAYS, sz, iters, CHUNKS, med))
			return -1;
		snprintf(metric, sizeof(metric), "%s %zu B raw %s", b->name, sz,
			 b->raw_name);
		bench_result("backends", metric, med[WAY_RAW], "ns/pair",
			     GOAL_NONE, 0);
		for (int w = WAY_OPS; w < NWAYS; w++) {
			ratio[w][s] = med[WAY_RAW] / med[w];
			snprintf(metric, sizeof(metric), "%s %zu B %s", b->name,
				 sz, way_what[w]);
			bench_result("backends", metric, med[w], "ns/pair",
				     GOAL_NONE, 0);
		}
		for (int w = WAY_MODULE; w < NWAYS; w++) {
			snprintf(metric, sizeof(metric),
				 "%s %zu B %s / raw throughput", b->name, sz,
				 way_what[w]);
			bench_result("backends", metric, ratio[w][s], "x",
				     GOAL_AT_LEAST, sz == 64 ? 0.75 : 0.95);
		}
		for (int w = 0; w < NWAYS && !isnan(in[WAY_RAW]); w++) {
			snprintf(metric, sizeof(metric),
				 "%s %zu B instructions: %s", b->name, sz,
				 way_names[w]);
			bench_result("backends", metric, in[w], "instr",
				     GOAL_NONE, 0);
		}
	}
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
			bench_note("larson %s: skipped: %s", names[n],
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

/* The 64 B rows of each module: through alloy_alloc, as the CPU default. */
static void summarise_64(const double ratio[NBACKENDS][NWAYS][NSIZES],
			 const double *ins)
{
	char figure[128], measured[32], instr[96];

	for (size_t b = 0; b < NBACKENDS; b++)
		for (int w = WAY_MODULE; w < NWAYS; w++) {
			const double *in = &ins[CASE(b, 0, 0)];
			double r = ratio[b][w][0];

			if (isnan(r))
				continue;
			snprintf(figure, sizeof(figure), "%s %s / raw %s, 64 B",
				 backends[b].name, way_what[w],
				 backends[b].raw_name);
			snprintf(measured, sizeof(measured), "%.2f", r);
			if (isnan(in[WAY_RAW]))
				snprintf(instr, sizeof(instr), "n/a");
			else
				snprintf(instr, sizeof(instr),
					 "%s %.0f (ops %.0f), raw %.0f",
					 way_names[w], in[w], in[WAY_OPS],
					 in[WAY_RAW]);
			bench_summary(figure, ">= 0.75", measured, instr,
				      bench_verdict(r >= 0.75));
		}
}

/*
 * The 4 KiB - 1 MiB row of one way against raw, both backends: the
 * module through alloy or as the CPU default (the goal), or its ops alone
 * (what the module itself adds, the rest being bench core's framework).
 */
static void summarise_large(const char *figure, int way,
			    const double ratio[NBACKENDS][NWAYS][NSIZES],
			    const double *ins)
{
	bool goal = way != WAY_OPS;
	char measured[32], instr[192], *p = instr;
	double lo, hi, all[NBACKENDS * (NSIZES - 1)];

	*p = '\0';
	for (size_t b = 0; b < NBACKENDS; b++) {
		double w[NSIZES - 1], r[NSIZES - 1], wlo, whi, rlo, rhi;

		for (size_t s = 1; s < NSIZES; s++) {
			all[b * (NSIZES - 1) + s - 1] = ratio[b][way][s];
			w[s - 1] = ins[CASE(b, s, way)];
			r[s - 1] = ins[CASE(b, s, WAY_RAW)];
		}
		bench_range(w, NSIZES - 1, &wlo, &whi);
		bench_range(r, NSIZES - 1, &rlo, &rhi);
		if (!isnan(wlo))
			p += snprintf(p, sizeof(instr) - (size_t)(p - instr),
				      "%s%s %s %.0f-%.0f, raw %.0f-%.0f",
				      p == instr ? "" : "; ", backends[b].name,
				      way_names[way], wlo, whi, rlo, rhi);
	}
	bench_range(all, NBACKENDS * (NSIZES - 1), &lo, &hi);
	if (isnan(lo))
		return;
	snprintf(measured, sizeof(measured), "%.2f - %.2f", lo, hi);
	bench_summary(figure, goal ? ">= 0.95" : "-", measured,
		      p == instr ? "n/a" : instr,
		      goal ? bench_verdict(lo >= 0.95) : VERDICT_NO_GOAL);
}

static int run_backends(const struct bench_opts *opts)
{
	double ins[NCASES], ratio[NBACKENDS][NWAYS][NSIZES];

	find_raw_calls();
	for (size_t b = 0; b < NBACKENDS; b++)
		alloy_request_allocator(backends[b].name);
	make_cases();
	bench_instructions(opts, "backends", cases, NCASES, ins);
	for (size_t b = 0; b < NBACKENDS; b++)
		if (module_vs_raw(opts, b, ins, ratio[b]))
			return -1;
	summarise_64(ratio, ins);
	summarise_large("both modules / raw, 4 KiB - 1 MiB", WAY_MODULE, ratio,
			ins);
	summarise_large("both modules as the CPU default / raw, 4 KiB - 1 MiB",
			WAY_DEFAULT, ratio, ins);
	summarise_large(
		"the modules' own ops / raw, 4 KiB - 1 MiB (no framework)",
		WAY_OPS, ratio, ins);
	return larson(opts);
}

const struct bench bench_backends = {
	.name = "backends",
	.help = "jemalloc/mimalloc modules vs their raw APIs; larson-style threads",
	.run = run_backends,
	.callgrind_child = backends_callgrind_child,
};
