// SPDX-License-Identifier: MIT
/*
 * analysis/processes.c - several processes' traces read as one job: a
 * line per process, and the peak of the sum of their live bytes with who
 * held it then, by process, by owner and by call site.
 *
 * Each trace's times start at its own time 0; the header's "start" (the
 * writer's CLOCK_MONOTONIC there) puts them on one time line.  Every
 * allocation and free of every trace is sorted by that time (a process's
 * own events keep their order), with a mark where each process ends: its
 * blocks still live then go back to the system with it.  One pass finds
 * the moment the sum was highest; a second pass up to that moment counts
 * what each process still running then held, by process, owner and
 * site.  Owners and sites are merged
 * across processes by their text: the same function in two workers of a
 * build is one site.  The first pass also fills the columns of the job's
 * timeline (job_timeline.c), a lane per process and one for the sum.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "report.h"

#define TOP_ROWS 10

struct merged {
	uint64_t t;  /* on the common time line */
	uint32_t p;  /* the process */
	uint32_t ev; /* its event, or PROCESS_END */
};

/* After every event of its process at the same time (by_time). */
#define PROCESS_END UINT32_MAX

/* Bytes live at the peak under one label (an owner or a site). */
struct held {
	char label[160];
	uint64_t bytes, blocks;
};

struct helds {
	struct held *v;
	size_t n, cap;
};

static int by_time(const void *a, const void *b)
{
	const struct merged *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->p != y->p)
		return x->p < y->p ? -1 : 1;
	return x->ev < y->ev ? -1 : x->ev > y->ev;
}

static int hold(struct helds *h, const char *label, int64_t bytes,
		int64_t blocks)
{
	size_t i;

	for (i = 0; i < h->n; i++)
		if (!strcmp(h->v[i].label, label))
			break;
	if (i == h->n) {
		if (h->n == h->cap) {
			size_t cap = h->cap ? 2 * h->cap : 64;
			struct held *v = realloc(h->v, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			h->v = v;
			h->cap = cap;
		}
		memset(&h->v[i], 0, sizeof(h->v[i]));
		snprintf(h->v[i].label, sizeof(h->v[i].label), "%s", label);
		h->n++;
	}
	h->v[i].bytes += (uint64_t)bytes;
	h->v[i].blocks += (uint64_t)blocks;
	return 0;
}

static int most_bytes(const void *a, const void *b)
{
	const struct held *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return strcmp(x->label, y->label);
}

/* A column keeps its highest value and the one it ends with. */
static void bucket(struct job_lane *l, uint64_t t, uint64_t dur, uint64_t v)
{
	double x = dur ? (double)t / (double)dur * (TIMELINE_COLUMNS - 1) : 0;
	int b = x < 0			? 0
		: x >= TIMELINE_COLUMNS ? TIMELINE_COLUMNS - 1
					: (int)x;

	if (!l->seen[b] || (double)v > l->max[b])
		l->max[b] = (double)v;
	l->end[b] = (double)v;
	l->seen[b] = true;
	if (v > l->peak)
		l->peak = v;
}

/* Every alloc and free of every trace, on the common time line. */
static struct merged *merge(struct trace_proc *procs, size_t n, uint64_t origin,
			    size_t *count)
{
	size_t total = 0, k = 0;
	struct merged *m;

	for (size_t p = 0; p < n; p++)
		total += procs[p].tr.nev + 1;
	m = malloc(total * sizeof(*m));
	if (!m)
		return NULL;
	for (size_t p = 0; p < n; p++) {
		const struct trace *tr = &procs[p].tr;

		for (size_t i = 0; i < tr->nev; i++) {
			char op = tr->ev[i].op;

			if (op != TRACE_ALLOC && op != TRACE_FREE)
				continue;
			m[k].t = tr->start_ns - origin + tr->ev[i].t_ns;
			m[k].p = (uint32_t)p;
			m[k].ev = (uint32_t)i;
			k++;
		}
		m[k].t = tr->start_ns - origin + procs[p].sum.duration_ns;
		m[k].p = (uint32_t)p;
		m[k].ev = PROCESS_END;
		k++;
	}
	qsort(m, k, sizeof(*m), by_time);
	*count = k;
	return m;
}

/* The innermost frame's function, and the process it ran in. */
static const char *site_of(struct trace_proc *pr, uint32_t stack, char *buf,
			   size_t len)
{
	char fn[128];

	if (!trace_stack_known(stack) || !pr->sym)
		return symbols_no_stack(stack);
	symbols_func(pr->sym, stack, fn, sizeof(fn));
	snprintf(buf, len, "%s in %s", fn,
		 *pr->tr.comm ? pr->tr.comm : "a process");
	return buf;
}

/*
 * What was live at merged position peak (inclusive): per process in
 * live[], by owner and by site.  A process that ended before it held
 * nothing then.  The stacks seen are named first.
 */
static int held_at(struct trace_proc *procs, size_t n, const struct merged *m,
		   size_t peak, uint64_t *live, struct helds *owners,
		   struct helds *sites)
{
	bool *ended = calloc(n, sizeof(*ended));
	char buf[300];

	if (!ended)
		return -ENOMEM;
	for (size_t i = 0; i <= peak; i++)
		if (m[i].ev == PROCESS_END)
			ended[m[i].p] = true;

	for (size_t p = 0; p < n; p++) {
		struct trace *tr = &procs[p].tr;
		uint32_t *ids = malloc((tr->nev + 1) * sizeof(*ids));
		size_t k = 0;

		if (!ids) {
			free(ended);
			return -ENOMEM;
		}
		for (size_t i = 0; i < tr->nev; i++)
			if (trace_stack_known(tr->ev[i].stack))
				ids[k++] = tr->ev[i].stack;
		procs[p].sym = k ? symbols_new(tr, true) : NULL;
		if (procs[p].sym)
			symbols_resolve(procs[p].sym, ids, k);
		free(ids);
	}
	for (size_t i = 0; i <= peak; i++) {
		struct trace_proc *pr = &procs[m[i].p];
		const struct trace_event *e;
		int64_t sign;

		if (m[i].ev == PROCESS_END || ended[m[i].p])
			continue;
		e = &pr->tr.ev[m[i].ev];
		sign = e->op == TRACE_ALLOC ? 1 : -1;
		live[m[i].p] += (uint64_t)(sign * (int64_t)e->size);
		if (hold(owners, report_owner(&pr->tr, e->owner),
			 sign * (int64_t)e->size, sign) ||
		    hold(sites, site_of(pr, e->stack, buf, sizeof(buf)),
			 sign * (int64_t)e->size, sign)) {
			free(ended);
			return -ENOMEM;
		}
	}
	free(ended);
	qsort(owners->v, owners->n, sizeof(*owners->v), most_bytes);
	qsort(sites->v, sites->n, sizeof(*sites->v), most_bytes);
	return 0;
}

static void put_helds_text(FILE *out, const char *what, const struct helds *h,
			   uint64_t peak)
{
	char hb[32];
	size_t shown = 0;

	fprintf(out, "\nat the peak, by %s:\n", what);
	for (size_t i = 0; i < h->n && shown < TOP_ROWS; i++) {
		if (!h->v[i].bytes)
			continue;
		fprintf(out, "  %13llu %10s %5.1f%% %8llu blocks  %s\n",
			(unsigned long long)h->v[i].bytes,
			trace_human_bytes(h->v[i].bytes, hb, sizeof(hb)),
			peak ? 100.0 * (double)h->v[i].bytes / (double)peak
			     : 0.0,
			(unsigned long long)h->v[i].blocks, h->v[i].label);
		shown++;
	}
}

static void put_helds_json(FILE *out, const char *key, const struct helds *h)
{
	size_t shown = 0;

	fprintf(out, ",\n \"%s\": [", key);
	for (size_t i = 0; i < h->n && shown < TOP_ROWS; i++) {
		if (!h->v[i].bytes)
			continue;
		fprintf(out, "%s\n  {\"label\": ", shown ? "," : "");
		json_string(out, h->v[i].label);
		fprintf(out, ", \"bytes\": %llu, \"blocks\": %llu}",
			(unsigned long long)h->v[i].bytes,
			(unsigned long long)h->v[i].blocks);
		shown++;
	}
	fprintf(out, "]");
}

/* "  1. label 45.2%", cut to fit beside the picture. */
static void notes_of(struct timeline_notes *n, const char *head,
		     const struct helds *h, uint64_t peak)
{
	size_t cap = sizeof(n->text) / sizeof(n->text[0]), rank = 0;

	if (n->n + 1 >= cap)
		return;
	snprintf(n->text[n->n++], sizeof(n->text[0]), "%s", head);
	for (size_t i = 0; i < h->n && rank < 3 && n->n < cap; i++) {
		const char *l = h->v[i].label;

		if (!h->v[i].bytes)
			continue;
		snprintf(n->text[n->n++], sizeof(n->text[0]),
			 " %zu. %.30s%s %.1f%%", ++rank, l,
			 strlen(l) > 30 ? ".." : "",
			 peak ? 100.0 * (double)h->v[i].bytes / (double)peak
			      : 0.0);
	}
}

static void put_text(FILE *out, struct trace_proc *procs, size_t n,
		     uint64_t origin, uint64_t peak, uint64_t peak_t,
		     const uint64_t *live, const struct helds *owners,
		     const struct helds *sites)
{
	char hb[32];

	fprintf(out, "%zu processes\n", n);
	fprintf(out, "%-8s %-16s %10s %10s %13s %13s %13s %13s\n", "pid",
		"name", "start ms", "end ms", "peak", "live at end",
		"at job peak", "peak RSS");
	for (size_t p = 0; p < n; p++) {
		const struct trace *tr = &procs[p].tr;
		const struct trace_summary *s = &procs[p].sum;
		uint64_t start = tr->start_ns - origin;

		fprintf(out,
			"%-8ld %-16s %10.3f %10.3f %13llu %13llu %13llu %13llu\n",
			tr->pid, *tr->comm ? tr->comm : "-",
			(double)start / 1e6,
			(double)(start + s->duration_ns) / 1e6,
			(unsigned long long)s->all.peak_bytes,
			(unsigned long long)s->all.live_bytes,
			(unsigned long long)live[p],
			(unsigned long long)tr->peak_resident);
	}
	fprintf(out, "peak of the sum %llu bytes (%s) at %.3f ms\n",
		(unsigned long long)peak,
		trace_human_bytes(peak, hb, sizeof(hb)), (double)peak_t / 1e6);
	put_helds_text(out, "owner", owners, peak);
	put_helds_text(out, "site", sites, peak);
}

static void put_json(FILE *out, struct trace_proc *procs, size_t n,
		     uint64_t origin, uint64_t peak, uint64_t peak_t,
		     const uint64_t *live, const struct helds *owners,
		     const struct helds *sites)
{
	fprintf(out, "{\"processes\": [");
	for (size_t p = 0; p < n; p++) {
		const struct trace *tr = &procs[p].tr;
		const struct trace_summary *s = &procs[p].sum;

		fprintf(out, "%s\n  {\"path\": ", p ? "," : "");
		json_string(out, procs[p].path);
		fprintf(out, ", \"pid\": %ld, \"name\": ", tr->pid);
		json_string(out, tr->comm);
		fprintf(out,
			", \"start_ns\": %llu, \"duration_ns\": %llu, \"peak_bytes\": %llu, \"live_at_end_bytes\": %llu, \"at_job_peak_bytes\": %llu, \"peak_resident_bytes\": %llu}",
			(unsigned long long)(tr->start_ns - origin),
			(unsigned long long)s->duration_ns,
			(unsigned long long)s->all.peak_bytes,
			(unsigned long long)s->all.live_bytes,
			(unsigned long long)live[p],
			(unsigned long long)tr->peak_resident);
	}
	fprintf(out, "],\n \"peak_bytes\": %llu,\n \"peak_t_ns\": %llu",
		(unsigned long long)peak, (unsigned long long)peak_t);
	put_helds_json(out, "peak_owners", owners);
	put_helds_json(out, "peak_sites", sites);
	fprintf(out, "}\n");
}

/* The job's timeline, alone or in a page with the job's summary. */
static int put_picture(FILE *out, struct trace_proc *procs, size_t n,
		       uint64_t origin, uint64_t peak, uint64_t peak_t,
		       const uint64_t *live, const struct helds *owners,
		       const struct helds *sites, struct job_picture *j,
		       bool html)
{
	struct helds byproc = { 0 };
	struct timeline_notes notes = { 0 };
	char label[160];
	bool named_owners = false;

	for (size_t p = 0; p < n; p++) {
		snprintf(label, sizeof(label), "%ld %s", procs[p].tr.pid,
			 procs[p].tr.comm);
		if (live[p] && hold(&byproc, label, (int64_t)live[p], 0)) {
			free(byproc.v);
			return -ENOMEM;
		}
	}
	qsort(byproc.v, byproc.n, sizeof(*byproc.v), most_bytes);
	for (size_t i = 0; i < owners->n; i++)
		if (owners->v[i].bytes &&
		    strcmp(owners->v[i].label, report_owner(NULL, 0)))
			named_owners = true;
	notes_of(&notes, "at the peak, by process:", &byproc, peak);
	if (named_owners)
		notes_of(&notes, "by owner:", owners, peak);
	notes_of(&notes, "by site:", sites, peak);
	free(byproc.v);
	j->peak_t_ns = peak_t;
	j->notes = &notes;
	if (!html) {
		job_timeline_svg(out, j, true);
		return 0;
	}
	fprintf(out,
		"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
		"<title>alloy memory timeline of a job</title>\n"
		"<style>body{font-family:sans-serif;margin:24px}"
		"pre{background:#f6f6f6;padding:12px}</style>\n"
		"</head><body>\n<h1>alloy memory timeline of a job</h1>\n");
	job_timeline_svg(out, j, false);
	fprintf(out, "<pre id=\"summary\">\n");
	/* The summary's text, escaped: it names processes and sites. */
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&buf, &len);

		if (!mem)
			return -ENOMEM;
		put_text(mem, procs, n, origin, peak, peak_t, live, owners,
			 sites);
		if (fclose(mem)) {
			free(buf);
			return -ENOMEM;
		}
		html_text(out, buf);
		free(buf);
	}
	fprintf(out, "</pre>\n</body></html>\n");
	return 0;
}

int report_processes(FILE *out, struct trace_proc *procs, size_t n,
		     enum job_format fmt, char *err, size_t errlen)
{
	struct helds owners = { 0 }, sites = { 0 };
	uint64_t origin = UINT64_MAX, sum = 0, peak = 0, peak_t = 0, end = 0;
	bool picture = fmt == JOB_SVG || fmt == JOB_HTML;
	struct job_picture j = { 0 };
	uint64_t *live = NULL;
	struct merged *m;
	size_t count, at = 0;
	int rc = -ENOMEM;

	for (size_t p = 0; p < n; p++) {
		if (!procs[p].tr.has_start) {
			snprintf(
				err, errlen,
				"%s has no start time in its header (a trace of an older alloy): it cannot be put beside the others",
				procs[p].path);
			return -EINVAL;
		}
		if (procs[p].tr.start_ns < origin)
			origin = procs[p].tr.start_ns;
	}
	for (size_t p = 0; p < n; p++) {
		uint64_t e = procs[p].tr.start_ns - origin +
			     procs[p].sum.duration_ns;

		end = e > end ? e : end;
	}
	m = merge(procs, n, origin, &count);
	live = calloc(n, sizeof(*live));
	if (picture) {
		j.lanes = calloc(n + 1, sizeof(*j.lanes));
		j.n = n + 1;
		j.dur_ns = end;
	}
	if (!m || !live || (picture && !j.lanes))
		goto out;
	for (size_t p = 0; picture && p < n; p++) {
		struct job_lane *l = &j.lanes[p + 1];

		l->pid = procs[p].tr.pid;
		l->name = procs[p].tr.comm;
		l->start_ns = procs[p].tr.start_ns - origin;
		l->end_ns = l->start_ns + procs[p].sum.duration_ns;
	}
	if (picture)
		j.lanes[0].name = "";
	for (size_t i = 0; i < count; i++) {
		const struct trace_event *e;
		uint32_t p = m[i].p;

		if (m[i].ev == PROCESS_END) {
			sum -= live[p];
			live[p] = 0;
		} else {
			e = &procs[p].tr.ev[m[i].ev];
			if (e->op == TRACE_ALLOC) {
				sum += e->size;
				live[p] += e->size;
				if (sum > peak) {
					peak = sum;
					peak_t = m[i].t;
					at = i;
				}
			} else {
				sum -= e->size;
				live[p] -= e->size;
			}
		}
		if (picture) {
			bucket(&j.lanes[0], m[i].t, end, sum);
			bucket(&j.lanes[p + 1], m[i].t, end, live[p]);
		}
	}
	memset(live, 0, n * sizeof(*live));
	if (count && held_at(procs, n, m, at, live, &owners, &sites))
		goto out;
	if (fmt == JOB_JSON)
		put_json(out, procs, n, origin, peak, peak_t, live, &owners,
			 &sites);
	else if (fmt == JOB_TEXT)
		put_text(out, procs, n, origin, peak, peak_t, live, &owners,
			 &sites);
	else if (put_picture(out, procs, n, origin, peak, peak_t, live, &owners,
			     &sites, &j, fmt == JOB_HTML))
		goto out;
	rc = 0;
out:
	if (rc)
		snprintf(err, errlen, "out of memory");
	for (size_t p = 0; p < n; p++)
		if (procs[p].sym) {
			symbols_free(procs[p].sym);
			procs[p].sym = NULL;
		}
	free(j.lanes);
	free(owners.v);
	free(sites.v);
	free(live);
	free(m);
	return rc;
}
