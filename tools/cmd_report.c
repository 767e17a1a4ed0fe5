// SPDX-License-Identifier: MIT
/*
 * tools/cmd_report.c - `alloy report TRACE`: what a trace says, as a text
 * or JSON summary, or as a timeline picture (SVG, or an HTML page with
 * the SVG and the table inside).
 *
 * With -o the output goes to a temporary file renamed over FILE only when
 * everything was written, so a bad trace never clobbers an old report.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "trace.h"

enum format { F_TEXT, F_JSON, F_SVG, F_HTML };

static void print_text(FILE *out, const char *path, const struct trace *tr,
		       const struct trace_summary *sum)
{
	char hb[32];

	fprintf(out,
		"trace%s%s: version %d, pid %ld, %zu events over %.3f ms%s\n",
		*path ? " " : "", path, tr->version, tr->pid, tr->nev,
		(double)sum->duration_ns / 1e6,
		tr->complete ? "" : " (no end record: cut short)");
	fprintf(out, "%-16s %-11s %10s %10s %15s %13s %13s %8s\n", "allocator",
		"device", "allocs", "frees", "total", "peak", "live at end",
		"leaks");
	for (size_t i = 0; i <= tr->nseries; i++) {
		const struct trace_series_sum *s =
			i < tr->nseries ? &sum->s[i] : &sum->all;

		fprintf(out,
			"%-16s %-11s %10llu %10llu %15llu %13llu %13llu %8llu\n",
			i < tr->nseries ? tr->series[i].allocator : "(all)",
			i < tr->nseries ? tr->series[i].device : "",
			(unsigned long long)s->allocs,
			(unsigned long long)s->frees,
			(unsigned long long)s->total_bytes,
			(unsigned long long)s->peak_bytes,
			(unsigned long long)s->live_bytes,
			(unsigned long long)s->live_blocks);
	}
	fprintf(out, "peak %llu bytes (%s) at %.3f ms\n",
		(unsigned long long)sum->all.peak_bytes,
		trace_human_bytes(sum->all.peak_bytes, hb, sizeof(hb)),
		(double)sum->all.peak_t_ns / 1e6);
	fprintf(out, "unknown frees %llu, double frees %llu\n",
		(unsigned long long)sum->unknown_frees,
		(unsigned long long)sum->double_frees);
}

static void json_sum(FILE *out, const struct trace_series_sum *s)
{
	fprintf(out,
		"\"allocs\": %llu, \"frees\": %llu, \"total_bytes\": %llu, "
		"\"peak_bytes\": %llu, \"peak_t_ns\": %llu, \"live_bytes\": %llu, "
		"\"live_blocks\": %llu",
		(unsigned long long)s->allocs, (unsigned long long)s->frees,
		(unsigned long long)s->total_bytes,
		(unsigned long long)s->peak_bytes,
		(unsigned long long)s->peak_t_ns,
		(unsigned long long)s->live_bytes,
		(unsigned long long)s->live_blocks);
}

static void print_json(FILE *out, const char *path, const struct trace *tr,
		       const struct trace_summary *sum)
{
	fprintf(out, "{\"trace\": ");
	json_string(out, path);
	fprintf(out,
		", \"version\": %d, \"pid\": %ld, \"events\": %zu, "
		"\"duration_ns\": %llu, \"complete\": %s,\n \"series\": [",
		tr->version, tr->pid, tr->nev,
		(unsigned long long)sum->duration_ns,
		tr->complete ? "true" : "false");
	for (size_t i = 0; i < tr->nseries; i++) {
		fprintf(out, "%s\n  {\"allocator\": ", i ? "," : "");
		json_string(out, tr->series[i].allocator);
		fprintf(out, ", \"device\": ");
		json_string(out, tr->series[i].device);
		fprintf(out, ", ");
		json_sum(out, &sum->s[i]);
		fprintf(out, "}");
	}
	fprintf(out, "],\n \"all\": {");
	json_sum(out, &sum->all);
	fprintf(out, "},\n \"unknown_frees\": %llu, \"double_frees\": %llu}\n",
		(unsigned long long)sum->unknown_frees,
		(unsigned long long)sum->double_frees);
}

static void print_html(FILE *out, const char *path, const struct trace *tr,
		       const struct trace_summary *sum)
{
	/* Self-contained: inline SVG and CSS, nothing fetched. */
	fprintf(out, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
		     "<title>alloy memory timeline</title>\n"
		     "<style>body{font-family:sans-serif;margin:24px}"
		     "pre{background:#f6f6f6;padding:12px}</style>\n"
		     "</head><body>\n<h1>alloy memory timeline</h1>\n");
	trace_timeline_svg(out, tr, sum);
	fprintf(out, "<pre>");
	/* Paths are the only free text; keep markup out of the page. */
	for (const char *p = path; *p; p++)
		if (*p != '<' && *p != '>' && *p != '&')
			fputc(*p, out);
	fprintf(out, "\n");
	print_text(out, "", tr, sum);
	fprintf(out, "</pre>\n</body></html>\n");
}

static int run_report(int argc, char **argv)
{
	enum format fmt = F_TEXT;
	const char *path = NULL, *outpath = NULL;
	char err[512], tmp[4096];
	struct trace tr;
	struct trace_summary *sum;
	FILE *out = stdout;
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--format") || !strcmp(argv[i], "-f")) {
			const char *v = i + 1 < argc ? argv[++i] : "";

			if (!strcmp(v, "text"))
				fmt = F_TEXT;
			else if (!strcmp(v, "json"))
				fmt = F_JSON;
			else if (!strcmp(v, "svg"))
				fmt = F_SVG;
			else if (!strcmp(v, "html"))
				fmt = F_HTML;
			else
				return cli_usage_error(
					&cmd_report,
					"--format wants text, json, svg or html, not \"%s\"",
					v);
		} else if (!strcmp(argv[i], "-o") ||
			   !strcmp(argv[i], "--output")) {
			if (i + 1 >= argc)
				return cli_usage_error(&cmd_report,
						       "-o needs a file");
			outpath = argv[++i];
		} else if (argv[i][0] == '-' && argv[i][1]) {
			return cli_usage_error(
				&cmd_report, "unknown option \"%s\"", argv[i]);
		} else if (!path) {
			path = argv[i];
		} else {
			return cli_usage_error(&cmd_report,
					       "one trace at a time");
		}
	}
	if (!path)
		return cli_usage_error(&cmd_report, "no trace file given");
	if (trace_read(path, &tr, err, sizeof(err))) {
		fprintf(stderr, "alloy report: %s\n", err);
		return EXIT_PROBLEM;
	}
	if (!tr.complete)
		fprintf(stderr,
			"alloy report: %s has no end record (the program did not exit cleanly?); "
			"reporting its %zu events\n",
			path, tr.nev);
	sum = malloc(sizeof(*sum));
	if (!sum) {
		fprintf(stderr, "alloy report: out of memory\n");
		rc = EXIT_PROBLEM;
		goto out_trace;
	}
	trace_summarize(&tr, sum);
	if (outpath) {
		snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", outpath,
			 (long)getpid());
		out = fopen(tmp, "w");
		if (!out) {
			fprintf(stderr, "alloy report: cannot write %s: %s\n",
				tmp, strerror(errno));
			rc = EXIT_PROBLEM;
			goto out_sum;
		}
	}
	switch (fmt) {
	case F_TEXT:
		print_text(out, path, &tr, sum);
		break;
	case F_JSON:
		print_json(out, path, &tr, sum);
		break;
	case F_SVG:
		trace_timeline_svg(out, &tr, sum);
		break;
	case F_HTML:
		print_html(out, path, &tr, sum);
		break;
	}
	if (outpath) {
		bool bad = ferror(out);

		if (fclose(out) || bad || rename(tmp, outpath)) {
			fprintf(stderr, "alloy report: writing %s failed: %s\n",
				outpath, strerror(errno));
			unlink(tmp);
			rc = EXIT_PROBLEM;
		}
	}
out_sum:
	free(sum);
out_trace:
	trace_free(&tr);
	return rc;
}

const struct cli_command cmd_report = {
	.name = "report",
	.summary = "summarise a trace, or draw its timeline (SVG/HTML)",
	.usage =
		"usage: alloy report TRACE [--format text|json|svg|html] [-o FILE]\n"
		"\n"
		"Reads a trace written with ALLOY_CONF=trace:PATH (docs/TRACE-FORMAT.md)\n"
		"and prints, per allocator and device, allocations, frees, bytes, peak\n"
		"live bytes and what was still live at the end.\n"
		"\n"
		"  --format svg    a timeline of live bytes per allocator, peak marked\n"
		"  --format html   the timeline and the table in one offline page\n"
		"  -o FILE         write there (replaced only when all went well)\n"
		"\n"
		"A malformed or truncated trace is an error naming its line and byte\n"
		"offset (exit 1); a trace without its end record is read up to its\n"
		"last line, with a warning.\n",
	.run = run_report,
};
