// SPDX-License-Identifier: MIT
/*
 * analysis/pprof.c - a moment of a trace as the profile pprof reads: the
 * format `go tool pprof` and its web UI open, protocol buffers
 * (analysis/profile.proto, encoded by libprotobuf-c) compressed with gzip
 * (zlib).
 *
 * Like Go's own heap profiles it has four values a sample:
 * alloc_objects and alloc_space (every allocation up to the moment) and
 * inuse_objects and inuse_space (live at the moment), the last the one
 * shown by default.  A sample is one (stack, owner, allocator) triple,
 * labelled with its owner, allocator and device, so that pprof's
 * -tagfocus can pick them apart.  A location is a stack node: its address
 * in the process, its module as a mapping, and the function and line
 * alloy names it with, so pprof needs neither the binaries nor a
 * symboliser.  The figures are exact: no sampling (period 1).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "kernel/hash.h"
#include "profile.pb-c.h"
#include "report.h"

/* ---- strings ------------------------------------------------------------ */

struct strslot {
	uint64_t hash;
	size_t idx; /* 0: empty */
};

struct strtab {
	char **s; /* s[0] is "" */
	size_t n, cap;
	struct strslot *slot;
	size_t nslots;
	bool oom; /* a string could not be added */
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return alloy__mix64(h);
}

static int strtab_grow(struct strtab *t)
{
	size_t ns = t->nslots ? 2 * t->nslots : 1024;
	struct strslot *slot = calloc(ns, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t i = 1; i < t->n; i++) {
		uint64_t h = hash_str(t->s[i]);
		size_t k = h & (ns - 1);

		while (slot[k].idx)
			k = (k + 1) & (ns - 1);
		slot[k].hash = h;
		slot[k].idx = i;
	}
	free(t->slot);
	t->slot = slot;
	t->nslots = ns;
	return 0;
}

/* The index of s in the table, added when new; 0 and oom set without memory. */
static int64_t str_id(struct strtab *t, const char *s)
{
	uint64_t h;
	size_t k;

	if (!s || !*s)
		return 0;
	if ((t->n + 1) * 2 > t->nslots && strtab_grow(t)) {
		t->oom = true;
		return 0;
	}
	h = hash_str(s);
	for (k = h & (t->nslots - 1); t->slot[k].idx;
	     k = (k + 1) & (t->nslots - 1))
		if (t->slot[k].hash == h && !strcmp(t->s[t->slot[k].idx], s))
			return (int64_t)t->slot[k].idx;
	if (t->n == t->cap) {
		size_t cap = 2 * t->cap;
		char **n = realloc(t->s, cap * sizeof(*n));

		if (!n) {
			t->oom = true;
			return 0;
		}
		t->s = n;
		t->cap = cap;
	}
	t->s[t->n] = strdup(s);
	if (!t->s[t->n]) {
		t->oom = true;
		return 0;
	}
	t->slot[k].hash = h;
	t->slot[k].idx = t->n;
	return (int64_t)t->n++;
}

/* ---- samples: one per (stack, owner, series) ----------------------------- */

struct key {
	uint32_t stack, owner;
	uint16_t series;
	int64_t v[4]; /* alloc_objects, alloc_space, inuse_objects, inuse_space
		       */
};

struct keys {
	struct key *k;
	size_t n, cap;
	uint32_t *slot; /* index + 1; 0: empty */
	size_t nslots;
};

static uint64_t key_hash(uint32_t stack, uint32_t owner, uint16_t series)
{
	return alloy__mix64(((uint64_t)stack << 32 | owner) ^
			    alloy__mix64(series + 1));
}

static int keys_grow(struct keys *t)
{
	size_t ns = t->nslots ? 2 * t->nslots : 1024;
	uint32_t *slot = calloc(ns, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		size_t h =
			key_hash(t->k[i].stack, t->k[i].owner, t->k[i].series) &
			(ns - 1);

		while (slot[h])
			h = (h + 1) & (ns - 1);
		slot[h] = (uint32_t)i + 1;
	}
	free(t->slot);
	t->slot = slot;
	t->nslots = ns;
	return 0;
}

static struct key *key_of(struct keys *t, const struct trace_event *e)
{
	size_t h;

	if ((t->n + 1) * 2 > t->nslots && keys_grow(t))
		return NULL;
	h = key_hash(e->stack, e->owner, e->series) & (t->nslots - 1);
	for (; t->slot[h]; h = (h + 1) & (t->nslots - 1)) {
		struct key *k = &t->k[t->slot[h] - 1];

		if (k->stack == e->stack && k->owner == e->owner &&
		    k->series == e->series)
			return k;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 256;
		struct key *n = realloc(t->k, cap * sizeof(*n));

		if (!n)
			return NULL;
		t->k = n;
		t->cap = cap;
	}
	t->k[t->n] = (struct key){ .stack = e->stack,
				   .owner = e->owner,
				   .series = e->series };
	t->slot[h] = (uint32_t)++t->n;
	return &t->k[t->n - 1];
}

/* Every event up to index end (excluded) counted into t. */
static int count_events(const struct trace *tr, size_t end, struct keys *t)
{
	struct blockmap live = { 0 };
	int rc = 0;

	for (size_t i = 0; i < end && !rc; i++) {
		const struct trace_event *e = &tr->ev[i];
		struct blockmap_slot *s;
		struct key *k;

		if (e->op == TRACE_ALLOC) {
			k = key_of(t, e);
			if (!k || blockmap_insert(&live, e->block, i)) {
				rc = -ENOMEM;
				break;
			}
			k->v[0]++;
			k->v[1] += (int64_t)e->size;
			k->v[2]++;
			k->v[3] += (int64_t)e->size;
		} else if (e->op == TRACE_FREE &&
			   (s = blockmap_find(&live, e->block))) {
			const struct trace_event *a = &tr->ev[s->value];

			k = key_of(t, a);
			if (!k) {
				rc = -ENOMEM;
				break;
			}
			k->v[2]--;
			k->v[3] -= (int64_t)a->size;
			blockmap_remove(&live, s);
		}
	}
	blockmap_free(&live);
	return rc;
}

/* ---- the profile ------------------------------------------------------ */

struct build {
	const struct report_ctx *c;
	struct strtab str;
	Alloy__Pprof__Profile p;
	/* Per stack node id: its location id (the node id), once made. */
	bool *made;
	Alloy__Pprof__Location *loc;
	Alloy__Pprof__Location **locp;
	Alloy__Pprof__Line *line;
	Alloy__Pprof__Line **linep;
	Alloy__Pprof__Function *fn;
	Alloy__Pprof__Function **fnp;
	size_t nfn;
	struct keys fnkeys; /* function ids by (name, file) string ids */
};

/* The function id of (name, file), made when new; 0 without memory. */
static uint64_t function_id(struct build *b, int64_t name, int64_t file)
{
	struct trace_event probe = { .stack = (uint32_t)name,
				     .owner = (uint32_t)file };
	struct key *k = key_of(&b->fnkeys, &probe);

	if (!k)
		return 0;
	if (!k->v[0]) {
		Alloy__Pprof__Function *f = &b->fn[b->nfn];

		alloy__pprof__function__init(f);
		f->id = b->nfn + 1;
		f->name = name;
		f->system_name = name;
		f->filename = file;
		b->fnp[b->nfn++] = f;
		k->v[0] = (int64_t)f->id;
	}
	return (uint64_t)k->v[0];
}

/* The location of stack node id and its callers', made when new. */
static int make_location(struct build *b, uint32_t id)
{
	const struct trace *tr = b->c->tr;

	for (; trace_stack_known(id) && id < tr->nnodes && !b->made[id];
	     id = tr->nodes[id].parent) {
		const struct sym_frame *f = symbols_frame(b->c->sym, id);
		const struct trace_node *nd = &tr->nodes[id];
		Alloy__Pprof__Location *l = &b->loc[b->p.n_location];
		Alloy__Pprof__Line *ln = &b->line[b->p.n_location];
		char name[1024];
		int64_t sname, sfile;

		b->made[id] = true;
		sname = str_id(&b->str,
			       symbols_func(b->c->sym, id, name, sizeof(name)));
		sfile = str_id(&b->str, f->file);
		if (b->str.oom)
			return -ENOMEM;
		alloy__pprof__location__init(l);
		alloy__pprof__line__init(ln);
		l->id = id;
		l->mapping_id = nd->module;
		/* The call, one byte back, as the report names it. */
		l->address = !nd->code && nd->frame > 1 ? nd->frame - 1 : 0;
		ln->function_id = function_id(b, sname, sfile);
		if (!ln->function_id)
			return -ENOMEM;
		ln->line = f->line;
		b->linep[b->p.n_location] = ln;
		l->n_line = 1;
		l->line = &b->linep[b->p.n_location];
		b->locp[b->p.n_location++] = l;
	}
	return 0;
}

/* The location of samples without a stack ("unknown"): none, or missing. */
static uint64_t unknown_location(struct build *b, uint32_t stack)
{
	Alloy__Pprof__Location *l = &b->loc[b->p.n_location];
	Alloy__Pprof__Line *ln = &b->line[b->p.n_location];
	int64_t sname = str_id(&b->str, symbols_no_stack(stack));
	/* Past every node id, and never 0: pprof's ids start at 1. */
	uint64_t id = (uint64_t)b->c->tr->nnodes + 1 +
		      (stack == TRACE_STACK_MISSING ? 1 : 0);

	if (b->made[id])
		return id;
	if (b->str.oom)
		return 0;
	b->made[id] = true;
	alloy__pprof__location__init(l);
	alloy__pprof__line__init(ln);
	l->id = id;
	ln->function_id = function_id(b, sname, 0);
	if (!ln->function_id)
		return 0;
	b->linep[b->p.n_location] = ln;
	l->n_line = 1;
	l->line = &b->linep[b->p.n_location];
	b->locp[b->p.n_location++] = l;
	return id;
}

static int write_gzip(FILE *out, const uint8_t *buf, size_t len)
{
	z_stream z = { 0 };
	uint8_t chunk[65536];
	int zr;

	/* 15 + 16: a gzip header and trailer around the deflate stream. */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	z.next_in = (uint8_t *)buf;
	z.avail_in = (uInt)len;
	do {
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		zr = deflate(&z, Z_FINISH);
		if (zr == Z_STREAM_ERROR)
			break;
		if (fwrite(chunk, 1, sizeof(chunk) - z.avail_out, out) !=
		    sizeof(chunk) - z.avail_out) {
			zr = Z_ERRNO;
			break;
		}
	} while (zr != Z_STREAM_END);
	deflateEnd(&z);
	return zr == Z_STREAM_END ? 0 : -EIO;
}

int report_pprof(FILE *out, const struct report_ctx *c, size_t events,
		 uint64_t t_ns)
{
	static const char *const types[4][2] = {
		{ "alloc_objects", "count" },
		{ "alloc_space", "bytes" },
		{ "inuse_objects", "count" },
		{ "inuse_space", "bytes" },
	};
	const struct trace *tr = c->tr;
	struct build b = { .c = c };
	struct keys samples = { 0 };
	Alloy__Pprof__ValueType vt[5], *vtp[4];
	Alloy__Pprof__Mapping *map = NULL, **mapp = NULL;
	Alloy__Pprof__Sample *smp = NULL, **smpp = NULL;
	Alloy__Pprof__Label *lab = NULL, **labp = NULL;
	uint64_t *locids = NULL;
	int64_t *values = NULL, comment;
	uint8_t *buf = NULL;
	char text[256];
	size_t nloc = tr->nnodes + 3, nlocids = 0, len;
	int rc = -ENOMEM;

	b.str.cap = 256;
	b.str.s = calloc(b.str.cap, sizeof(char *));
	if (!b.str.s)
		return -ENOMEM;
	b.str.s[b.str.n++] = strdup("");
	alloy__pprof__profile__init(&b.p);
	if (!b.str.s[0] || count_events(tr, events, &samples))
		goto out;
	b.made = calloc(nloc, sizeof(*b.made));
	b.loc = calloc(nloc, sizeof(*b.loc));
	b.locp = calloc(nloc, sizeof(*b.locp));
	b.line = calloc(nloc, sizeof(*b.line));
	b.linep = calloc(nloc, sizeof(*b.linep));
	b.fn = calloc(nloc, sizeof(*b.fn));
	b.fnp = calloc(nloc, sizeof(*b.fnp));
	map = calloc(tr->nmodules + 1, sizeof(*map));
	mapp = calloc(tr->nmodules + 1, sizeof(*mapp));
	smp = calloc(samples.n + 1, sizeof(*smp));
	smpp = calloc(samples.n + 1, sizeof(*smpp));
	lab = calloc(3 * samples.n + 1, sizeof(*lab));
	labp = calloc(3 * samples.n + 1, sizeof(*labp));
	values = calloc(4 * samples.n + 1, sizeof(*values));
	if (!b.made || !b.loc || !b.locp || !b.line || !b.linep || !b.fn ||
	    !b.fnp || !map || !mapp || !smp || !smpp || !lab || !labp ||
	    !values)
		goto out;

	for (int i = 0; i < 4; i++) {
		alloy__pprof__value_type__init(&vt[i]);
		vt[i].type = str_id(&b.str, types[i][0]);
		vt[i].unit = str_id(&b.str, types[i][1]);
		vtp[i] = &vt[i];
	}
	alloy__pprof__value_type__init(&vt[4]);
	vt[4].type = str_id(&b.str, "space");
	vt[4].unit = str_id(&b.str, "bytes");
	b.p.n_sample_type = 4;
	b.p.sample_type = vtp;
	b.p.period_type = &vt[4];
	b.p.period = 1;
	b.p.default_sample_type = vt[3].type;
	b.p.duration_nanos = (int64_t)t_ns;
	snprintf(text, sizeof(text),
		 "alloy trace of pid %ld, %zu of its %zu events: up to %.6f ms",
		 tr->pid, events, tr->nev, (double)t_ns / 1e6);
	comment = str_id(&b.str, text);
	b.p.n_comment = 1;
	b.p.comment = &comment;

	for (size_t i = 0; i < tr->nmodules; i++) {
		const struct trace_module *m = &tr->modules[i];

		alloy__pprof__mapping__init(&map[i]);
		map[i].id = i + 1;
		map[i].memory_start = m->start;
		map[i].memory_limit = m->end;
		map[i].file_offset = m->offset;
		map[i].filename = str_id(&b.str, m->path);
		map[i].build_id = str_id(&b.str, m->build_id);
		map[i].has_functions = true;
		map[i].has_filenames = true;
		map[i].has_line_numbers = true;
		mapp[i] = &map[i];
	}
	b.p.n_mapping = tr->nmodules;
	b.p.mapping = mapp;

	/* Every frame named in one go, one addr2line per object. */
	{
		uint32_t *ids = malloc((samples.n + 1) * sizeof(*ids));

		if (!ids)
			goto out;
		for (size_t i = 0; i < samples.n; i++)
			ids[i] = samples.k[i].stack;
		symbols_resolve(c->sym, ids, samples.n);
		free(ids);
	}
	for (size_t i = 0; i < samples.n; i++) {
		const struct key *k = &samples.k[i];
		size_t depth = 0;
		uint64_t *n;

		if (trace_stack_known(k->stack)) {
			if (make_location(&b, k->stack))
				goto out;
			for (uint32_t id = k->stack;
			     trace_stack_known(id) && id < tr->nnodes;
			     id = tr->nodes[id].parent)
				depth++;
		}
		n = realloc(locids, (nlocids + depth + 1) * sizeof(*n));
		if (!n)
			goto out;
		locids = n;
		nlocids += depth + 1;
	}
	/* The location ids of each sample, innermost first. */
	nlocids = 0;
	for (size_t i = 0; i < samples.n; i++) {
		const struct key *k = &samples.k[i];
		Alloy__Pprof__Sample *s = &smp[i];
		const struct trace_series *se = &tr->series[k->series];
		size_t first = nlocids, nl = 0;

		alloy__pprof__sample__init(s);
		if (trace_stack_known(k->stack)) {
			for (uint32_t id = k->stack;
			     trace_stack_known(id) && id < tr->nnodes;
			     id = tr->nodes[id].parent)
				locids[nlocids++] = id;
		} else {
			locids[nlocids] = unknown_location(&b, k->stack);
			if (!locids[nlocids++])
				goto out;
		}
		s->n_location_id = nlocids - first;
		s->location_id = &locids[first];
		memcpy(&values[4 * i], k->v, sizeof(k->v));
		s->n_value = 4;
		s->value = &values[4 * i];
		for (int j = 0; j < 3; j++) {
			Alloy__Pprof__Label *l = &lab[3 * i + nl];
			const char *key = j == 0   ? "owner"
					  : j == 1 ? "allocator"
						   : "device";
			const char *v =
				j == 0 ? (k->owner ? report_owner(tr, k->owner)
						   : NULL)
				: j == 1 ? se->allocator
					 : se->device;

			if (!v)
				continue;
			alloy__pprof__label__init(l);
			l->key = str_id(&b.str, key);
			l->str = str_id(&b.str, v);
			labp[3 * i + nl++] = l;
		}
		s->n_label = nl;
		s->label = &labp[3 * i];
		smpp[i] = s;
	}
	b.p.n_sample = samples.n;
	b.p.sample = smpp;
	b.p.location = b.locp;
	b.p.n_function = b.nfn;
	b.p.function = b.fnp;
	b.p.n_string_table = b.str.n;
	b.p.string_table = b.str.s;
	if (b.str.oom)
		goto out;

	len = alloy__pprof__profile__get_packed_size(&b.p);
	buf = malloc(len + 1);
	if (!buf)
		goto out;
	alloy__pprof__profile__pack(&b.p, buf);
	rc = write_gzip(out, buf, len);
out:
	free(buf);
	for (size_t i = 0; i < b.str.n; i++)
		free(b.str.s[i]);
	free(b.str.s);
	free(b.str.slot);
	free(b.made);
	free(b.loc);
	free(b.locp);
	free(b.line);
	free(b.linep);
	free(b.fn);
	free(b.fnp);
	free(b.fnkeys.k);
	free(b.fnkeys.slot);
	free(samples.k);
	free(samples.slot);
	free(map);
	free(mapp);
	free(smp);
	free(smpp);
	free(lab);
	free(labp);
	free(values);
	free(locids);
	return rc;
}
