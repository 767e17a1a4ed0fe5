// SPDX-License-Identifier: MIT
/*
 * cli/cmd_bench.c - `alloy bench`: its options; the benchmarks, their
 * figures and the table of goals are bench/'s.
 */
#include <stdio.h>
#include <string.h>

#include <alloy/alloy.h>

#include "bench/bench.h"
#include "cli.h"

/* `alloy bench --callgrind-child NAME`: the loops bench/callgrind.c counts. */
static int callgrind_child(const char *name)
{
	const struct bench *b = bench_find(name);

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
	int nonly = 0, instructions = -1;

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
			bench_list();
			return 0;
		} else if (argv[i][0] != '-' && nonly < 16)
			only[nonly++] = argv[i];
		else
			return cli_usage_error(
				&cmd_bench, "unknown option \"%s\"", argv[i]);
	}
	for (int o = 0; o < nonly; o++)
		if (!bench_find(only[o]))
			return cli_usage_error(
				&cmd_bench,
				"no benchmark named \"%s\" (see --list)",
				only[o]);
	/* Counting takes a valgrind run per benchmark: off for smoke runs. */
	opts.instructions = instructions < 0 ? !opts.quick : instructions;
	return bench_run(&opts, only, nonly) ? EXIT_PROBLEM : 0;
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
