// SPDX-License-Identifier: MIT
/*
 * allocators/default_cache.c - the cold half of the default allocator's
 * per-thread cache (allocators/default_cache.h has the design and the
 * fast half): making a thread's cache, emptying one, and counting what
 * all of them hold.
 */
#include "allocators/default_cache.h"
#include "kernel/arena.h"

_Atomic unsigned alloy__dcache_depth = DCACHE_DEPTH_DEFAULT;
int alloy__dcache_slot = -1;
struct freelink_key alloy__dcache_link_key = { UINTPTR_MAX, FREELINK_HIGH };

/* glibc's free, by the name the default allocator uses (default.c). */
static void (*release_block)(void *ptr);

static _Atomic unsigned long long bad_links;

static void bad_link(const void *p, size_t b)
{
	freelink_report(&bad_links, "default", p, alloy__dcache_bin_bytes(b));
}

/* The block after p in bin b, or NULL where its link fails. */
static void *next_of(void *p, size_t b)
{
	void *next = freelink_get(p, &alloy__dcache_link_key);

	if (freelink_ok(next, DCACHE_BLOCK_ALIGN))
		return next;
	bad_link(p, b);
	return NULL;
}

void *alloy__dcache_take_last(size_t b)
{
	struct alloy__tls *t = alloy__tls_self;
	struct alloy__dcache *c = t->cache;
	void *p = c->head[b];

	bad_link(p, b);
	alloy__count_sub(&t->count[alloy__dcache_slot],
			 (int64_t)(c->count[b] * alloy__dcache_bin_bytes(b)));
	c->head[b] = NULL;
	c->count[b] = 0;
	return p;
}

/*
 * Retire c: at its thread's exit its blocks go back to glibc and c is
 * left empty for the next thread that takes the record.  In a fork child,
 * for a thread that is gone, c is left as it is and not counted:
 * core drops it from the record, so nothing walks or reuses lists that
 * may have been half-changed at the fork, and the blocks stay allocated
 * in the child - and reachable from c, as memcheck sees - like glibc's
 * own per-thread caches of gone threads.  Returns the bytes c held.
 */
static size_t retire(void *cache, bool give_back)
{
	struct alloy__dcache *c = cache;
	int64_t bytes = 0;

	for (size_t b = 0; b < DCACHE_BINS; b++) {
		bytes += (int64_t)(c->count[b] * alloy__dcache_bin_bytes(b));
		if (!give_back)
			continue;
		for (void *p = c->head[b], *next; p; p = next) {
			next = next_of(p, b);
			release_block(p);
		}
		c->head[b] = NULL;
		c->count[b] = 0;
	}
	alloy__count_sub(&c->rec->count[alloy__dcache_slot], bytes);
	return (size_t)bytes;
}

int alloy__dcache_init(void (*release)(void *ptr))
{
	int slot = alloy__tcount_reserve(1);

	if (slot < 0) {
		/* No slot, no cache: put finds no depth and frees at once. */
		atomic_store(&alloy__dcache_depth, 0);
		return alloy__error(slot, "default",
				    "no counter slot left "
				    "for the per-thread cache; it is off");
	}
	release_block = release;
	alloy__dcache_link_key = freelink_key();
	alloy__dcache_slot = slot;
	alloy__tls_cache_retire = retire;
	return 0;
}

struct alloy__dcache *alloy__dcache_create(struct alloy__tls *t)
{
	struct alloy__dcache *c;

	if (!atomic_load_explicit(&alloy__dcache_depth, memory_order_relaxed))
		return NULL;
	c = alloy__arena_alloc(sizeof(*c));
	if (!c)
		return NULL;
	c->rec = t;
	/* Kept with the record, which is never freed, only reused. */
	t->cache = c;
	return c;
}

size_t alloy__dcache_flush_self(void)
{
	struct alloy__tls *t = alloy__tls_self;

	return t && t->cache ? retire(t->cache, true) : 0;
}

size_t alloy__dcache_bytes(void)
{
	int64_t n = alloy__dcache_slot < 0
			    ? 0
			    : alloy__tcount_sum(alloy__dcache_slot);

	return n > 0 ? (size_t)n : 0;
}
