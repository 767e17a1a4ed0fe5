// SPDX-License-Identifier: MIT
/*
 * tools/cmd_bench.c - `alloy bench`: run the benchmarks, print the figures.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <alloy/alloy.h>

#include "bench.h"
#include "cli.h"
#include "json.h"

static const struct bench *const benches[] = {
	&bench_core,   &bench_reporter, &bench_backends,
	&bench_tensor, &bench_cuda,	&bench_front,
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

static struct result *results;
static size_t nresults, capresults;
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
	printf("\n]}\n");
}

static int run_bench(int argc, char **argv)
{
	struct bench_opts opts = { 0 };
	const char *only[16];
	int nonly = 0, rc = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			opts.json = true;
		else if (!strcmp(argv[i], "--quick"))
			opts.quick = true;
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
	for (int o = 0; o < nonly; o++) {
		size_t b;

		for (b = 0; b < NBENCHES; b++)
			if (!strcmp(only[o], benches[b]->name))
				break;
		if (b == NBENCHES)
			return cli_usage_error(
				&cmd_bench,
				"no benchmark named \"%s\" (see --list)",
				only[o]);
	}
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
		if (benches[b]->run(&opts)) {
			fprintf(stderr, "alloy bench %s: %s\n",
				benches[b]->name, alloy_last_error());
			rc = EXIT_PROBLEM;
		}
	}
	if (opts.json)
		print_json();
	free(results);
	return rc;
}

const struct cli_command cmd_bench = {
	.name = "bench",
	.summary = "measure alloy against the direct calls, side by side",
	.usage =
		"usage: alloy bench [--json] [--quick] [--list] [NAME...]\n"
		"\n"
		"Runs the benchmarks (all, or those named) and prints each figure\n"
		"with the goal it is judged against.  Every ratio compares two ways\n"
		"of doing the same work measured in the same run.\n"
		"\n"
		"  --json    print the results as one JSON object\n"
		"  --quick   twentieth of the iterations (a smoke run)\n"
		"  --list    list the benchmarks\n",
	.run = run_bench,
};
