// SPDX-License-Identifier: MIT
/*
 * tools/cmd_bench.c - `alloy bench`: run the benchmarks, print the figures
 * and, at the end, the table of goals.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <alloy/alloy.h>

#include "bench.h"
#include "cli.h"
#include "json.h"

/*
 * sweep first: it compares with glibc's malloc, whose thresholds move with
 * what the process freed before, so it runs on a heap no other benchmark
 * has touched yet, as a program's first arrays would.
 */
static const struct bench *const benches[] = {
	&bench_sweep,	 &bench_core,	&bench_backends, &bench_c10,
	&bench_reporter, &bench_tensor, &bench_cuda,	  &bench_profiler,
	&bench_front,	 &bench_debug,
};

#define NBENCHES (sizeof(benches) / sizeof(benches[0]))

struct result {
	char group[32];
	char metric[96];
	double value;
	char unit[16];
	enum bench_goal goal;
	double target;
};

struct summary_row {
	char figure[96];
	char goal[32];
	char measured[96];
	char instructions[160];
	enum bench_verdict verdict;
};

static struct result *results;
static size_t nresults, capresults;
static struct summary_row summary[32];
static size_t nsummary;
static bool json_output;

static const char *verdict(const struct result *r)
{
	switch (r->goal) {
	case GOAL_AT_MOST:
		return r->value <= r->target ? "met" : "MISSED";
	case GOAL_AT_LEAST:
		return r->value >= r->target ? "met" : "MISSED";
	default:
		return "";
	}
}

void bench_result(const char *group, const char *metric, double value,
		  const char *unit, enum bench_goal goal, double target)
{
	struct result *r;

	if (nresults == capresults) {
		size_t cap = capresults ? 2 * capresults : 64;
		struct result *n = realloc(results, cap * sizeof(*n));

		if (!n) {
			fprintf(stderr,
				"alloy bench: out of memory for results\n");
			return;
		}
		results = n;
		capresults = cap;
	}
	r = &results[nresults++];
	snprintf(r->group, sizeof(r->group), "%s", group);
	snprintf(r->metric, sizeof(r->metric), "%s", metric);
	snprintf(r->unit, sizeof(r->unit), "%s", unit);
	r->value = value;
	r->goal = goal;
	r->target = target;
	if (!json_output) {
		printf("  %-52s %12.3f %-8s", metric, value, unit);
		if (goal != GOAL_NONE)
			printf(" goal %s %.2f: %s",
			       goal == GOAL_AT_MOST ? "<=" : ">=", target,
			       verdict(r));
		printf("\n");
		fflush(stdout);
	}
}

void bench_note(const char *fmt, ...)
{
	FILE *out = json_output ? stderr : stdout;
	va_list ap;

	fputs("  ", out);
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
	fflush(out);
}

void bench_summary(const char *figure, const char *goal, const char *measured,
		   const char *instructions, enum bench_verdict verdict)
{
	struct summary_row *r;

	if (nsummary == sizeof(summary) / sizeof(summary[0]))
		return;
	r = &summary[nsummary++];
	snprintf(r->figure, sizeof(r->figure), "%s", figure);
	snprintf(r->goal, sizeof(r->goal), "%s", goal);
	snprintf(r->measured, sizeof(r->measured), "%s", measured);
	snprintf(r->instructions, sizeof(r->instructions), "%s", instructions);
	r->verdict = verdict;
}

static const char *const verdict_names[] = {
	[VERDICT_MISSED] = "MISSED",
	[VERDICT_MET] = "met",
	[VERDICT_NOT_MEASURED] = "not measured",
	[VERDICT_NO_GOAL] = "-",
};

/* The goals of this run as a Markdown table (docs/BENCHMARKS.md's form). */
static void print_summary(void)
{
	if (!nsummary)
		return;
	printf("\nsummary:\n\n"
	       "| figure | goal | this run | instructions per pair | verdict |\n"
	       "|---|---|---|---|---|\n");
	for (size_t i = 0; i < nsummary; i++)
		printf("| %s | %s | %s | %s | %s |\n", summary[i].figure,
		       summary[i].goal, summary[i].measured,
		       summary[i].instructions,
		       verdict_names[summary[i].verdict]);
}

void bench_range(const double *v, size_t n, double *lo, double *hi)
{
	*lo = NAN;
	*hi = NAN;
	for (size_t i = 0; i < n; i++) {
		if (isnan(v[i]))
			continue;
		if (isnan(*lo) || v[i] < *lo)
			*lo = v[i];
		if (isnan(*hi) || v[i] > *hi)
			*hi = v[i];
	}
}

double bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

long bench_iters(const struct bench_opts *opts, long n)
{
	if (!opts->quick)
		return n;
	return n / 20 > 0 ? n / 20 : 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double bench_median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

int bench_side_by_side(const struct bench_way *ways, int n, size_t size,
		       long iters, int chunks, double *median)
{
	double *t = malloc(sizeof(*t) * (size_t)n * (size_t)chunks);

	if (!t)
		return -1;
	for (int c = 0; c < chunks; c++) {
		for (int k = 0; k < n; k++) {
			int w = (c + k) % n;
			double ns = ways[w].round(ways[w].arg, size, iters);

			if (ns < 0) {
				free(t);
				return -1;
			}
			t[w * chunks + c] = ns;
		}
	}
	for (int w = 0; w < n; w++)
		median[w] = bench_median(&t[w * chunks], (size_t)chunks);
	free(t);
	return 0;
}

static void print_json(void)
{
	printf("{\"alloy_version\": ");
	json_string(stdout, alloy_version());
	printf(", \"results\": [");
	for (size_t i = 0; i < nresults; i++) {
		const struct result *r = &results[i];

		printf("%s\n  {\"group\": ", i ? "," : "");
		json_string(stdout, r->group);
		printf(", \"metric\": ");
		json_string(stdout, r->metric);
		printf(", \"value\": ");
		json_number(stdout, r->value);
		printf(", \"unit\": ");
		json_string(stdout, r->unit);
		if (r->goal != GOAL_NONE) {
			printf(", \"goal\": \"%s\", \"target\": ",
			       r->goal == GOAL_AT_MOST ? "at_most"
						       : "at_least");
			json_number(stdout, r->target);
			printf(", \"met\": %s",
			       strcmp(verdict(r), "met") ? "false" : "true");
		}
		printf("}");
	}
	printf("\n], \"summary\": [");
	for (size_t i = 0; i < nsummary; i++) {
		printf("%s\n  {\"figure\": ", i ? "," : "");
		json_string(stdout, summary[i].figure);
		printf(", \"goal\": ");
		json_string(stdout, summary[i].goal);
		printf(", \"measured\": ");
		json_string(stdout, summary[i].measured);
		printf(", \"instructions\": ");
		json_string(stdout, summary[i].instructions);
		printf(", \"verdict\": ");
		json_string(stdout, verdict_names[summary[i].verdict]);
		printf("}");
	}
	printf("\n]}\n");
}

static const struct bench *find_bench(const char *name)
{
	for (size_t b = 0; b < NBENCHES; b++)
		if (!strcmp(name, benches[b]->name))
			return benches[b];
	return NULL;
}

/* `alloy bench --callgrind-child NAME`: the loops tools/callgrind.c counts. */
static int callgrind_child(const char *name)
{
	const struct bench *b = find_bench(name);

	if (!b || !b->callgrind_child)
		return cli_usage_error(
			&cmd_bench, "no instruction counts for \"%s\"", name);
	alloy_init();
	if (b->callgrind_child()) {
		fprintf(stderr, "alloy bench %s: %s\n", name,
			alloy_last_error());
		return EXIT_PROBLEM;
	}
	return 0;
}

static int run_bench(int argc, char **argv)
{
	struct bench_opts opts = { 0 };
	const char *only[16];
	int nonly = 0, rc = 0, instructions = -1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			opts.json = true;
		else if (!strcmp(argv[i], "--quick"))
			opts.quick = true;
		else if (!strcmp(argv[i], "--instructions"))
			instructions = 1;
		else if (!strcmp(argv[i], "--no-instructions"))
			instructions = 0;
		else if (!strcmp(argv[i], "--callgrind-child") && i + 1 < argc)
			return callgrind_child(argv[i + 1]);
		else if (!strcmp(argv[i], "--list")) {
			for (size_t b = 0; b < NBENCHES; b++)
				printf("%-12s %s\n", benches[b]->name,
				       benches[b]->help);
			return 0;
		} else if (argv[i][0] != '-' && nonly < 16)
			only[nonly++] = argv[i];
		else
			return cli_usage_error(
				&cmd_bench, "unknown option \"%s\"", argv[i]);
	}
	for (int o = 0; o < nonly; o++)
		if (!find_bench(only[o]))
			return cli_usage_error(
				&cmd_bench,
				"no benchmark named \"%s\" (see --list)",
				only[o]);
	/* Counting takes a valgrind run per benchmark: off for smoke runs. */
	opts.instructions = instructions < 0 ? !opts.quick : instructions;
	json_output = opts.json;
	alloy_init();
	for (size_t b = 0; b < NBENCHES; b++) {
		bool wanted = nonly == 0;

		for (int o = 0; o < nonly; o++)
			wanted |= !strcmp(only[o], benches[b]->name);
		if (!wanted)
			continue;
		if (!opts.json)
			printf("%s: %s\n", benches[b]->name, benches[b]->help);
		/* Before any child a benchmark forks inherits the buffer. */
		fflush(stdout);
		if (benches[b]->run(&opts)) {
			fprintf(stderr, "alloy bench %s: %s\n",
				benches[b]->name, alloy_last_error());
			rc = EXIT_PROBLEM;
		}
	}
	if (opts.json)
		print_json();
	else
		print_summary();
	free(results);
	return rc;
}

const struct cli_command cmd_bench = {
	.name = "bench",
	.summary = "measure alloy against the direct calls, side by side",
	.usage =
		"usage: alloy bench [--json] [--quick] [--[no-]instructions] [--list]\n"
		"                   [NAME...]\n"
		"\n"
		"Runs the benchmarks (all, or those named) and prints each figure\n"
		"with the goal it is judged against, then a table of the goals.\n"
		"Every ratio compares two ways of doing the same work measured in\n"
		"the same run.  Beside the times, the alloc+free benchmarks count\n"
		"instructions per pair: the same loops run again under valgrind's\n"
		"callgrind (time ratios only where valgrind is missing).\n"
		"\n"
		"  --json              print the results as one JSON object\n"
		"  --quick             twentieth of the iterations (a smoke run);\n"
		"                      counts no instructions unless asked\n"
		"  --instructions      count instructions (the default without --quick)\n"
		"  --no-instructions   time ratios only\n"
		"  --list              list the benchmarks\n"
		"\n"
		"ALLOY_BENCH_KEEP_CG=1 keeps callgrind's dumps (their directory is\n"
		"printed) for callgrind_annotate.\n",
	.run = run_bench,
};
