// SPDX-License-Identifier: MIT
/*
 * tools/cmd_replay.c - `alloy replay TRACE --allocator NAME`: run a
 * trace's allocations and frees against any registered allocator.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "trace.h"

static void progress(void *arg, size_t done, size_t total)
{
	(void)arg;
	fprintf(stderr, "\rreplay: %3d%% (%zu of %zu events)%s",
		total ? (int)(100.0 * (double)done / (double)total) : 100, done,
		total, done == total ? "\n" : "");
}

static int run_replay(int argc, char **argv)
{
	const char *path = NULL, *name = NULL;
	struct trace_summary *sum = NULL;
	struct replay_result r;
	struct alloy_allocator *a;
	struct trace tr;
	bool json = false;
	char err[512], h1[32], h2[32];
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--allocator") || !strcmp(argv[i], "-a")) {
			if (i + 1 >= argc)
				return cli_usage_error(
					&cmd_replay,
					"--allocator needs a name");
			name = argv[++i];
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			return cli_usage_error(
				&cmd_replay, "unknown option \"%s\"", argv[i]);
		} else if (!path) {
			path = argv[i];
		} else {
			return cli_usage_error(&cmd_replay,
					       "one trace at a time");
		}
	}
	if (!path)
		return cli_usage_error(&cmd_replay, "no trace file given");
	if (!name)
		return cli_usage_error(&cmd_replay,
				       "--allocator NAME is required");
	/*
	 * Read before the library starts: with ALLOY_CONF=trace:SAME_PATH
	 * starting it truncates the file, and the replay is then traced.
	 */
	if (trace_read(path, &tr, err, sizeof(err))) {
		fprintf(stderr, "alloy replay: %s\n", err);
		return EXIT_PROBLEM;
	}
	alloy_init();
	a = alloy_request_allocator(name);
	if (!a) {
		fprintf(stderr, "alloy replay: %s\n", alloy_last_error());
		trace_free(&tr);
		return EXIT_PROBLEM;
	}
	if (!tr.complete)
		fprintf(stderr,
			"alloy replay: %s has no end record; replaying its %zu events\n",
			path, tr.nev);
	sum = malloc(sizeof(*sum));
	if (!sum) {
		trace_free(&tr);
		fprintf(stderr, "alloy replay: out of memory\n");
		return EXIT_PROBLEM;
	}
	trace_summarize(&tr, sum);
	/* Progress only for people watching a terminal, not for pipes. */
	rc = trace_replay(&tr, a, &r, isatty(STDERR_FILENO) ? progress : NULL,
			  NULL);
	if (rc) {
		fprintf(stderr, "alloy replay: %s\n",
			*alloy_last_error() ? alloy_last_error()
					    : alloy_strerror(rc));
		rc = EXIT_PROBLEM;
		goto out;
	}
	if (json) {
		printf("{\"trace\": ");
		json_string(stdout, path);
		printf(", \"allocator\": ");
		json_string(stdout, name);
		printf(", \"events\": %zu, \"seconds\": ", tr.nev);
		json_number(stdout, r.seconds);
		printf(", \"allocs\": %llu, \"frees\": %llu, \"peak_live_bytes\": %llu, "
		       "\"trace_peak_bytes\": %llu",
		       (unsigned long long)r.allocs,
		       (unsigned long long)r.frees,
		       (unsigned long long)r.peak_live,
		       (unsigned long long)sum->all.peak_bytes);
		if (r.have_stats)
			printf(", \"max_reserved_bytes\": %llu, \"max_allocated_bytes\": %llu, "
			       "\"end_reserved_bytes\": %llu, \"end_allocated_bytes\": %llu",
			       (unsigned long long)r.max_reserved,
			       (unsigned long long)r.max_allocated,
			       (unsigned long long)r.end.reserved,
			       (unsigned long long)r.end.allocated);
		printf("}\n");
	} else {
		printf("replayed %s against \"%s\": %zu events (%llu allocs, %llu frees)\n",
		       path, name, tr.nev, (unsigned long long)r.allocs,
		       (unsigned long long)r.frees);
		printf("time            %.6f s (%.1f ns per event)\n",
		       r.seconds,
		       tr.nev ? r.seconds * 1e9 / (double)tr.nev : 0);
		printf("peak live bytes %llu (%s)%s\n",
		       (unsigned long long)r.peak_live,
		       trace_human_bytes(r.peak_live, h1, sizeof(h1)),
		       r.peak_live == sum->all.peak_bytes
			       ? ", as in the trace"
			       : ", differs from the trace");
		if (r.have_stats) {
			printf("reserved        %llu (%s) at most, %llu at the end\n",
			       (unsigned long long)r.max_reserved,
			       trace_human_bytes(r.max_reserved, h1,
						 sizeof(h1)),
			       (unsigned long long)r.end.reserved);
			printf("allocated       %llu (%s) at most, %llu at the end\n",
			       (unsigned long long)r.max_allocated,
			       trace_human_bytes(r.max_allocated, h2,
						 sizeof(h2)),
			       (unsigned long long)r.end.allocated);
		} else {
			printf("reserved        (\"%s\" has no stats op: reserved = allocated)\n",
			       name);
		}
	}
	rc = r.peak_live == sum->all.peak_bytes ? 0 : EXIT_PROBLEM;
out:
	free(sum);
	trace_free(&tr);
	return rc;
}

const struct cli_command cmd_replay = {
	.name = "replay",
	.summary = "replay a trace against an allocator: time, peak, reserved",
	.usage =
		"usage: alloy replay TRACE --allocator NAME [--json]\n"
		"\n"
		"Performs every allocation and free of TRACE, in order, with allocator\n"
		"NAME (loaded as a module if needed), and prints the time it took,\n"
		"the peak of live bytes (which must equal the trace's own peak) and,\n"
		"for allocators that report stats (caching allocators), the bytes\n"
		"reserved from the system against the bytes handed out, at most (as\n"
		"sampled at the peak and every 1024 events) and at the end.\n"
		"Shows progress on stderr when that is a terminal.\n"
		"\n"
		"Exit status 1 if the trace is malformed, an allocation fails or the\n"
		"replayed peak differs from the trace's.\n",
	.run = run_replay,
};
