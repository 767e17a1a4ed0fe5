// SPDX-License-Identifier: MIT
/*
 * analysis/trace.c - the trace reader (versions 1 and 2) and the one-pass
 * summary.
 *
 * The reader is strict: every line must parse, every free must name a
 * block that is live at that point, sizes, sums and times must not wrap,
 * and the first problem stops it with the line number and byte offset
 * where it was found.  Two allowances: a missing end record, which is
 * what a trace of a crashed program looks like (the writer only ever
 * leaves whole lines behind), and references to stacks or owners the
 * trace never declared (a cut stack table), which are counted, shown as
 * unknown, and reported by the commands.
 *
 * The file is read in chunks and parsed by hand: a report of ten million
 * events must take seconds (docs/BENCHMARKS.md), and sscanf alone would
 * spend more than that.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#ifdef HAVE_ZSTD
#include <zstd.h>
#endif

#include "kernel/hash.h"
#include "trace.h"

/* A newer version from the writer must come with its parser here. */
_Static_assert(TRACE_VERSION == 4, "the reader parses versions 1 to 4");

/* Call progress every so many lines. */
#define PROGRESS_LINES (1u << 18)

struct reader {
	const char *path;
	size_t line;
	long long offset;
	char *err;
	size_t errlen;
	struct trace *tr;
	struct blockmap live;
	uint64_t live_bytes, total_bytes;
	uint64_t t_ns; /* running time (version 2 on: the sum of deltas) */
	uint64_t unit; /* nanoseconds in the header's unit */
	/* Version 2: series id -> (series index, alignment). */
	struct {
		uint16_t series;
		uint32_t align;
		bool defined;
	} * vseries;
	size_t nvseries;
	size_t v1_threads; /* version 1: threads seen (by tid) */
	bool time_wrapped;
	size_t modcap;
};

/*
 * What a second header or data after the end mostly mean: the processes
 * of a program (a compiler driver, a shell pipeline) all wrote the one
 * path they were given, as they do with ALLOY_CONF alone (alloy run gives
 * each but the program PATH.PID).
 */
#define SHARED_HINT \
	"a trace path with %p, or alloy run, gives each process its own file"

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

static int blockmap_grow(struct blockmap *m)
{
	size_t cap = m->cap ? 2 * m->cap : 1024;
	struct blockmap_slot *n = calloc(cap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->slots[i].id)
			continue;
		size_t j = alloy__mix64(m->slots[i].id) & (cap - 1);

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
	for (j = alloy__mix64(id) & (m->cap - 1); m->slots[j].id;
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
	for (j = alloy__mix64(id) & (m->cap - 1); m->slots[j].id;
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
		size_t k = alloy__mix64(m->slots[j].id) & mask;

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

/* ---- fields -------------------------------------------------------- */

/* A line being read: [p, end), fields separated by spaces. */
struct tok {
	const char *p, *end;
};

static bool at_end(const struct tok *t)
{
	return t->p == t->end;
}

/* The spaces before a field; false at the end of the line. */
static bool sep(struct tok *t)
{
	if (t->p == t->end || *t->p != ' ')
		return false;
	while (t->p < t->end && *t->p == ' ')
		t->p++;
	return t->p < t->end;
}

/* A field ends at a space or at the end of the line. */
static bool field_end(const struct tok *t)
{
	return t->p == t->end || *t->p == ' ';
}

static bool dec(struct tok *t, uint64_t *v)
{
	const char *s = t->p;
	uint64_t x = 0;

	while (t->p < t->end && *t->p >= '0' && *t->p <= '9') {
		if (__builtin_mul_overflow(x, 10, &x) ||
		    __builtin_add_overflow(x, (uint64_t)(*t->p - '0'), &x))
			return false;
		t->p++;
	}
	*v = x;
	return t->p > s && field_end(t);
}

static int hexdigit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Hexadecimal, with or without 0x. */
static bool hex(struct tok *t, uint64_t *v)
{
	const char *s;
	uint64_t x = 0;
	int d;

	if (t->end - t->p > 2 && t->p[0] == '0' &&
	    (t->p[1] == 'x' || t->p[1] == 'X'))
		t->p += 2;
	s = t->p;
	while (t->p < t->end && (d = hexdigit(*t->p)) >= 0) {
		if (x >> 60)
			return false;
		x = x << 4 | (uint64_t)d;
		t->p++;
	}
	*v = x;
	return t->p > s && field_end(t);
}

/* A word into buf (NUL-terminated); false when empty or too long. */
static bool word(struct tok *t, char *buf, size_t len)
{
	size_t n = 0;

	while (t->p < t->end && *t->p != ' ') {
		if (n + 1 >= len)
			return false;
		buf[n++] = *t->p++;
	}
	buf[n] = '\0';
	return n > 0;
}

/* ---- tables -------------------------------------------------------- */

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

/* Make *arr hold at least n elements of size sz, zeroing what is new. */
static int grow(void **arr, size_t *have, size_t n, size_t sz)
{
	size_t cap = *have ? *have : 64;
	void *p;

	if (n <= *have)
		return 0;
	while (cap < n)
		cap *= 2;
	p = realloc(*arr, cap * sz);
	if (!p)
		return -ENOMEM;
	memset((char *)p + *have * sz, 0, (cap - *have) * sz);
	*arr = p;
	*have = cap;
	return 0;
}

static void sum_event(struct trace_summary *sum, const uint8_t *dev_first,
		      uint64_t *all, uint64_t *t, const struct trace_event *e,
		      size_t i);

/* dev_first[] for the series from *done on. */
static void map_devices(const struct trace *tr, uint8_t *dev_first,
			size_t *done)
{
	for (size_t s = *done; s < tr->nseries; s++) {
		size_t f = 0;

		while (f < s &&
		       strcmp(tr->series[f].device, tr->series[s].device))
			f++;
		dev_first[s] = (uint8_t)f;
	}
	*done = tr->nseries;
}

/* Events prefaulted at a time: 8 MiB of them. */
#define PREFAULT_EVENTS ((size_t)(8 << 20) / sizeof(struct trace_event))

/*
 * Map the pages of the next PREFAULT_EVENTS events in one call before
 * they are written: a fault per 4 KiB page is some 10 us where the
 * machine is a virtual one, a second for a trace of ten million events.
 * Only what is about to be written, so memory stays what the events
 * take.  A kernel without MADV_POPULATE_WRITE faults them one by one.
 */
static void prefault(struct trace *tr)
{
#ifdef MADV_POPULATE_WRITE
	const uintptr_t page = 4096;
	size_t n = tr->cap - tr->nev < PREFAULT_EVENTS ? tr->cap - tr->nev
						       : PREFAULT_EVENTS;
	uintptr_t lo = (uintptr_t)&tr->ev[tr->nev] & ~(page - 1);
	uintptr_t hi = ((uintptr_t)&tr->ev[tr->nev + n]) & ~(page - 1);

	if (hi > lo)
		(void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#else
	(void)tr;
#endif
}

static int push(struct trace *tr, const struct trace_event *e)
{
	if (tr->nev % PREFAULT_EVENTS == 0 && tr->nev < tr->cap &&
	    tr->cap >= PREFAULT_EVENTS)
		prefault(tr);
	if (tr->nev == tr->cap) {
		size_t cap = tr->cap ? 2 * tr->cap : 4096;
		struct trace_event *n = realloc(tr->ev, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		tr->ev = n;
		tr->cap = cap;
		if (cap >= PREFAULT_EVENTS)
			prefault(tr);
	}
	/*
	 * Summed while the event is at hand: a later pass over half a
	 * gigabyte of events would wait on memory for each of them.
	 */
	if (!tr->sum && tr->summed == tr->nev) {
		tr->sum = calloc(1, sizeof(*tr->sum));
		if (!tr->sum)
			return -ENOMEM;
	}
	if (tr->summed == tr->nev) {
		if (tr->ndev_first < tr->nseries)
			map_devices(tr, tr->dev_first, &tr->ndev_first);
		sum_event(tr->sum, tr->dev_first, &tr->sum_all, &tr->sum_t, e,
			  tr->nev);
		tr->summed++;
	}
	tr->ev[tr->nev++] = *e;
	return 0;
}

/* The index of kernel thread tid (version 1 names threads by tid). */
static int thread_of_tid(struct reader *r, long tid, uint32_t *out)
{
	struct trace *tr = r->tr;

	/* Few threads, and consecutive events mostly share one. */
	for (size_t i = r->v1_threads; i-- > 0;)
		if (tr->threads[i] == tid) {
			*out = (uint32_t)i;
			return 0;
		}
	if (r->v1_threads >= TRACE_MAX_ID)
		return fail(r, "more than %u threads", TRACE_MAX_ID);
	if (grow((void **)&tr->threads, &tr->nthreads, r->v1_threads + 1,
		 sizeof(long)))
		return fail(r, "out of memory");
	tr->threads[r->v1_threads] = tid;
	*out = (uint32_t)r->v1_threads++;
	return 0;
}

/* ---- events, both versions ------------------------------------------ */

static int check_align(struct reader *r, uint64_t align)
{
	if (!align || (align & (align - 1)) || align > TRACE_MAX_ALIGN)
		return fail(r,
			    "alignment %llu is not a power of two up to 2^40",
			    (unsigned long long)align);
	return 0;
}

/* Add an allocation of e->size bytes: checked sums, the live set. */
static int add_alloc(struct reader *r, struct trace_event *e)
{
	int n;

	if (!e->size)
		return fail(r, "allocation of 0 bytes");
	if (e->size > TRACE_MAX_SIZE)
		return fail(
			r,
			"size %llu is larger than any block (2^63 - 1 bytes)",
			(unsigned long long)e->size);
	if (__builtin_add_overflow(r->live_bytes, e->size, &r->live_bytes))
		return fail(r, "live bytes pass 2^64 with this block of %llu",
			    (unsigned long long)e->size);
	if (__builtin_add_overflow(r->total_bytes, e->size, &r->total_bytes))
		return fail(r, "total bytes pass 2^64 with this block of %llu",
			    (unsigned long long)e->size);
	/* The live set maps a block to its allocation event. */
	n = blockmap_insert(&r->live, e->block, r->tr->nev);
	if (n == -EEXIST)
		return fail(r, "block %#llx allocated while live",
			    (unsigned long long)e->block);
	if (n)
		return fail(r, "out of memory");
	return 0;
}

/* The live block a free names, taken out of the live set; NULL + error. */
static const struct trace_event *take_live(struct reader *r, uint64_t block)
{
	struct blockmap_slot *b = blockmap_find(&r->live, block);
	const struct trace_event *a;

	if (!b) {
		fail(r, "free of block %#llx, which is not live",
		     (unsigned long long)block);
		return NULL;
	}
	a = &r->tr->ev[b->value];
	blockmap_remove(&r->live, b);
	r->live_bytes -= a->size;
	return a;
}

static int add_event(struct reader *r, const struct trace_event *e)
{
	if (push(r->tr, e))
		return fail(r, "out of memory");
	return 0;
}

/* Version 1 keeps times as written; the summary takes the running max. */
static void stamp(struct reader *r, struct trace_event *e, uint64_t t)
{
	r->t_ns = t > r->t_ns ? t : r->t_ns;
	e->t_ns = r->t_ns;
}

/* ---- version 1 ------------------------------------------------------ */

static int v1_event(struct reader *r, struct tok *t, char op, const char *line)
{
	int len = (int)(t->end - line) < 60 ? (int)(t->end - line) : 60;
	struct trace *tr = r->tr;
	struct trace_event e = { .op = op };
	uint64_t time, tid, block, size = 0, align = 0;
	char alloc[64], dev[32];
	bool ok;
	int n;

	if (op == TRACE_ALLOC || op == TRACE_FREE) {
		ok = sep(t) && dec(t, &time) && sep(t) && dec(t, &tid) &&
		     sep(t) && hex(t, &block) && sep(t) && dec(t, &size) &&
		     sep(t) && dec(t, &align) && sep(t) &&
		     word(t, alloc, sizeof(alloc)) && sep(t) &&
		     word(t, dev, sizeof(dev)) && at_end(t);
		if (!ok)
			return fail(
				r,
				"expected \"%c T_NS THREAD BLOCK SIZE ALIGN ALLOCATOR DEVICE\", got \"%.*s\"",
				op, len, line);
		if (!alloy_allocator_name_valid(alloc))
			return fail(r, "bad allocator name \"%s\"", alloc);
		if (!strchr(dev, ':'))
			return fail(r, "bad device \"%s\" (want TYPE:INDEX)",
				    dev);
		if (check_align(r, align))
			return -1;
		n = series_index(tr, alloc, dev);
		if (n < 0)
			return fail(r, "more than %d allocator/device pairs",
				    TRACE_MAX_SERIES);
		e.series = (uint16_t)n;
	} else {
		ok = sep(t) && dec(t, &time) && sep(t) && dec(t, &tid) &&
		     sep(t) && hex(t, &block) && at_end(t);
		if (!ok)
			return fail(
				r,
				"expected \"%c T_NS THREAD BLOCK\", got \"%.*s\"",
				op, len, line);
	}
	if (!block)
		return fail(r, "block 0 is not a block");
	if (thread_of_tid(r, (long)tid, &e.thread))
		return -1;
	stamp(r, &e, time);
	e.block = block;
	e.size = size;
	e.align = (uint32_t)(align > UINT32_MAX ? 0 : align);
	if (op == TRACE_ALLOC) {
		if (add_alloc(r, &e))
			return -1;
	} else if (op == TRACE_FREE) {
		const struct trace_event *a = take_live(r, block);

		if (!a)
			return -1;
		if (a->size != size)
			return fail(
				r,
				"free of block %#llx with size %llu, allocated with %llu",
				(unsigned long long)block,
				(unsigned long long)size,
				(unsigned long long)a->size);
		/*
		 * Else the summary would count a free where no allocation was.
		 */
		if (a->series != e.series)
			return fail(
				r,
				"free of block %#llx by %s on %s, allocated by %s on %s",
				(unsigned long long)block, alloc, dev,
				tr->series[a->series].allocator,
				tr->series[a->series].device);
	}
	return add_event(r, &e);
}

/* ---- versions 2 and 3 ---------------------------------------------- */

/* The time field: since the previous event.  Sums that wrap are errors. */
static bool v2_time(struct reader *r, struct tok *t, struct trace_event *e)
{
	uint64_t dt;

	if (!(sep(t) && dec(t, &dt)))
		return false;
	if (__builtin_mul_overflow(dt, r->unit, &dt) ||
	    __builtin_add_overflow(r->t_ns, dt, &r->t_ns)) {
		r->time_wrapped = true;
		return false;
	}
	e->t_ns = r->t_ns;
	return true;
}

/* The error of a record that did not parse. */
static int bad_record(struct reader *r, const char *want)
{
	if (r->time_wrapped)
		return fail(r, "time passes 2^64 ns");
	return fail(r, "expected \"%s\"", want);
}

static int v2_thread(struct reader *r, uint64_t id, uint32_t *out)
{
	if (!id || id >= r->tr->nthreads || !r->tr->threads[id])
		return fail(r, "thread %llu was not declared (no \"T\" record)",
			    (unsigned long long)id);
	*out = (uint32_t)id;
	return 0;
}

static uint32_t v2_stack(struct reader *r, uint64_t id)
{
	struct trace *tr = r->tr;

	if (!id)
		return 0;
	if (id < tr->nnodes && tr->nodes[id].defined)
		return (uint32_t)id;
	tr->missing_stacks++;
	return TRACE_STACK_MISSING;
}

static uint32_t v2_owner(struct reader *r, uint64_t id)
{
	struct trace *tr = r->tr;

	if (!id || (id < tr->nowners && tr->owners[id]))
		return (uint32_t)id;
	tr->missing_owners++;
	return 0;
}

static int v2_alloc(struct reader *r, struct tok *t)
{
	struct trace_event e = { .op = TRACE_ALLOC };
	uint64_t th, series, stack = 0, owner = 0;

	if (!(v2_time(r, t, &e) && sep(t) && dec(t, &th) && sep(t) &&
	      dec(t, &series) && sep(t) && hex(t, &e.block) && sep(t) &&
	      dec(t, &e.size)))
		goto bad;
	if (sep(t) &&
	    !(dec(t, &stack) && (at_end(t) || (sep(t) && dec(t, &owner)))))
		goto bad;
	if (!at_end(t))
		goto bad;
	if (!e.block)
		return fail(r, "block 0 is not a block");
	if (v2_thread(r, th, &e.thread))
		return -1;
	if (!series || series >= r->nvseries || !r->vseries[series].defined)
		return fail(r, "series %llu was not declared (no \"S\" record)",
			    (unsigned long long)series);
	e.series = r->vseries[series].series;
	e.align = r->vseries[series].align;
	e.stack = v2_stack(r, stack);
	e.owner = v2_owner(r, owner);
	if (add_alloc(r, &e))
		return -1;
	return add_event(r, &e);
bad:
	return bad_record(r, "a DT THREAD SERIES BLOCK SIZE [STACK [OWNER]]");
}

static int v2_other(struct reader *r, struct tok *t, char op)
{
	struct trace_event e = { .op = op };
	uint64_t th;

	if (!(v2_time(r, t, &e) && sep(t) && dec(t, &th) && sep(t) &&
	      hex(t, &e.block) && at_end(t)))
		return bad_record(r, op == TRACE_FREE ? "f DT THREAD BLOCK"
				     : op == TRACE_UNKNOWN_FREE
					     ? "u DT THREAD BLOCK"
					     : "d DT THREAD BLOCK");
	if (!e.block)
		return fail(r, "block 0 is not a block");
	if (v2_thread(r, th, &e.thread))
		return -1;
	if (op == TRACE_FREE) {
		const struct trace_event *a = take_live(r, e.block);

		if (!a)
			return -1;
		e.size = a->size;
		e.series = a->series;
		e.align = a->align;
		e.stack = a->stack;
		e.owner = a->owner;
	}
	return add_event(r, &e);
}

/* "r DT RESIDENT MAPPED": a sample of the process's memory. */
static int v3_memory(struct reader *r, struct tok *t)
{
	struct trace *tr = r->tr;
	struct trace_event e = { 0 };
	struct trace_mem *m;
	uint64_t res, map;

	if (!(v2_time(r, t, &e) && sep(t) && dec(t, &res) && sep(t) &&
	      dec(t, &map) && at_end(t)))
		return bad_record(r, "r DT RESIDENT MAPPED");
	if (grow((void **)&tr->mem, &tr->memcap, tr->nmem + 1, sizeof(*m)))
		return fail(r, "out of memory");
	m = &tr->mem[tr->nmem++];
	m->t_ns = e.t_ns;
	m->resident = res;
	m->mapped = map;
	if (res > tr->peak_resident) {
		tr->peak_resident = res;
		tr->peak_resident_t_ns = e.t_ns;
	}
	if (map > tr->peak_mapped)
		tr->peak_mapped = map;
	return 0;
}

/*
 * The node id of a stack ("s" or "p" record) under parent, made; NULL
 * after an error.  Parents come first, so no walk up the tree can loop;
 * one never declared is counted and marked missing.
 */
static struct trace_node *node_new(struct reader *r, uint64_t id,
				   uint64_t parent)
{
	struct trace *tr = r->tr;
	struct trace_node *nd;

	if (grow((void **)&tr->nodes, &tr->nnodes, id + 1,
		 sizeof(*tr->nodes))) {
		fail(r, "out of memory");
		return NULL;
	}
	if (parent >= id) {
		fail(r,
		     "stack node %llu names parent %llu, "
		     "which is not an earlier node",
		     (unsigned long long)id, (unsigned long long)parent);
		return NULL;
	}
	nd = &tr->nodes[id];
	*nd = (struct trace_node){ .defined = true,
				   .parent = (uint32_t)parent };
	if (parent && (parent >= tr->nnodes || !tr->nodes[parent].defined)) {
		nd->parent = TRACE_STACK_MISSING;
		tr->missing_parents++;
	}
	return nd;
}

/* "c ID FUNCTION FILE": an interpreted function (version 4). */
static int v4_code(struct reader *r, struct tok *t, uint64_t id)
{
	struct trace *tr = r->tr;
	struct trace_code *c;
	const char *name;

	if (!sep(t))
		return fail(r, "expected \"c ID FUNCTION FILE\"");
	name = t->p;
	while (t->p < t->end && *t->p != ' ')
		t->p++;
	if (t->p == name || !sep(t))
		return fail(r, "expected \"c ID FUNCTION FILE\"");
	if (grow((void **)&tr->codes, &tr->ncodes, id + 1, sizeof(*c)))
		return fail(r, "out of memory");
	c = &tr->codes[id];
	free(c->function);
	free(c->file);
	c->function = strndup(name, (size_t)(t->p - 1 - name));
	c->file = strndup(t->p, (size_t)(t->end - t->p));
	if (!c->function || !c->file)
		return fail(r, "out of memory");
	/* The blanks between the fields are not the function's. */
	c->function[strcspn(c->function, " ")] = '\0';
	return 0;
}

/* "p ID PARENT CODE LINE": a stack node of an interpreted frame. */
static int v4_interp(struct reader *r, struct tok *t, uint64_t id)
{
	struct trace_node *nd;
	uint64_t parent, code, line;

	if (!(sep(t) && dec(t, &parent) && sep(t) && dec(t, &code) && sep(t) &&
	      dec(t, &line) && at_end(t)))
		return fail(r, "expected \"p ID PARENT CODE LINE\"");
	if (code >= TRACE_MAX_ID || line > UINT32_MAX)
		return fail(r, "p: code %llu or line %llu out of range",
			    (unsigned long long)code, (unsigned long long)line);
	nd = node_new(r, id, parent);
	if (!nd)
		return -1;
	nd->frame = line;
	nd->code = (uint32_t)code;
	return 0;
}

/* "T ID TID", "S ID ALLOCATOR DEVICE ALIGN", "s ID PARENT FRAME", ... */
static int v2_declare(struct reader *r, struct tok *t, char op)
{
	struct trace *tr = r->tr;
	uint64_t id, a, b;
	int c;
	char alloc[64], dev[32];

	if (!(sep(t) && (op == TRACE_DECL_MODULE ? hex(t, &id) : dec(t, &id))))
		return fail(r, "expected \"%c ID ...\"", op);
	if (op != TRACE_DECL_MODULE && (!id || id >= TRACE_MAX_ID))
		return fail(r, "%c id %llu is not between 1 and %u", op,
			    (unsigned long long)id, TRACE_MAX_ID - 1);
	switch (op) {
	case TRACE_DECL_CODE:
		return v4_code(r, t, id);
	case TRACE_DECL_INTERP:
		return v4_interp(r, t, id);
	case TRACE_DECL_THREAD:
		if (!(sep(t) && dec(t, &a) && at_end(t)))
			return fail(r, "expected \"T ID TID\"");
		if (grow((void **)&tr->threads, &tr->nthreads, id + 1,
			 sizeof(long)))
			return fail(r, "out of memory");
		tr->threads[id] = (long)a ? (long)a : -1;
		return 0;
	case TRACE_DECL_SERIES:
		if (!(sep(t) && word(t, alloc, sizeof(alloc)) && sep(t) &&
		      word(t, dev, sizeof(dev)) && sep(t) && dec(t, &a) &&
		      at_end(t)))
			return fail(r,
				    "expected \"S ID ALLOCATOR DEVICE ALIGN\"");
		if (!alloy_allocator_name_valid(alloc))
			return fail(r, "bad allocator name \"%s\"", alloc);
		if (!strchr(dev, ':'))
			return fail(r, "bad device \"%s\" (want TYPE:INDEX)",
				    dev);
		if (check_align(r, a))
			return -1;
		c = series_index(tr, alloc, dev);
		if (c < 0)
			return fail(r, "more than %d allocator/device pairs",
				    TRACE_MAX_SERIES);
		if (grow((void **)&r->vseries, &r->nvseries, id + 1,
			 sizeof(*r->vseries)))
			return fail(r, "out of memory");
		r->vseries[id].series = (uint16_t)c;
		r->vseries[id].align = (uint32_t)a;
		r->vseries[id].defined = true;
		return 0;
	case TRACE_DECL_NODE: {
		struct trace_node *nd;

		if (!(sep(t) && dec(t, &a) && sep(t) && hex(t, &b) &&
		      at_end(t)))
			return fail(r, "expected \"s ID PARENT FRAME\"");
		nd = node_new(r, id, a);
		if (!nd)
			return -1;
		nd->frame = b;
		/* The object that held the frame then: the newest one. */
		nd->module = 0;
		for (size_t i = tr->nmodules; i-- > 0;)
			if (b >= tr->modules[i].start &&
			    b < tr->modules[i].end) {
				nd->module = (uint32_t)i + 1;
				break;
			}
		return 0;
	}
	case TRACE_DECL_OWNER:
		if (!sep(t))
			return fail(r, "expected \"o ID LABEL\"");
		if (grow((void **)&tr->owners, &tr->nowners, id + 1,
			 sizeof(char *)))
			return fail(r, "out of memory");
		free(tr->owners[id]);
		tr->owners[id] = strndup(t->p, (size_t)(t->end - t->p));
		if (!tr->owners[id])
			return fail(r, "out of memory");
		return 0;
	case TRACE_DECL_MODULE: {
		struct trace_module *m;

		/* id is START here. */
		if (!(sep(t) && hex(t, &a) && sep(t) && hex(t, &b) && sep(t)))
			return fail(
				r,
				"expected \"M START END OFFSET BUILDID PATH\"");
		if (a <= id)
			return fail(r, "module ends (%#llx) before it starts",
				    (unsigned long long)a);
		if (grow((void **)&tr->modules, &r->modcap, tr->nmodules + 1,
			 sizeof(*m)))
			return fail(r, "out of memory");
		m = &tr->modules[tr->nmodules];
		m->start = id;
		m->end = a;
		m->offset = b;
		if (!word(t, m->build_id, sizeof(m->build_id)) || !sep(t))
			return fail(
				r,
				"expected \"M START END OFFSET BUILDID PATH\"");
		if (!strcmp(m->build_id, "-"))
			m->build_id[0] = '\0';
		m->path = strndup(t->p, (size_t)(t->end - t->p));
		if (!m->path)
			return fail(r, "out of memory");
		tr->nmodules++;
		return 0;
	}
	}
	return fail(r, "unknown record \"%c\"", op);
}

/* The header's and the last records' first bytes. */
#define MAGIC_LEN      TRACE_MAGIC_LEN
#define END_LEN	       (sizeof(TRACE_END) - 1)
#define INCOMPLETE_LEN (sizeof(TRACE_INCOMPLETE) - 1)

/* ---- lines ---------------------------------------------------------- */

static int header(struct reader *r, const char *line, size_t len)
{
	struct tok t = { line, line + len };
	uint64_t v = 0;
	char key[16];

	if (len < MAGIC_LEN || memcmp(line, TRACE_MAGIC, MAGIC_LEN))
		return fail(
			r,
			"not an alloy trace (no \"alloy-trace VERSION\" header)");
	t.p += MAGIC_LEN - 1; /* at the blank */
	if (!sep(&t) || !dec(&t, &v))
		return fail(
			r,
			"not an alloy trace (no \"alloy-trace VERSION\" header)");
	if (v < 1 || v > TRACE_VERSION)
		return fail(r, "trace version %llu; this reader knows 1 to %d",
			    (unsigned long long)v, TRACE_VERSION);
	r->tr->version = (int)v;
	r->unit = 1;
	/* Keys it does not know are skipped, as the format says. */
	while (sep(&t)) {
		const char *s = t.p;

		while (t.p < t.end && *t.p != ' ' && *t.p != '=')
			t.p++;
		snprintf(key, sizeof(key), "%.*s", (int)(t.p - s), s);
		if (!strcmp(key, "pid") && t.p < t.end && *t.p == '=') {
			t.p++;
			if (dec(&t, &v))
				r->tr->pid = (long)v;
		} else if (!strcmp(key, "start") && t.p < t.end &&
			   *t.p == '=') {
			t.p++;
			if (dec(&t, &v)) {
				r->tr->start_ns = v;
				r->tr->has_start = true;
			}
		} else if (!strcmp(key, "comm") && t.p < t.end && *t.p == '=') {
			const char *c = ++t.p;

			while (t.p < t.end && *t.p != ' ')
				t.p++;
			snprintf(r->tr->comm, sizeof(r->tr->comm), "%.*s",
				 (int)(t.p - c), c);
		} else if (!strcmp(key, "unit") && t.p < t.end && *t.p == '=') {
			/* Times are kept in ns whatever the file's unit. */
			t.p++;
			if (t.end - t.p >= 2 && !memcmp(t.p, "us", 2) &&
			    field_end(&(struct tok){ t.p + 2, t.end }))
				r->unit = 1000;
			else if (!(t.end - t.p >= 2 && !memcmp(t.p, "ns", 2) &&
				   field_end(&(struct tok){ t.p + 2, t.end })))
				return fail(
					r,
					"unknown time unit (want unit=ns or unit=us)");
		}
		while (t.p < t.end && *t.p != ' ')
			t.p++;
	}
	return 0;
}

/* "end T EVENTS" and "incomplete T LOST". */
static int last_record(struct reader *r, struct tok *t, bool end)
{
	struct trace *tr = r->tr;
	uint64_t time, n;

	if (!(sep(t) && dec(t, &time) && sep(t) && dec(t, &n) && at_end(t)))
		return fail(r, "bad %s record", end ? "end" : "incomplete");
	if (__builtin_mul_overflow(time, r->unit, &time))
		return fail(r, "time passes 2^64 ns");
	if (end && n != tr->nev)
		return fail(r,
			    "end record counts %llu events, the trace has %zu",
			    (unsigned long long)n, tr->nev);
	tr->complete = end;
	tr->incomplete = !end;
	tr->lost = end ? 0 : n;
	tr->end_ns = time;
	return 0;
}

static int parse_line(struct reader *r, const char *line, size_t len)
{
	struct tok t = { line + 1, line + len };
	char op = line[0];

	if (len > END_LEN && !memcmp(line, TRACE_END, END_LEN)) {
		t.p = line + END_LEN - 1; /* at the blank */
		return last_record(r, &t, true);
	}
	if (len > INCOMPLETE_LEN &&
	    !memcmp(line, TRACE_INCOMPLETE, INCOMPLETE_LEN)) {
		t.p = line + INCOMPLETE_LEN - 1;
		return last_record(r, &t, false);
	}
	if (len > MAGIC_LEN && !memcmp(line, TRACE_MAGIC, MAGIC_LEN))
		return fail(
			r,
			"a second trace header: more than one process wrote this file (%s)",
			SHARED_HINT);
	if (len > 1 && line[1] != ' ')
		return fail(r, "unknown record \"%.*s\"",
			    len < 20 ? (int)len : 20, line);
	if (r->tr->version == 1) {
		if (op == TRACE_ALLOC || op == TRACE_FREE ||
		    op == TRACE_UNKNOWN_FREE || op == TRACE_DOUBLE_FREE)
			return v1_event(r, &t, op, line);
		return fail(r, "unknown record \"%.*s\"",
			    len < 20 ? (int)len : 20, line);
	}
	switch (op) {
	case TRACE_ALLOC:
		return v2_alloc(r, &t);
	case TRACE_FREE:
	case TRACE_UNKNOWN_FREE:
	case TRACE_DOUBLE_FREE:
		return v2_other(r, &t, op);
	case TRACE_DECL_THREAD:
	case TRACE_DECL_SERIES:
	case TRACE_DECL_NODE:
	case TRACE_DECL_OWNER:
	case TRACE_DECL_MODULE:
		return v2_declare(r, &t, op);
	case TRACE_MEMORY:
		if (r->tr->version >= 3)
			return v3_memory(r, &t);
		break;
	case TRACE_DECL_CODE:
	case TRACE_DECL_INTERP:
		if (r->tr->version >= 4)
			return v2_declare(r, &t, op);
		break;
	}
	return fail(r, "unknown record \"%.*s\"", len < 20 ? (int)len : 20,
		    line);
}

/*
 * The file is read with read(2) a chunk at a time, not mapped.  A mapping
 * dies by SIGBUS at the first page past the end when the file is cut
 * under it, which is what a program rerun with the same trace: path does
 * to a trace being reported (it opens the path with O_TRUNC); catching
 * that would take a signal handler jumping out of the parser with its
 * tables half built.  A read just comes up short, and is checked against
 * the size the file had at open.  The chunks keep the memory of the
 * reading flat however large the trace, and copying them costs little
 * next to parsing them (docs/BENCHMARKS.md).
 */
#define CHUNK (1u << 20)

struct source {
	const char *path;
	int fd;
	char *buf; /* cap bytes and a NUL after the last read */
	size_t cap;
	size_t start, end; /* [start, end) read and not yet parsed */
	long long size;	   /* a regular file's size at open; -1: a stream */
	long long got;	   /* bytes read from the file so far */
	long long pos;	   /* bytes of text so far (got, unless compressed) */
	bool eof;
	bool first; /* the first read is done: compressed or not is known */
	/* A compressed trace: the file's bytes go through zin. */
	bool zstd;
	bool cut;	/* the compressed data ended inside a frame */
	bool zin_eof;	/* the file is read to its end */
	bool zout_full; /* the last call filled buf: it may hold more */
	bool zframe_done;
	char *zin;
	size_t zin_cap, zin_len, zin_pos;
#ifdef HAVE_ZSTD
	ZSTD_DStream *zd;
#endif
};

/* The first bytes of a zstd frame (RFC 8878), as they are in the file. */
static const unsigned char zstd_magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };

static int source_fail(struct source *s, int errnum, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: %s", s->path, strerror(errnum));
	return -1;
}

static int source_open(struct source *s, const char *path, char *err,
		       size_t errlen)
{
	struct stat st;

	memset(s, 0, sizeof(*s));
	s->path = path;
	s->size = -1;
	s->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0)
		return source_fail(s, errno, err, errlen);
	/* Size 0 says nothing of a /proc file: read it as a stream. */
	if (!fstat(s->fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0)
		s->size = st.st_size;
	/*
	 * The reader looks for a line in the buffer before the first read:
	 * it is there from the start, empty, even for an empty file.
	 */
	s->buf = malloc(CHUNK + 1);
	if (!s->buf) {
		close(s->fd);
		return source_fail(s, ENOMEM, err, errlen);
	}
	s->cap = CHUNK;
	s->buf[0] = '\0';
	return 0;
}

/*
 * Up to want bytes of the file into dst; 0 at its end.  -1 and a message
 * in err on a read error or a file that shrank.
 */
static ssize_t raw_read(struct source *s, char *dst, size_t want, char *err,
			size_t errlen)
{
	ssize_t k = 0;

	/*
	 * A regular file is read up to its size at open, as much as the
	 * writer had finished then: what it appends meanwhile is left out.
	 */
	if (s->size >= 0 &&
	    (unsigned long long)want > (unsigned long long)(s->size - s->got))
		want = (size_t)(s->size - s->got);
	if (want) {
		do
			k = read(s->fd, dst, want);
		while (k < 0 && errno == EINTR);
		if (k < 0)
			return source_fail(s, errno, err, errlen);
	}
	if (!k && s->size >= 0 && s->got < s->size) {
		struct stat st;
		long long now =
			fstat(s->fd, &st) ? s->got : (long long)st.st_size;

		snprintf(
			err, errlen,
			"%s: the trace shrank from %lld to %lld bytes while being read (rewritten by another run? %s)",
			s->path, s->size, now, SHARED_HINT);
		return -1;
	}
	s->got += k;
	return k;
}

#ifdef HAVE_ZSTD
/* The first bytes read were compressed: they become zstd's input. */
static int zstd_start(struct source *s, char *err, size_t errlen)
{
	s->zin_cap =
		ZSTD_DStreamInSize() > s->end ? ZSTD_DStreamInSize() : s->end;
	s->zin = malloc(s->zin_cap);
	s->zd = ZSTD_createDStream();
	if (!s->zin || !s->zd)
		return source_fail(s, ENOMEM, err, errlen);
	memcpy(s->zin, s->buf, s->end);
	s->zin_len = s->end;
	s->zin_pos = 0;
	s->end = 0;
	s->zstd = true;
	s->zframe_done = true;
	return 0;
}

/*
 * Decompress after buf[end] until some text comes out or the file ends
 * (eof; cut when it ended inside a frame).  Corrupt data is an error.
 */
static int zstd_fill(struct source *s, char *err, size_t errlen)
{
	for (;;) {
		ZSTD_inBuffer in;
		ZSTD_outBuffer out = { s->buf + s->end, s->cap - s->end, 0 };
		size_t ret;

		if (s->zin_pos == s->zin_len && !s->zin_eof && !s->zout_full) {
			ssize_t k =
				raw_read(s, s->zin, s->zin_cap, err, errlen);

			if (k < 0)
				return -1;
			s->zin_len = (size_t)k;
			s->zin_pos = 0;
			s->zin_eof = !k;
		}
		in = (ZSTD_inBuffer){ s->zin, s->zin_len, s->zin_pos };
		ret = ZSTD_decompressStream(s->zd, &out, &in);
		if (ZSTD_isError(ret)) {
			snprintf(
				err, errlen,
				"%s: corrupt zstd data at byte %lld (%s): not a compressed alloy trace, or damaged",
				s->path,
				s->got - (long long)(s->zin_len - in.pos),
				ZSTD_getErrorName(ret));
			return -1;
		}
		/* With no input left, ret is what the next frame needs. */
		if (in.pos > s->zin_pos || out.pos)
			s->zframe_done = !ret;
		s->zin_pos = in.pos;
		s->zout_full = out.pos == out.size;
		s->end += out.pos;
		s->pos += (long long)out.pos;
		if (out.pos)
			return 0;
		if (s->zin_eof && s->zin_pos == s->zin_len) {
			s->eof = true;
			s->cut = !s->zframe_done;
			return 0;
		}
	}
}
#endif

/*
 * Read more after the unparsed bytes, moved to the front of the buffer
 * (which grows when one line fills it); eof is set at the end.  A file
 * that starts with zstd's magic is decompressed on the way.  -1 and a
 * message in err on a read error, a file that shrank or corrupt data.
 */
static int source_fill(struct source *s, char *err, size_t errlen)
{
	ssize_t k;

	if (s->start) {
		memmove(s->buf, s->buf + s->start, s->end - s->start);
		s->end -= s->start;
		s->start = 0;
	}
	if (s->end == s->cap) {
		size_t cap = 2 * s->cap;
		char *b = realloc(s->buf, cap + 1);

		if (!b)
			return source_fail(s, ENOMEM, err, errlen);
		s->buf = b;
		s->cap = cap;
	}
	if (s->zstd) {
#ifdef HAVE_ZSTD
		if (zstd_fill(s, err, errlen))
			return -1;
		s->buf[s->end] = '\0';
#endif
		return 0;
	}
	k = raw_read(s, s->buf + s->end, s->cap - s->end, err, errlen);
	if (k < 0)
		return -1;
	s->eof = !k;
	s->end += (size_t)k;
	s->pos += k;
	s->buf[s->end] = '\0';
	if (!s->first) {
		s->first = true;
		if (s->end >= sizeof(zstd_magic) &&
		    !memcmp(s->buf, zstd_magic, sizeof(zstd_magic))) {
#ifdef HAVE_ZSTD
			s->pos = 0;
			if (zstd_start(s, err, errlen))
				return -1;
			return source_fill(s, err, errlen);
#else
			snprintf(
				err, errlen,
				"%s: a compressed trace (zstd), and this alloy was built without zstd (libzstd-dev): decompress it first (zstd -d)",
				s->path);
			return -1;
#endif
		}
	}
	return 0;
}

static void source_close(struct source *s)
{
	if (s->fd >= 0)
		close(s->fd);
	free(s->buf);
	free(s->zin);
#ifdef HAVE_ZSTD
	ZSTD_freeDStream(s->zd);
#endif
}

int trace_read_progress(const char *path, struct trace *tr, char *err,
			size_t errlen, void (*progress)(void *arg, double done),
			void *arg)
{
	struct reader r = {
		.path = path, .err = err, .errlen = errlen, .tr = tr
	};
	struct source src;
	int rc = 0;

	memset(tr, 0, sizeof(*tr));
	if (source_open(&src, path, err, errlen))
		return -1;
	for (;;) {
		const char *line = src.buf + src.start;
		const char *nl = memchr(line, '\n', src.end - src.start);
		long long off = src.pos - (long long)(src.end - src.start);
		size_t n;

		if (!nl && !src.eof) {
			rc = source_fill(&src, err, errlen);
			if (rc)
				goto out;
			/*
			 * A stream is checked at its first bytes, so that
			 * something endless that is no trace (/dev/zero,
			 * /dev/full) is refused then, not read until memory
			 * runs out waiting for a newline.
			 */
			if (!r.line && src.size < 0 &&
			    memcmp(src.buf, TRACE_MAGIC,
				   src.end < MAGIC_LEN ? src.end : MAGIC_LEN)) {
				snprintf(
					err, errlen,
					"%s: not an alloy trace (no \"alloy-trace VERSION\" header)",
					path);
				rc = -1;
				goto out;
			}
			continue;
		}
		if (src.start == src.end)
			break; /* at the end, every line parsed */
		/*
		 * A compressed trace cut inside a frame (the writer died
		 * between two flushes, or was killed in one) ends where its
		 * last whole record does.
		 */
		if (!nl && src.cut) {
			tr->cut = true;
			break;
		}
		r.line++;
		r.offset = off;
		if (tr->complete || tr->incomplete) {
			rc = fail(
				&r,
				"data after the %s record (more than one process writing this file? %s)",
				tr->complete ? "end" : "incomplete",
				SHARED_HINT);
			goto out;
		}
		if (!nl) {
			rc = fail(
				&r,
				"truncated line (no newline at byte %lld): the file was cut short",
				src.pos);
			goto out;
		}
		n = (size_t)(nl - line);
		if (memchr(line, '\0', n)) {
			rc = fail(&r, "NUL byte in line");
			goto out;
		}
		if (r.line == 1)
			rc = header(&r, line, n);
		else if (n && line[0] != '#')
			rc = parse_line(&r, line, n);
		if (rc)
			goto out;
		src.start += n + 1;
		if (progress && src.size > 0 && !(r.line % PROGRESS_LINES))
			progress(arg,
				 src.zstd ? (double)src.got / (double)src.size
					  : (double)(off + (long long)n + 1) /
						    (double)src.size);
	}
	tr->compressed = src.zstd;
	tr->cut = tr->cut || src.cut;
	if (r.line == 0) {
		snprintf(
			err, errlen,
			src.cut ? "%s: a compressed trace cut short before its first whole record"
				: "%s: empty file, not an alloy trace",
			path);
		rc = -1;
		goto out;
	}
	if (!tr->complete && !tr->incomplete && tr->nev)
		tr->end_ns = tr->ev[tr->nev - 1].t_ns;
	tr->lines = r.line;
	if (progress)
		progress(arg, 1.0);
out:
	source_close(&src);
	blockmap_free(&r.live);
	free(r.vseries);
	if (rc)
		trace_free(tr);
	return rc;
}

int trace_read(const char *path, struct trace *tr, char *err, size_t errlen)
{
	return trace_read_progress(path, tr, err, errlen, NULL, NULL);
}

void trace_free(struct trace *tr)
{
	free(tr->ev);
	free(tr->threads);
	free(tr->nodes);
	for (size_t i = 0; i < tr->nowners; i++)
		free(tr->owners[i]);
	free(tr->owners);
	for (size_t i = 0; i < tr->nmodules; i++)
		free(tr->modules[i].path);
	free(tr->modules);
	for (size_t i = 0; i < tr->ncodes; i++) {
		free(tr->codes[i].function);
		free(tr->codes[i].file);
	}
	free(tr->codes);
	tr->codes = NULL;
	tr->ncodes = 0;
	free(tr->mem);
	free(tr->sum);
	tr->sum = NULL;
	tr->summed = tr->ndev_first = 0;
	tr->mem = NULL;
	tr->nmem = tr->memcap = 0;
	tr->ev = NULL;
	tr->threads = NULL;
	tr->nodes = NULL;
	tr->owners = NULL;
	tr->modules = NULL;
	tr->nev = tr->cap = tr->nthreads = tr->nnodes = tr->nowners = 0;
	tr->nmodules = 0;
}

static void sum_event(struct trace_summary *sum, const uint8_t *dev_first,
		      uint64_t *all, uint64_t *t, const struct trace_event *e,
		      size_t i)
{
	struct trace_series_sum *s = &sum->s[e->series];
	uint8_t d = dev_first[e->series];

	*t = e->t_ns > *t ? e->t_ns : *t;
	switch (e->op) {
	case TRACE_ALLOC:
		s->allocs++;
		s->total_bytes += e->size;
		s->live_bytes += e->size;
		s->live_blocks++;
		if (s->live_bytes > s->peak_bytes) {
			s->peak_bytes = s->live_bytes;
			s->peak_t_ns = *t;
		}
		sum->dev_live[d] += e->size;
		if (sum->dev_live[d] > sum->dev_peak[d]) {
			sum->dev_peak[d] = sum->dev_live[d];
			sum->dev_peak_event[d] = i;
		}
		*all += e->size;
		if (*all > sum->all.peak_bytes) {
			sum->all.peak_bytes = *all;
			sum->all.peak_t_ns = *t;
			sum->peak_event = i;
		}
		break;
	case TRACE_FREE:
		s->frees++;
		s->live_bytes -= e->size;
		s->live_blocks--;
		sum->dev_live[d] -= e->size;
		*all -= e->size;
		break;
	case TRACE_UNKNOWN_FREE:
		sum->unknown_frees++;
		break;
	case TRACE_DOUBLE_FREE:
		sum->double_frees++;
		break;
	}
}

void trace_summarize(const struct trace *tr, struct trace_summary *sum)
{
	uint8_t dev_first[TRACE_MAX_SERIES] = { 0 };
	uint64_t all = 0, t = 0;
	size_t i = 0, mapped = 0;

	memset(sum, 0, sizeof(*sum));
	map_devices(tr, dev_first, &mapped);
	/* What the reader summed as it read, then the rest (if any). */
	if (tr->sum && tr->summed <= tr->nev) {
		*sum = *tr->sum;
		all = tr->sum_all;
		t = tr->sum_t;
		i = tr->summed;
	}
	for (; i < tr->nev; i++)
		sum_event(sum, dev_first, &all, &t, &tr->ev[i], i);
	for (size_t k = 0; k < tr->nseries; k++) {
		sum->all.allocs += sum->s[k].allocs;
		sum->all.frees += sum->s[k].frees;
		sum->all.total_bytes += sum->s[k].total_bytes;
		sum->all.live_bytes += sum->s[k].live_bytes;
		sum->all.live_blocks += sum->s[k].live_blocks;
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
