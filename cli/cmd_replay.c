// SPDX-License-Identifier: MIT
/*
 * cli/cmd_replay.c - `alloy replay TRACE --allocator NAME`: run a
 * trace's allocations and frees against any registered allocator, once
 * or as the steps of a training loop (--repeat).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/json.h"
#include "analysis/trace.h"
#include "bench/bench.h"
#include "cli.h"

static void progress(void *arg, size_t done, size_t total)
{
	(void)arg;
	fprintf(stderr, "\rreplay: %3d%% (%zu of %zu events)%s",
		total ? (int)(100.0 * (double)done / (double)total) : 100, done,
		total, done == total ? "\n" : "");
}

#define REPEAT_MAX 1000

/*
 * Replay tr (its summary sum) repeat times into *first (the first pass)
 * and *later_median (the median time of the others, 0 for one pass).
 * Requested and usable bytes are the first pass's (every pass requests
 * the same); reserved "at most" is over all passes, reserved at the end
 * the last pass's.  0, or a negative errno; *bad_peak is set when a
 * pass's peak differed from the trace's.
 */
static int replay_passes(const struct trace *tr,
			 const struct trace_summary *sum,
			 struct alloy_allocator *a, unsigned repeat,
			 struct replay_result *first, double *later_median,
			 bool *bad_peak)
{
	double *later = NULL;
	int rc;

	*later_median = 0;
	*bad_peak = false;
	if (repeat > 1) {
		later = calloc(repeat - 1, sizeof(*later));
		if (!later)
			return -ENOMEM;
	}
	/* Progress only for people watching a terminal, not for pipes. */
	/* The first pass counts usable bytes; the later ones are timed bare. */
	rc = trace_replay(tr, sum, a, REPLAY_USABLE, first,
			  isatty(STDERR_FILENO) ? progress : NULL, NULL);
	*bad_peak = !rc && first->peak_live != sum->all.peak_bytes;
	for (unsigned k = 1; !rc && k < repeat; k++) {
		struct replay_result r;

		rc = trace_replay(tr, sum, a, 0, &r, NULL, NULL);
		if (rc)
			break;
		later[k - 1] = r.seconds;
		*bad_peak |= r.peak_live != sum->all.peak_bytes;
		if (r.max_reserved > first->max_reserved)
			first->max_reserved = r.max_reserved;
		first->end = r.end;
	}
	if (!rc && repeat > 1)
		*later_median = bench_median(later, repeat - 1);
	free(later);
	return rc;
}

/* usable over requested, as "+3.1%" of rounding. */
static double rounding_pct(uint64_t usable, uint64_t requested)
{
	return requested ? 100.0 * ((double)usable - (double)requested) /
				   (double)requested
			 : 0;
}

static void print_json(const char *path, const char *name,
		       const struct trace *tr, const struct trace_summary *sum,
		       const struct replay_result *r, unsigned repeat,
		       double later)
{
	printf("{\"trace\": ");
	json_string(stdout, path);
	printf(", \"allocator\": ");
	json_string(stdout, name);
	printf(", \"events\": %zu, \"seconds\": ", tr->nev);
	json_number(stdout, r->seconds);
	printf(", \"allocs\": %llu, \"frees\": %llu, "
	       "\"peak_requested_bytes\": %llu, \"end_requested_bytes\": %llu, "
	       "\"trace_peak_bytes\": %llu, "
	       "\"peak_usable_bytes\": %llu, \"end_usable_bytes\": %llu",
	       (unsigned long long)r->allocs, (unsigned long long)r->frees,
	       (unsigned long long)r->peak_live,
	       (unsigned long long)r->end_live,
	       (unsigned long long)sum->all.peak_bytes,
	       (unsigned long long)r->peak_usable,
	       (unsigned long long)r->end_usable);
	printf(", \"usable_size_op\": %s", r->have_usable ? "true" : "false");
	if (repeat > 1) {
		printf(", \"repeat\": %u, \"later_seconds_median\": ", repeat);
		json_number(stdout, later);
	}
	if (r->have_stats)
		printf(", \"max_reserved_bytes\": %llu, \"end_reserved_bytes\": %llu",
		       (unsigned long long)r->max_reserved,
		       (unsigned long long)r->end.reserved);
	printf("}\n");
}

static void print_text(const char *path, const char *name,
		       const struct trace *tr, const struct replay_result *r,
		       unsigned repeat, double later, bool bad_peak)
{
	char h1[32], h2[32];

	printf("replayed %s against \"%s\": %zu events (%llu allocs, %llu frees)\n",
	       path, name, tr->nev, (unsigned long long)r->allocs,
	       (unsigned long long)r->frees);
	printf("time              %.6f s (%.1f ns per event)%s\n", r->seconds,
	       tr->nev ? r->seconds * 1e9 / (double)tr->nev : 0,
	       repeat > 1 ? ", the first pass" : "");
	if (repeat > 1)
		printf("later passes      %.6f s (%.1f ns per event), the median of %u\n",
		       later, tr->nev ? later * 1e9 / (double)tr->nev : 0,
		       repeat - 1);
	printf("requested bytes   %llu (%s) live at the peak%s; %llu (%s) at the end\n",
	       (unsigned long long)r->peak_live,
	       trace_human_bytes(r->peak_live, h1, sizeof(h1)),
	       !bad_peak ? ", as in the trace" : ", differs from the trace",
	       (unsigned long long)r->end_live,
	       trace_human_bytes(r->end_live, h2, sizeof(h2)));
	if (r->have_usable)
		printf("usable bytes      %llu (%s) live at most (%+.1f%%: size classes and rounding); %llu (%s) at the end\n",
		       (unsigned long long)r->peak_usable,
		       trace_human_bytes(r->peak_usable, h1, sizeof(h1)),
		       rounding_pct(r->peak_usable, r->peak_live),
		       (unsigned long long)r->end_usable,
		       trace_human_bytes(r->end_usable, h2, sizeof(h2)));
	else
		printf("usable bytes      (\"%s\" has no usable_size op: usable = requested)\n",
		       name);
	if (r->have_stats)
		printf("reserved bytes    %llu (%s) at most, %llu (%s) at the end: held from the system, caches included\n",
		       (unsigned long long)r->max_reserved,
		       trace_human_bytes(r->max_reserved, h1, sizeof(h1)),
		       (unsigned long long)r->end.reserved,
		       trace_human_bytes(r->end.reserved, h2, sizeof(h2)));
	else
		printf("reserved bytes    (\"%s\" has no stats op)\n", name);
}

static int run_replay(int argc, char **argv)
{
	const char *path = NULL, *name = NULL;
	struct trace_summary *sum = NULL;
	struct replay_result r;
	struct alloy_allocator *a;
	struct trace tr;
	bool json = false, bad_peak;
	unsigned repeat = 1;
	double later;
	char err[512];
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
		} else if (!strcmp(argv[i], "--repeat")) {
			const char *v = i + 1 < argc ? argv[++i] : "";
			char *end;
			unsigned long n = strtoul(v, &end, 10);

			if (!isdigit((unsigned char)*v) || *end || n < 1 ||
			    n > REPEAT_MAX)
				return cli_usage_error(
					&cmd_replay,
					"--repeat wants a count from 1 to %d, not \"%s\"",
					REPEAT_MAX, v);
			repeat = (unsigned)n;
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
			"alloy replay: %s %s; replaying its %zu events\n", path,
			tr.cut ? "is cut short (its compressed data ends inside a frame)"
			       : "has no end record",
			tr.nev);
	sum = malloc(sizeof(*sum));
	if (!sum) {
		trace_free(&tr);
		fprintf(stderr, "alloy replay: out of memory\n");
		return EXIT_PROBLEM;
	}
	trace_summarize(&tr, sum);
	rc = replay_passes(&tr, sum, a, repeat, &r, &later, &bad_peak);
	if (rc) {
		fprintf(stderr, "alloy replay: %s\n",
			*alloy_last_error() ? alloy_last_error()
					    : alloy_strerror(rc));
		rc = EXIT_PROBLEM;
		goto out;
	}
	if (json)
		print_json(path, name, &tr, sum, &r, repeat, later);
	else
		print_text(path, name, &tr, &r, repeat, later, bad_peak);
	rc = bad_peak ? EXIT_PROBLEM : 0;
out:
	free(sum);
	trace_free(&tr);
	return rc;
}

const struct cli_command cmd_replay = {
	.name = "replay",
	.summary = "replay a trace against an allocator: time, peak, reserved",
	.usage =
		"usage: alloy replay TRACE --allocator NAME [--repeat N] [--json]\n"
		"\n"
		"Performs every allocation and free of TRACE, in order, with allocator\n"
		"NAME (loaded as a module if needed), and prints the time it took and\n"
		"three figures, each under its own name: requested bytes (what the\n"
		"trace asked for; their peak must equal the trace's), usable bytes\n"
		"(what the allocator handed out for them, its size-class rounding\n"
		"included: its usable_size op) and, for allocators that report stats,\n"
		"reserved bytes (held from the system, its caches included; at most\n"
		"as sampled at the peak and every 1024 events).  Live at the peak\n"
		"(at most) and at the end of the trace.\n"
		"Shows progress on stderr when that is a terminal.\n"
		"\n"
		"--repeat N replays the trace N times in a row (1 to 1000), as the\n"
		"steps of a training loop: the first pass meets an empty cache, the\n"
		"others the one it left.  It prints the first pass's time and the\n"
		"median of the others; reserved at most is over all passes, and every\n"
		"pass must reproduce the trace's peak.\n"
		"\n"
		"Exit status 1 if the trace is malformed, an allocation fails or the\n"
		"replayed peak differs from the trace's.\n",
	.run = run_replay,
};
