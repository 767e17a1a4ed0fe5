/* SPDX-License-Identifier: MIT */
/*
 * allocators/cuda_caching.h - the caching allocator's state, shared by its
 * policy (cuda_caching.c) and its statistics and snapshot
 * (cuda_caching_stats.c).  Not installed.
 */
#ifndef ALLOY_ALLOCATORS_CUDA_CACHING_H
#define ALLOY_ALLOCATORS_CUDA_CACHING_H

#include <pthread.h>
#include <alloy/cuda.h>

#include "kernel/base.h"
#include "allocators/cuda_policy.h"
#include "allocators/ptrmap.h"

#define CC_MAX_DEVICES	   16
#define CC_MIN_BLOCK	   512u	       /* every size rounds to this */
#define CC_SMALL_SIZE	   (1u << 20)  /* largest small-pool block */
#define CC_SMALL_BUFFER	   (2u << 20)  /* small-pool segment */
#define CC_LARGE_BUFFER	   (20u << 20) /* large-pool segment below ... */
#define CC_MIN_LARGE_ALLOC (10u << 20) /* ... requests of this size */
#define CC_ROUND_LARGE	   (2u << 20)  /* larger segments round to this */

enum cc_state { CC_FREE = 0, CC_ALLOCATED, CC_PENDING };
enum cc_pool_id { CC_SMALL = 0, CC_LARGE = 1 };

struct cc_segment;

/*
 * A private pool of graph captures: segments made while a stream
 * allocates into it serve only allocations routed to it, and go back to
 * the device only once it is released and they are unused.
 */
struct cc_graph_pool {
	uint64_t id;
	int device;
	int routes;    /* streams allocating into it now */
	bool released; /* by alloy_cuda_caching_release_pool */
	struct cc_graph_pool *next;
};

/* A stream whose allocations go to a graph pool (during its capture). */
struct cc_route {
	int device;
	void *stream;
	struct cc_graph_pool *gp;
};
/* A field added here is cleared in get_block too (no memset there). */
struct cc_block {
	struct cc_segment *seg;
	struct cc_block *prev, *next; /* neighbours in the segment */
	uintptr_t ptr;
	size_t size;	  /* bytes it occupies (rounded) */
	size_t requested; /* bytes the user asked for (while allocated) */
	int state;	  /* enum cc_state */
	int event_count;  /* outstanding events before it may be reused */
	struct alloy__ptrvec uses; /* other streams it was used on */
	uint64_t freed_tick;	   /* when it became free: the GC's age */
	/*
	 * Counted in oversize_allocations while allocated.  Remembered, not
	 * recomputed at free: max_split_size may have changed in between.
	 */
	bool oversize;
};

struct cc_segment {
	uintptr_t ptr;
	size_t size; /* bytes with memory behind them: mapped, when expandable
		      */
	void *stream;
	int pool;
	bool huge;     /* made for one request of 10 MiB or more */
	bool oversize; /* counted in oversize_segments (see cc_block) */
	int device;
	struct cc_block *head;
	struct cc_segment *next;
	/*
	 * An expandable segment: va_size bytes of addresses reserved, the
	 * first size of them mapped, in pieces of chunk bytes, one handle
	 * each (handles[i] backs the i-th piece).
	 */
	struct cc_graph_pool *gp; /* the graph pool it belongs to, or NULL */
	bool expandable;
	size_t chunk, va_size;
	void **handles;
	size_t handles_cap;
};

/* Free blocks of one pool, sorted by (stream, size, address). */
struct cc_pool {
	struct cc_block **v;
	size_t n, cap;
	size_t hint; /* a slot reused in place: where to look first */
};

struct cc_device {
	bool ready;
	size_t total; /* device memory, from the source */
	size_t limit; /* most bytes reserved (memory_fraction) */
	struct cc_pool pools[2];
	struct cc_segment *segments;
	struct alloy_cuda_stats st;
};

/* An event recorded for a freed block used on another stream. */
struct cc_event {
	void *ev;
	struct cc_block *block;
	struct cc_event *next;
};

struct cc {
	struct alloy__cuda_base b;  /* lock, src, ops, name */
	struct alloy_cuda_sim *sim; /* when src is simulated */
	int ndevices;

	/* options */
	size_t max_split_size; /* SIZE_MAX: unlimited */
	unsigned divisions;    /* roundup_power2_divisions; 0/1 = off */
	double gc_threshold;   /* 0 = off */
	double fraction;       /* memory_fraction; 1 = all */
	bool expandable;       /* expandable_segments */

	struct cc_device dev[CC_MAX_DEVICES];
	struct alloy__ptrmap live;	       /* allocated blocks by address */
	struct cc_event *events, *events_tail; /* oldest first */
	struct alloy__ptrvec spare_events;     /* done events, for reuse */
	struct cc_block *spare_blocks; /* block records to reuse, via next */
	uint64_t tick;
	struct cc_graph_pool *graph_pools;
	struct cc_route routes[16];
	int nroutes; /* captures underway: no frees, syncs, event queries */
	struct cc_graph_pool *cur_gp; /* of the allocation being served */
};

/* The key a segment's free blocks are sorted and found by. */
static inline uintptr_t cc_seg_key(const struct cc_segment *seg)
{
	return seg->gp ? (uintptr_t)seg->gp : (uintptr_t)seg->stream;
}

/* Is ops->alloc that of a caching allocator?  Its state, or NULL. */
ALLOY_HIDDEN struct cc *alloy__cc_of(struct alloy_allocator *a);

/* Statistics; the lock is held.  Inline: a few of these per alloc. */
static inline void alloy__cc_stat_add1(struct alloy_cuda_stat *s, int64_t delta)
{
	s->current += delta;
	if (delta > 0) {
		s->allocated += delta;
		if (s->current > s->peak)
			s->peak = s->current;
	} else {
		s->freed -= delta;
	}
}

/* Add delta to the statistic of pool and to that of both pools. */
static inline void alloy__cc_stat_add(struct alloy_cuda_stat *s, int pool,
				      int64_t delta)
{
	alloy__cc_stat_add1(&s[ALLOY_CUDA_POOL_ALL], delta);
	alloy__cc_stat_add1(&s[pool], delta);
}

ALLOY_HIDDEN int alloy__cc_stats_op(void *ctx,
				    struct alloy_allocator_stats *st);
ALLOY_HIDDEN int alloy__cc_snapshot_op(void *ctx,
				       void (*write)(void *arg, const char *s),
				       void *arg);

/* Whether b counts as an inactive split block (free, in a split segment). */
static inline bool cc_inactive_split(const struct cc_block *b)
{
	return b->state == CC_FREE && (b->prev || b->next);
}

/* Map enum cc_pool_id onto the stats' pool index. */
static inline int cc_stat_pool(int pool)
{
	return pool == CC_SMALL ? ALLOY_CUDA_POOL_SMALL : ALLOY_CUDA_POOL_LARGE;
}

#endif /* ALLOY_ALLOCATORS_CUDA_CACHING_H */
