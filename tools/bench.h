/* SPDX-License-Identifier: MIT */
/*
 * tools/bench.h - the benchmarks behind `alloy bench`.
 *
 * Each benchmark measures two or more ways of doing the same work side by
 * side in one run and reports ratios, so that the figures compare like
 * with like on whatever machine runs them.  Results go through
 * bench_result() so that text and JSON output come from one place.
 */
#ifndef ALLOY_TOOLS_BENCH_H
#define ALLOY_TOOLS_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bench_opts {
	bool json;
	bool quick; /* fewer iterations: for tests and smoke runs */
};

enum bench_goal {
	GOAL_NONE = 0,
	GOAL_AT_MOST, /* value <= goal is met */
	GOAL_AT_LEAST,
};

struct bench {
	const char *name;
	const char *help;
	int (*run)(const struct bench_opts *opts);
};

/*
 * Record one figure: group (the benchmark), what was measured, its value
 * and unit, and optionally a goal it is judged against.
 */
void bench_result(const char *group, const char *metric, double value,
		  const char *unit, enum bench_goal goal, double target);

/* Monotonic time in nanoseconds. */
double bench_now_ns(void);

/* Iterations to use: n normally, n / 20 (at least 1) with --quick. */
long bench_iters(const struct bench_opts *opts, long n);

/* The median of v[0..n) (n > 0); sorts v in place. */
double bench_median(double *v, size_t n);

extern const struct bench bench_core;
extern const struct bench bench_reporter;
extern const struct bench bench_backends;
extern const struct bench bench_tensor;
extern const struct bench bench_cuda;
extern const struct bench bench_front;

#endif /* ALLOY_TOOLS_BENCH_H */
