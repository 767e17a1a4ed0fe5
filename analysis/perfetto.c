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
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "report.h"

#define BUCKETS 20000

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
	fprintf(out, "\n]}\n");
	blockmap_free(&live);
	free(tk);
	return rc;
}
