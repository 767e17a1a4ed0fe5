// SPDX-License-Identifier: MIT
/*
 * tools/cmd_demo.c - `alloy demo`: the main job, a small workload through
 * the device contexts, with a summary of what each allocator served.
 */
#include <string.h>

#include <alloy/alloy.h>

#include "cli.h"

#define NBUF 64

static int summary(struct alloy_allocator *a, void *arg)
{
	struct alloy_allocator_stats st = { .size = sizeof(st),
					    .version = ALLOY_STATS_VERSION };

	(void)arg;
	if (alloy_allocator_stats(a, &st))
		return 0;
	printf("  %-14s %-10s %10llu allocs %10llu frees %8lld live blocks%s\n",
	       alloy_allocator_name(a),
	       alloy_device_type_name(alloy_allocator_device_type(a)),
	       (unsigned long long)st.num_allocs,
	       (unsigned long long)st.num_frees, alloy_allocator_live_blocks(a),
	       alloy_get_default(alloy_allocator_device_type(a)) == a ?
		       "  (cpu default)" : "");
	return 0;
}

static int run_demo(int argc, char **argv)
{
	struct alloy_data_ptr bufs[NBUF] = { 0 };
	size_t total = 0;
	int rc = 0;

	if (argc > 1)
		return cli_usage_error(&cmd_demo, "unexpected argument \"%s\"",
				       argv[1]);
	alloy_init();
	printf("alloy demo: CPU allocations served by \"%s\"\n",
	       alloy_allocator_name(alloy_get_default(ALLOY_DEVICE_CPU)));
	for (int step = 0; step < 4 && !rc; step++) {
		for (int i = 0; i < NBUF; i++) {
			size_t n = (size_t)64 << ((i + step) % 14);

			alloy_data_ptr_free(&bufs[i]);
			rc = alloy_context_new(ALLOY_CPU, n, &bufs[i]);
			if (rc)
				break;
			memset(bufs[i].ptr, i, n);
			total += n;
			if (i > 0) {
				size_t c = bufs[i - 1].size < n ? bufs[i - 1].size : n;

				rc = alloy_copy_bytes(c, bufs[i - 1].ptr, ALLOY_CPU,
						      bufs[i].ptr, ALLOY_CPU);
				if (rc)
					break;
			}
		}
	}
	for (int i = 0; i < NBUF; i++)
		alloy_data_ptr_free(&bufs[i]);
	if (rc) {
		fprintf(stderr, "alloy demo: %s\n", alloy_last_error());
		return EXIT_PROBLEM;
	}
	printf("allocated %zu bytes in %d blocks over 4 steps\n", total, 4 * NBUF);
	printf("summary:\n");
	alloy_foreach_allocator(summary, NULL);
	return 0;
}

const struct cli_command cmd_demo = {
	.name = "demo",
	.summary = "run the demo workload and print what each allocator served",
	.usage = "usage: alloy demo\n"
		 "\n"
		 "Runs a small workload through the device contexts with the\n"
		 "allocators ALLOY_CONF selects, then prints a summary per allocator.\n",
	.run = run_demo,
};
