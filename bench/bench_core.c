// SPDX-License-Identifier: MIT
/*
 * bench/bench_core.c - the framework's own cost, two ways:
 *
 * - with nothing under it: a no-op allocator (its alloc returns one static
 *   block, its free does nothing) is made the CPU default and pairs go
 *   through alloy_alloc_default + alloy_data_ptr_free at the configured
 *   alignment (64), at 1 and 2 threads.  The instructions per pair of
 *   alloy's own code in that loop - liballoy's and the fast paths its
 *   headers inline into the caller, without the no-op ops' and without
 *   the loop's counting and touching (bench/callgrind.c tells them apart)
 *   - are the framework's: the figure its goal bounds (docs/BENCHMARKS.md).
 * - against what it replaces: pairs through alloy with the "default"
 *   allocator against posix_memalign(64) + free called directly (c10's
 *   DefaultCPUAllocator), 64 B to 1 MiB, in time and in instructions;
 *   and, for the sizes glibc serves, how much of glibc's heap a live block
 *   takes each way (the default carves from a malloc of size + 64).
 *
 * Timed sides run in many short alternating chunks and each keeps its
 * median chunk, so that drift in the heap's state and bursts of noise on
 * a shared machine hit both alike and a few bad chunks do not move it.
 */
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <alloy/alloy.h>

#include "bench.h"

#define ALIGN 64

/* Keep the compiler from dropping the work. */
static void *volatile sink;

/* ---- the no-op allocator --------------------------------------------- */

static _Alignas(4096) char noop_block[4096];

/* Named bench_noop_*: callgrind leaves their instructions out. */
static void *bench_noop_alloc(void *ctx, size_t size, size_t align,
			      unsigned flags)
{
	(void)ctx;
	(void)size;
	(void)align;
	(void)flags;
	return noop_block;
}

static void bench_noop_free(void *ctx, void *ptr, size_t size, size_t align)
{
	(void)ctx;
	(void)ptr;
	(void)size;
	(void)align;
}

static const struct alloy_allocator_ops noop_ops = {
	.abi_major = ALLOY_ABI_MAJOR,
	.abi_minor = ALLOY_ABI_MINOR,
	.struct_size = sizeof(struct alloy_allocator_ops),
	.name = "bench_noop",
	.device_type = ALLOY_DEVICE_CPU,
	.alloc = bench_noop_alloc,
	.free = bench_noop_free,
};

static struct alloy_allocator *noop_allocator(void)
{
	struct alloy_allocator *a = alloy_find_allocator("bench_noop");

	if (!a && alloy_register_allocator(&noop_ops, NULL, "alloy bench", &a))
		return NULL;
	return a;
}

/* ---- the loops, timed and counted alike ------------------------------ */

static double direct_round(const void *arg, size_t size, long iters)
{
	double t0 = bench_now_ns();

	for (long i = 0; i < iters; i++) {
		void *p;

		if (posix_memalign(&p, ALIGN, size))
			return -1;
		*(volatile char *)p = 1;
		sink = p;
		free(p);
	}
	return (bench_now_ns() - t0) / (double)iters;
}

struct thread_round {
	size_t size;
	long iters;
	double ns;
};

static void framework_thread(void *arg)
{
	struct thread_round *r = arg;

	r->ns = bench_default_round(NULL, r->size, r->iters);
}

/* ns per pair in each of threads threads running at once. */
static double framework_threads(int threads, size_t size, long iters)
{
	struct thread_round r = { size, iters, 0 };

	if (threads == 1)
		return bench_default_round(NULL, size, iters);
	if (bench_cg_threads(threads, framework_thread, &r))
		return -1;
	return r.ns;
}

/* Make a the CPU default; returns the one it replaces. */
static struct alloy_allocator *swap_default(struct alloy_allocator *a)
{
	struct alloy_allocator *old = alloy_get_default(ALLOY_DEVICE_CPU);

	return a && !alloy_set_default(ALLOY_DEVICE_CPU, a) ? old : NULL;
}

/* ---- instruction counts ---------------------------------------------- */

static void cg_noop(const struct bench_cg_case *c, long pairs)
{
	struct alloy_allocator *old = swap_default(noop_allocator());

	framework_threads(c->threads ? c->threads : 1, c->size, pairs);
	swap_default(old);
}

/* alloy's default against c10's DefaultCPUAllocator minus its extras. */
static const struct bench_versus versus_direct = {
	.group = "core",
	.other = "direct posix_memalign+free",
	.other_short = "direct",
	.round = direct_round,
	.goal = 1.05,
	.goal_text = "<= 1.05",
	.figure =
		"alloy default vs direct posix_memalign(64), 64 B - 1 MiB (time)",
};

/* The no-op loop at 1 and 2 threads, then liballoy's part at 1 thread. */
enum { CG_NOOP1, CG_NOOP2, CG_LIBALLOY, CG_SIZES };
#define NCASES (CG_SIZES + 2 * BENCH_VERSUS_NSIZES)

static struct bench_cg_case cases[NCASES];

static void make_cases(void)
{
	for (int t = 0; t < 2; t++)
		cases[CG_NOOP1 + t] = (struct bench_cg_case){
			.label = "no-op allocator",
			.run = cg_noop,
			.size = 64,
			.threads = t + 1,
			.count = COUNT_ALLOY,
		};
	cases[CG_LIBALLOY] = cases[CG_NOOP1];
	cases[CG_LIBALLOY].count = COUNT_LIBALLOY;
	bench_versus_cases(&versus_direct, &cases[CG_SIZES]);
}

static int core_callgrind_child(void)
{
	if (!noop_allocator() || bench_use_default())
		return -1;
	make_cases();
	return bench_cg_cases(cases, NCASES);
}

/* ---- the figures ----------------------------------------------------- */

static int framework_figures(const struct bench_opts *opts, const double *ins)
{
	struct alloy_allocator *old = swap_default(noop_allocator());
	const double *fw = &ins[CG_NOOP1];
	char text[128], in[3][32];
	long iters = bench_iters(opts, 100000);

	if (!old)
		return -1;
	for (int t = 0; t < 2; t++) {
		double v[15];

		for (int r = 0; r < 15; r++)
			if ((v[r] = framework_threads(t + 1, 64, iters)) < 0)
				return -1;
		snprintf(text, sizeof(text),
			 "no-op allocator, %d thread%s: ns/pair", t + 1,
			 t ? "s" : "");
		bench_result("core", text, bench_median(v, 15), "ns", GOAL_NONE,
			     0);
		snprintf(text, sizeof(text),
			 "framework instructions per pair, %d thread%s", t + 1,
			 t ? "s" : "");
		if (!isnan(fw[t]))
			bench_result("core", text, fw[t], "instr", GOAL_AT_MOST,
				     60);
	}
	swap_default(old);
	if (!isnan(ins[CG_LIBALLOY]))
		bench_result(
			"core",
			"  of which in liballoy (the rest: header fast paths)",
			ins[CG_LIBALLOY], "instr", GOAL_NONE, 0);
	snprintf(text, sizeof(text),
		 "%s (1 thread) / %s (2 threads); liballoy alone %s",
		 bench_instr_text(fw[0], in[0], sizeof(in[0])),
		 bench_instr_text(fw[1], in[1], sizeof(in[1])),
		 bench_instr_text(ins[CG_LIBALLOY], in[2], sizeof(in[2])));
	bench_summary("framework instructions per pair (no-op allocator)",
		      "<= 60", "-", text,
		      isnan(fw[0]) || isnan(fw[1])
			      ? VERDICT_NOT_MEASURED
			      : bench_verdict(fw[0] <= 60 && fw[1] <= 60));
	return 0;
}

/* ---- what a live block holds of glibc's heap -------------------------- */

#define LIVE 4096

/* glibc's bytes in use (mallinfo2: heap chunks and mapped chunks). */
static double glibc_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return (double)(mi.uordblks + mi.hblkhd);
}

/*
 * Heap bytes per live block of size, through alloy's default and through
 * posix_memalign(64): LIVE blocks made, glibc's count of what is in use
 * read, all freed.  A count, not a time: the RSS side of the trade.
 */
static int heap_per_block(size_t size, double *alloy, double *direct)
{
	static struct alloy_data_ptr dp[LIVE];
	static void *p[LIVE];
	double before = glibc_in_use();
	int rc = 0;

	for (int i = 0; i < LIVE && !rc; i++)
		rc = alloy_alloc_default(ALLOY_DEVICE_CPU, size, 0, &dp[i]);
	*alloy = (glibc_in_use() - before) / LIVE;
	for (int i = 0; i < LIVE; i++)
		alloy_data_ptr_free(&dp[i]);
	before = glibc_in_use();
	for (int i = 0; i < LIVE && !rc; i++)
		rc = posix_memalign(&p[i], ALIGN, size);
	*direct = (glibc_in_use() - before) / LIVE;
	for (int i = 0; i < LIVE; i++) {
		free(p[i]);
		p[i] = NULL;
	}
	return rc ? -1 : 0;
}

static int heap_figures(void)
{
	static const size_t sizes[] = { 64, 256, 1024, 4096, 16384, 65536 };
	char metric[96];

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		double alloy, direct;

		if (heap_per_block(sizes[s], &alloy, &direct))
			return -1;
		snprintf(metric, sizeof(metric),
			 "%zu B glibc heap per live block: alloy", sizes[s]);
		bench_result("core", metric, alloy, "B", GOAL_NONE, 0);
		snprintf(metric, sizeof(metric),
			 "%zu B glibc heap per live block: posix_memalign",
			 sizes[s]);
		bench_result("core", metric, direct, "B", GOAL_NONE, 0);
	}
	return 0;
}

static int run_core(const struct bench_opts *opts)
{
	double ins[NCASES];

	if (!noop_allocator() || bench_use_default())
		return -1;
	make_cases();
	bench_instructions(opts, "core", cases, NCASES, ins);
	if (framework_figures(opts, ins) ||
	    bench_versus_run(opts, &versus_direct, &ins[CG_SIZES]))
		return -1;
	return heap_figures();
}

const struct bench bench_core = {
	.name = "core",
	.help = "the framework with a no-op allocator; alloy's default vs posix_memalign(64) (64 B..1 MiB)",
	.run = run_core,
	.callgrind_child = core_callgrind_child,
};
