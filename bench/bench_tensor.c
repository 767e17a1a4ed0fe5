// SPDX-License-Identifier: MIT
/*
 * bench/bench_tensor.c - the tensor layer's memory behaviour and cost:
 *
 *  - allocations made by a resize loop once warmed up, with keep_on_shrink
 *    on (the goal: none) and, for contrast, off;
 *  - extending a tensor one element at a time to 1e6: how many buffers it
 *    allocates, and its time against a C vector that doubles with realloc;
 *  - copy_from of 1 MiB and more against memcpy of the same bytes.
 *
 * Allocations are counted by the registry (num_allocs of the CPU default),
 * so the figure is what the allocator saw, not what the tensor believes.
 * Timed pairs run in alternating order and each keeps its best round.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <alloy/alloy.h>

#include "bench.h"

#define ROUNDS 7
/*
 * Copies are timed in many short chunks, each side keeping its fastest:
 * on a shared machine noise only ever adds time, and a long round is
 * rarely free of it.
 */
#define COPY_CHUNKS 61

static void *volatile sink;

static uint64_t cpu_allocs(void)
{
	struct alloy_allocator_stats st = { .size = sizeof(st),
					    .version = ALLOY_STATS_VERSION };

	if (alloy_allocator_stats(alloy_get_default(ALLOY_DEVICE_CPU), &st))
		return 0;
	return st.num_allocs;
}

/* ---- resize loop ---------------------------------------------------- */

/*
 * An operator's output resized to a different batch each call, written
 * each time.  Returns the allocations after the first (warm-up) pass, or
 * -1 on error.
 */
static long resize_loop(long iters)
{
	static const int64_t batch[] = { 64, 17, 3, 64, 40, 1, 33, 64, 8, 50 };
	struct alloy_tensor *t = alloy_tensor_new(ALLOY_CPU);
	const int nb = sizeof(batch) / sizeof(batch[0]);
	uint64_t before = 0;
	long rc = -1;

	if (!t)
		return -1;
	for (long i = 0; i < iters + nb; i++) {
		int64_t dims[] = { batch[i % nb], 256 };
		float *p;

		if (i == nb)
			before =
				cpu_allocs(); /* one pass of every shape done */
		if (alloy_tensor_resize(t, dims, 2))
			goto out;
		p = alloy_tensor_raw_mutable_data(t,
						  alloy_type(ALLOY_TYPE_FLOAT));
		if (!p)
			goto out;
		p[0] = (float)i;
		sink = p;
	}
	rc = (long)(cpu_allocs() - before);
out:
	alloy_tensor_unref(t);
	return rc;
}

static int run_resize(const struct bench_opts *opts)
{
	bool keep = alloy_tensor_keep_on_shrink();
	uint64_t max_keep = alloy_tensor_max_keep_on_shrink_memory();
	long iters = bench_iters(opts, 100000), on, off;

	alloy_tensor_set_keep_on_shrink(true);
	alloy_tensor_set_max_keep_on_shrink_memory(UINT64_MAX);
	on = resize_loop(iters);
	alloy_tensor_set_keep_on_shrink(false);
	off = resize_loop(iters);
	alloy_tensor_set_keep_on_shrink(keep);
	alloy_tensor_set_max_keep_on_shrink_memory(max_keep);
	if (on < 0 || off < 0)
		return -1;
	bench_result(
		"tensor",
		"resize loop: allocations after warm-up, keep_on_shrink on",
		(double)on, "allocs", GOAL_AT_MOST, 0);
	bench_result("tensor", "resize loop: allocations, keep_on_shrink off",
		     (double)off, "allocs", GOAL_NONE, 0);
	return 0;
}

/* ---- extend one at a time ------------------------------------------- */

#define EXTEND_TO  1000000
#define GROWTH_PCT 50.0f

/* Time per element in ns; *allocs gets the buffers made.  < 0: error. */
static double extend_round(long n, long *allocs)
{
	int64_t one = 1;
	struct alloy_tensor *t = alloy_tensor_new_dims(ALLOY_CPU, &one, 1);
	uint64_t before = cpu_allocs();
	double t0 = bench_now_ns(), dt = -1;
	float *p;

	if (!t || !(p = alloy_tensor_raw_mutable_data(
			    t, alloy_type(ALLOY_TYPE_FLOAT))))
		goto out;
	p[0] = 0;
	for (long i = 1; i < n; i++) {
		if (alloy_tensor_extend(t, 1, GROWTH_PCT))
			goto out;
		p = alloy_tensor_raw_mutable_data(t, NULL);
		p[i] = (float)i;
	}
	sink = p;
	dt = (bench_now_ns() - t0) / (double)n;
	*allocs = (long)(cpu_allocs() - before);
out:
	alloy_tensor_unref(t);
	return dt;
}

/* The same growth written by hand: a vector doubling with realloc. */
static double vector_round(long n, long *reallocs)
{
	size_t cap = 1, len = 1;
	double t0 = bench_now_ns(), dt;
	float *v = malloc(sizeof(*v));

	*reallocs = 1;
	if (!v)
		return -1;
	v[0] = 0;
	for (long i = 1; i < n; i++) {
		if (len == cap) {
			float *nv = realloc(v, 2 * cap * sizeof(*v));

			if (!nv) {
				free(v);
				return -1;
			}
			v = nv;
			cap *= 2;
			++*reallocs;
		}
		v[len++] = (float)i;
	}
	sink = v;
	dt = (bench_now_ns() - t0) / (double)n;
	free(v);
	return dt;
}

static int run_extend(const struct bench_opts *opts)
{
	long n = bench_iters(opts, EXTEND_TO), allocs = 0, reallocs = 0;
	double best_t = 1e300, best_v = 1e300, t, v;
	char metric[96];

	for (int r = 0; r < ROUNDS; r++) {
		if (r & 1) {
			v = vector_round(n, &reallocs);
			t = extend_round(n, &allocs);
		} else {
			t = extend_round(n, &allocs);
			v = vector_round(n, &reallocs);
		}
		if (t < 0 || v < 0)
			return -1;
		best_t = t < best_t ? t : best_t;
		best_v = v < best_v ? v : best_v;
	}
	snprintf(metric, sizeof(metric),
		 "extend by 1 to %ld (growth %.0f%%): buffers allocated", n,
		 (double)GROWTH_PCT);
	/* 1.5^k >= 1e6 needs k = 35: anything near that is geometric. */
	bench_result("tensor", metric, (double)allocs, "allocs", GOAL_AT_MOST,
		     40);
	bench_result("tensor", "realloc-doubling vector: reallocs",
		     (double)reallocs, "reallocs", GOAL_NONE, 0);
	bench_result("tensor", "extend by 1: time per element", best_t, "ns",
		     GOAL_NONE, 0);
	bench_result("tensor", "realloc-doubling vector: time per element",
		     best_v, "ns", GOAL_NONE, 0);
	bench_result("tensor", "extend time / vector time", best_t / best_v,
		     "x", GOAL_NONE, 0);
	return 0;
}

/* ---- copy_from against memcpy --------------------------------------- */

static double copy_round(struct alloy_tensor *dst,
			 const struct alloy_tensor *src, long iters)
{
	double t0 = bench_now_ns();

	for (long i = 0; i < iters; i++)
		if (alloy_tensor_copy_from(dst, src))
			return -1;
	return (bench_now_ns() - t0) / (double)iters;
}

static double memcpy_round(void *dst, const void *src, size_t n, long iters)
{
	double t0 = bench_now_ns();

	for (long i = 0; i < iters; i++) {
		memcpy(dst, src, n);
		sink = dst;
	}
	return (bench_now_ns() - t0) / (double)iters;
}

/*
 * memcpy runs between the very buffers copy_from uses, so that placement
 * (alignment, 4 KiB aliasing of source and destination) is the same for
 * both and the ratio is the framework's own cost.
 */
static int copy_size(const struct bench_opts *opts, size_t bytes)
{
	int64_t n = (int64_t)(bytes / sizeof(float));
	struct alloy_tensor *src = alloy_tensor_new_dims(ALLOY_CPU, &n, 1);
	struct alloy_tensor *dst = alloy_tensor_new(ALLOY_CPU);
	long iters = bench_iters(opts, (long)((32ull << 20) / bytes));
	double best_c = 1e300, best_m = 1e300, c, m;
	char metric[96];
	void *p, *q;
	int rc = -1;

	if (!src || !dst)
		goto out;
	p = alloy_tensor_raw_mutable_data(src, alloy_type(ALLOY_TYPE_FLOAT));
	if (!p)
		goto out;
	memset(p, 1, bytes);
	/* The first copy allocates dst; the timed ones reuse it. */
	if (alloy_tensor_copy_from(dst, src))
		goto out;
	q = alloy_tensor_raw_mutable_data(dst, NULL);
	if (!q)
		goto out;
	for (int r = 0; r < COPY_CHUNKS; r++) {
		if (r & 1) {
			m = memcpy_round(q, p, bytes, iters);
			c = copy_round(dst, src, iters);
		} else {
			c = copy_round(dst, src, iters);
			m = memcpy_round(q, p, bytes, iters);
		}
		if (c < 0)
			goto out;
		best_c = c < best_c ? c : best_c;
		best_m = m < best_m ? m : best_m;
	}
	snprintf(metric, sizeof(metric), "copy_from %zu MiB: speed vs memcpy",
		 bytes >> 20);
	bench_result("tensor", metric, best_m / best_c, "x", GOAL_AT_LEAST,
		     0.9);
	snprintf(metric, sizeof(metric), "copy_from %zu MiB: bandwidth",
		 bytes >> 20);
	bench_result("tensor", metric, (double)bytes / best_c, "GB/s",
		     GOAL_NONE, 0);
	rc = 0;
out:
	alloy_tensor_unref(src);
	alloy_tensor_unref(dst);
	return rc;
}

static int run_tensor(const struct bench_opts *opts)
{
	static const size_t sizes[] = { 1u << 20, 4u << 20, 16u << 20 };

	if (run_resize(opts) || run_extend(opts))
		return -1;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		if (copy_size(opts, sizes[i]))
			return -1;
	return 0;
}

const struct bench bench_tensor = {
	.name = "tensor",
	.help = "tensor layer: resize allocations, extend growth, copy_from vs memcpy",
	.run = run_tensor,
};
