// SPDX-License-Identifier: MIT
/*
 * cli/cmd_report.c - `alloy report TRACE`: what a trace says, as a text
 * or JSON summary, a timeline picture (SVG, or an HTML page with the SVG,
 * the table and a breakdown of any clicked moment), what was live at the
 * peak or at a time (--at) by call site and by owner, or the flame graph
 * of that moment (a page, or an SVG picture); or, for other tools, the
 * profile pprof reads and the counter tracks Perfetto shows.
 *
 * With -o the output goes to a temporary file renamed over FILE only when
 * everything was written, so a bad trace never clobbers an old report.
 * Reading a large trace shows progress on stderr once it has taken a
 * second (on a terminal, or with --progress).
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "analysis/report.h"
#include "cli.h"
#include "report_torch.h"

enum format {
	F_TEXT,
	F_JSON,
	F_SVG,
	F_HTML,
	F_FLAME,
	F_FLAME_SVG,
	F_PPROF,
	F_PERFETTO,
	F_TORCH
};

static const char *const format_names[] = {
	"text",		  "json",  "svg",      "html",		 "flamegraph",
	"flamegraph-svg", "pprof", "perfetto", "torch-snapshot",
};

static bool is_dir(const char *path);

#define MAX_OPTIONS 16
/* Traces read together: given, or found in the directories given. */
#define MAX_TRACES 256

struct options {
	enum format fmt;
	const char *path, *outpath, *at;
	const char *paths[MAX_TRACES]; /* every TRACE argument */
	size_t npaths;
	bool by_owner, progress;
	size_t top;
	bool top_set;
	bool at_peak; /* --at, parsed */
	uint64_t at_ns;
	const char *options[MAX_OPTIONS]; /* --option, for torch-snapshot */
	size_t noptions;
};

/* ---- progress ---------------------------------------------------------- */

struct progress {
	bool on; /* may show at all */
	bool shown;
	double t0;
	double last;
	const char *what;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A bar once a second has passed, redrawn at most ten times a second. */
static void progress_cb(void *arg, double done)
{
	struct progress *p = arg;
	double t = now_s();
	int w = 30, fill = (int)(done * w + 0.5);

	if (!p->on || t - p->t0 < 1.0 || (t - p->last < 0.1 && done < 1.0))
		return;
	p->last = t;
	p->shown = true;
	fprintf(stderr, "\ralloy report: %s [%.*s%*s] %3d%%", p->what, fill,
		"##############################", w - fill, "",
		(int)(done * 100 + 0.5));
	if (done >= 1.0)
		fprintf(stderr, " (%.1f s)\n", t - p->t0);
}

/* ---- running ------------------------------------------------------------ */

static int parse_args(int argc, char **argv, struct options *o)
{
	memset(o, 0, sizeof(*o));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--format") || !strcmp(a, "-f")) {
			size_t f;

			for (f = 0;
			     v &&
			     f < sizeof(format_names) / sizeof(format_names[0]);
			     f++)
				if (!strcmp(v, format_names[f]))
					break;
			if (!v ||
			    f == sizeof(format_names) / sizeof(format_names[0]))
				return cli_usage_error(
					&cmd_report,
					"--format wants text, json, svg, html, flamegraph, flamegraph-svg, pprof, perfetto or torch-snapshot, not \"%s\"",
					v ? v : "");
			o->fmt = (enum format)f;
			i++;
		} else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
			if (!v)
				return cli_usage_error(&cmd_report,
						       "-o needs a file");
			o->outpath = argv[++i];
		} else if (!strcmp(a, "--at")) {
			if (!v)
				return cli_usage_error(
					&cmd_report,
					"--at needs \"peak\" or a time");
			o->at = argv[++i];
		} else if (!strcmp(a, "--by")) {
			if (!v || (strcmp(v, "site") && strcmp(v, "owner")))
				return cli_usage_error(
					&cmd_report,
					"--by wants site or owner, not \"%s\"",
					v ? v : "");
			o->by_owner = !strcmp(v, "owner");
			i++;
		} else if (!strcmp(a, "--top")) {
			char *end;
			unsigned long n = v ? strtoul(v, &end, 10) : 0;

			if (!v || !*v || *end)
				return cli_usage_error(
					&cmd_report,
					"--top wants a number (0: all), not \"%s\"",
					v ? v : "");
			o->top = n;
			o->top_set = true;
			i++;
		} else if (!strcmp(a, "--option")) {
			if (!v || !strchr(v, ':'))
				return cli_usage_error(
					&cmd_report,
					"--option wants KEY:VALUE, not \"%s\"",
					v ? v : "");
			if (o->noptions == MAX_OPTIONS)
				return cli_usage_error(&cmd_report,
						       "at most %d --option",
						       MAX_OPTIONS);
			o->options[o->noptions++] = argv[++i];
		} else if (!strcmp(a, "--progress")) {
			o->progress = true;
		} else if (a[0] == '-' && a[1]) {
			return cli_usage_error(&cmd_report,
					       "unknown option \"%s\"", a);
		} else if (o->npaths == MAX_TRACES) {
			return cli_usage_error(&cmd_report,
					       "at most %d traces at once",
					       MAX_TRACES);
		} else {
			o->paths[o->npaths++] = a;
			o->path = o->paths[0];
		}
	}
	if (!o->path)
		return cli_usage_error(&cmd_report, "no trace file given");
	if ((o->npaths > 1 || is_dir(o->path)) &&
	    ((o->fmt != F_TEXT && o->fmt != F_JSON && o->fmt != F_SVG &&
	      o->fmt != F_HTML) ||
	     o->at || o->by_owner))
		return cli_usage_error(
			&cmd_report,
			"several traces (or a directory) give the job's summary or timeline: --format text, json, svg or html, without --at or --by");
	if (o->at && (o->fmt == F_SVG || o->fmt == F_HTML))
		return cli_usage_error(
			&cmd_report,
			"--at goes with text, json, flamegraph, flamegraph-svg and pprof; the timeline shows every moment");
	if (o->at && o->fmt == F_PERFETTO)
		return cli_usage_error(
			&cmd_report,
			"--at goes with text, json, flamegraph, flamegraph-svg and pprof; perfetto's tracks show every moment");
#ifndef HAVE_PPROF
	if (o->fmt == F_PPROF) {
		fprintf(stderr,
			"alloy report: --format pprof: this alloy was built without libprotobuf-c, protoc-c or zlib "
			"(apt-get install libprotobuf-c-dev protobuf-c-compiler zlib1g-dev, then configure again)\n");
		return EXIT_PROBLEM;
	}
#endif
	if (o->fmt == F_PPROF && !o->outpath && isatty(STDOUT_FILENO))
		return cli_usage_error(
			&cmd_report,
			"--format pprof writes gzipped binary: give -o FILE or redirect the output");
	if (o->noptions && o->fmt != F_TORCH)
		return cli_usage_error(
			&cmd_report,
			"--option goes with --format torch-snapshot");
	if (o->fmt == F_TORCH && o->by_owner)
		return cli_usage_error(
			&cmd_report,
			"--by goes with the flame graph, not torch-snapshot");
	if (!o->top_set)
		o->top = o->fmt == F_TEXT ? 20 : 0;
	o->at_peak = true;
	if (o->at) {
		char err[256];

		if (trace_parse_at(o->at, &o->at_peak, &o->at_ns, err,
				   sizeof(err)))
			return cli_usage_error(&cmd_report, "%s", err);
	}
	return 0;
}

/* What a reader of the report should know about the trace itself. */
static void warn_trace(const char *path, const struct trace *tr)
{
	if (tr->incomplete)
		fprintf(stderr,
			"alloy report: %s was marked incomplete by its writer (a write error; %llu lines lost); "
			"reporting its %zu events\n",
			path, (unsigned long long)tr->lost, tr->nev);
	else if (tr->cut)
		fprintf(stderr,
			"alloy report: %s is cut short (its compressed data ends inside a frame: the program did not exit cleanly?); "
			"reporting its %zu events, up to its last whole record\n",
			path, tr->nev);
	else if (!tr->complete)
		fprintf(stderr,
			"alloy report: %s has no end record (the program did not exit cleanly?); "
			"reporting its %zu events\n",
			path, tr->nev);
	if (tr->missing_stacks || tr->missing_parents)
		fprintf(stderr,
			"alloy report: %s: %llu events and %llu stack nodes name stacks the trace does not define "
			"(a cut stack table?); those sites show as unknown\n",
			path, (unsigned long long)tr->missing_stacks,
			(unsigned long long)tr->missing_parents);
	if (tr->missing_owners)
		fprintf(stderr,
			"alloy report: %s: %llu events name owners the trace does not define; shown as no owner\n",
			path, (unsigned long long)tr->missing_owners);
}

/*
 * The exports: pprof's profile of a moment (the overall peak, or --at
 * TIME: every event up to it) and Perfetto's tracks of the whole trace.
 */
static int write_export(FILE *out, const struct options *o,
			struct report_ctx *c, char *err, size_t errlen)
{
	const struct trace *tr = c->tr;
	size_t events = tr->nev;
	uint64_t t_ns = tr->end_ns;
	int rc;

	if (o->fmt == F_PPROF && o->at_peak && tr->nev) {
		events = c->sum->peak_event + 1;
		t_ns = tr->ev[c->sum->peak_event].t_ns;
	} else if (o->fmt == F_PPROF && !o->at_peak) {
		size_t lo = 0, hi = tr->nev;

		if (o->at_ns > tr->end_ns) {
			snprintf(
				err, errlen,
				"--at %llu ns is past the end of the trace, which lasts %llu ns (%.3f ms)",
				(unsigned long long)o->at_ns,
				(unsigned long long)tr->end_ns,
				(double)tr->end_ns / 1e6);
			return -1;
		}
		/* The events at or before the time: times never go back. */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (tr->ev[mid].t_ns <= o->at_ns)
				lo = mid + 1;
			else
				hi = mid;
		}
		events = lo;
		t_ns = o->at_ns;
	}
	c->sym = symbols_new(tr, false);
	if (!c->sym) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
#ifdef HAVE_PPROF
	if (o->fmt == F_PPROF)
		rc = report_pprof(out, c, events, t_ns);
	else
#else
	(void)events;
	(void)t_ns;
#endif
		rc = report_perfetto(out, c);
	symbols_free(c->sym);
	if (rc)
		snprintf(err, errlen, "%s",
			 rc == -EIO ? "compressing the profile failed"
				    : "out of memory");
	return rc ? -1 : 0;
}

/* Write the chosen output; 0, or -1 after saying why. */
static int write_report(FILE *out, const struct options *o,
			const struct trace *tr, const struct trace_summary *sum)
{
	struct report_ctx c = { .path = o->path,
				.tr = tr,
				.sum = sum,
				.by_owner = o->by_owner,
				.top = o->top };
	bool need_at = o->at || o->fmt == F_FLAME || o->fmt == F_FLAME_SVG ||
		       o->fmt == F_SVG || o->fmt == F_HTML;
	struct trace_at at;
	char err[512];
	int rc = 0;

	if (o->fmt == F_PPROF || o->fmt == F_PERFETTO) {
		if (write_export(out, o, &c, err, sizeof(err)))
			goto fail;
		return 0;
	}
	if (o->fmt == F_TORCH) {
		struct torch_snap_opts to = { .path = o->path,
					      .at_peak = o->at_peak,
					      .t_ns = o->at_ns,
					      .options = o->options,
					      .noptions = o->noptions };

		return report_torch_snapshot(out, &to, tr) ? -1 : 0;
	}
	if (!need_at) {
		if (o->fmt == F_JSON)
			report_summary_json(out, o->path, tr, sum);
		else
			report_summary_text(out, o->path, tr, sum);
		return 0;
	}
	/* The timeline labels the overall peak: one moment for all devices. */
	if (o->fmt == F_SVG || o->fmt == F_HTML) {
		if (tr->nev &&
		    trace_at_event(tr, sum->peak_event, &at, err, sizeof(err)))
			goto fail;
		if (!tr->nev)
			memset(&at, 0, sizeof(at));
	} else if (trace_at(tr, o->at_peak, o->at_ns, &at, err, sizeof(err))) {
		goto fail;
	}
	c.at = &at;
	c.sym = symbols_new(tr, false);
	if (!c.sym || report_merge_sites(&c, &at)) {
		symbols_free(c.sym);
		trace_at_free(&at);
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	switch (o->fmt) {
	case F_TEXT:
		report_resolve(&c);
		report_at_text(out, &c);
		break;
	case F_JSON:
		report_resolve(&c);
		report_at_json(out, &c);
		break;
	case F_FLAME:
		rc = report_flame_html(out, &c);
		break;
	case F_FLAME_SVG:
		rc = report_flame_svg(out, &c);
		break;
	case F_SVG:
		rc = report_timeline_svg(out, &c);
		break;
	case F_HTML:
		rc = report_timeline_html(out, &c);
		break;
	default: /* the exports and torch-snapshot: written above */
		break;
	}
	symbols_free(c.sym);
	trace_at_free(&at);
	if (!rc)
		return 0;
	snprintf(err, sizeof(err), "out of memory");
fail:
	fprintf(stderr, "alloy report: %s: %s\n", o->path, err);
	return -1;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

/* Whether the file starts as a trace does: text, or zstd's frame. */
static bool looks_like_trace(const char *path)
{
	static const unsigned char zstd[4] = { 0x28, 0xb5, 0x2f, 0xfd };
	unsigned char head[11];
	FILE *f = fopen(path, "rb");
	size_t n = f ? fread(head, 1, sizeof(head), f) : 0;

	if (f)
		fclose(f);
	return (n >= 11 && !memcmp(head, "alloy-trace", 11)) ||
	       (n >= 4 && !memcmp(head, zstd, 4));
}

/*
 * The traces in dir (regular files that start as one), sorted by name.
 * An empty file is said and left out: a process that ended by _exit()
 * before its first write-out (dash does) leaves one.
 */
static int list_dir(const char *dir, char ***names, size_t *n)
{
	struct dirent **ents;
	int k = scandir(dir, &ents, NULL, alphasort);

	*n = 0;
	*names = NULL;
	if (k < 0) {
		fprintf(stderr, "alloy report: cannot read %s: %s\n", dir,
			strerror(errno));
		return -1;
	}
	*names = calloc((size_t)k + 1, sizeof(**names));
	for (int i = 0; i < k; i++) {
		char path[4096];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
		if (*names && !stat(path, &st) && S_ISREG(st.st_mode)) {
			if (looks_like_trace(path))
				(*names)[(*n)++] = strdup(path);
			else if (!st.st_size)
				fprintf(stderr,
					"alloy report: %s is empty (its process wrote nothing); left out\n",
					path);
		}
		free(ents[i]);
	}
	free(ents);
	return *names ? 0 : -1;
}

/* Several traces, or a directory of them: the job's summary or timeline. */
static int run_processes(const struct options *o)
{
	struct trace_proc *procs = NULL;
	char **found = NULL, err[512];
	const char **paths = (const char **)o->paths;
	size_t n = o->npaths, nread = 0;
	FILE *out = stdout;
	int rc = EXIT_PROBLEM;

	if (n == 1) { /* a directory */
		if (list_dir(o->path, &found, &n))
			return EXIT_PROBLEM;
		if (!n) {
			fprintf(stderr, "alloy report: no trace in %s\n",
				o->path);
			goto out;
		}
		paths = (const char **)found;
	}
	procs = calloc(n, sizeof(*procs));
	if (!procs) {
		fprintf(stderr, "alloy report: out of memory\n");
		goto out;
	}
	for (; nread < n; nread++) {
		struct trace_proc *p = &procs[nread];

		p->path = paths[nread];
		if (trace_read(p->path, &p->tr, err, sizeof(err))) {
			fprintf(stderr, "alloy report: %s\n", err);
			goto out;
		}
		warn_trace(p->path, &p->tr);
		trace_summarize(&p->tr, &p->sum);
	}
	if (o->outpath && !(out = fopen(o->outpath, "w"))) {
		fprintf(stderr, "alloy report: cannot write %s: %s\n",
			o->outpath, strerror(errno));
		goto out;
	}
	if (report_processes(out, procs, n,
			     o->fmt == F_JSON	? JOB_JSON
			     : o->fmt == F_SVG	? JOB_SVG
			     : o->fmt == F_HTML ? JOB_HTML
						: JOB_TEXT,
			     err, sizeof(err)))
		fprintf(stderr, "alloy report: %s\n", err);
	else
		rc = 0;
	if (out != stdout && fclose(out) && !rc) {
		fprintf(stderr, "alloy report: writing %s failed: %s\n",
			o->outpath, strerror(errno));
		rc = EXIT_PROBLEM;
	}
out:
	for (size_t i = 0; i < nread; i++)
		trace_free(&procs[i].tr);
	free(procs);
	for (size_t i = 0; found && found[i]; i++)
		free(found[i]);
	free(found);
	return rc;
}

static int run_report(int argc, char **argv)
{
	struct progress prog = { .what = "reading" };
	struct options o;
	char err[512], tmp[4096];
	struct trace tr;
	struct trace_summary *sum;
	FILE *out = stdout;
	int rc = parse_args(argc, argv, &o);

	if (rc)
		return rc;
	if (o.npaths > 1 || is_dir(o.path))
		return run_processes(&o);
	prog.on = o.progress || isatty(STDERR_FILENO);
	prog.t0 = now_s();
	if (trace_read_progress(o.path, &tr, err, sizeof(err), progress_cb,
				&prog)) {
		if (prog.shown)
			fprintf(stderr, "\n");
		fprintf(stderr, "alloy report: %s\n", err);
		return EXIT_PROBLEM;
	}
	warn_trace(o.path, &tr);
	sum = malloc(sizeof(*sum));
	if (!sum) {
		fprintf(stderr, "alloy report: out of memory\n");
		rc = EXIT_PROBLEM;
		goto out_trace;
	}
	trace_summarize(&tr, sum);
	if (o.outpath) {
		snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", o.outpath,
			 (long)getpid());
		out = fopen(tmp, "w");
		if (!out) {
			fprintf(stderr, "alloy report: cannot write %s: %s\n",
				tmp, strerror(errno));
			rc = EXIT_PROBLEM;
			goto out_sum;
		}
	}
	if (write_report(out, &o, &tr, sum))
		rc = EXIT_PROBLEM;
	if (o.outpath) {
		bool bad = ferror(out);

		if (fclose(out) || bad || rc || rename(tmp, o.outpath)) {
			if (!rc)
				fprintf(stderr,
					"alloy report: writing %s failed: %s\n",
					o.outpath, strerror(errno));
			unlink(tmp);
			rc = EXIT_PROBLEM;
		}
	} else if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "alloy report: writing the report failed: %s\n",
			strerror(errno));
		rc = EXIT_PROBLEM;
	}
out_sum:
	free(sum);
out_trace:
	trace_free(&tr);
	return rc;
}

const struct cli_command cmd_report = {
	.name = "report",
	.summary =
		"summarise a trace; what was live at its peak, by site and owner; flame graph; timeline",
	.usage =
		"usage: alloy report TRACE [--format FORMAT] [--at peak|TIME] [--by site|owner]\n"
		"                          [--top N] [--option KEY:VALUE] [-o FILE] [--progress]\n"
		"       alloy report TRACE TRACE... | DIRECTORY [--format text|json|svg|html]\n"
		"                          [-o FILE]\n"
		"\n"
		"Reads a trace written with ALLOY_CONF=trace:PATH (docs/TRACE-FORMAT.md)\n"
		"and prints, per allocator and device, allocations, frees, bytes, peak\n"
		"live bytes and what was still live at the end.\n"
		"\n"
		"  --at peak       what was live at each device's peak, by call site (the\n"
		"                  whole stack; record them with backtrace:1) and by owner,\n"
		"                  with bytes, blocks and share\n"
		"  --at TIME       the same at a time since the trace started: 12.5ms,\n"
		"                  300us, 2s, or nanoseconds\n"
		"  --format json   the summary, or with --at the breakdown, as JSON\n"
		"  --format flamegraph      a page with the flame graph of the moment\n"
		"                  (--at peak by default): hover, click to zoom, search\n"
		"  --format flamegraph-svg  the same as a still SVG picture\n"
		"  --by owner      the flame graph grouped by owner first\n"
		"  --format svg    a timeline of live bytes per allocator, peak marked\n"
		"                  and labelled with its top sites and owners\n"
		"  --format html   the timeline, the table, and what was live at any\n"
		"                  clicked moment, in one offline page\n"
		"  --format pprof  the profile `go tool pprof` reads (gzipped): allocations\n"
		"                  up to the peak (or --at TIME) and what was live then\n"
		"  --format perfetto  Chrome trace-event JSON for Perfetto's UI and\n"
		"                  chrome://tracing: live bytes per allocator and in all\n"
		"  --format torch-snapshot  the CUDA blocks replayed on the caching\n"
		"                  policy (simulated device) up to the moment (--at peak by\n"
		"                  default: the CUDA blocks' peak), as PyTorch's pickled\n"
		"                  torch.cuda.memory_snapshot(), for python3 -m\n"
		"                  torch.cuda._memory_viz; totals on stderr\n"
		"  --option KEY:VALUE  an option of that caching allocator\n"
		"                  (expandable_segments:1, roundup_power2_divisions:4, ...)\n"
		"  --top N         rows per table (text: 20 by default; 0: all)\n"
		"  -o FILE         write there (replaced only when all went well)\n"
		"  --progress      show progress on stderr even when it is no terminal\n"
		"\n"
		"Several traces (the processes of one job, as `--trace DIR/t.%p` writes\n"
		"them), or a directory of them, give the job's summary: a line per\n"
		"process, and the peak of the sum of their live bytes with who held it\n"
		"then, by process, owner and call site; --format svg or html draws the\n"
		"job's timeline: the sum on top, a lane per process under it.\n"
		"\n"
		"Frames are named from the objects the trace's module map lists, as\n"
		"they are now (addr2line gives file:line where there is debug\n"
		"information); an object that is gone leaves raw addresses.  A\n"
		"malformed or truncated trace is an error naming its line and byte\n"
		"offset (exit 1); a trace without its end record is read up to its\n"
		"last line, with a warning.\n",
	.run = run_report,
};
