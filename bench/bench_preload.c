// SPDX-License-Identifier: MIT
/*
 * bench/bench_preload.c - `alloy bench preload`: whether swapping a
 * program's allocator through `alloy run` costs anything over preloading
 * that allocator directly.
 *
 * The programs are bench/preload_workloads.c's allocation-bound
 * workloads, each a separate process (bench/preload-workloads NAME
 * SCALE), run six ways, two for each backend:
 *
 *   W                                        glibc's malloc
 *   alloy run -- W                           the front on "default"
 *   LD_PRELOAD=.../libjemalloc.so.2 W        jemalloc as the malloc
 *   alloy run --conf cpu:jemalloc -- W       the front on "jemalloc"
 *   LD_PRELOAD=.../libmimalloc.so.2 W        mimalloc as the malloc
 *   alloy run --conf cpu:mimalloc -- W       the front on "mimalloc"
 *
 * in rounds, the order rotating from round to round, so that the
 * machine's drift and bursts of load hit every way alike.  A run's figures
 * are its CPU time (user + system, from wait4), which other processes'
 * load moves less than the wall clock, and its peak resident memory
 * (ru_maxrss; under alloy run it includes the command's own before its
 * exec, a few MiB, which is why the memory goal only judges workloads
 * above 32 MiB).  Each backend's ratios are alloy's median over the
 * direct median.  The footprint workloads report what their blocks keep
 * resident, which does not move with load: they run one round.
 *
 * Every run prints its workload's checksum line (the tags of the blocks
 * it freed), the same whichever malloc runs it: a run whose line differs
 * from the plain run's is an error, whatever its times.
 *
 * With instructions on, each timed workload also runs under callgrind
 * (--trace-children=yes: alloy run and what it execs) at two small
 * scales; the difference drops what a run costs once (loading, alloy's
 * start-up), leaving the workload's own instructions.
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

#define GROUP	       "preload"
#define ROUNDS	       5
#define WORKLOADS_PROG ALLOY_BUILD_DIR "/bench/preload-workloads"
#define VALGRIND       "/usr/bin/valgrind"
/* The timed scale, a smoke run's, and callgrind's two. */
#define SCALE_TIMED    "1"
#define SCALE_QUICK    "0.02"
#define SCALE_CG_ONCE  "0.01"
#define SCALE_CG_TWICE "0.02"

/* The goals of the front's issue: alloy/direct, time and memory. */
#define GOAL_TIME_MEAN	1.05
#define GOAL_TIME_WORST 1.15
#define GOAL_RSS_MEAN	1.05
#define GOAL_RSS_WORST	1.10
#define GOAL_FOOTPRINT	1.05
/* Peak RSS is judged on workloads above this (KiB), direct run's. */
#define RSS_JUDGED_KIB (32 * 1024)

struct workload {
	const char *name;
	bool footprint; /* judged on resident memory, not time */
};

static const struct workload workloads[] = {
	{ "larson", false },
	{ "prodcons", false },
	{ "cfrac", false },
	{ "pairs", false },
	{ "alloctest", false },
	{ "sh6", false },
	{ "aligned", false },
	{ "footprint16", true },
	{ "footprint4k", true },
	{ "footprintvalloc", true },
	{ "footprintmemalign", true },
	{ "footprintposix", true },
};

#define NWORKLOADS (sizeof(workloads) / sizeof(workloads[0]))

/* A backend: the direct way preloads lib (none: glibc), alloy's uses conf. */
struct backend {
	const char *name;    /* in figures */
	const char *lib;     /* the file name to preload, or NULL */
	const char *module;  /* alloy's module of it, or NULL */
	const char *conf;    /* alloy run --conf, or NULL */
	char path[256];	     /* lib found, or "" */
	const char *skipped; /* why its rows are skipped, or NULL */
};

enum { GLIBC, JEMALLOC, MIMALLOC, NBACKENDS };
#define NWAYS (2 * NBACKENDS)

static struct backend backends[NBACKENDS] = {
	[GLIBC] = { "default/glibc" },
	[JEMALLOC] = { "jemalloc", "libjemalloc.so.2", "jemalloc",
		       "cpu:jemalloc" },
	[MIMALLOC] = { "mimalloc", "libmimalloc.so.2", "mimalloc",
		       "cpu:mimalloc" },
};

/* Way 2b is backend b direct, way 2b + 1 through alloy run. */
static const struct backend *way_backend(int w)
{
	return &backends[w / 2];
}

static bool way_alloy(int w)
{
	return w & 1;
}

static const char *way_text(int w)
{
	return way_alloy(w) ? "alloy run" : "direct";
}

/* Where the distribution's libraries are, the multiarch one first. */
static const char *const lib_dirs[] = {
	"/usr/lib/x86_64-linux-gnu",
	"/usr/lib/aarch64-linux-gnu",
	"/usr/lib64",
	"/usr/lib",
	"/usr/local/lib",
};

static void find_backends(void)
{
	static char why[NBACKENDS][160];

	for (int b = 0; b < NBACKENDS; b++) {
		struct backend *be = &backends[b];

		if (!be->lib)
			continue;
		for (size_t d = 0; d < sizeof(lib_dirs) / sizeof(lib_dirs[0]);
		     d++) {
			snprintf(be->path, sizeof(be->path), "%s/%s",
				 lib_dirs[d], be->lib);
			if (!access(be->path, R_OK))
				break;
			be->path[0] = '\0';
		}
		if (!be->path[0])
			snprintf(why[b], sizeof(why[b]), "no %s found",
				 be->lib);
		else if (!alloy_request_allocator(be->module))
			snprintf(why[b], sizeof(why[b]),
				 "alloy has no %s module", be->module);
		else
			continue;
		be->skipped = why[b];
	}
}

/* What one run of a workload gave. */
struct run {
	double cpu_s;	     /* user + system */
	double maxrss_kib;   /* ru_maxrss */
	double resident_kib; /* the footprint line's, or NAN */
	double instructions; /* callgrind's, every process summed, or NAN */
	char checksum[128];  /* the checksum line */
	long damaged;	     /* blocks misaligned or overwritten, or -1 */
};

/* What the child printed, stdout and (callgrind) stderr together. */
static void parse_output(const struct workload *wl, char *text, struct run *r)
{
	size_t len = strlen(wl->name);

	r->resident_kib = NAN;
	r->instructions = NAN;
	r->checksum[0] = '\0';
	r->damaged = -1;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		const char *c = strstr(line, "Collected : ");

		if (c) {
			r->instructions =
				(isnan(r->instructions) ? 0 : r->instructions) +
				strtod(c + 12, NULL);
		} else if (!strncmp(line, wl->name, len) && line[len] == ' ') {
			if (!strncmp(line + len + 1, "resident_kib ", 13))
				r->resident_kib = strtod(line + len + 14, NULL);
			else if (!strncmp(line + len + 1, "damaged ", 8))
				r->damaged = strtol(line + len + 9, NULL, 10);
			else if (!strncmp(line + len + 1, "checksum ", 9))
				snprintf(r->checksum, sizeof(r->checksum), "%s",
					 line);
		}
	}
}

/*
 * argv for way w of workload wl at scale: [valgrind ...] [alloy run
 * [--conf C] --] prog name scale.  cg: under callgrind.
 */
static void way_argv(int w, const struct workload *wl, const char *self,
		     const char *prog, const char *scale, bool cg,
		     const char **argv)
{
	int n = 0;

	if (cg) {
		argv[n++] = VALGRIND;
		argv[n++] = "--tool=callgrind";
		argv[n++] = "--trace-children=yes";
		argv[n++] = "--callgrind-out-file=/dev/null";
	}
	if (way_alloy(w)) {
		argv[n++] = self;
		argv[n++] = "run";
		if (way_backend(w)->conf) {
			argv[n++] = "--conf";
			argv[n++] = way_backend(w)->conf;
		}
		argv[n++] = "--";
	}
	argv[n++] = prog;
	argv[n++] = wl->name;
	argv[n++] = scale;
	argv[n] = NULL;
}

/*
 * Run argv as way w with its output captured (stderr too when cg); 0 and
 * the figures in *r, or -1 after saying why.
 */
static int run_once(int w, const struct workload *wl, const char *const *argv,
		    bool cg, struct run *r)
{
	char out[16384];
	size_t len = 0;
	struct rusage ru;
	int pipefd[2], status;
	ssize_t got;
	pid_t pid;

	if (pipe(pipefd))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null < 0 || dup2(pipefd[1], 1) < 0 ||
		    dup2(cg ? pipefd[1] : null, 2) < 0)
			_exit(126);
		close(pipefd[0]);
		unsetenv("ALLOY_CONF");
		unsetenv("LD_PRELOAD");
		if (!way_alloy(w) && way_backend(w)->lib)
			setenv("LD_PRELOAD", way_backend(w)->path, 1);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(pipefd[1]);
	while ((got = read(pipefd[0], out + len, sizeof(out) - 1 - len)) > 0 ||
	       (got < 0 && errno == EINTR))
		if (got > 0 && (len += (size_t)got) == sizeof(out) - 1)
			break;
	close(pipefd[0]);
	out[len] = '\0';
	if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		fprintf(stderr,
			"alloy bench preload: %s failed (%s %s, status %d)\n",
			wl->name, way_text(w), way_backend(w)->name, status);
		return -1;
	}
	r->cpu_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		   (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	r->maxrss_kib = (double)ru.ru_maxrss;
	parse_output(wl, out, r);
	return 0;
}

/* Whether this run counts instructions (asked, and valgrind is there). */
static bool count;

static bool way_runs(int w)
{
	return !way_backend(w)->skipped;
}

/* The medians of a workload's rounds, per way. */
struct medians {
	double cpu_s[NWAYS], rss_kib[NWAYS], resident_kib[NWAYS];
	double instructions[NWAYS];
};

/*
 * A way's instructions: its run at the larger callgrind scale less its
 * run at the smaller, NAN when either fails.
 */
static double count_way(int w, const struct workload *wl, const char *self,
			const char *prog)
{
	const char *argv[24];
	struct run once, twice;

	way_argv(w, wl, self, prog, SCALE_CG_ONCE, true, argv);
	if (run_once(w, wl, argv, true, &once))
		return NAN;
	way_argv(w, wl, self, prog, SCALE_CG_TWICE, true, argv);
	if (run_once(w, wl, argv, true, &twice))
		return NAN;
	return twice.instructions - once.instructions;
}

/*
 * 1 when run r of way w is wrong: no checksum line, another than the
 * plain run's (expected), or damaged blocks under alloy.  The backend's
 * own damaged blocks, preloaded directly, are its flaw: said (in the
 * first round: the workload is the same each round), not counted.
 */
static int check_run(const struct workload *wl, int w, const struct run *r,
		     const char *expected, bool first)
{
	if (!r->checksum[0] || r->damaged < 0 ||
	    (expected[0] && strcmp(r->checksum, expected))) {
		fprintf(stderr,
			"alloy bench preload: ERROR: %s, %s %s printed \"%s\", the plain run \"%s\"\n",
			wl->name, way_text(w), way_backend(w)->name,
			r->checksum, expected);
		return 1;
	}
	if (r->damaged && way_alloy(w)) {
		fprintf(stderr,
			"alloy bench preload: ERROR: %s, alloy run %s: %ld blocks misaligned or overwritten\n",
			wl->name, way_backend(w)->name, r->damaged);
		return 1;
	}
	if (r->damaged && first)
		bench_note(
			"%s, direct %s: %ld blocks misaligned or overwritten (the backend's own)",
			wl->name, way_backend(w)->name, r->damaged);
	return 0;
}

/*
 * The rounds of one workload, every way; medians in *m.  Returns how many
 * runs were wrong (check_run), or -1 when a run failed.
 */
static int run_workload(const struct bench_opts *opts,
			const struct workload *wl, const char *self,
			const char *prog, struct medians *m)
{
	double cpu[NWAYS][ROUNDS], rss[NWAYS][ROUNDS], res[NWAYS][ROUNDS];
	int rounds = opts->quick || wl->footprint ? 1 : ROUNDS, bad = 0;
	const char *scale = opts->quick ? SCALE_QUICK : SCALE_TIMED;
	char expected[128] = "";
	const char *argv[24];

	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < NWAYS; k++) {
			int w = (k + r) % NWAYS;
			struct run run;

			if (!way_runs(w))
				continue;
			way_argv(w, wl, self, prog, scale, false, argv);
			if (run_once(w, wl, argv, false, &run))
				return -1;
			cpu[w][r] = run.cpu_s;
			rss[w][r] = run.maxrss_kib;
			res[w][r] = run.resident_kib;
			if (!expected[0] && w == 0)
				snprintf(expected, sizeof(expected), "%s",
					 run.checksum);
			bad += check_run(wl, w, &run, expected, r == 0);
		}
	for (int w = 0; w < NWAYS; w++) {
		m->cpu_s[w] = m->rss_kib[w] = m->resident_kib[w] = NAN;
		m->instructions[w] = NAN;
		if (!way_runs(w))
			continue;
		m->cpu_s[w] = bench_median(cpu[w], (size_t)rounds);
		m->rss_kib[w] = bench_median(rss[w], (size_t)rounds);
		m->resident_kib[w] = bench_median(res[w], (size_t)rounds);
		if (count && !wl->footprint)
			m->instructions[w] = count_way(w, wl, self, prog);
	}
	return bad;
}

/* Per backend, over the workloads: ratios for the geomeans and worst. */
struct tally {
	double log_time, log_rss, log_instr;
	int ntime, nrss, ninstr;
	double worst_time, worst_rss, worst_footprint;
	const char *worst_time_at, *worst_rss_at, *worst_footprint_at;
};

static void worst(double v, const char *at, double *w, const char **w_at)
{
	if (!isnan(v) && (!*w_at || v > *w))
		*w = v, *w_at = at;
}

static void ratio(const char *what, const struct workload *wl,
		  const struct backend *be, double v, enum bench_goal goal,
		  double target)
{
	char metric[128];

	snprintf(metric, sizeof(metric), "%s alloy/direct, %s, %s", what,
		 wl->name, be->name);
	bench_result(GROUP, metric, v, "x", goal, target);
}

/* Backend b's ratios on one workload, and its tally. */
static void report_workload(const struct workload *wl, int b,
			    const struct medians *m, struct tally *t)
{
	const struct backend *be = &backends[b];
	int d = 2 * b, a = 2 * b + 1;
	double rss = m->rss_kib[a] / m->rss_kib[d];
	bool judged = m->rss_kib[d] > RSS_JUDGED_KIB;

	if (be->skipped) {
		bench_note("%s, %s: skipped (%s)", wl->name, be->name,
			   be->skipped);
		return;
	}
	if (wl->footprint) {
		double res = m->resident_kib[a] / m->resident_kib[d];

		ratio("resident", wl, be, res, GOAL_AT_MOST, GOAL_FOOTPRINT);
		worst(res, wl->name, &t->worst_footprint,
		      &t->worst_footprint_at);
	} else {
		double time = m->cpu_s[a] / m->cpu_s[d];

		ratio("time", wl, be, time, GOAL_AT_MOST, GOAL_TIME_WORST);
		t->log_time += log(time);
		t->ntime++;
		worst(time, wl->name, &t->worst_time, &t->worst_time_at);
	}
	ratio("peak RSS", wl, be, rss, judged ? GOAL_AT_MOST : GOAL_NONE,
	      GOAL_RSS_WORST);
	if (judged) {
		t->log_rss += log(rss);
		t->nrss++;
		worst(rss, wl->name, &t->worst_rss, &t->worst_rss_at);
	}
	if (m->instructions[a] > 0 && m->instructions[d] > 0) {
		double ins = m->instructions[a] / m->instructions[d];

		ratio("instructions", wl, be, ins, GOAL_NONE, 0);
		t->log_instr += log(ins);
		t->ninstr++;
	}
}

/* The plain run's own figures, for scale. */
static void report_plain(const struct workload *wl, const struct medians *m)
{
	char metric[128];

	snprintf(metric, sizeof(metric), "%s, plain: %s", wl->name,
		 wl->footprint ? "resident" : "CPU time");
	if (wl->footprint)
		bench_result(GROUP, metric, m->resident_kib[0] / 1024, "MiB",
			     GOAL_NONE, 0);
	else
		bench_result(GROUP, metric, m->cpu_s[0], "s", GOAL_NONE, 0);
	snprintf(metric, sizeof(metric), "%s, plain: peak RSS", wl->name);
	bench_result(GROUP, metric, m->rss_kib[0] / 1024, "MiB", GOAL_NONE, 0);
}

/*
 * One goal of a backend over the workloads: its geomean (NAN: judged on
 * the worst alone) and worst as figures, and a row of the summary.
 */
struct judged {
	const char *what;   /* "time", "peak RSS", "resident" */
	const char *figure; /* what the summary row says it judges */
	double mean, goal_mean;
	double worst, goal_worst;
	const char *worst_at; /* the worst workload; NULL: none measured */
	const char *instr;    /* the row's instruction cell */
};

static void judge(const struct backend *be, const struct judged *j)
{
	char metric[128], figure[128], measured[96], goal[32] = "";
	bool met = j->worst <= j->goal_worst;

	if (!j->worst_at)
		return;
	if (!isnan(j->mean)) {
		snprintf(metric, sizeof(metric), "%s alloy/direct, %s, geomean",
			 j->what, be->name);
		bench_result(GROUP, metric, j->mean, "x", GOAL_AT_MOST,
			     j->goal_mean);
		snprintf(goal, sizeof(goal), "<= %.2f, none > ", j->goal_mean);
		met &= j->mean <= j->goal_mean;
	} else {
		snprintf(goal, sizeof(goal), "<= ");
	}
	snprintf(goal + strlen(goal), sizeof(goal) - strlen(goal), "%.2f",
		 j->goal_worst);
	snprintf(metric, sizeof(metric), "%s alloy/direct, %s, worst (%s)",
		 j->what, be->name, j->worst_at);
	bench_result(GROUP, metric, j->worst, "x", GOAL_AT_MOST, j->goal_worst);
	snprintf(figure, sizeof(figure), "alloy run / direct, %s (%s)",
		 be->name, j->figure);
	if (isnan(j->mean))
		snprintf(measured, sizeof(measured), "worst %.2f (%s)",
			 j->worst, j->worst_at);
	else
		snprintf(measured, sizeof(measured),
			 "geomean %.2f, worst %.2f (%s)", j->mean, j->worst,
			 j->worst_at);
	bench_summary(figure, goal, measured, j->instr, bench_verdict(met));
}

static double geomean(double sum_of_logs, int n)
{
	return n ? exp(sum_of_logs / n) : NAN;
}

/* A backend's geomeans and worst, as figures and rows of the summary. */
static void report_backend(int b, const struct tally *t)
{
	const struct backend *be = &backends[b];
	char instr[64] = "n/a";
	struct judged time = {
		"time",		  "time",	 geomean(t->log_time, t->ntime),
		GOAL_TIME_MEAN,	  t->worst_time, GOAL_TIME_WORST,
		t->worst_time_at, instr
	};
	struct judged rss = { "peak RSS",
			      "peak RSS above 32 MiB",
			      geomean(t->log_rss, t->nrss),
			      GOAL_RSS_MEAN,
			      t->worst_rss,
			      GOAL_RSS_WORST,
			      t->worst_rss_at,
			      "n/a" };
	struct judged footprint = { "resident",
				    "footprint, resident",
				    NAN,
				    0,
				    t->worst_footprint,
				    GOAL_FOOTPRINT,
				    t->worst_footprint_at,
				    "n/a" };

	if (be->skipped)
		return;
	if (t->ninstr)
		snprintf(instr, sizeof(instr), "alloy/direct geomean %.2f",
			 geomean(t->log_instr, t->ninstr));
	judge(be, &time);
	judge(be, &rss);
	judge(be, &footprint);
}

/*
 * ALLOY_BENCH_PRELOAD_WORKLOADS, names separated by spaces or commas,
 * picks some of the workloads (a test's short run); unset, all run.
 */
static bool wanted(const struct workload *wl)
{
	const char *only = getenv("ALLOY_BENCH_PRELOAD_WORKLOADS");
	size_t len = strlen(wl->name);

	if (!only || !*only)
		return true;
	for (const char *p = only; *p; p += strcspn(p, " ,")) {
		p += strspn(p, " ,");
		if (!strncmp(p, wl->name, len) &&
		    (p[len] == '\0' || strchr(" ,", p[len])))
			return true;
	}
	return false;
}

static int run_preload(const struct bench_opts *opts)
{
	struct tally tally[NBACKENDS] = { { 0 } };
	char self[4096];
	/* A path valgrind can exec too, unlike /proc/self/exe. */
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int mismatches = 0;

	if (len <= 0) {
		fprintf(stderr, "alloy bench preload: /proc/self/exe: %s\n",
			strerror(errno));
		return 1;
	}
	self[len] = '\0';
	if (access(WORKLOADS_PROG, X_OK)) {
		bench_note("skipped: the workloads need %s (a build tree's)",
			   WORKLOADS_PROG);
		return 0;
	}
	alloy_init();
	find_backends();
	count = opts->instructions;
	if (count && access(VALGRIND, X_OK)) {
		bench_note("instructions: not counted: no %s", VALGRIND);
		count = false;
	}
	for (size_t i = 0; i < NWORKLOADS; i++) {
		const struct workload *wl = &workloads[i];
		struct medians m;
		char metric[128];
		int bad;

		if (!wanted(wl))
			continue;
		bad = run_workload(opts, wl, self, WORKLOADS_PROG, &m);
		if (bad < 0)
			return 1;
		mismatches += bad;
		report_plain(wl, &m);
		for (int b = 0; b < NBACKENDS; b++)
			report_workload(wl, b, &m, &tally[b]);
		snprintf(metric, sizeof(metric), "%s: wrong results", wl->name);
		bench_result(GROUP, metric, bad, "runs", GOAL_AT_MOST, 0);
	}
	for (int b = 0; b < NBACKENDS; b++)
		report_backend(b, &tally[b]);
	if (mismatches) {
		fprintf(stderr,
			"alloy bench preload: ERROR: %d runs gave a wrong result\n",
			mismatches);
		return 1;
	}
	return 0;
}

const struct bench bench_preload = {
	.name = "preload",
	.help = "alloy run --conf cpu:X against LD_PRELOAD of X on allocation-bound workloads",
	.run = run_preload,
};
