// SPDX-License-Identifier: MIT
/*
 * tools/trace.c - the trace reader and the one-pass summary.
 *
 * The reader is strict: every line must parse, every free must name a
 * block that is live at that point, and the first problem stops it with
 * the line number and byte offset where it was found.  The one allowance
 * is a missing end record, which is what a trace of a crashed program
 * looks like: the writer only ever leaves whole lines behind.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

struct reader {
	const char *path;
	size_t line;
	long long offset;
	char *err;
	size_t errlen;
};

static int fail(struct reader *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(struct reader *r, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(r->err, r->errlen, "%s:%zu: (byte %lld) %s", r->path, r->line,
		 r->offset, msg);
	return -1;
}

/* ---- block id -> value map (the reader's live set, replay's blocks) - */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static int blockmap_grow(struct blockmap *m)
{
	size_t cap = m->cap ? 2 * m->cap : 1024;
	struct blockmap_slot *n = calloc(cap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->slots[i].id)
			continue;
		size_t j = mix(m->slots[i].id) & (cap - 1);

		while (n[j].id)
			j = (j + 1) & (cap - 1);
		n[j] = m->slots[i];
	}
	free(m->slots);
	m->slots = n;
	m->cap = cap;
	return 0;
}

struct blockmap_slot *blockmap_find(struct blockmap *m, uint64_t id)
{
	size_t j;

	if (!m->cap)
		return NULL;
	for (j = mix(id) & (m->cap - 1); m->slots[j].id;
	     j = (j + 1) & (m->cap - 1))
		if (m->slots[j].id == id)
			return &m->slots[j];
	return NULL;
}

int blockmap_insert(struct blockmap *m, uint64_t id, uint64_t value)
{
	size_t j;

	if (2 * (m->used + 1) > m->cap && blockmap_grow(m))
		return -ENOMEM;
	for (j = mix(id) & (m->cap - 1); m->slots[j].id;
	     j = (j + 1) & (m->cap - 1))
		if (m->slots[j].id == id)
			return -EEXIST;
	m->slots[j].id = id;
	m->slots[j].value = value;
	m->used++;
	return 0;
}

void blockmap_remove(struct blockmap *m, struct blockmap_slot *slot)
{
	size_t mask = m->cap - 1, i = (size_t)(slot - m->slots), j = i;

	/* Shift the run after the hole back, so no tombstones are needed. */
	for (;;) {
		j = (j + 1) & mask;
		if (!m->slots[j].id)
			break;
		size_t k = mix(m->slots[j].id) & mask;

		if ((j > i && (k <= i || k > j)) ||
		    (j < i && k <= i && k > j)) {
			m->slots[i] = m->slots[j];
			i = j;
		}
	}
	m->slots[i].id = 0;
	m->used--;
}

void blockmap_free(struct blockmap *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

/* ---- parsing ------------------------------------------------------- */

static int series_index(struct trace *tr, const char *alloc, const char *dev)
{
	for (size_t i = 0; i < tr->nseries; i++)
		if (!strcmp(tr->series[i].allocator, alloc) &&
		    !strcmp(tr->series[i].device, dev))
			return (int)i;
	if (tr->nseries == TRACE_MAX_SERIES)
		return -1;
	snprintf(tr->series[tr->nseries].allocator,
		 sizeof(tr->series[0].allocator), "%s", alloc);
	snprintf(tr->series[tr->nseries].device, sizeof(tr->series[0].device),
		 "%s", dev);
	return (int)tr->nseries++;
}

static int push(struct trace *tr, const struct trace_event *e)
{
	if (tr->nev == tr->cap) {
		size_t cap = tr->cap ? 2 * tr->cap : 4096;
		struct trace_event *n = realloc(tr->ev, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		tr->ev = n;
		tr->cap = cap;
	}
	tr->ev[tr->nev++] = *e;
	return 0;
}

static int parse_event(struct reader *r, struct trace *tr,
		       struct blockmap *live, char *line)
{
	struct trace_event e = { .op = line[0] };
	unsigned long long t, block, size = 0;
	unsigned align = 0;
	char alloc[64] = "", dev[32] = "", extra;
	int n;

	if (e.op == TRACE_ALLOC || e.op == TRACE_FREE) {
		n = sscanf(line + 1, " %llu %ld %llx %llu %u %63s %31s %c", &t,
			   &e.tid, &block, &size, &align, alloc, dev, &extra);
		if (n != 7)
			return fail(
				r,
				"expected \"%c T_NS THREAD BLOCK SIZE ALIGN ALLOCATOR DEVICE\", got \"%.60s\"",
				e.op, line);
		if (!alloy_allocator_name_valid(alloc))
			return fail(r, "bad allocator name \"%s\"", alloc);
		if (!strchr(dev, ':'))
			return fail(r, "bad device \"%s\" (want TYPE:INDEX)",
				    dev);
		n = series_index(tr, alloc, dev);
		if (n < 0)
			return fail(r, "more than %d allocator/device pairs",
				    TRACE_MAX_SERIES);
		e.series = (uint16_t)n;
	} else if (e.op == TRACE_UNKNOWN_FREE || e.op == TRACE_DOUBLE_FREE) {
		n = sscanf(line + 1, " %llu %ld %llx %c", &t, &e.tid, &block,
			   &extra);
		if (n != 3)
			return fail(
				r,
				"expected \"%c T_NS THREAD BLOCK\", got \"%.60s\"",
				e.op, line);
	} else {
		return fail(r, "unknown record \"%.20s\"", line);
	}
	if (!block)
		return fail(r, "block 0 is not a block");
	e.t_ns = t;
	e.block = block;
	e.size = size;
	e.align = align;
	if (e.op == TRACE_ALLOC) {
		if (!size)
			return fail(r, "allocation of 0 bytes");
		/* The live set maps a block to its allocation event. */
		n = blockmap_insert(live, block, tr->nev);
		if (n == -EEXIST)
			return fail(r, "block %#llx allocated while live",
				    block);
		if (n)
			return fail(r, "out of memory");
	} else if (e.op == TRACE_FREE) {
		struct blockmap_slot *b = blockmap_find(live, block);
		const struct trace_event *a;

		if (!b)
			return fail(r, "free of block %#llx, which is not live",
				    block);
		a = &tr->ev[b->value];
		if (a->size != size)
			return fail(
				r,
				"free of block %#llx with size %llu, allocated with %llu",
				block, size, (unsigned long long)a->size);
		/* Else the summary would count a free where no allocation was.
		 */
		if (a->series != e.series)
			return fail(
				r,
				"free of block %#llx by %s on %s, allocated by %s on %s",
				block, alloc, dev,
				tr->series[a->series].allocator,
				tr->series[a->series].device);
		blockmap_remove(live, b);
	}
	if (push(tr, &e))
		return fail(r, "out of memory");
	return 0;
}

int trace_read(const char *path, struct trace *tr, char *err, size_t errlen)
{
	struct reader r = { path, 0, 0, err, errlen };
	struct blockmap live = { 0 };
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	FILE *f;
	int rc = 0;

	memset(tr, 0, sizeof(*tr));
	f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	while ((len = getline(&line, &cap, f)) > 0) {
		r.line++;
		if (tr->complete) {
			rc = fail(&r, "data after the end record");
			goto out;
		}
		if (line[len - 1] != '\n') {
			rc = fail(
				&r,
				"truncated line (no newline at byte %lld): the file was cut short",
				r.offset + len);
			goto out;
		}
		line[--len] = '\0';
		if (memchr(line, '\0', (size_t)len)) {
			rc = fail(&r, "NUL byte in line");
			goto out;
		}
		if (r.line == 1) {
			if (sscanf(line, "alloy-trace %d pid=%ld", &tr->version,
				   &tr->pid) < 1) {
				rc = fail(
					&r,
					"not an alloy trace (no \"alloy-trace VERSION\" header)");
				goto out;
			}
			if (tr->version != TRACE_VERSION) {
				rc = fail(
					&r,
					"trace version %d; this reader knows %d",
					tr->version, TRACE_VERSION);
				goto out;
			}
		} else if (line[0] == '#' || len == 0) {
			/* comment */
		} else if (!strncmp(line, "end ", 4)) {
			unsigned long long t, nev;

			if (sscanf(line + 4, "%llu %llu", &t, &nev) != 2) {
				rc = fail(&r, "bad end record \"%.40s\"", line);
				goto out;
			}
			if (nev != tr->nev) {
				rc = fail(
					&r,
					"end record counts %llu events, the trace has %zu",
					nev, tr->nev);
				goto out;
			}
			tr->complete = true;
			tr->end_ns = t;
		} else if ((rc = parse_event(&r, tr, &live, line))) {
			goto out;
		}
		r.offset += len + 1;
	}
	if (ferror(f)) {
		rc = fail(&r, "read error: %s", strerror(errno));
		goto out;
	}
	if (r.line == 0) {
		snprintf(err, errlen, "%s: empty file, not an alloy trace",
			 path);
		rc = -1;
		goto out;
	}
	if (!tr->complete && tr->nev)
		tr->end_ns = tr->ev[tr->nev - 1].t_ns;
	tr->lines = r.line;
out:
	free(line);
	blockmap_free(&live);
	fclose(f);
	if (rc)
		trace_free(tr);
	return rc;
}

void trace_free(struct trace *tr)
{
	free(tr->ev);
	tr->ev = NULL;
	tr->nev = tr->cap = 0;
}

void trace_summarize(const struct trace *tr, struct trace_summary *sum)
{
	uint64_t all = 0, t = 0;

	memset(sum, 0, sizeof(*sum));
	for (size_t i = 0; i < tr->nev; i++) {
		const struct trace_event *e = &tr->ev[i];
		struct trace_series_sum *s = &sum->s[e->series];

		/* Threads stamp times before they queue: keep time monotone. */
		t = e->t_ns > t ? e->t_ns : t;
		switch (e->op) {
		case TRACE_ALLOC:
			s->allocs++;
			s->total_bytes += e->size;
			s->live_bytes += e->size;
			s->live_blocks++;
			if (s->live_bytes > s->peak_bytes) {
				s->peak_bytes = s->live_bytes;
				s->peak_t_ns = t;
			}
			all += e->size;
			if (all > sum->all.peak_bytes) {
				sum->all.peak_bytes = all;
				sum->all.peak_t_ns = t;
			}
			break;
		case TRACE_FREE:
			s->frees++;
			s->live_bytes -= e->size;
			s->live_blocks--;
			all -= e->size;
			break;
		case TRACE_UNKNOWN_FREE:
			sum->unknown_frees++;
			break;
		case TRACE_DOUBLE_FREE:
			sum->double_frees++;
			break;
		}
	}
	for (size_t i = 0; i < tr->nseries; i++) {
		sum->all.allocs += sum->s[i].allocs;
		sum->all.frees += sum->s[i].frees;
		sum->all.total_bytes += sum->s[i].total_bytes;
		sum->all.live_bytes += sum->s[i].live_bytes;
		sum->all.live_blocks += sum->s[i].live_blocks;
	}
	sum->duration_ns = tr->end_ns > t ? tr->end_ns : t;
}

const char *trace_human_bytes(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)n;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)n);
	else
		snprintf(buf, len, "%.2f %s", v, units[u]);
	return buf;
}
