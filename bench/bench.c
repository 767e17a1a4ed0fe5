// SPDX-License-Identifier: MIT
/*
 * bench/bench.c - what every benchmark shares: recording its figures and
 * the rows of the table of goals, printing them as text or JSON, timing,
 * medians, side-by-side rounds, and alloy's default pair.
 *
 * The benchmarks call in here and bench/suite.c, which names them all,
 * calls them: nothing here calls a benchmark back.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <alloy/alloy.h>

#include "analysis/json.h"
#include "bench.h"

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

void bench_output(bool json)
{
	json_output = json;
}

void bench_print_results(void)
{
	if (json_output)
		print_json();
	else
		print_summary();
	free(results);
	results = NULL;
	nresults = capresults = 0;
}

/* ---- alloy's default pair -------------------------------------------- */

/* Keep the compiler from dropping the work. */
static void *volatile sink;

/* Through the CPU default, whichever allocator that is now. */
double bench_default_round(const void *arg, size_t size, long iters)
{
	double t0 = bench_now_ns();

	for (long i = 0; i < iters; i++) {
		struct alloy_data_ptr dp;

		if (alloy_alloc_default(ALLOY_DEVICE_CPU, size, 0, &dp))
			return -1;
		*(volatile char *)dp.ptr = 1;
		sink = dp.ptr;
		alloy_data_ptr_free(&dp);
	}
	return (bench_now_ns() - t0) / (double)iters;
}

int bench_use_default(void)
{
	struct alloy_allocator *a = alloy_find_allocator("default");

	return a && !alloy_set_default(ALLOY_DEVICE_CPU, a) ? 0 : -1;
}
