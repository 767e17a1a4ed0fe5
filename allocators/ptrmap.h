/* SPDX-License-Identifier: MIT */
/*
 * allocators/ptrmap.h - a map from block address to its record, a pool
 * of such records, and a growable vector of pointers (streams a block
 * was used on, spare events).
 *
 * Open addressing with linear probing and backward-shift deletion, so a
 * lookup touches one or two cache lines and a delete leaves no tombstones
 * behind (a caching allocator inserts and deletes on every alloc/free).
 * Not thread-safe: its owner's lock covers it.
 */
#ifndef ALLOY_ALLOCATORS_PTRMAP_H
#define ALLOY_ALLOCATORS_PTRMAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "kernel/base.h"

struct alloy__ptrmap_slot {
	uintptr_t key; /* 0: empty */
	void *value;
};

struct alloy__ptrmap {
	struct alloy__ptrmap_slot *slots;
	size_t mask; /* capacity - 1; capacity is a power of two */
	size_t count;
};

/* Insert key (non-zero, not present); 0 or -ENOMEM. */
ALLOY_HIDDEN int alloy__ptrmap_put(struct alloy__ptrmap *m, const void *key,
				   void *value);
/* Remove key and return its value, or NULL if it is not there. */
ALLOY_HIDDEN void *alloy__ptrmap_take(struct alloy__ptrmap *m, const void *key);
/* The value of key, or NULL. */
ALLOY_HIDDEN void *alloy__ptrmap_get(const struct alloy__ptrmap *m,
				     const void *key);
ALLOY_HIDDEN void alloy__ptrmap_free(struct alloy__ptrmap *m);

/*
 * Records that a map's values point to, kept when their entry goes and
 * handed out again: a malloc and a free a block saved.  Under the map's
 * lock, as the map.  Never given back: at most one record per entry live
 * at the busiest moment stays allocated.
 */
struct alloy__recpool {
	void *spare; /* records given back, linked through their first word */
};

/* A record of size bytes (a pointer's at least), contents unset; or NULL. */
static inline void *alloy__recpool_take(struct alloy__recpool *pool,
					size_t size)
{
	void *r = pool->spare;

	if (!r)
		return malloc(size);
	pool->spare = *(void **)r;
	return r;
}

static inline void alloy__recpool_give(struct alloy__recpool *pool, void *r)
{
	*(void **)r = pool->spare;
	pool->spare = r;
}

struct alloy__ptrvec {
	void **v;
	size_t n, cap;
};

/* Append p; 0 or -ENOMEM (then pv is unchanged). */
ALLOY_HIDDEN int alloy__ptrvec_push(struct alloy__ptrvec *pv, void *p);
/* Append p unless it is there already; 0 or -ENOMEM. */
ALLOY_HIDDEN int alloy__ptrvec_add_unique(struct alloy__ptrvec *pv, void *p);
ALLOY_HIDDEN void alloy__ptrvec_free(struct alloy__ptrvec *pv);

#endif /* ALLOY_ALLOCATORS_PTRMAP_H */
