// SPDX-License-Identifier: MIT
/*
 * analysis/replay.c - replay a trace's allocations and frees, in order,
 * against one allocator.
 *
 * Live blocks are DataPtrs in a pool with a free list; the blockmap maps
 * the trace's block ids to pool indices.  Only the allocator's work is
 * timed: progress reports and stats sampling are outside the clock, the
 * usable-size queries (an allocator op) inside it.
 *
 * Three sums are kept apart, because they answer different questions:
 * requested bytes (what the program asked for, the trace's own figure),
 * usable bytes (what the allocator handed out for it: size classes,
 * page rounding) and reserved bytes (what it holds from the system,
 * free blocks in its caches included).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trace.h"

/* Sample the allocator's stats every so many events (and at the peak). */
#define STATS_EVERY 1024
/* Call progress every so many events. */
#define PROGRESS_EVERY 4096

struct pool {
	struct alloy_data_ptr *dp;
	uint64_t *usable;    /* per entry, with REPLAY_USABLE */
	uint64_t *next_free; /* free list through unused entries */
	size_t cap, used;
	uint64_t free_head; /* index + 1; 0 = empty */
};

static int pool_get(struct pool *p, uint64_t *out)
{
	if (p->free_head) {
		*out = p->free_head - 1;
		p->free_head = p->next_free[*out];
		return 0;
	}
	if (p->used == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 1024;
		struct alloy_data_ptr *d = realloc(p->dp, cap * sizeof(*d));

		if (!d)
			return -ENOMEM;
		p->dp = d;
		uint64_t *n = realloc(p->next_free, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		p->next_free = n;
		n = realloc(p->usable, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		p->usable = n;
		p->cap = cap;
	}
	*out = p->used++;
	return 0;
}

static void pool_put(struct pool *p, uint64_t i)
{
	p->next_free[i] = p->free_head;
	p->free_head = i + 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sample(struct alloy_allocator *a, struct replay_result *r)
{
	struct alloy_allocator_stats st = { .size = sizeof(st),
					    .version = ALLOY_STATS_VERSION };

	if (alloy_allocator_stats(a, &st))
		return;
	if (st.reserved > r->max_reserved)
		r->max_reserved = st.reserved;
	r->end = st;
}

int trace_replay(const struct trace *tr, const struct trace_summary *sum,
		 struct alloy_allocator *a, unsigned flags,
		 struct replay_result *r,
		 void (*progress)(void *arg, size_t done, size_t total),
		 void *arg)
{
	struct blockmap map = { 0 };
	struct pool pool = { 0 };
	uint64_t live = 0, usable = 0;
	bool count_usable;
	double t0, spent = 0;
	size_t peak_at;
	int rc = 0;

	memset(r, 0, sizeof(*r));
	r->have_stats = alloy_allocator_ops(a) && alloy_allocator_ops(a)->stats;
	count_usable = flags & REPLAY_USABLE;
	r->have_usable = count_usable && alloy_allocator_ops(a) &&
			 alloy_allocator_ops(a)->usable_size;
	/*
	 * The replay samples the stats at the event after which the live
	 * bytes first reach their highest (none when nothing is allocated):
	 * the reserved "at most" must hold at least what was live at the
	 * peak, and samples every STATS_EVERY events miss a peak gone by the
	 * next (a large block freed at once).  Found beforehand because
	 * sampling at every new peak instead would sample at every
	 * allocation of a trace that grows to its peak, and a stats call can
	 * cost far more than the allocation (jemalloc's, which refreshes its
	 * statistics: 12 times the wall time of a million growing
	 * allocations), disturbing the timing too.
	 */
	peak_at = SIZE_MAX;
	if (r->have_stats) {
		struct trace_summary *own = NULL;

		if (!sum) {
			own = malloc(sizeof(*own));
			if (!own)
				return -ENOMEM;
			trace_summarize(tr, own);
			sum = own;
		}
		/* peak_event is 0, not "none", when nothing is allocated. */
		if (sum->all.peak_bytes)
			peak_at = sum->peak_event;
		free(own);
	}
	t0 = now_s();
	for (size_t i = 0; i < tr->nev; i++) {
		const struct trace_event *e = &tr->ev[i];
		struct blockmap_slot *s;
		uint64_t idx;

		if (e->op == TRACE_ALLOC) {
			if (pool_get(&pool, &idx) ||
			    blockmap_insert(&map, e->block, idx)) {
				rc = -ENOMEM; /* alloy's message is unchanged */
				goto out;
			}
			rc = alloy_alloc(a, e->size, e->align, 0,
					 &pool.dp[idx]);
			if (rc)
				goto out;
			r->allocs++;
			live += e->size;
			if (live > r->peak_live)
				r->peak_live = live;
			if (count_usable) {
				pool.usable[idx] = alloy_allocator_usable_size(
					a, pool.dp[idx].ptr, e->size);
				usable += pool.usable[idx];
				if (usable > r->peak_usable)
					r->peak_usable = usable;
			}
		} else if (e->op == TRACE_FREE) {
			s = blockmap_find(&map, e->block);
			if (!s)
				continue; /* the reader rules this out */
			idx = s->value;
			blockmap_remove(&map, s);
			live -= pool.dp[idx].size;
			if (count_usable)
				usable -= pool.usable[idx];
			alloy_data_ptr_free(&pool.dp[idx]);
			pool_put(&pool, idx);
			r->frees++;
		}
		if (r->have_stats &&
		    (i == peak_at || (i + 1) % STATS_EVERY == 0)) {
			double t = now_s();

			sample(a, r);
			spent += now_s() - t;
		}
		if (progress && (i + 1) % PROGRESS_EVERY == 0) {
			double t = now_s();

			progress(arg, i + 1, tr->nev);
			spent += now_s() - t;
		}
	}
out:
	r->seconds = now_s() - t0 - spent;
	r->end_live = live;
	r->end_usable = usable;
	sample(a, r);
	/* Blocks the trace never freed: give them back now. */
	for (size_t i = 0; i < map.cap; i++)
		if (map.slots[i].id)
			alloy_data_ptr_free(&pool.dp[map.slots[i].value]);
	if (progress)
		progress(arg, tr->nev, tr->nev);
	blockmap_free(&map);
	free(pool.dp);
	free(pool.usable);
	free(pool.next_free);
	return rc;
}
