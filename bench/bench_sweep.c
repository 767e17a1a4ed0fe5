// SPDX-License-Identifier: MIT
/*
 * bench/bench_sweep.c - `alloy bench sweep`: NumPy-like work, arrays of
 * 0.8 to 1.6 MB created, used and freed in a loop, with the default
 * allocator (through alloy_alloc_default) against glibc's malloc, calloc
 * and free called directly - and, for contrast, posix_memalign(64) with a
 * memset for zeros, which is what c10's CPU allocator does.
 *
 * Two patterns, each step drawing its sizes at random (the same sequence
 * for every side):
 * - one at a time: an empty array, filled, freed;
 * - expression: c = a + b with a zeroed (np.zeros: calloc, or
 *   ALLOY_ALLOC_ZERO), b filled, c written from both; a and b freed and c
 *   kept until the next step's c replaces it (three or four arrays live).
 *
 * Blocks this large are where glibc's thresholds decide everything: it
 * maps them, or carves them from the heap and gives the heap's top back
 * with brk when it grows past the trim threshold - and which one happens
 * depends on what was freed before, so one pattern can cost a brk and
 * fresh page faults at every step.  The figures are time per step (median
 * of alternating chunks), page faults per step (getrusage), and user-space
 * instructions per step of the allocation calls (callgrind, running the
 * steps with each array's pages touched rather than computed on; the
 * kernel's work on faults and brk is not in them).  This benchmark runs first
 * in `alloy bench`, on a heap no other benchmark has moved glibc's thresholds
 * on.
 */
#include <malloc.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <alloy/alloy.h>

#include "bench.h"

#define CHUNKS 21
#define STEPS  16
#define ALIGN  64

enum side { GLIBC, ALLOY, MEMALIGN, NSIDES };
enum pattern { ONE, EXPRESSION, NPATTERNS };

static const char *const side_names[NSIDES] = { "glibc malloc", "alloy default",
						"posix_memalign(64)" };
static const char *const pattern_names[NPATTERNS] = { "one at a time",
						      "expression" };

/* An array of one side: the pointer, and alloy's DataPtr for ALLOY. */
struct array {
	struct alloy_data_ptr dp;
	void *p;
};

static int array_new(enum side side, size_t n, bool zero, struct array *a)
{
	a->p = NULL;
	switch (side) {
	case GLIBC:
		a->p = zero ? calloc(1, n) : malloc(n);
		break;
	case ALLOY:
		if (alloy_alloc_default(ALLOY_DEVICE_CPU, n,
					zero ? ALLOY_ALLOC_ZERO : 0, &a->dp))
			return -1;
		a->p = a->dp.ptr;
		break;
	default:
		if (posix_memalign(&a->p, ALIGN, n))
			return -1;
		if (zero)
			memset(a->p, 0, n);
	}
	return a->p ? 0 : -1;
}

static void array_free(enum side side, struct array *a)
{
	if (side == ALLOY)
		alloy_data_ptr_free(&a->dp);
	else
		free(a->p);
	a->p = NULL;
}

static uint64_t next_size(uint64_t *rng)
{
	*rng ^= *rng << 13;
	*rng ^= *rng >> 7;
	*rng ^= *rng << 17;
	return 800000 + *rng % 800001;
}

/* c = a + b, word by word: every page of all three is touched. */
static void add(uint64_t *c, const uint64_t *a, const uint64_t *b, size_t n)
{
	for (size_t i = 0; i < n / 8; i++)
		c[i] = a[i] + b[i];
}

/* Write the first byte of every page: what faults them in, no more. */
static void touch(char *p, size_t n)
{
	for (size_t i = 0; i < n; i += 4096)
		((volatile char *)p)[i] = 1;
}

/*
 * steps steps of a pattern on one side; the sizes come from seed.  With
 * use false the arrays are only touched, page by page, not computed on:
 * the instructions counted are then the allocator's, not the loops'.
 */
static int run_steps(enum pattern pat, enum side side, uint64_t seed,
		     long steps, bool use)
{
	struct array a, b, c, kept = { .p = NULL };
	uint64_t rng = seed;

	for (long i = 0; i < steps; i++) {
		size_t n = next_size(&rng);

		if (pat == ONE) {
			if (array_new(side, n, false, &a))
				return -1;
			if (use)
				memset(a.p, 1, n);
			else
				touch(a.p, n);
			array_free(side, &a);
			continue;
		}
		if (array_new(side, n, true, &a) ||
		    array_new(side, n, false, &b) ||
		    array_new(side, n, false, &c))
			return -1;
		if (use) {
			memset(b.p, 1, n);
			add(c.p, a.p, b.p, n);
		} else {
			touch(b.p, n);
			touch(c.p, n);
		}
		array_free(side, &a);
		array_free(side, &b);
		if (kept.p)
			array_free(side, &kept);
		kept = c;
	}
	if (kept.p)
		array_free(side, &kept);
	return 0;
}

static long minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* ---- instruction counts ---------------------------------------------- */

#define NCASES (NPATTERNS * NSIDES)

static void cg_steps(const struct bench_cg_case *c, long steps)
{
	run_steps((enum pattern)c->size, *(const enum side *)c->arg, 1, steps,
		  false);
}

static const enum side sides[NSIDES] = { GLIBC, ALLOY, MEMALIGN };
static struct bench_cg_case cases[NCASES];

static void make_cases(void)
{
	for (int p = 0; p < NPATTERNS; p++)
		for (int s = 0; s < NSIDES; s++)
			cases[p * NSIDES + s] = (struct bench_cg_case){
				.label = side_names[s],
				.run = cg_steps,
				.size = (size_t)p, /* the pattern */
				.arg = &sides[s],
				.pairs = 8,
			};
}

static int sweep_callgrind_child(void)
{
	if (bench_use_default())
		return -1;
	make_cases();
	return bench_cg_cases(cases, NCASES);
}

/* ---- the figures ----------------------------------------------------- */

/* What glibc and the default allocator keep once every array is freed. */
static void held_after(enum pattern pat)
{
	struct alloy_allocator_stats st = { .size = sizeof(st),
					    .version = ALLOY_STATS_VERSION };
	struct mallinfo2 mi = mallinfo2();
	char metric[128];

	snprintf(metric, sizeof(metric), "%s: glibc holds, all freed",
		 pattern_names[pat]);
	bench_result("sweep", metric, (double)mi.fordblks / (1 << 20), "MiB",
		     GOAL_NONE, 0);
	if (alloy_allocator_stats(alloy_find_allocator("default"), &st))
		return;
	snprintf(metric, sizeof(metric), "%s: default holds, all freed",
		 pattern_names[pat]);
	bench_result("sweep", metric,
		     (double)(st.reserved - st.allocated) / (1 << 20), "MiB",
		     GOAL_NONE, 0);
}

/* One pattern, all sides; ratio[] is each side's time over glibc's. */
static int sweep_pattern(const struct bench_opts *opts, enum pattern pat,
			 const double *ins, double *ratio)
{
	double t[NSIDES][CHUNKS], med[NSIDES];
	long faults[NSIDES] = { 0 }, steps = bench_iters(opts, STEPS * 20) / 20;
	char metric[128];

	steps = steps < 2 ? 2 : steps;
	for (int c = 0; c < CHUNKS; c++) {
		for (int k = 0; k < NSIDES; k++) {
			/* Rotate who goes first: the heap is shared. */
			enum side s = (enum side)((c + k) % NSIDES);
			long f0 = minor_faults();
			double t0 = bench_now_ns();

			if (run_steps(pat, s,
				      0x9e3779b97f4a7c15ull + (uint64_t)c,
				      steps, true))
				return -1;
			t[s][c] = (bench_now_ns() - t0) / (double)steps;
			faults[s] += minor_faults() - f0;
		}
	}
	for (int s = 0; s < NSIDES; s++) {
		const double *in = &ins[pat * NSIDES + s];

		med[s] = bench_median(t[s], CHUNKS);
		snprintf(metric, sizeof(metric), "%s, %s: us/step",
			 pattern_names[pat], side_names[s]);
		bench_result("sweep", metric, med[s] / 1e3, "us", GOAL_NONE, 0);
		snprintf(metric, sizeof(metric), "%s, %s: page faults/step",
			 pattern_names[pat], side_names[s]);
		bench_result("sweep", metric,
			     (double)faults[s] / (double)(CHUNKS * steps),
			     "faults", GOAL_NONE, 0);
		if (isnan(*in))
			continue;
		snprintf(metric, sizeof(metric),
			 "%s, %s: instructions/step (allocation)",
			 pattern_names[pat], side_names[s]);
		bench_result("sweep", metric, *in, "instr", GOAL_NONE, 0);
	}
	held_after(pat);
	for (int s = ALLOY; s < NSIDES; s++) {
		ratio[s] = med[s] / med[GLIBC];
		snprintf(metric, sizeof(metric), "%s: %s / glibc malloc time",
			 pattern_names[pat], side_names[s]);
		bench_result("sweep", metric, ratio[s], "x",
			     s == ALLOY ? GOAL_AT_MOST : GOAL_NONE, 1.2);
	}
	return 0;
}

static int run_sweep(const struct bench_opts *opts)
{
	double ins[NCASES], ratio[NPATTERNS][NSIDES];
	char measured[96], instr[160], a[2][32], g[2][32];

	if (bench_use_default())
		return -1;
	make_cases();
	bench_instructions(opts, "sweep", cases, NCASES, ins);
	for (int p = 0; p < NPATTERNS; p++)
		if (sweep_pattern(opts, (enum pattern)p, ins, ratio[p]))
			return -1;
	snprintf(
		measured, sizeof(measured),
		"%.2f (one at a time), %.2f (expression); posix_memalign(64): %.2f, %.2f",
		ratio[ONE][ALLOY], ratio[EXPRESSION][ALLOY],
		ratio[ONE][MEMALIGN], ratio[EXPRESSION][MEMALIGN]);
	snprintf(
		instr, sizeof(instr), "per step: alloy %s / %s, glibc %s / %s",
		bench_instr_text(ins[ONE * NSIDES + ALLOY], a[0], sizeof(a[0])),
		bench_instr_text(ins[EXPRESSION * NSIDES + ALLOY], a[1],
				 sizeof(a[1])),
		bench_instr_text(ins[ONE * NSIDES + GLIBC], g[0], sizeof(g[0])),
		bench_instr_text(ins[EXPRESSION * NSIDES + GLIBC], g[1],
				 sizeof(g[1])));
	bench_summary(
		"default allocator, 0.8-1.6 MB create/free sweep, vs glibc malloc (time)",
		"<= 1.2", measured, instr,
		bench_verdict(ratio[ONE][ALLOY] <= 1.2 &&
			      ratio[EXPRESSION][ALLOY] <= 1.2));
	return 0;
}

const struct bench bench_sweep = {
	.name = "sweep",
	.help = "NumPy-like 0.8-1.6 MB arrays: default vs glibc malloc vs posix_memalign(64)",
	.run = run_sweep,
	.callgrind_child = sweep_callgrind_child,
};
