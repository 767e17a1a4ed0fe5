/* SPDX-License-Identifier: MIT */
/*
 * bench/bench.h - the benchmarks behind `alloy bench`.
 *
 * Each benchmark measures two or more ways of doing the same work side by
 * side in one run and reports ratios, so that the figures compare like
 * with like on whatever machine runs them.  Results go through
 * bench_result() so that text and JSON output come from one place.
 *
 * Next to the times, the alloc+free benchmarks give instructions per pair
 * (bench/callgrind.c): the same loops run again in a child of this
 * program under valgrind's callgrind, which counts what a change costs in
 * a figure that machine noise does not move.  The goals of a benchmark
 * also go into one summary table, printed at the end of the run.
 */
#ifndef ALLOY_BENCH_BENCH_H
#define ALLOY_BENCH_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

struct bench_opts {
	bool json;
	bool quick;	   /* fewer iterations: for tests and smoke runs */
	bool instructions; /* count instructions under callgrind */
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
	/*
	 * In the callgrind child (`alloy bench --callgrind-child NAME`):
	 * set up as run() does and run the cases through bench_cg_cases().
	 * NULL: the benchmark counts no instructions.
	 */
	int (*callgrind_child)(void);
};

/*
 * Where bench_result() and bench_note() write: stdout, or (json) stderr
 * for the notes and nothing for the figures until the end.
 */
void bench_output(bool json);

/*
 * After the run: every figure as one JSON object, or the table of goals;
 * the figures are then forgotten.
 */
void bench_print_results(void);

/*
 * Record one figure: group (the benchmark), what was measured, its value
 * and unit, and optionally a goal it is judged against.
 */
void bench_result(const char *group, const char *metric, double value,
		  const char *unit, enum bench_goal goal, double target);

enum bench_verdict {
	VERDICT_MISSED,
	VERDICT_MET,
	VERDICT_NOT_MEASURED, /* e.g. no instruction counts this run */
	VERDICT_NO_GOAL,      /* a row that explains another */
};

/*
 * A row of the summary table: the figure, its goal, what this run
 * measured (time) and the instruction counts behind it, and whether the
 * goal holds.  Strings are copied.
 */
void bench_summary(const char *figure, const char *goal, const char *measured,
		   const char *instructions, enum bench_verdict verdict);

/* VERDICT_MET if cond, else VERDICT_MISSED. */
static inline enum bench_verdict bench_verdict(bool cond)
{
	return cond ? VERDICT_MET : VERDICT_MISSED;
}

/*
 * A line that is not a figure ("skipped: why"): on stdout, indented, or
 * on stderr when the output is JSON, which it must not break.
 */
void bench_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * alloy bench profiler's Python cases (bench_pyframes.c): stacks with
 * Python's frames against stacks without; 0 (a case that cannot run is
 * skipped, said so).
 */
int bench_profiler_python(const struct bench_opts *opts);

/* Monotonic time in nanoseconds. */
double bench_now_ns(void);

/* Iterations to use: n normally, n / 20 (at least 1) with --quick. */
long bench_iters(const struct bench_opts *opts, long n);

/* The median of v[0..n) (n > 0); sorts v in place. */
double bench_median(double *v, size_t n);

/* The smallest and largest of v[0..n) (n > 0), NANs left out. */
void bench_range(const double *v, size_t n, double *lo, double *hi);

/*
 * Write a C translation unit of `functions` functions to f, the same text
 * every time (bench/bench_csource.c): the compiler workload's input.
 */
void bench_write_c_source(FILE *f, unsigned functions);

/* Make "default" the CPU default allocator: 0 or -1. */
int bench_use_default(void);

/*
 * One way of doing the work: iters alloc+free pairs of size bytes, each
 * block touched; ns per pair, or -1 if an allocation failed.
 */
typedef double (*bench_round_fn)(const void *arg, size_t size, long iters);

struct bench_way {
	bench_round_fn round;
	const void *arg;
};

/*
 * Time n ways side by side: chunks short rounds of each, the order
 * rotating from chunk to chunk so that the heap's drift and bursts of
 * noise hit all alike, and each way's median chunk in median[i] (ns per
 * pair).  0, or -1 if a round failed.
 */
int bench_side_by_side(const struct bench_way *ways, int n, size_t size,
		       long iters, int chunks, double *median);

/* Pairs through alloy_alloc_default + alloy_data_ptr_free (arg unused). */
double bench_default_round(const void *arg, size_t size, long iters);

/* ---- alloy's default pair against another (bench/bench_versus.c) ------ */

#define BENCH_VERSUS_NSIZES 8
/* 64 B to 1 MiB. */
extern const size_t bench_versus_sizes[BENCH_VERSUS_NSIZES];

struct bench_versus {
	const char *group;	 /* the benchmark */
	const char *other;	 /* the other's pair, in metric names */
	const char *other_short; /* in ratio names: "alloy/<this>" */
	bench_round_fn round;	 /* the other's pairs */
	double goal;		 /* time alloy/other at most */
	const char *goal_text;	 /* the goal, for the summary */
	const char *figure;	 /* the summary row */
};

struct bench_cg_case;

/* Counting cases per size: [2s] alloy's default, [2s + 1] the other. */
void bench_versus_cases(const struct bench_versus *v,
			struct bench_cg_case *cases);

/* Time and print every size; ins holds the cases' counts (or NAN). */
int bench_versus_run(const struct bench_opts *opts,
		     const struct bench_versus *v, const double *ins);

/* ---- instruction counts (bench/callgrind.c) --------------------------- */

/* Which instructions of a loop count. */
enum bench_count {
	COUNT_ALL,	/* everything the loop executes */
	COUNT_ALLOY,	/* liballoy's and its public headers' inline code */
	COUNT_LIBALLOY, /* liballoy's alone */
};

/*
 * One loop to count: run() makes pairs alloc+free pairs (or steps) in
 * each of threads threads (0 means 1), the same loop the timed side runs.
 */
struct bench_cg_case {
	const char *label;
	void (*run)(const struct bench_cg_case *c, long pairs);
	size_t size;
	const void *arg;
	int threads;
	long pairs; /* per measurement; 0: BENCH_CG_PAIRS */
	enum bench_count count;
};

#define BENCH_CG_PAIRS 2000

/*
 * Parent side: instructions per pair of each of the n cases of benchmark
 * bench, out[i] NAN where none could be had.  Runs this program once
 * under valgrind; returns 0, or -1 after printing why not (no valgrind,
 * --no-instructions, the child failed), with every out[i] NAN.
 */
int bench_instructions(const struct bench_opts *opts, const char *bench,
		       const struct bench_cg_case *cases, size_t n,
		       double *out);

/*
 * Child side: warm each case up, then run it for pairs and for 2 x pairs
 * inside bench_cg_measure, whose two dumps the parent subtracts, so that
 * whatever a run costs once (thread start, first-use set-up) drops out.
 */
int bench_cg_cases(const struct bench_cg_case *cases, size_t n);

/*
 * Run fn(arg) in threads threads at once, each inside bench_cg_thread so
 * that callgrind counts them too; returns 0 or -1.
 */
int bench_cg_threads(int threads, void (*fn)(void *), void *arg);

/* "123" or "n/a": an instruction count for a table cell. */
const char *bench_instr_text(double v, char *buf, size_t len);

/* ---- the benchmarks (bench/suite.c) ----------------------------------- */

/* The benchmark called name, or NULL. */
const struct bench *bench_find(const char *name);

/* One line per benchmark, in the order they run: its name and help. */
void bench_list(void);

/*
 * Run the benchmarks named in only[0..nonly) (every one when nonly is 0)
 * in their order, then print the results.  0, or -1 when one failed
 * (said on stderr).
 */
int bench_run(const struct bench_opts *opts, const char *const *only,
	      int nonly);

extern const struct bench bench_sweep;
extern const struct bench bench_core;
extern const struct bench bench_reporter;
extern const struct bench bench_backends;
extern const struct bench bench_c10;
extern const struct bench bench_tensor;
extern const struct bench bench_cuda;
extern const struct bench bench_profiler;
extern const struct bench bench_front;
extern const struct bench bench_preload;
extern const struct bench bench_debug;

#endif /* ALLOY_BENCH_BENCH_H */
