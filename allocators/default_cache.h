/* SPDX-License-Identifier: MIT */
/*
 * allocators/default_cache.h - the default allocator's per-thread cache
 * of free direct blocks of 1033-2056 bytes: the sizes just past those
 * glibc keeps in its own per-thread cache.
 *
 * glibc serves requests of up to 1032 bytes from a per-thread cache
 * without a lock; a larger one takes its arena's lock on malloc and on
 * free once the process has a second thread (32 ns a pair on this
 * project's machine against 6 ns below the limit, docs/BENCHMARKS.md).
 * The plain-pointer API's 16-byte header moves a 1 KiB block (a NumPy
 * array of 1024 bytes) across that line, so alloy continues glibc's cache
 * one kilobyte further: 64 bins, one per glibc chunk size (16 bytes
 * apart), each a list of at most alloy__dcache_depth free blocks linked
 * through their first word (hidden as glibc hides its own links,
 * allocators/freelink.h).  Blocks of one bin are glibc chunks of the
 * same size, so any of them serves any request of the bin.
 *
 * The cache hangs off the thread's record (kernel/count.c), is used by its
 * thread only, and is emptied back into glibc when the thread exits and
 * by trim for the calling thread.  In a fork child the caches of the
 * threads that are gone are forgotten, not walked (one may have been
 * halfway through a change), as glibc forgets its own.  Bytes in caches count
 * in a per-thread counter slot, so the allocator's stats report them as
 * reserved.
 *
 * Under a sanitizer that owns malloc, the cache is off: blocks it held
 * would hide use-after-free from the sanitizer.
 */
#ifndef ALLOY_ALLOCATORS_DEFAULT_CACHE_H
#define ALLOY_ALLOCATORS_DEFAULT_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "allocators/freelink.h"
#include "kernel/base.h"
#include "kernel/count.h"
#include "kernel/sanitizer.h"

/* glibc's chunk for a request: size word added, rounded up to 16. */
#define DCACHE_CHUNK_SHIFT 4
#define DCACHE_CHUNK_OVER  (sizeof(size_t) + 15)
/* The smallest chunk glibc's per-thread cache does not keep (1033 B). */
#define DCACHE_FIRST_CHUNK 1056
#define DCACHE_BINS	   64
/* Blocks kept per bin unless "default.thread_cache" says (glibc's: 7). */
#define DCACHE_DEPTH_DEFAULT 7
#define DCACHE_DEPTH_MAX     255

struct alloy__dcache {
	struct alloy__tls *rec; /* the record whose counters count it */
	void *head[DCACHE_BINS];
	unsigned char count[DCACHE_BINS];
};

/* Blocks kept per bin (0: the cache is off); see default_set_option. */
extern ALLOY_HIDDEN _Atomic unsigned alloy__dcache_depth;
/* The counter slot of cached bytes (alloy__dcache_init reserves it). */
extern ALLOY_HIDDEN int alloy__dcache_slot;

/* Reserve the counter slot and set the retire hook; release frees a block. */
ALLOY_HIDDEN int alloy__dcache_init(void (*release)(void *ptr));
/* The links' key (allocators/freelink.h), set by alloy__dcache_init. */
extern ALLOY_HIDDEN struct freelink_key alloy__dcache_link_key;
/* What every block glibc makes is aligned to: the links' check. */
#define DCACHE_BLOCK_ALIGN _Alignof(max_align_t)

/*
 * What alloy__dcache_take returns when the first block of the bin holds a
 * link the cache did not write (allocators/freelink.h): the caller takes
 * alloy__dcache_take_last(b) instead, out of line, so that the common
 * path calls nothing and keeps no registers.
 */
#define ALLOY__DCACHE_BAD_LINK ((void *)1)

/*
 * The first block of this thread's bin b, whose link failed: handed out,
 * the rest of the bin dropped, and said once.
 */
ALLOY_HIDDEN void *alloy__dcache_take_last(size_t b);
/* A cache for t, NULL when none can be had (cold path of put). */
ALLOY_HIDDEN struct alloy__dcache *alloy__dcache_create(struct alloy__tls *t);
/* Empty the calling thread's cache into glibc; returns the bytes. */
ALLOY_HIDDEN size_t alloy__dcache_flush_self(void);
/* Bytes in every thread's cache. */
ALLOY_HIDDEN size_t alloy__dcache_bytes(void);

/* The requests the bins keep: chunks of DCACHE_FIRST_CHUNK and up. */
#define DCACHE_MIN_REQ (DCACHE_FIRST_CHUNK - DCACHE_CHUNK_OVER)
#define DCACHE_SPAN    ((size_t)DCACHE_BINS << DCACHE_CHUNK_SHIFT)

/*
 * Whether a request of size bytes has a bin: one compare, as every
 * direct block pays it (sizes below the range wrap around to huge).
 */
static inline bool alloy__dcache_covers(size_t size)
{
#ifdef ALLOY_SANITIZER_OWNS_MALLOC
	(void)size;
	return false;
#else
	return size - DCACHE_MIN_REQ < DCACHE_SPAN;
#endif
}

_Static_assert(((DCACHE_MIN_REQ + DCACHE_CHUNK_OVER) & ~(size_t)15) ==
			       DCACHE_FIRST_CHUNK &&
		       ((DCACHE_MIN_REQ - 1 + DCACHE_CHUNK_OVER) &
			~(size_t)15) < DCACHE_FIRST_CHUNK &&
		       ((DCACHE_MIN_REQ + DCACHE_SPAN - 1 + DCACHE_CHUNK_OVER -
			 DCACHE_FIRST_CHUNK) >>
			DCACHE_CHUNK_SHIFT) == DCACHE_BINS - 1,
	       "the covered requests are exactly the bins' chunks");

/* The bin of a request that alloy__dcache_covers. */
static inline size_t alloy__dcache_bin(size_t size)
{
	return (size + DCACHE_CHUNK_OVER - DCACHE_FIRST_CHUNK) >>
	       DCACHE_CHUNK_SHIFT;
}

/* The bytes a block of bin b holds (its chunk less the size word). */
static inline size_t alloy__dcache_bin_bytes(size_t b)
{
	return DCACHE_FIRST_CHUNK + (b << DCACHE_CHUNK_SHIFT) - sizeof(size_t);
}

/*
 * What to ask glibc for, for a direct block of size bytes: a bin's
 * blocks are made at the bin's full size, so that any of them serves any
 * request of the bin without counting on glibc's rounding (glibc rounds
 * the same; a malloc that does not, valgrind's, needs it).
 */
static inline size_t alloy__dcache_block_size(size_t size)
{
	return alloy__dcache_covers(size)
		       ? alloy__dcache_bin_bytes(alloy__dcache_bin(size))
		       : size;
}

/* A cached block for a request of bin b, NULL, or ALLOY__DCACHE_BAD_LINK. */
static inline void *alloy__dcache_take(size_t b)
{
	struct alloy__tls *t = alloy__tls_self;
	struct alloy__dcache *c;
	void *p, *next;

	if (!t || !(c = t->cache) || !(p = c->head[b]))
		return NULL;
	next = freelink_get(p, &alloy__dcache_link_key);
	if (unlikely(!freelink_ok(next, DCACHE_BLOCK_ALIGN)))
		return ALLOY__DCACHE_BAD_LINK;
	c->head[b] = next;
	c->count[b]--;
	alloy__count_sub(&t->count[alloy__dcache_slot],
			 (int64_t)alloy__dcache_bin_bytes(b));
	return p;
}

/* Keep ptr, a free block of bin b; false when the caller must free it. */
static inline bool alloy__dcache_put(void *ptr, size_t b)
{
	struct alloy__tls *t = alloy__tls_self;
	struct alloy__dcache *c;

	if (unlikely(!t))
		return false;
	c = t->cache;
	if (unlikely(!c) && !(c = alloy__dcache_create(t)))
		return false;
	if (c->count[b] >=
	    atomic_load_explicit(&alloy__dcache_depth, memory_order_relaxed))
		return false;
	freelink_set(ptr, c->head[b], &alloy__dcache_link_key);
	c->head[b] = ptr;
	c->count[b]++;
	alloy__count_add(&t->count[alloy__dcache_slot],
			 (int64_t)alloy__dcache_bin_bytes(b));
	return true;
}

#endif /* ALLOY_ALLOCATORS_DEFAULT_CACHE_H */
