// SPDX-License-Identifier: MIT
/*
 * bench/bench_profiler.c - what the profiler costs, in one run:
 *
 *  - capture: a call stack with libunwind's unw_backtrace (the reporter's
 *    way) against a frame-pointer walk, per capture at one depth, and how
 *    many frames each finds from under a libc function (qsort) built
 *    without frame pointers, as Debian's libraries are;
 *  - throughput of two workloads with the reporter off, on, on with call
 *    stacks, and on with call stacks and a trace: eager tensors (a forward
 *    pass of elementwise layers, a fresh output tensor each layer) and a
 *    malloc-heavy program (a dictionary of strings through the plain
 *    pointer API, two allocations and two frees a step), in alternating
 *    rounds, each ratio the median of ratios measured back to back;
 *  - Python's frames in the stacks against native stacks only, on a
 *    NumPy-heavy and an object-heavy script (bench_pyframes.c);
 *  - the trace's bytes per event in the steady state of that program;
 *  - `alloy report --at peak` on a trace of ten million events, run as a
 *    separate process: its elapsed and its CPU time;
 *  - instructions per step of the malloc-heavy program in each mode,
 *    counted by callgrind (bench/callgrind.c), which load does not move.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifdef HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

#include <alloy/alloy.h>

#include "bench.h"
#include "kernel/unwind.h"

#define ROUNDS	    7
#define DEPTH	    24
#define MAX_FRAMES  128
#define FP_FUNCTION __attribute__((noinline, optimize("no-omit-frame-pointer")))

extern char **environ;

/* ---- stack capture ------------------------------------------------------ */

enum capture_way { WAY_NONE, WAY_FP, WAY_UNWIND, WAY_TABLES };

/* The reporter's own walk (kernel/unwind.c, built into this tool too). */
static struct alloy__unwind_cache tables_cache;

static void *frames[MAX_FRAMES];
static enum capture_way way;
static int nframes;

/* Follow the saved frame pointers while they climb the stack in order. */
FP_FUNCTION static int fp_walk(void **out, int max)
{
	void **bp = __builtin_frame_address(0);
	uintptr_t lo = (uintptr_t)bp, hi = lo + (8u << 20);
	int n = 0;

	while (n < max && (uintptr_t)bp >= lo && (uintptr_t)bp < hi &&
	       !((uintptr_t)bp & 7)) {
		void **next = bp[0];

		if (!bp[1])
			break;
		out[n++] = bp[1];
		if (next <= bp)
			break;
		bp = next;
	}
	return n;
}

FP_FUNCTION static int capture(void)
{
	switch (way) {
	case WAY_FP:
		return fp_walk(frames, MAX_FRAMES);
	case WAY_TABLES: {
		int ours, n = alloy__unwind(&tables_cache, (uintptr_t *)frames,
					    MAX_FRAMES, &ours);

		if (n >= 0)
			return n;
		/* as the reporter does: libunwind where the tables cannot */
	}
	/* fall through */
	case WAY_UNWIND:
#ifdef HAVE_LIBUNWIND
		return unw_backtrace(frames, MAX_FRAMES);
#endif
	case WAY_NONE:
		break;
	}
	return 0;
}

FP_FUNCTION static int descend(int depth)
{
	int n = depth ? descend(depth - 1) : capture();

	__asm__ volatile("" ::: "memory"); /* no tail call: a frame each */
	return n;
}

/* ns per capture at DEPTH, the descent itself taken off. */
static double capture_ns(enum capture_way w, long iters)
{
	double best = 0, base = 0;

	for (int r = 0; r < ROUNDS; r++) {
		for (int k = 0; k < 2; k++) {
			double t0, t;

			way = k ? w : WAY_NONE;
			t0 = bench_now_ns();
			for (long i = 0; i < iters; i++)
				nframes = descend(DEPTH);
			t = (bench_now_ns() - t0) / (double)iters;
			if (k)
				best = !r || t < best ? t : best;
			else
				base = !r || t < base ? t : base;
		}
	}
	return best - base;
}

/* Captures on its first call in each sort (nframes is reset to 0). */
FP_FUNCTION static int by_value(const void *a, const void *b)
{
	if (!nframes)
		nframes = capture();
	return *(const int *)a - *(const int *)b;
}

/* Frames found from inside a qsort comparator (libc, no frame pointers). */
FP_FUNCTION static int frames_through_qsort(enum capture_way w)
{
	int v[] = { 3, 1, 2 };

	way = w;
	nframes = 0;
	qsort(v, 3, sizeof(v[0]), by_value);
	return nframes;
}

static int run_capture(const struct bench_opts *opts)
{
	long iters = bench_iters(opts, 100000);
	double unwind = 0, tables = 0, fp = capture_ns(WAY_FP, iters);
	int fp_frames;

	fp_frames = (nframes = 0, descend(DEPTH));
	bench_result("profiler", "frame-pointer walk, depth 24: ns per capture",
		     fp, "ns", GOAL_NONE, 0);
#ifdef HAVE_LIBUNWIND
	unwind = capture_ns(WAY_UNWIND, iters);
	bench_result("profiler", "unw_backtrace, depth 24: ns per capture",
		     unwind, "ns", GOAL_NONE, 0);
	way = WAY_UNWIND;
	bench_result("profiler", "unw_backtrace, depth 24: frames found",
		     (double)descend(DEPTH), "frames", GOAL_NONE, 0);
	tables = capture_ns(WAY_TABLES, iters);
	bench_result("profiler",
		     "unwind tables (alloy's walk), depth 24: ns per capture",
		     tables, "ns", GOAL_NONE, 0);
	way = WAY_TABLES;
	bench_result("profiler",
		     "unwind tables (alloy's walk), depth 24: frames found",
		     (double)descend(DEPTH), "frames", GOAL_NONE, 0);
	bench_result("profiler",
		     "unwind tables (alloy's walk) / unw_backtrace: time",
		     tables / unwind, "x", GOAL_NONE, 0);
#endif
	bench_result("profiler", "frame-pointer walk, depth 24: frames found",
		     (double)fp_frames, "frames", GOAL_NONE, 0);
	(void)unwind;
	(void)tables;
	/* One capture each, from one comparator call (the first). */
	{
		int fpq, uwq = 0;

		fpq = frames_through_qsort(WAY_FP);
		bench_result("profiler",
			     "frame pointers: frames found under qsort (libc)",
			     (double)fpq, "frames", GOAL_NONE, 0);
#ifdef HAVE_LIBUNWIND
		uwq = frames_through_qsort(WAY_UNWIND);
		bench_result("profiler",
			     "unw_backtrace: frames found under qsort (libc)",
			     (double)uwq, "frames", GOAL_NONE, 0);
		bench_result("profiler",
			     "unwind tables: frames found under qsort (libc)",
			     (double)frames_through_qsort(WAY_TABLES), "frames",
			     GOAL_NONE, 0);
#endif
		(void)uwq;
	}
	return 0;
}

/* ---- workloads ---------------------------------------------------------- */

/*
 * Eager tensors: each layer makes a fresh output, computes it from its
 * input (an elementwise affine and ReLU) and drops the input.
 */
static int tensor_pass(int batch)
{
	static const int64_t width[] = { 512, 1024, 256, 768, 512, 1024 };
	const struct alloy_type_meta *f32 = alloy_type(ALLOY_TYPE_FLOAT);
	struct alloy_tensor *x = alloy_tensor_new(ALLOY_CPU);
	int64_t dims[2] = { batch, 256 };
	float *xp;
	int64_t n;

	if (!x || alloy_tensor_resize(x, dims, 2) ||
	    !(xp = alloy_tensor_raw_mutable_data(x, f32)))
		return -1;
	n = alloy_tensor_numel(x);
	for (int64_t i = 0; i < n; i++)
		xp[i] = (float)(i % 7) - 3;
	for (size_t l = 0; l < sizeof(width) / sizeof(width[0]); l++) {
		struct alloy_tensor *y = alloy_tensor_new(ALLOY_CPU);
		int64_t ny, nx = alloy_tensor_numel(x);
		float *yp;

		dims[1] = width[l];
		if (!y || alloy_tensor_resize(y, dims, 2) ||
		    !(yp = alloy_tensor_raw_mutable_data(y, f32)))
			return -1;
		ny = alloy_tensor_numel(y);
		for (int64_t i = 0; i < ny; i++) {
			float v = xp[i % nx] * 0.5f + 0.25f;

			yp[i] = v > 0 ? v : 0;
		}
		alloy_tensor_unref(x);
		x = y;
		xp = yp;
	}
	alloy_tensor_unref(x);
	return 0;
}

/* A dictionary of string keys, the oldest dropped as new ones come. */
#define DICT_BUCKETS 4096
#define DICT_LIVE    20000

struct entry {
	struct entry *next;
	char *key;
	uint64_t value;
};

static struct entry *dict[DICT_BUCKETS];

static size_t key_of(char *buf, uint64_t i)
{
	static const char digits[] = "0123456789abcdef";
	size_t n = 0;
	uint64_t h = i * 0x9e3779b97f4a7c15ULL;

	memcpy(buf, "key-", 4);
	n = 4;
	do {
		buf[n++] = digits[h & 15];
		h >>= 4;
	} while (h && n < 24);
	buf[n++] = '-';
	do {
		buf[n++] = (char)('0' + i % 10);
		i /= 10;
	} while (i);
	buf[n] = '\0';
	return n;
}

static unsigned bucket_of(const char *s)
{
	unsigned h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h % DICT_BUCKETS;
}

static __attribute__((noinline)) struct entry *entry_new(const char *key,
							 size_t n)
{
	struct entry *e = alloy_malloc(sizeof(*e));

	if (!e || !(e->key = alloy_malloc(n + 1)))
		abort();
	memcpy(e->key, key, n + 1);
	return e;
}

static __attribute__((noinline)) void dict_put(uint64_t i)
{
	char key[48];
	size_t n = key_of(key, i);
	struct entry *e = entry_new(key, n);
	unsigned b = bucket_of(key);

	e->value = i;
	e->next = dict[b];
	dict[b] = e;
}

static __attribute__((noinline)) void dict_drop(uint64_t i)
{
	char key[48];
	struct entry **p;

	key_of(key, i);
	for (p = &dict[bucket_of(key)]; *p; p = &(*p)->next)
		if (!strcmp((*p)->key, key)) {
			struct entry *e = *p;

			*p = e->next;
			alloy_free(e->key);
			alloy_free(e);
			return;
		}
	abort();
}

static uint64_t dict_next;

/* iters steps, each one put and one drop (once full). */
static void dict_steps(long iters)
{
	alloy_owner_push("dict");
	for (long k = 0; k < iters; k++, dict_next++) {
		dict_put(dict_next);
		if (dict_next >= DICT_LIVE)
			dict_drop(dict_next - DICT_LIVE);
	}
	alloy_owner_pop();
}

static void dict_clear(void)
{
	for (uint64_t i = dict_next > DICT_LIVE ? dict_next - DICT_LIVE : 0;
	     i < dict_next; i++)
		dict_drop(i);
	dict_next = 0;
}

/* ---- throughput, reporter off and on ------------------------------------ */

enum mode { M_OFF, M_ON, M_STACKS, M_TRACE, NMODES };

static const char *const mode_name[] = {
	"reporter off",
	"reporter on",
	"reporter on, call stacks",
	"reporter on, call stacks, trace",
};

static char trace_path[64];

static int set_mode(enum mode m)
{
	if (m == M_OFF)
		return alloy_reporter_disable();
	if (alloy_reporter_enable() ||
	    alloy_reporter_set_backtrace(m >= M_STACKS))
		return -1;
	return m == M_TRACE ? alloy_reporter_trace_start(trace_path) : 0;
}

/* Stop the trace (the file is removed unless kept). */
static int end_mode(enum mode m, bool keep)
{
	int rc = m == M_TRACE ? alloy_reporter_trace_stop() : 0;

	if (!keep)
		unlink(trace_path);
	return rc;
}

struct workload {
	const char *name;
	const char *unit;
	long iters;			 /* per round */
	int (*run)(long iters, int arg); /* 0 or -1 */
	int arg;
	/*
	 * Whether the call-stack goal is judged here: on the tensor
	 * workloads.  Its malloc-heavy program is a real one under alloy run
	 * (bench/bench_front.c); this loop of two allocations and little else
	 * shows the capture's cost, with no goal.
	 */
	bool goal;
};

static int run_tensor(long iters, int batch)
{
	for (long i = 0; i < iters; i++)
		if (tensor_pass(batch))
			return -1;
	return 0;
}

static int run_dict(long iters, int arg)
{
	(void)arg;
	dict_steps(iters);
	return 0;
}

static int throughput(const struct workload *w)
{
	double rate[NMODES][ROUNDS], ratio[NMODES][ROUNDS],
		best[NMODES] = { 0 };
	char metric[128];

	/* Warm: allocator caches, the stack table, page faults. */
	if (set_mode(M_STACKS) || w->run(w->iters / 4 + 1, w->arg) ||
	    end_mode(M_STACKS, false))
		return -1;
	for (int r = 0; r < ROUNDS; r++) {
		for (int k = 0; k < NMODES; k++) {
			enum mode m = (enum mode)((r + k) % NMODES);
			double t0;

			if (set_mode(m))
				return -1;
			t0 = bench_now_ns();
			if (w->run(w->iters, w->arg))
				return -1;
			rate[m][r] = (double)w->iters /
				     ((bench_now_ns() - t0) * 1e-9);
			if (end_mode(m, false))
				return -1;
			best[m] = rate[m][r] > best[m] ? rate[m][r] : best[m];
		}
		for (int m = 0; m < NMODES; m++)
			ratio[m][r] = rate[m][r] / rate[M_OFF][r];
	}
	alloy_reporter_disable();
	for (int m = 0; m < NMODES; m++) {
		snprintf(metric, sizeof(metric), "%s: %s (best)", w->name,
			 mode_name[m]);
		bench_result("profiler", metric, best[m], w->unit, GOAL_NONE,
			     0);
	}
	for (int m = M_ON; m < NMODES; m++) {
		snprintf(metric, sizeof(metric), "%s: %s / off (median)",
			 w->name, mode_name[m]);
		bench_result(
			"profiler", metric, bench_median(ratio[m], ROUNDS), "x",
			m == M_STACKS && w->goal ? GOAL_AT_LEAST : GOAL_NONE,
			0.5);
	}
	return 0;
}

/* ---- the trace's size ---------------------------------------------------- */

static long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : (long)st.st_size;
}

/*
 * Bytes per event of the trace written as text, or through zstd (a path
 * ending in .zst) where this alloy has it.
 */
static int trace_size_as(const struct bench_opts *opts, bool compressed)
{
	long warm = bench_iters(opts, 200000),
	     iters = bench_iters(opts, 400000);
	const char *form = compressed ? ", zstd" : "";
	char metric[128], text_path[sizeof(trace_path)];
	long before, after;
	double t0, seconds;
	int rc = 0;

	memcpy(text_path, trace_path, sizeof(trace_path));
	if (compressed)
		snprintf(trace_path, sizeof(trace_path), "%s.zst", text_path);
	if (set_mode(M_TRACE)) {
		/* Without zstd the .zst path is refused: nothing to measure. */
		if (compressed)
			bench_note("profiler: no compressed trace: %s",
				   alloy_last_error());
		rc = compressed ? 0 : -1;
		goto out;
	}
	dict_steps(warm);
	if (alloy_reporter_flush()) {
		rc = -1;
		goto out;
	}
	before = file_size(trace_path);
	t0 = bench_now_ns();
	dict_steps(iters);
	if (alloy_reporter_flush()) {
		rc = -1;
		goto out;
	}
	seconds = (bench_now_ns() - t0) * 1e-9;
	after = file_size(trace_path);
	/* What writing the trace in this form costs the program. */
	snprintf(metric, sizeof(metric),
		 "malloc-heavy: string dictionary, call stacks, trace%s", form);
	bench_result("profiler", metric, (double)iters / seconds, "steps/s",
		     GOAL_NONE, 0);
	/* Each step: two allocations and two frees. */
	snprintf(metric, sizeof(metric),
		 "trace bytes per event%s, steady state (stacks, owner)", form);
	bench_result("profiler", metric,
		     (double)(after - before) / (double)(4 * iters), "bytes",
		     GOAL_AT_MOST, compressed ? 3 : 32);
	snprintf(metric, sizeof(metric),
		 "trace bytes per event%s, whole file (tables included)", form);
	bench_result("profiler", metric,
		     (double)after / (double)(4 * (warm + iters)), "bytes",
		     compressed ? GOAL_AT_MOST : GOAL_NONE, 3);
	dict_clear();
	end_mode(M_TRACE, false);
	alloy_reporter_disable();
out:
	memcpy(trace_path, text_path, sizeof(trace_path));
	return rc;
}

static int trace_size(const struct bench_opts *opts)
{
	int rc = trace_size_as(opts, false);

	return rc ? rc : trace_size_as(opts, true);
}

/* ---- alloy report --at peak on ten million events ------------------------ */

static int report_time(const struct bench_opts *opts)
{
	long steps = bench_iters(opts, 2500000); /* four events each */
	char *argv[] = { "alloy", "report", trace_path, "--at", "peak", NULL };
	posix_spawn_file_actions_t fa;
	char self[4096], metric[128], what[96];
	double t0, seconds, cpu;
	struct rusage ru;
	ssize_t n;
	pid_t pid;
	int st;

	if (set_mode(M_TRACE))
		return -1;
	dict_steps(steps);
	dict_clear();
	if (end_mode(M_TRACE, true))
		return -1;
	alloy_reporter_disable();
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -1;
	self[n] = '\0';
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	t0 = bench_now_ns();
	if (posix_spawn(&pid, self, &fa, NULL, argv, environ) ||
	    wait4(pid, &st, 0, &ru) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st)) {
		posix_spawn_file_actions_destroy(&fa);
		unlink(trace_path);
		return -1;
	}
	seconds = (bench_now_ns() - t0) * 1e-9;
	posix_spawn_file_actions_destroy(&fa);
	/*
	 * The report's own CPU time (user + system) beside the elapsed time:
	 * on a machine shared with other builds the elapsed time counts
	 * their turns on the cores too, so the goal is judged on the former
	 * (as the reporter's is, docs/BENCHMARKS.md).
	 */
	cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
	      (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
	snprintf(what, sizeof(what),
		 "alloy report --at peak, %.1f M events (%.0f MB)",
		 (double)(4 * steps + 2 * DICT_LIVE) / 1e6,
		 (double)file_size(trace_path) / 1e6);
	snprintf(metric, sizeof(metric), "%s: elapsed seconds", what);
	bench_result("profiler", metric, seconds, "s", GOAL_NONE, 0);
	snprintf(metric, sizeof(metric), "%s: CPU seconds (user + system)",
		 what);
	bench_result("profiler", metric, cpu, "s",
		     opts->quick ? GOAL_NONE : GOAL_AT_MOST, 10);
	unlink(trace_path);
	return 0;
}

/* ---- instructions per step of the malloc-heavy program ------------------- */

static const enum mode cg_modes[NMODES] = { M_OFF, M_ON, M_STACKS, M_TRACE };

/*
 * steps of the string dictionary in one mode, the dictionary kept full
 * from one call to the next: a case's warm-up (DICT_LIVE steps) replaces
 * every block with one made in its own mode, so what is counted is the
 * steady state, each step two allocations and two frees.
 */
static void cg_dict(const struct bench_cg_case *c, long steps)
{
	enum mode m = *(const enum mode *)c->arg;

	if (set_mode(m))
		return;
	dict_steps(steps);
	end_mode(m, false);
	alloy_reporter_disable();
}

static struct bench_cg_case cg_cases[NMODES];

static void cg_cases_make(void)
{
	snprintf(trace_path, sizeof(trace_path), "/tmp/alloy-bench-%ld.trace",
		 (long)getpid());
	for (int m = 0; m < NMODES; m++)
		cg_cases[m] = (struct bench_cg_case){
			.label = mode_name[m],
			.run = cg_dict,
			.arg = &cg_modes[m],
			.pairs = DICT_LIVE,
			.count = COUNT_ALL,
		};
}

static int profiler_callgrind_child(void)
{
	int rc;

	cg_cases_make();
	rc = bench_cg_cases(cg_cases, NMODES);
	dict_clear();
	unlink(trace_path);
	return rc;
}

/* Instructions per step in each mode, and each mode's cost against off. */
static void instructions(const struct bench_opts *opts)
{
	double ins[NMODES];
	char metric[128];

	cg_cases_make();
	if (bench_instructions(opts, "profiler", cg_cases, NMODES, ins))
		return;
	for (int m = 0; m < NMODES; m++) {
		snprintf(metric, sizeof(metric),
			 "malloc-heavy: instructions per step, %s",
			 mode_name[m]);
		bench_result("profiler", metric, ins[m], "instr", GOAL_NONE, 0);
	}
	for (int m = M_ON; m < NMODES; m++) {
		snprintf(metric, sizeof(metric),
			 "malloc-heavy: instructions off / %s", mode_name[m]);
		bench_result("profiler", metric, ins[M_OFF] / ins[m], "x",
			     GOAL_NONE, 0);
	}
}

static int run_profiler(const struct bench_opts *opts)
{
	const struct workload tensors = {
		.name = "eager tensors (6 layers, batch 32)",
		.unit = "passes/s",
		.iters = bench_iters(opts, 400),
		.run = run_tensor,
		.arg = 32,
		.goal = true,
	};
	const struct workload small = {
		.name = "eager tensors (batch 1: little work a block)",
		.unit = "passes/s",
		.iters = bench_iters(opts, 20000),
		.run = run_tensor,
		.arg = 1,
		.goal = true,
	};
	const struct workload strings = {
		.name = "malloc-heavy: string dictionary",
		.unit = "steps/s",
		.iters = bench_iters(opts, 200000),
		.run = run_dict,
	};
	bool was_on = alloy_reporter_enabled();
	int rc;

	snprintf(trace_path, sizeof(trace_path), "/tmp/alloy-bench-%ld.trace",
		 (long)getpid());
	rc = run_capture(opts);
	if (!rc)
		rc = throughput(&tensors);
	if (!rc)
		rc = throughput(&small);
	if (!rc)
		rc = throughput(&strings);
	if (!rc)
		rc = bench_profiler_python(opts);
	if (!rc) {
		dict_clear();
		rc = trace_size(opts);
	}
	if (!rc)
		rc = report_time(opts);
	if (!rc)
		instructions(opts);
	alloy_reporter_set_backtrace(false);
	if (was_on)
		alloy_reporter_enable();
	else
		alloy_reporter_disable();
	unlink(trace_path);
	return rc;
}

const struct bench bench_profiler = {
	.name = "profiler",
	.help = "call stacks (unwind vs frame pointers), reporter with stacks vs off, trace size, report time",
	.run = run_profiler,
	.callgrind_child = profiler_callgrind_child,
};
