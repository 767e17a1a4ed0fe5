// SPDX-License-Identifier: MIT
/*
 * analysis/peak.c - what was live at a moment of a trace, grouped by call
 * stack and by owner.
 *
 * The moment is each device's peak (the first event at which its live
 * bytes were highest), or a time, meaning after every event stamped at or
 * before it.  One pass finds the moments, a second replays the trace up
 * to the last of them keeping the live blocks, and at each moment the
 * blocks of its device are summed per (owner, stack); sites and owners
 * are sums of those pairs.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "peak.h"

/* ---- groups ----------------------------------------------------------- */

/* Groups keyed by a 64-bit key: a blockmap from key + 1 to an index. */
struct groups {
	struct blockmap map;
	struct at_group *g;
	size_t n, cap;
};

static int group_add(struct groups *gs, uint64_t key, uint32_t stack,
		     uint32_t owner, uint64_t bytes, uint64_t blocks)
{
	struct blockmap_slot *s = blockmap_find(&gs->map, key + 1);
	struct at_group *g;

	if (!s) {
		if (gs->n == gs->cap) {
			size_t cap = gs->cap ? 2 * gs->cap : 64;
			struct at_group *n = realloc(gs->g, cap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			gs->g = n;
			gs->cap = cap;
		}
		if (blockmap_insert(&gs->map, key + 1, gs->n))
			return -ENOMEM;
		gs->g[gs->n++] =
			(struct at_group){ .stack = stack, .owner = owner };
		s = blockmap_find(&gs->map, key + 1);
	}
	g = &gs->g[s->value];
	g->bytes += bytes;
	g->blocks += blocks;
	return 0;
}

static int by_bytes(const void *a, const void *b)
{
	const struct at_group *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	if (x->owner != y->owner)
		return x->owner < y->owner ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* Hand the sorted groups over to *out / *n. */
static void groups_take(struct groups *gs, struct at_group **out, size_t *n)
{
	if (gs->n) /* none: g is NULL, which qsort may not be given */
		qsort(gs->g, gs->n, sizeof(*gs->g), by_bytes);
	*out = gs->g;
	*n = gs->n;
	blockmap_free(&gs->map);
	memset(gs, 0, sizeof(*gs));
}

static void groups_free(struct groups *gs)
{
	blockmap_free(&gs->map);
	free(gs->g);
	memset(gs, 0, sizeof(*gs));
}

/* Sites and owners of a device from its pairs. */
static int derive(struct at_device *d)
{
	struct groups sites = { 0 }, owners = { 0 };

	for (size_t i = 0; i < d->npairs; i++) {
		const struct at_group *p = &d->pairs[i];

		if (group_add(&sites, p->stack, p->stack, 0, p->bytes,
			      p->blocks) ||
		    group_add(&owners, p->owner, 0, p->owner, p->bytes,
			      p->blocks)) {
			groups_free(&sites);
			groups_free(&owners);
			return -ENOMEM;
		}
	}
	groups_take(&sites, &d->sites, &d->nsites);
	groups_take(&owners, &d->owners, &d->nowners);
	return 0;
}

/* ---- moments ----------------------------------------------------------- */

/* The device index of each series; the devices' names into at. */
static int devices_of(const struct trace *tr, struct trace_at *at, int *dev_of)
{
	at->dev = calloc(tr->nseries ? tr->nseries : 1, sizeof(*at->dev));
	if (!at->dev)
		return -ENOMEM;
	for (size_t s = 0; s < tr->nseries; s++) {
		size_t d;

		for (d = 0; d < at->ndev; d++)
			if (!strcmp(at->dev[d].device, tr->series[s].device))
				break;
		if (d == at->ndev)
			snprintf(at->dev[at->ndev++].device,
				 sizeof(at->dev[0].device), "%s",
				 tr->series[s].device);
		dev_of[s] = (int)d;
	}
	return 0;
}

/* The event at which each device's live bytes first reached their top. */
static void find_peaks(const struct trace *tr, const int *dev_of,
		       struct trace_at *at, size_t *moment)
{
	uint64_t live[TRACE_MAX_SERIES] = { 0 };

	/* The reader kept them as it read: no pass over the events. */
	if (tr->sum && tr->summed == tr->nev) {
		for (size_t s = 0; s < tr->nseries; s++) {
			int d = dev_of[s];

			if (tr->dev_first[s] != s || !tr->sum->dev_peak[s])
				continue;
			at->dev[d].bytes = tr->sum->dev_peak[s];
			moment[d] = tr->sum->dev_peak_event[s];
		}
		return;
	}
	for (size_t i = 0; i < tr->nev; i++) {
		const struct trace_event *e = &tr->ev[i];
		int d = dev_of[e->series];

		if (e->op == TRACE_ALLOC) {
			live[d] += e->size;
			if (live[d] > at->dev[d].bytes) {
				at->dev[d].bytes = live[d];
				moment[d] = i;
			}
		} else if (e->op == TRACE_FREE) {
			live[d] -= e->size;
		}
	}
}

/* Sum the live blocks of the devices whose moment is event i. */
static int collect(const struct trace *tr, const struct blockmap *live,
		   const int *dev_of, struct trace_at *at, const size_t *moment,
		   size_t i)
{
	struct groups pairs[TRACE_MAX_SERIES];
	bool now[TRACE_MAX_SERIES] = { false };
	int rc = 0;

	memset(pairs, 0, sizeof(pairs));
	for (size_t d = 0; d < at->ndev; d++)
		now[d] = moment[d] == i;
	for (size_t k = 0; k < live->cap && !rc; k++) {
		const struct trace_event *e;
		int d;

		if (!live->slots[k].id)
			continue;
		e = &tr->ev[live->slots[k].value];
		d = dev_of[e->series];
		if (!now[d])
			continue;
		rc = group_add(&pairs[d], (uint64_t)e->owner << 32 | e->stack,
			       e->stack, e->owner, e->size, 1);
	}
	for (size_t d = 0; d < at->ndev; d++) {
		struct at_device *dev = &at->dev[d];

		if (!now[d])
			continue;
		if (rc) {
			groups_free(&pairs[d]);
			continue;
		}
		groups_take(&pairs[d], &dev->pairs, &dev->npairs);
		dev->t_ns = i < tr->nev ? tr->ev[i].t_ns : 0;
		dev->events = i + 1;
		dev->bytes = dev->blocks = 0;
		for (size_t p = 0; p < dev->npairs; p++) {
			dev->bytes += dev->pairs[p].bytes;
			dev->blocks += dev->pairs[p].blocks;
		}
		if (derive(dev))
			rc = -ENOMEM;
	}
	return rc;
}

/*
 * Replay the live set up to the last moment, collecting at each.  A
 * moment of SIZE_MAX is before the first event: nothing was live.
 */
static int replay_to(const struct trace *tr, const int *dev_of,
		     struct trace_at *at, const size_t *moment)
{
	struct blockmap live = { 0 };
	size_t last = 0;
	bool any = false;
	int rc = 0;

	for (size_t d = 0; d < at->ndev; d++)
		if (moment[d] != SIZE_MAX) {
			last = moment[d] > last || !any ? moment[d] : last;
			any = true;
		}
	for (size_t i = 0; any && i <= last && !rc; i++) {
		const struct trace_event *e = &tr->ev[i];
		bool here = false;

		if (e->op == TRACE_ALLOC) {
			rc = blockmap_insert(&live, e->block, i);
		} else if (e->op == TRACE_FREE) {
			struct blockmap_slot *s =
				blockmap_find(&live, e->block);

			if (s)
				blockmap_remove(&live, s);
		}
		for (size_t d = 0; d < at->ndev; d++)
			here |= moment[d] == i;
		if (here && !rc)
			rc = collect(tr, &live, dev_of, at, moment, i);
	}
	blockmap_free(&live);
	return rc;
}

/* Every device at moment[] (set by the caller), then collected. */
static int at_moments(const struct trace *tr, struct trace_at *at,
		      const int *dev_of, size_t *moment, bool peaks, char *err,
		      size_t errlen)
{
	if (peaks)
		find_peaks(tr, dev_of, at, moment);
	if (!replay_to(tr, dev_of, at, moment))
		return 0;
	trace_at_free(at);
	snprintf(err, errlen, "out of memory");
	return -1;
}

static int at_start(const struct trace *tr, struct trace_at *at, int *dev_of,
		    size_t *moment, char *err, size_t errlen)
{
	memset(at, 0, sizeof(*at));
	for (size_t d = 0; d < TRACE_MAX_SERIES; d++)
		moment[d] = SIZE_MAX;
	if (devices_of(tr, at, dev_of)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

int trace_at_event(const struct trace *tr, size_t event, struct trace_at *at,
		   char *err, size_t errlen)
{
	int dev_of[TRACE_MAX_SERIES];
	size_t moment[TRACE_MAX_SERIES];

	if (at_start(tr, at, dev_of, moment, err, errlen))
		return -1;
	at->t_ns = event < tr->nev ? tr->ev[event].t_ns : 0;
	for (size_t d = 0; d < at->ndev; d++) {
		moment[d] = event < tr->nev ? event : SIZE_MAX;
		at->dev[d].t_ns = at->t_ns;
	}
	return at_moments(tr, at, dev_of, moment, false, err, errlen);
}

int trace_at(const struct trace *tr, bool at_peak, uint64_t t_ns,
	     struct trace_at *at, char *err, size_t errlen)
{
	int dev_of[TRACE_MAX_SERIES];
	size_t moment[TRACE_MAX_SERIES], lo = 0, hi = tr->nev;
	uint64_t end = tr->nev ? tr->ev[tr->nev - 1].t_ns : 0;
	int rc;

	end = tr->end_ns > end ? tr->end_ns : end;
	if (!at_peak && t_ns > end) {
		snprintf(
			err, errlen,
			"--at %llu ns is past the end of the trace, which lasts %llu ns (%.3f ms)",
			(unsigned long long)t_ns, (unsigned long long)end,
			(double)end / 1e6);
		return -1;
	}
	if (at_peak) {
		if (at_start(tr, at, dev_of, moment, err, errlen))
			return -1;
		at->at_peak = true;
		return at_moments(tr, at, dev_of, moment, true, err, errlen);
	}
	/* Times are monotone: the last event stamped at or before t_ns. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (tr->ev[mid].t_ns <= t_ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	rc = trace_at_event(tr, lo ? lo - 1 : SIZE_MAX, at, err, errlen);
	if (rc)
		return rc;
	at->t_ns = t_ns;
	for (size_t d = 0; d < at->ndev; d++)
		at->dev[d].t_ns = t_ns;
	return 0;
}

void trace_at_free(struct trace_at *at)
{
	for (size_t d = 0; d < at->ndev; d++) {
		free(at->dev[d].pairs);
		free(at->dev[d].sites);
		free(at->dev[d].owners);
	}
	free(at->dev);
	memset(at, 0, sizeof(*at));
}

int trace_at_merge(struct trace_at *at,
		   uint32_t (*canon)(void *arg, uint32_t stack), void *arg)
{
	for (size_t d = 0; d < at->ndev; d++) {
		struct at_device *dev = &at->dev[d];
		struct groups pairs = { 0 };

		for (size_t i = 0; i < dev->npairs; i++) {
			const struct at_group *p = &dev->pairs[i];
			uint32_t st = canon(arg, p->stack);

			if (group_add(&pairs, (uint64_t)p->owner << 32 | st, st,
				      p->owner, p->bytes, p->blocks)) {
				groups_free(&pairs);
				return -ENOMEM;
			}
		}
		free(dev->pairs);
		free(dev->sites);
		free(dev->owners);
		dev->sites = dev->owners = NULL;
		dev->nsites = dev->nowners = 0;
		groups_take(&pairs, &dev->pairs, &dev->npairs);
		if (derive(dev))
			return -ENOMEM;
	}
	return 0;
}

/* ---- per column, for the HTML timeline ---------------------------------- */

/* Keys with bytes live, for picking the largest quickly. */
struct active {
	uint64_t *bytes; /* by key */
	uint32_t *pos;	 /* by key: index in keys + 1, 0: not there */
	uint32_t *keys;
	size_t n;
};

static void active_add(struct active *a, uint32_t key, int64_t delta)
{
	if (!a->pos[key]) {
		a->keys[a->n++] = key;
		a->pos[key] = (uint32_t)a->n;
	}
	a->bytes[key] += (uint64_t)delta;
	if (!a->bytes[key]) {
		uint32_t i = a->pos[key] - 1, last = a->keys[--a->n];

		a->keys[i] = last;
		a->pos[last] = i + 1;
		a->pos[key] = 0;
	}
}

int trace_columns_top(const struct trace *tr, int ncols, int k, bool by_owner,
		      struct at_group *out, uint64_t *col_t_ns,
		      uint64_t *col_bytes)
{
	size_t nkeys = by_owner ? tr->nowners + 1 : tr->nnodes + 2;
	size_t *best = malloc((size_t)ncols * sizeof(*best));
	struct active a = {
		.bytes = calloc(nkeys, sizeof(uint64_t)),
		.pos = calloc(nkeys, sizeof(uint32_t)),
		.keys = calloc(nkeys, sizeof(uint32_t)),
	};
	uint64_t dur = tr->end_ns, live = 0;
	int rc = -ENOMEM;
	int col = 0;

	if (!best || !a.bytes || !a.pos || !a.keys)
		goto out;
	memset(out, 0, (size_t)ncols * (size_t)k * sizeof(*out));
	for (int c = 0; c < ncols; c++) {
		best[c] = SIZE_MAX;
		col_bytes[c] = 0;
		col_t_ns[c] = 0;
	}
	if (tr->nev && tr->ev[tr->nev - 1].t_ns > dur)
		dur = tr->ev[tr->nev - 1].t_ns;
	dur = dur ? dur : 1;
	/* Pass 1: the moment each column's total was highest. */
	for (size_t i = 0; i < tr->nev; i++) {
		const struct trace_event *e = &tr->ev[i];

		if (e->op != TRACE_ALLOC && e->op != TRACE_FREE)
			continue;
		live += e->op == TRACE_ALLOC ? e->size : -e->size;
		col = (int)((double)e->t_ns / (double)dur * (ncols - 1));
		col = col < 0 ? 0 : col >= ncols ? ncols - 1 : col;
		if (best[col] == SIZE_MAX || live > col_bytes[col]) {
			best[col] = i;
			col_bytes[col] = live;
			col_t_ns[col] = e->t_ns;
		}
	}
	/* Pass 2: the largest keys at those moments. */
	col = 0;
	for (size_t i = 0; i < tr->nev; i++) {
		const struct trace_event *e = &tr->ev[i];
		uint32_t key;

		if (e->op != TRACE_ALLOC && e->op != TRACE_FREE)
			continue;
		key = by_owner ? e->owner
		      : e->stack == TRACE_STACK_MISSING
			      ? (uint32_t)(tr->nnodes + 1)
			      : e->stack;
		active_add(&a, key,
			   e->op == TRACE_ALLOC ? (int64_t)e->size
						: -(int64_t)e->size);
		while (col < ncols && (best[col] == SIZE_MAX || best[col] < i))
			col++;
		if (col >= ncols || best[col] != i)
			continue;
		for (int r = 0; r < k && (size_t)r < a.n; r++) {
			size_t top = r;

			for (size_t j = r + 1; j < a.n; j++)
				if (a.bytes[a.keys[j]] > a.bytes[a.keys[top]])
					top = j;
			uint32_t tmp = a.keys[r];

			a.keys[r] = a.keys[top];
			a.keys[top] = tmp;
			a.pos[a.keys[r]] = (uint32_t)r + 1;
			a.pos[a.keys[top]] = (uint32_t)top + 1;
			key = a.keys[r];
			out[(size_t)col * (size_t)k + (size_t)r] =
				(struct at_group){
					.stack = by_owner ? 0
						 : key == tr->nnodes + 1
							 ? TRACE_STACK_MISSING
							 : key,
					.owner = by_owner ? key : 0,
					.bytes = a.bytes[key],
				};
		}
	}
	rc = 0;
out:
	free(best);
	free(a.bytes);
	free(a.pos);
	free(a.keys);
	return rc;
}

/* ---- --at -------------------------------------------------------------- */

int trace_parse_at(const char *s, bool *at_peak, uint64_t *t_ns, char *err,
		   size_t errlen)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = { { "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 } };
	char *end;
	double v;

	*at_peak = !strcmp(s, "peak");
	*t_ns = 0;
	if (*at_peak)
		return 0;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !(v >= 0)) {
		snprintf(
			err, errlen,
			"--at wants \"peak\" or a time such as 12.5ms, not \"%s\"",
			s);
		return -1;
	}
	if (*end) {
		size_t u;

		for (u = 0; u < sizeof(units) / sizeof(units[0]); u++)
			if (!strcmp(end, units[u].unit))
				break;
		if (u == sizeof(units) / sizeof(units[0])) {
			snprintf(
				err, errlen,
				"--at \"%s\": unknown unit \"%s\" (ns, us, ms or s)",
				s, end);
			return -1;
		}
		v *= units[u].ns;
	}
	if (v >= 1.8e19) {
		snprintf(err, errlen, "--at \"%s\" is too large", s);
		return -1;
	}
	*t_ns = (uint64_t)v;
	return 0;
}
