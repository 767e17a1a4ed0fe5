/* SPDX-License-Identifier: MIT */
/*
 * analysis/report.h - what `alloy report` writes: the summary of a whole
 * trace (summary.c) and, about a moment of it, the breakdown as text or
 * JSON (at.c), the flame graph as a page or a picture (flame.c), the
 * page of the timeline (timeline_page.c), and the exports other tools
 * read: pprof's profile (pprof.c) and Chrome's trace events (perfetto.c).
 */
#ifndef ALLOY_ANALYSIS_REPORT_H
#define ALLOY_ANALYSIS_REPORT_H

#include <stdio.h>

#include "peak.h"
#include "symbols.h"
#include "trace.h"

struct report_ctx {
	const char *path; /* of the trace */
	const struct trace *tr;
	const struct trace_summary *sum;
	const struct trace_at *at; /* the moment(s) looked at */
	struct symbols *sym;
	bool by_owner; /* flame graph: an owner level above the stacks */
	size_t top;    /* rows per table (0: all) */
};

void report_at_text(FILE *out, const struct report_ctx *c);
void report_at_json(FILE *out, const struct report_ctx *c);

/* 0, or -ENOMEM. */
int report_flame_html(FILE *out, const struct report_ctx *c);
int report_flame_svg(FILE *out, const struct report_ctx *c);

/*
 * The timeline picture with the peak's top sites and owners beside it
 * (c->at: the moment of the overall peak, may be NULL), and the page with
 * the summary and a breakdown for any clicked time.  0, or -ENOMEM.
 */
int report_timeline_svg(FILE *out, const struct report_ctx *c);
int report_timeline_html(FILE *out, const struct report_ctx *c);

/*
 * The profile pprof reads, gzipped (pprof.c): every allocation of the
 * first `events` events, and what was live after them, at t_ns.  0,
 * -ENOMEM or -EIO.  Only in a build with libprotobuf-c and zlib
 * (HAVE_PPROF).
 */
int report_pprof(FILE *out, const struct report_ctx *c, size_t events,
		 uint64_t t_ns);

/*
 * The trace as Chrome's trace-event JSON, which Perfetto and
 * chrome://tracing open (perfetto.c): a counter track of live bytes per
 * allocator and device and one for the process.  0 or -ENOMEM.
 */
int report_perfetto(FILE *out, const struct report_ctx *c);

/* The summary of a whole trace, as a table or as JSON (summary.c). */
void report_summary_text(FILE *out, const char *path, const struct trace *tr,
			 const struct trace_summary *sum);
void report_summary_json(FILE *out, const char *path, const struct trace *tr,
			 const struct trace_summary *sum);
/* Peak RSS, peak heap and their difference: a line, if the trace has
 * resident-memory samples. */
void report_memory_text(FILE *out, const struct trace *tr,
			const struct trace_summary *sum);

/* Name every frame the moment's groups use (one addr2line per object). */
void report_resolve(const struct report_ctx *c);

/*
 * Name the frames, then count stacks whose frames have the same names as
 * one site (at is c->at).  0 or -ENOMEM.
 */
int report_merge_sites(const struct report_ctx *c, struct trace_at *at);

/* The frames of a stack, innermost first, as names; stops at depth. */
void report_stack_lines(FILE *out, const struct report_ctx *c, uint32_t stack,
			const char *indent, size_t depth);

/* A site in one line: "func (file.c:42) < caller", or without lines. */
const char *report_site_label(const struct report_ctx *c, uint32_t stack,
			      bool lines, char *buf, size_t len);

/* "layer3/conv", or "(no owner)". */
const char *report_owner(const struct trace *tr, uint32_t owner);

/* One process's trace among several (processes.c). */
struct trace_proc {
	const char *path;
	struct trace tr;
	struct trace_summary sum;
	struct symbols *sym; /* made and freed by report_processes */
};

/* What report_processes writes. */
enum job_format { JOB_TEXT, JOB_JSON, JOB_SVG, JOB_HTML };

/*
 * Several processes as one job: a line per process, the peak of the sum
 * of their live bytes and who held it (by process, owner and site), as
 * text or JSON; or the job's timeline, a lane per process under the
 * lane of their sum, as an SVG picture or an offline page with the
 * summary.  0; -EINVAL for a trace without a start time, -ENOMEM; err
 * says which.
 */
int report_processes(FILE *out, struct trace_proc *procs, size_t n,
		     enum job_format fmt, char *err, size_t errlen);

/*
 * One lane of the job's timeline: the live bytes of one process, or of
 * the sum of all, per column of the picture (the highest value in the
 * column and the one it ends with).
 */
struct job_lane {
	long pid;		   /* 0 for the sum */
	const char *name;	   /* the process's name, "" if unknown */
	uint64_t start_ns, end_ns; /* on the job's time line */
	uint64_t peak;		   /* its highest live bytes */
	double max[TIMELINE_COLUMNS], end[TIMELINE_COLUMNS];
	bool seen[TIMELINE_COLUMNS];
};

/* The job's timeline: lanes[0] is the sum, then a lane per process. */
struct job_picture {
	struct job_lane *lanes;
	size_t n;
	uint64_t dur_ns;    /* from the first start to the last end */
	uint64_t peak_t_ns; /* when the sum was highest (lanes[0].peak) */
	const struct timeline_notes *notes; /* who held it; may be NULL */
};

/*
 * Write the job's timeline (job_timeline.c); standalone false leaves out
 * the XML declaration, for a picture inside a page.
 */
void job_timeline_svg(FILE *out, const struct job_picture *j, bool standalone);

#endif /* ALLOY_ANALYSIS_REPORT_H */
