// SPDX-License-Identifier: MIT
/*
 * bench/bench_front.c - `alloy bench front`: what the LD_PRELOAD front
 * costs a real program, and the plain-pointer pair against the DataPtr
 * pair.
 *
 * Two workloads.  CPython (Debian's /usr/bin/python3) encoding and
 * decoding a JSON document of 12,000 small records a number of times,
 * with PYTHONMALLOC=malloc so that every object Python makes is a malloc
 * and a free: some 400,000 pairs a round, of 16 bytes to a few KiB, and
 * realloc of the growing output - a stress case, a program that does
 * little but allocate.  And gcc -O2 compiling a generated C file
 * (bench/bench_csource.c): a real program with real work between its
 * allocations.  Six ways of running each, in the same run, the order
 * rotating each round:
 *
 *   PROG                                     glibc's malloc, no front
 *   alloy run -- PROG                        the front on "default"
 *   alloy run --report /dev/null -- PROG     ... with the reporter on
 *   alloy run --conf backtrace:1 --report /dev/null -- PROG
 *                                            ... and a call stack for
 *                                            every allocation (the
 *                                            profiler's figure)
 *   LD_PRELOAD=libjemalloc.so.2 PROG         jemalloc as the malloc
 *   alloy run --conf cpu:jemalloc -- PROG    the front on "jemalloc"
 *
 * Each round's figure is the child's CPU time (user + system, from
 * wait4), which other processes' load moves less than the wall clock;
 * throughput is its inverse, and the ratios are of medians.  Unless
 * --quick, each way is also run once under callgrind
 * (--trace-children=yes: `alloy run` and what it execs) for instructions,
 * which machine noise does not move.
 *
 * The pairs, 64 bytes on the CPU default allocator, are timed in
 * alternating chunks and counted under callgrind too: everything the pair
 * executes (glibc's malloc included), and alloy's own part alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <alloy/alloy.h>

#include "bench.h"

#define GROUP	 "front"
#define PYTHON	 "/usr/bin/python3"
#define ROUNDS	 7
#define NWAYS	 6
#define PAIR_LEN 64

/* The document, then N rounds of dumps + loads + a re-sort. */
static const char workload_py[] =
	"import json, sys\n"
	"doc = {'k%d' % i: [{'id': j, 'name': 'item-%d-%d' % (i, j),\n"
	"                   'tags': ['a', 'b', str(j)], 'v': j * 0.5}\n"
	"                  for j in range(40)] for i in range(300)}\n"
	"for _ in range(int(sys.argv[1])):\n"
	"    s = json.dumps(doc)\n"
	"    d = json.loads(s)\n"
	"    doc = {k: sorted(v, key=lambda x: -x['id']) for k, v in d.items()}\n"
	"print(len(s))\n";

/*
 * The second workload: gcc compiling a generated translation unit
 * (bench/bench_csource.c) at -O2, the driver, cc1 and the assembler each
 * under the front.  A compiler is a classic allocator benchmark: its
 * trees, tables and pass-local vectors are malloc'd and freed in bursts,
 * with real work between them (about one allocation per 4,000
 * instructions, where the JSON workload makes one per 1,000).
 */
#define GCC	      "/usr/bin/gcc"
#define GCC_FUNCTIONS 48

/* What one run of a workload is for: its repetitions differ. */
enum phase { TIMED, QUICK, CALLGRIND };

struct workload {
	const char *name; /* in figures: "Python JSON", ... */
	const char *prog; /* an absolute path: skipped when missing */
	/* Arguments after prog for a phase, NULL-terminated; returns n. */
	int (*args)(const struct workload *wl, enum phase ph,
		    const char **argv);
	const char *env_name, *env_value; /* set in the child, or NULL */
	char source[64];		  /* gcc: the generated file */
};

static int json_args(const struct workload *wl, enum phase ph,
		     const char **argv)
{
	static const char *const reps[] = {
		[TIMED] = "12", [QUICK] = "1", [CALLGRIND] = "2"
	};

	(void)wl;
	argv[0] = "-c";
	argv[1] = workload_py;
	argv[2] = reps[ph];
	argv[3] = NULL;
	return 3;
}

static int gcc_args(const struct workload *wl, enum phase ph, const char **argv)
{
	(void)ph;
	argv[0] = "-O2";
	argv[1] = "-c";
	argv[2] = wl->source;
	argv[3] = "-o";
	argv[4] = "/dev/null";
	argv[5] = NULL;
	return 5;
}

/* Write the compiler's input; false (with a note) when it cannot. */
static bool gcc_prepare(struct workload *wl)
{
	int fd;
	FILE *f;

	snprintf(wl->source, sizeof(wl->source),
		 "/tmp/alloy-bench-front-XXXXXX.c");
	fd = mkstemps(wl->source, 2);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		if (fd >= 0)
			close(fd);
		bench_note("skipped: the gcc workload (%s: %s)", wl->source,
			   strerror(errno));
		return false;
	}
	bench_write_c_source(f, GCC_FUNCTIONS);
	if (fclose(f)) {
		bench_note("skipped: the gcc workload (writing %s: %s)",
			   wl->source, strerror(errno));
		unlink(wl->source);
		return false;
	}
	return true;
}

/*
 * The jemalloc ways come last: without a jemalloc module only the first
 * four run.  REPORT and STACKS are the profiler's figure under alloy run
 * (the reporter on, then with a call stack per allocation) against FRONT,
 * the same front with the reporter off.
 */
enum way { NO_FRONT, FRONT, REPORT, STACKS, JEMALLOC, FRONT_JEMALLOC };

static const char *const way_name[NWAYS] = {
	[NO_FRONT] = "no front (glibc malloc)",
	[FRONT] = "alloy run (default)",
	[REPORT] = "alloy run --report /dev/null",
	[STACKS] = "alloy run --conf backtrace:1 --report /dev/null",
	[JEMALLOC] = "LD_PRELOAD=libjemalloc.so.2",
	[FRONT_JEMALLOC] = "alloy run --conf cpu:jemalloc",
};

static bool under_front(enum way w)
{
	return w != NO_FRONT && w != JEMALLOC;
}

/* argv for one way: [prefix...] PROG ARGS. */
static int way_argv(const struct workload *wl, enum way w, const char *self,
		    enum phase ph, const char **argv)
{
	int n = 0;

	if (under_front(w)) {
		argv[n++] = self;
		argv[n++] = "run";
		if (w == FRONT_JEMALLOC || w == STACKS) {
			argv[n++] = "--conf";
			argv[n++] =
				w == STACKS ? "backtrace:1" : "cpu:jemalloc";
		}
		if (w == REPORT || w == STACKS) {
			argv[n++] = "--report";
			argv[n++] = "/dev/null";
		}
		argv[n++] = "--";
	}
	argv[n++] = wl->prog;
	return n + wl->args(wl, ph, argv + n);
}

/*
 * Run argv (after an optional callgrind prefix) with the way's
 * environment, output to /dev/null (or log for callgrind's);
 * CPU seconds, or -1 when it failed.
 */
static double run_way(const struct workload *wl, enum way w,
		      const char *const *argv, const char *log)
{
	struct rusage ru;
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		int err = log ? open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600)
			      : null;

		if (null < 0 || err < 0 || dup2(null, 1) < 0 ||
		    dup2(err, 2) < 0)
			_exit(126);
		unsetenv("ALLOY_CONF");
		unsetenv("LD_PRELOAD");
		if (wl->env_name)
			setenv(wl->env_name, wl->env_value, 1);
		if (w == JEMALLOC)
			setenv("LD_PRELOAD", "libjemalloc.so.2", 1);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		return -1;
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* Instructions of one run under callgrind, every exec'd image summed. */
static double instructions(const struct workload *wl, enum way w,
			   const char *self)
{
	const char *argv[24];
	char log[] = "/tmp/alloy-bench-front-XXXXXX";
	int fd = mkstemp(log), n = 0;
	double total = -1;
	char line[256];
	FILE *f;

	if (fd < 0)
		return -1;
	close(fd);
	argv[n++] = "/usr/bin/valgrind";
	argv[n++] = "--tool=callgrind";
	argv[n++] = "--trace-children=yes";
	argv[n++] = "--callgrind-out-file=/dev/null";
	way_argv(wl, w, self, CALLGRIND, argv + n);
	if (run_way(wl, w, argv, log) >= 0 && (f = fopen(log, "r"))) {
		total = 0;
		while (fgets(line, sizeof(line), f)) {
			const char *c = strstr(line, "Collected : ");

			if (c)
				total += strtod(c + 12, NULL);
		}
		fclose(f);
	}
	unlink(log);
	return total > 0 ? total : -1;
}

/* "KIND WORKLOAD: WHAT" = value, judged against goal when it is > 0. */
static void figure(const struct workload *wl, const char *kind,
		   const char *what, double value, double goal)
{
	char metric[128];

	snprintf(metric, sizeof(metric), "%s %s: %s", kind, wl->name, what);
	bench_result(GROUP, metric, value, "x",
		     goal > 0 ? GOAL_AT_LEAST : GOAL_NONE, goal);
}

/* Throughput of a way against base: base's median time over the way's. */
static void ratio(const struct workload *wl, const char *what, double base,
		  double way, double goal)
{
	figure(wl, "throughput", what, base / way, goal);
}

/* Instructions of a way against base's. */
static void instr_ratio(const struct workload *wl, const char *what,
			double base, double way)
{
	figure(wl, "instructions", what, way / base, 0);
}

/* A summary row: throughput of way w against base, >= goal. */
static void summarise(const struct workload *wl, enum way w, enum way base,
		      const double *med, const double *ins, const char *what,
		      double goal)
{
	char figure[160], measured[32], instr[96] = "n/a", want[16];
	double r = med[base] / med[w];

	snprintf(figure, sizeof(figure), "%s, %s (throughput)", what, wl->name);
	snprintf(measured, sizeof(measured), "%.2f", r);
	if (!isnan(ins[w]) && !isnan(ins[base]))
		snprintf(instr, sizeof(instr), "%.3g / %.3g (%.3fx)", ins[w],
			 ins[base], ins[w] / ins[base]);
	snprintf(want, sizeof(want), ">= %.2f", goal);
	bench_summary(figure, want, measured, instr, bench_verdict(r >= goal));
}

/* Each way once under callgrind; NAN everywhere when one fails. */
static void count_ways(const struct workload *wl, const char *self, int nways,
		       bool stacks, double *ins)
{
	for (int w = 0; w < nways; w++)
		ins[w] = w == STACKS && !stacks
				 ? NAN
				 : instructions(wl, (enum way)w, self);
	for (int w = 0; w < nways; w++)
		if (ins[w] < 0) {
			bench_note("skipped: instruction counts of %s "
				   "(callgrind failed: %s)",
				   wl->name, way_name[w]);
			for (int k = 0; k < nways; k++)
				ins[k] = NAN;
			return;
		}
}

static int workload(const struct bench_opts *opts, const struct workload *wl,
		    const char *self, bool jemalloc, bool stacks)
{
	const char *argv[24];
	double t[NWAYS][ROUNDS], med[NWAYS], ins[NWAYS];
	int rounds = opts->quick ? 1 : ROUNDS, nways = jemalloc ? NWAYS : 4;
	char metric[160];

	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < nways; k++) {
			enum way w = (enum way)((k + r) % nways);

			t[w][r] = 0;
			if (w == STACKS && !stacks)
				continue;
			way_argv(wl, w, self, opts->quick ? QUICK : TIMED,
				 argv);
			t[w][r] = run_way(wl, w, argv, NULL);
			if (t[w][r] < 0) {
				fprintf(stderr,
					"alloy bench front: the %s workload failed: %s\n",
					wl->name, way_name[w]);
				return 1;
			}
		}
	for (int w = 0; w < nways; w++) {
		if (w == STACKS && !stacks)
			continue;
		med[w] = bench_median(t[w], (size_t)rounds);
		snprintf(metric, sizeof(metric), "CPU time, %s, %s", wl->name,
			 way_name[w]);
		bench_result(GROUP, metric, med[w], "s", GOAL_NONE, 0);
	}
	ratio(wl, "alloy run / no front", med[NO_FRONT], med[FRONT], 0.90);
	ratio(wl, "alloy run, reporter on / off", med[FRONT], med[REPORT], 0);
	if (stacks)
		ratio(wl, "alloy run, call stacks / reporter off", med[FRONT],
		      med[STACKS], 0.50);
	if (jemalloc)
		ratio(wl, "alloy run cpu:jemalloc / LD_PRELOAD jemalloc",
		      med[JEMALLOC], med[FRONT_JEMALLOC], 0.90);
	for (int w = 0; w < nways; w++)
		ins[w] = NAN;
	if (!opts->quick && !access("/usr/bin/valgrind", X_OK))
		count_ways(wl, self, nways, stacks, ins);
	if (!isnan(ins[FRONT])) {
		instr_ratio(wl, "alloy run / no front", ins[NO_FRONT],
			    ins[FRONT]);
		instr_ratio(wl, "alloy run, reporter on / off", ins[FRONT],
			    ins[REPORT]);
		if (stacks)
			instr_ratio(wl, "alloy run, call stacks / off",
				    ins[FRONT], ins[STACKS]);
		if (jemalloc)
			instr_ratio(wl, "alloy run cpu:jemalloc / jemalloc",
				    ins[JEMALLOC], ins[FRONT_JEMALLOC]);
	}
	summarise(wl, FRONT, NO_FRONT, med, ins, "alloy run / no front", 0.90);
	if (stacks)
		summarise(wl, STACKS, FRONT, med, ins,
			  "alloy run with call stacks / reporter off", 0.50);
	if (jemalloc)
		summarise(wl, FRONT_JEMALLOC, JEMALLOC, med, ins,
			  "alloy run cpu:jemalloc / LD_PRELOAD jemalloc", 0.90);
	return 0;
}

/* Both workloads; one whose program is missing is skipped, said so. */
static int workloads(const struct bench_opts *opts, bool jemalloc)
{
	struct workload python = {
		.name = "Python JSON",
		.prog = PYTHON,
		.args = json_args,
		.env_name = "PYTHONMALLOC",
		.env_value = "malloc",
	};
	struct workload gcc = {
		.name = "gcc -O2",
		.prog = GCC,
		.args = gcc_args,
	};
	char self[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	/* Asked here, turned off again at once: this process records none. */
	bool stacks = alloy_reporter_set_backtrace(true) == 0;
	int rc = 0;

	alloy_reporter_set_backtrace(false);
	if (!stacks)
		bench_note("skipped: the call-stack way (%s)",
			   alloy_last_error());
	/* A path valgrind can exec too, unlike /proc/self/exe. */
	if (len <= 0)
		return 1;
	self[len] = '\0';
	if (access(PYTHON, X_OK))
		bench_note("skipped: the Python workload needs %s", PYTHON);
	else
		rc = workload(opts, &python, self, jemalloc, stacks);
	if (access(GCC, X_OK))
		bench_note("skipped: the gcc workload needs %s", GCC);
	else if (!rc && gcc_prepare(&gcc)) {
		rc = workload(opts, &gcc, self, jemalloc, stacks);
		unlink(gcc.source);
	}
	return rc;
}

/* ---- the plain-pointer pair against the DataPtr pair ------------------ */

static double plain_round(long iters)
{
	double t0 = bench_now_ns();

	for (long i = 0; i < iters; i++) {
		char *p = alloy_malloc(PAIR_LEN);

		if (!p)
			return -1;
		p[0] = (char)i;
		alloy_free(p);
	}
	return (bench_now_ns() - t0) / (double)iters;
}

static double dataptr_round(long iters)
{
	double t0 = bench_now_ns();

	for (long i = 0; i < iters; i++) {
		struct alloy_data_ptr dp;

		if (alloy_alloc_default(ALLOY_DEVICE_CPU, PAIR_LEN, 0, &dp))
			return -1;
		((char *)dp.ptr)[0] = (char)i;
		alloy_data_ptr_free(&dp);
	}
	return (bench_now_ns() - t0) / (double)iters;
}

static void cg_plain(const struct bench_cg_case *c, long pairs)
{
	(void)c;
	plain_round(pairs);
}

static void cg_dataptr(const struct bench_cg_case *c, long pairs)
{
	(void)c;
	dataptr_round(pairs);
}

/* Each pair whole (glibc's malloc in it), then alloy's own part alone. */
enum { CG_PLAIN, CG_DATAPTR, CG_PLAIN_ALLOY, CG_DATAPTR_ALLOY, CG_N };

static const struct bench_cg_case cg_cases[CG_N] = {
	[CG_PLAIN] = { "alloy_malloc+alloy_free", cg_plain, PAIR_LEN },
	[CG_DATAPTR] = { "alloy_alloc_default+data_ptr_free", cg_dataptr,
			 PAIR_LEN },
	[CG_PLAIN_ALLOY] = { "alloy_malloc+alloy_free", cg_plain, PAIR_LEN,
			     .count = COUNT_ALLOY },
	[CG_DATAPTR_ALLOY] = { "alloy_alloc_default+data_ptr_free", cg_dataptr,
			       PAIR_LEN, .count = COUNT_ALLOY },
};

static int front_callgrind_child(void)
{
	if (bench_use_default())
		return -1;
	return bench_cg_cases(cg_cases, CG_N);
}

static void pair_instructions(const struct bench_opts *opts, double ratio)
{
	double ins[CG_N];
	char instr[128] = "n/a", measured[32];

	if (!bench_instructions(opts, GROUP, cg_cases, CG_N, ins)) {
		bench_result(GROUP, "instructions, alloy_malloc+alloy_free",
			     ins[CG_PLAIN], "instr", GOAL_NONE, 0);
		bench_result(GROUP, "instructions, DataPtr pair",
			     ins[CG_DATAPTR], "instr", GOAL_NONE, 0);
		bench_result(GROUP, "  of which alloy's, plain pair",
			     ins[CG_PLAIN_ALLOY], "instr", GOAL_NONE, 0);
		bench_result(GROUP, "  of which alloy's, DataPtr pair",
			     ins[CG_DATAPTR_ALLOY], "instr", GOAL_NONE, 0);
		snprintf(instr, sizeof(instr),
			 "%.0f / %.0f; alloy's own %.0f / %.0f", ins[CG_PLAIN],
			 ins[CG_DATAPTR], ins[CG_PLAIN_ALLOY],
			 ins[CG_DATAPTR_ALLOY]);
	}
	snprintf(measured, sizeof(measured), "%.2f", ratio);
	bench_summary("plain pair / DataPtr pair, 64 B (time)", "<= 1.3",
		      measured, instr, bench_verdict(ratio <= 1.3));
}

static int pairs(const struct bench_opts *opts)
{
	enum { CHUNKS = 15 };
	long iters = bench_iters(opts, 200000);
	double plain[CHUNKS], dp[CHUNKS], mp, md;

	for (int c = 0; c < CHUNKS; c++) {
		/* Alternate which goes first: drift hits both alike. */
		if (c & 1) {
			plain[c] = plain_round(iters);
			dp[c] = dataptr_round(iters);
		} else {
			dp[c] = dataptr_round(iters);
			plain[c] = plain_round(iters);
		}
		if (plain[c] < 0 || dp[c] < 0) {
			fprintf(stderr, "alloy bench front: %s\n",
				alloy_last_error());
			return 1;
		}
	}
	mp = bench_median(plain, CHUNKS);
	md = bench_median(dp, CHUNKS);
	bench_result(GROUP, "alloy_malloc+alloy_free, 64 B", mp, "ns/pair",
		     GOAL_NONE, 0);
	bench_result(GROUP, "alloy_alloc_default+data_ptr_free, 64 B", md,
		     "ns/pair", GOAL_NONE, 0);
	bench_result(GROUP, "time plain pair / DataPtr pair", mp / md, "x",
		     GOAL_AT_MOST, 1.3);
	pair_instructions(opts, mp / md);
	return 0;
}

static int run_front(const struct bench_opts *opts)
{
	struct alloy_allocator *je;

	alloy_init();
	je = alloy_request_allocator("jemalloc");
	if (!je)
		bench_note("skipped: the jemalloc ways (no jemalloc module)");
	return pairs(opts) || workloads(opts, je != NULL);
}

const struct bench bench_front = {
	.name = "front",
	.help = "the LD_PRELOAD front on a malloc-bound Python workload and on gcc, and the plain-pointer pair",
	.run = run_front,
	.callgrind_child = front_callgrind_child,
};
