// SPDX-License-Identifier: MIT
/*
 * bench/suite.c - the benchmarks `alloy bench` knows, in the order they
 * run, and running those asked for.
 */
#include <stdio.h>
#include <string.h>

#include <alloy/alloy.h>

#include "bench.h"

/*
 * sweep first: it compares with glibc's malloc, whose thresholds move with
 * what the process freed before, so it runs on a heap no other benchmark
 * has touched yet, as a program's first arrays would.
 */
static const struct bench *const benches[] = {
	&bench_sweep,	 &bench_core,	 &bench_backends, &bench_c10,
	&bench_reporter, &bench_tensor,	 &bench_cuda,	  &bench_profiler,
	&bench_front,	 &bench_preload, &bench_debug,
};

#define NBENCHES (sizeof(benches) / sizeof(benches[0]))

const struct bench *bench_find(const char *name)
{
	for (size_t b = 0; b < NBENCHES; b++)
		if (!strcmp(name, benches[b]->name))
			return benches[b];
	return NULL;
}

void bench_list(void)
{
	for (size_t b = 0; b < NBENCHES; b++)
		printf("%-12s %s\n", benches[b]->name, benches[b]->help);
}

int bench_run(const struct bench_opts *opts, const char *const *only, int nonly)
{
	int rc = 0;

	bench_output(opts->json);
	alloy_init();
	for (size_t b = 0; b < NBENCHES; b++) {
		bool wanted = nonly == 0;

		for (int o = 0; o < nonly; o++)
			wanted |= !strcmp(only[o], benches[b]->name);
		if (!wanted)
			continue;
		if (!opts->json)
			printf("%s: %s\n", benches[b]->name, benches[b]->help);
		/* Before any child a benchmark forks inherits the buffer. */
		fflush(stdout);
		if (benches[b]->run(opts)) {
			fprintf(stderr, "alloy bench %s: %s\n",
				benches[b]->name, alloy_last_error());
			rc = -1;
		}
	}
	bench_print_results();
	return rc;
}
