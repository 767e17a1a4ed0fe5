// SPDX-License-Identifier: MIT
/*
 * analysis/perfetto.c - a trace as Chrome's trace-event JSON, the format
 * Perfetto's UI and chrome://tracing open: one counter track of live
 * bytes per allocator and device ("live bytes: default cpu:0") and one
 * for the whole process ("live bytes: all"), under a process named after
 * the traced one.
 *
 * A counter is a value that holds until its next sample, so a track
 * needs a sample only where the value changes; a trace of millions of
 * events would still make a file of millions of samples.  The time is
 * cut into BUCKETS equal parts, and each track gets at most two samples
 * a part: its highest value there, at the moment it was reached, and the
 * value the part ends with.  Every peak survives, at its own time; only
 * the ups and downs inside a part, below its highest, are left out.
 *
 * Owners become slices on their thread's track: a slice from a thread's
 * first allocation under an owner to its first allocation under another
 * (or none), or to the end of the trace; "model/layer2" is a slice
 * "layer2" inside a slice "model".  (An owner is known only where the
 * thread allocated: a slice says when the owner's memory was made, not
 * exactly how long the label was in force.)
 * Viewers of slices (speedscope's) open the file as well as viewers of
 * counters.  A trace that changes owners millions of times keeps its
 * first MAX_SLICES slices, closed where they stop.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "report.h"

#define BUCKETS	   20000
#define MAX_SLICES 100000

struct track {
	uint64_t live;	     /* now */
	uint64_t max, max_t; /* the highest in this part, and when */
	uint64_t last_t;     /* the last change in this part */
	bool touched;	     /* changed in this part */
	uint64_t shown;	     /* the last value written */
	char name[96];
};

static void sample(FILE *out, long pid, const char *name, uint64_t t_ns,
		   uint64_t bytes)
{
	fprintf(out,
		",\n{\"ph\": \"C\", \"pid\": %ld, \"tid\": 0, \"ts\": %llu.%03u, \"name\": ",
		pid, (unsigned long long)(t_ns / 1000),
		(unsigned)(t_ns % 1000));
	json_string(out, name);
	fprintf(out, ", \"args\": {\"bytes\": %llu}}",
		(unsigned long long)bytes);
}

/* The part's samples of track k: its highest, then where it ends. */
static void flush(FILE *out, long pid, struct track *k)
{
	if (!k->touched)
		return;
	if (k->max != k->shown)
		sample(out, pid, k->name, k->max_t, k->max);
	if (k->live != k->max || k->last_t != k->max_t)
		sample(out, pid, k->name, k->last_t, k->live);
	k->shown = k->live;
	k->touched = false;
	k->max = k->live;
}

static void change(struct track *k, uint64_t live, uint64_t t_ns)
{
	k->live = live;
	k->last_t = t_ns;
	if (!k->touched || live > k->max) {
		k->max = live;
		k->max_t = t_ns;
	}
	k->touched = true;
}

static void slice_edge(FILE *out, long pid, long tid, char ph, uint64_t t_ns,
		       const char *name, size_t len)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "%.*s", (int)len, name);
	fprintf(out,
		",\n{\"ph\": \"%c\", \"pid\": %ld, \"tid\": %ld, \"ts\": %llu.%03u, \"cat\": \"owner\", \"name\": ",
		ph, pid, tid, (unsigned long long)(t_ns / 1000),
		(unsigned)(t_ns % 1000));
	json_string(out, buf);
	fprintf(out, "}");
}

/* The length of the first n components of path ("a/b/c", n 2: 3). */
static size_t components(const char *path, size_t n)
{
	size_t len = 0;

	for (size_t k = 0; k < n; k++) {
		const char *slash = strchr(path + len, '/');

		len = slash ? (size_t)(slash - path) + 1 : strlen(path);
	}
	return len && path[len - 1] == '/' ? len - 1 : len;
}

static size_t depth_of(const char *path)
{
	size_t d = *path ? 1 : 0;

	for (; *path; path++)
		d += *path == '/';
	return d;
}

/*
 * Go from owner path `from` to `to` on a thread: close what they do not
 * share at t_end (innermost first), open the rest of `to` at t_start.
 * Returns the slices opened.
 */
static size_t owner_step(FILE *out, long pid, long tid, const char *from,
			 const char *to, uint64_t t_end, uint64_t t_start)
{
	size_t df = depth_of(from), dt = depth_of(to), same = 0;

	while (same < df && same < dt) {
		size_t a = components(from, same + 1);

		if (a != components(to, same + 1) || memcmp(from, to, a))
			break;
		same++;
	}
	for (size_t k = df; k > same; k--) {
		size_t lo = components(from, k - 1), hi = components(from, k);

		lo += lo ? 1 : 0;
		slice_edge(out, pid, tid, 'E', t_end, from + lo, hi - lo);
	}
	for (size_t k = same + 1; k <= dt; k++) {
		size_t lo = components(to, k - 1), hi = components(to, k);

		lo += lo ? 1 : 0;
		slice_edge(out, pid, tid, 'B', t_start, to + lo, hi - lo);
	}
	return dt > same ? dt - same : 0;
}

/* Each thread's runs of allocations under one owner, as nested slices. */
static int owner_slices(FILE *out, const struct trace *tr, long pid)
{
	uint32_t *cur = calloc(tr->nthreads + 1, sizeof(*cur));
	bool *named = calloc(tr->nthreads + 1, sizeof(*named));
	size_t opened = 0;

	if (!cur || !named) {
		free(cur);
		free(named);
		return -ENOMEM;
	}
	for (size_t i = 0; i < tr->nev && opened < MAX_SLICES; i++) {
		const struct trace_event *e = &tr->ev[i];
		uint32_t th = e->thread, o;
		long tid;

		if (e->op != TRACE_ALLOC || th >= tr->nthreads)
			continue;
		o = e->owner < tr->nowners && tr->owners[e->owner] ? e->owner
								   : 0;
		tid = tr->threads[th];
		if (o == cur[th])
			continue;
		if (!named[th]) {
			fprintf(out,
				",\n{\"ph\": \"M\", \"pid\": %ld, \"tid\": %ld, \"name\": \"thread_name\", \"args\": {\"name\": \"thread %ld\"}}",
				pid, tid, tid);
			named[th] = true;
		}
		opened += owner_step(out, pid, tid,
				     cur[th] ? tr->owners[cur[th]] : "",
				     o ? tr->owners[o] : "", e->t_ns, e->t_ns);
		cur[th] = o;
	}
	/* What is still open ends with the trace. */
	for (size_t th = 0; th < tr->nthreads; th++)
		if (cur[th])
			owner_step(out, pid, tr->threads[th],
				   tr->owners[cur[th]], "", tr->end_ns,
				   tr->end_ns);
	free(cur);
	free(named);
	return 0;
}

int report_perfetto(FILE *out, const struct report_ctx *c)
{
	const struct trace *tr = c->tr;
	struct track *tk = calloc(tr->nseries + 1, sizeof(*tk));
	struct track *all;
	struct blockmap live = { 0 };
	uint64_t span = tr->end_ns ? tr->end_ns : 1, part = 0;
	long pid = tr->pid > 0 ? tr->pid : 1;
	char name[128];
	int rc = 0;

	if (!tk)
		return -ENOMEM;
	all = &tk[tr->nseries];
	for (size_t s = 0; s < tr->nseries; s++)
		snprintf(tk[s].name, sizeof(tk[s].name), "live bytes: %s %s",
			 tr->series[s].allocator, tr->series[s].device);
	snprintf(all->name, sizeof(all->name), "live bytes: all");

	fprintf(out,
		"{\"displayTimeUnit\": \"ns\", \"otherData\": {\"trace\": ");
	json_string(out, c->path);
	fprintf(out,
		", \"pid\": %ld, \"events\": %zu, \"peak_bytes\": %llu, \"peak_ns\": %llu},\n"
		"\"traceEvents\": [\n",
		tr->pid, tr->nev, (unsigned long long)c->sum->all.peak_bytes,
		(unsigned long long)c->sum->all.peak_t_ns);
	snprintf(name, sizeof(name), "alloy trace of pid %ld", tr->pid);
	fprintf(out,
		"{\"ph\": \"M\", \"pid\": %ld, \"tid\": 0, \"name\": \"process_name\", \"args\": {\"name\": ",
		pid);
	json_string(out, name);
	fprintf(out, "}}");
	/* Every track starts at zero with the trace. */
	for (size_t s = 0; s <= tr->nseries; s++)
		sample(out, pid, tk[s].name, 0, 0);

	for (size_t i = 0; i < tr->nev; i++) {
		const struct trace_event *e = &tr->ev[i];
		uint64_t p = (uint64_t)((double)e->t_ns / (double)span *
					(BUCKETS - 1));
		struct blockmap_slot *sl;
		uint16_t series;
		uint64_t size;

		if (p != part) {
			for (size_t s = 0; s <= tr->nseries; s++)
				flush(out, pid, &tk[s]);
			part = p;
		}
		if (e->op == TRACE_ALLOC) {
			if (blockmap_insert(&live, e->block, i)) {
				rc = -ENOMEM;
				break;
			}
			series = e->series;
			change(&tk[series], tk[series].live + e->size, e->t_ns);
			change(all, all->live + e->size, e->t_ns);
		} else if (e->op == TRACE_FREE &&
			   (sl = blockmap_find(&live, e->block))) {
			series = tr->ev[sl->value].series;
			size = tr->ev[sl->value].size;
			blockmap_remove(&live, sl);
			change(&tk[series], tk[series].live - size, e->t_ns);
			change(all, all->live - size, e->t_ns);
		}
	}
	for (size_t s = 0; s <= tr->nseries; s++)
		flush(out, pid, &tk[s]);
	if (!rc)
		rc = owner_slices(out, tr, pid);
	fprintf(out, "\n]}\n");
	blockmap_free(&live);
	free(tk);
	return rc;
}
