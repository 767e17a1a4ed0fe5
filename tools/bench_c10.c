// SPDX-License-Identifier: MIT
/*
 * tools/bench_c10.c - `alloy bench c10`: alloy's default CPU pair
 * (alloy_alloc_default + alloy_data_ptr_free, "default" allocator, 64-byte
 * alignment) against c10's (c10::GetCPUAllocator()->allocate() and the
 * DataPtr's release, PyTorch 1.13's DefaultCPUAllocator: posix_memalign
 * of 64, the fill flags, the memory-usage reporter), 64 B to 1 MiB, side
 * by side in one run: alternating chunks, median of each.
 *
 * c10's side lives in tools/bench_c10_pairs.cc, built as a module where
 * configure found libtorch; this file opens it, or says why it cannot.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>

#include <alloy/alloy.h>

#include "bench.h"

#define CHUNKS 101

static const size_t sizes[] = { 64,    256,   1024,   4096,
				16384, 65536, 262144, 1048576 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static int (*c10_pairs)(size_t size, long pairs);

/* Open the c10 side; NULL, or why it is not there. */
static const char *load_c10(void)
{
#ifdef ALLOY_BENCH_C10_SO
	static char why[512];
	void *so;

	if (c10_pairs)
		return NULL;
	so = dlopen(ALLOY_BENCH_C10_SO, RTLD_NOW | RTLD_LOCAL);
	if (!so) {
		snprintf(why, sizeof(why), "%s", dlerror());
		return why;
	}
	*(void **)&c10_pairs = dlsym(so, "alloy_bench_c10_pairs");
	return c10_pairs ? NULL : "alloy_bench_c10_pairs not found";
#else
	return "configured without libtorch (--with-libtorch)";
#endif
}

static double c10_round(size_t size, long iters)
{
	double t0 = bench_now_ns();

	if (c10_pairs(size, iters))
		return -1;
	return (bench_now_ns() - t0) / (double)iters;
}

/* ---- instruction counts: alloy, c10 per size ------------------------- */

#define NCASES (2 * NSIZES)

static void cg_alloy(const struct bench_cg_case *c, long pairs)
{
	bench_default_round(c->size, pairs);
}

static void cg_c10(const struct bench_cg_case *c, long pairs)
{
	if (c10_pairs)
		c10_pairs(c->size, pairs);
}

static struct bench_cg_case cases[NCASES];

static void make_cases(void)
{
	for (size_t s = 0; s < NSIZES; s++) {
		long pairs = sizes[s] >= 262144 ? 200 : 0;

		cases[2 * s] = (struct bench_cg_case){
			.label = "alloy default",
			.run = cg_alloy,
			.size = sizes[s],
			.pairs = pairs,
		};
		cases[2 * s + 1] = (struct bench_cg_case){
			.label = "c10",
			.run = cg_c10,
			.size = sizes[s],
			.pairs = pairs,
		};
	}
}

static int c10_callgrind_child(void)
{
	if (load_c10() || bench_use_default())
		return -1;
	make_cases();
	return bench_cg_cases(cases, NCASES);
}

static int run_c10(const struct bench_opts *opts)
{
	const char *why = load_c10();
	double ins[NCASES], ratio[NSIZES], ia[NSIZES], ic[NSIZES], lo, hi, alo,
		ahi, clo, chi;
	char metric[96], measured[64], instr[128];

	if (why) {
		bench_note("c10: skipped: %s", why);
		return 0;
	}
	if (bench_use_default())
		return -1;
	make_cases();
	bench_instructions(opts, "c10", cases, NCASES, ins);
	for (size_t s = 0; s < NSIZES; s++) {
		long iters = bench_iters(opts, sizes[s] >= 262144 ? 400 : 4000);
		double a[CHUNKS], c[CHUNKS], ma, mc;

		for (int r = 0; r < CHUNKS; r++) {
			if (r & 1) {
				a[r] = bench_default_round(sizes[s], iters);
				c[r] = c10_round(sizes[s], iters);
			} else {
				c[r] = c10_round(sizes[s], iters);
				a[r] = bench_default_round(sizes[s], iters);
			}
			if (a[r] < 0 || c[r] < 0)
				return -1;
		}
		ma = bench_median(a, CHUNKS);
		mc = bench_median(c, CHUNKS);
		ratio[s] = ma / mc;
		ia[s] = ins[2 * s];
		ic[s] = ins[2 * s + 1];
		snprintf(metric, sizeof(metric), "%zu B c10 CPU allocator pair",
			 sizes[s]);
		bench_result("c10", metric, mc, "ns/pair", GOAL_NONE, 0);
		snprintf(metric, sizeof(metric), "%zu B alloy default pair",
			 sizes[s]);
		bench_result("c10", metric, ma, "ns/pair", GOAL_NONE, 0);
		snprintf(metric, sizeof(metric), "%zu B alloy/c10 time",
			 sizes[s]);
		bench_result("c10", metric, ratio[s], "x", GOAL_AT_MOST, 0.60);
		if (isnan(ia[s]) || isnan(ic[s]))
			continue;
		snprintf(metric, sizeof(metric), "%zu B instructions: c10",
			 sizes[s]);
		bench_result("c10", metric, ic[s], "instr", GOAL_NONE, 0);
		snprintf(metric, sizeof(metric), "%zu B instructions: alloy",
			 sizes[s]);
		bench_result("c10", metric, ia[s], "instr", GOAL_NONE, 0);
	}
	bench_range(ratio, NSIZES, &lo, &hi);
	snprintf(measured, sizeof(measured), "%.2f - %.2f", lo, hi);
	bench_range(ia, NSIZES, &alo, &ahi);
	bench_range(ic, NSIZES, &clo, &chi);
	if (isnan(alo) || isnan(clo))
		snprintf(instr, sizeof(instr), "n/a");
	else
		snprintf(instr, sizeof(instr),
			 "alloy %.0f - %.0f, c10 %.0f - %.0f", alo, ahi, clo,
			 chi);
	bench_summary("alloy default pair / c10 CPU pair, 64 B - 1 MiB (time)",
		      "<= 0.60", measured, instr, bench_verdict(hi <= 0.60));
	return 0;
}

const struct bench bench_c10 = {
	.name = "c10",
	.help = "alloy's default CPU pair vs c10::GetCPUAllocator() (needs libtorch)",
	.run = run_c10,
	.callgrind_child = c10_callgrind_child,
};
