/* SPDX-License-Identifier: MIT */
/*
 * allocators/mimalloc_cache.h - the mimalloc module's per-thread cache of
 * free blocks of 1025-2048 bytes: the sizes just past mimalloc's small
 * fast path.
 *
 * mimalloc serves requests of up to 1024 bytes from a per-size page
 * pointer of the thread's heap; a larger one takes its generic path (the
 * heap's deferred work, then a search of the page queue): 262
 * instructions a mi_malloc + mi_free pair at 1040 bytes against 156 at
 * 1024 (callgrind, docs/BENCHMARKS.md).  The plain-pointer API's 16-byte
 * header moves a 1 KiB block (a NumPy array of 1024 bytes) across that
 * line, as it does glibc's (allocators/default_cache.h), so the module
 * keeps such blocks itself: 4 bins, one per mimalloc size class of the
 * range (1280, 1536, 1792, 2048 bytes), each a list of at most
 * "mimalloc.thread_cache" blocks (7 unless set; 0 turns it off) linked
 * through their first word.  A bin's blocks are made at the class's full
 * size, so any of them serves any request of the bin.
 *
 * Only blocks at mimalloc's own alignment (16) are kept.  The cache is
 * the thread's own (thread-local storage), emptied back into mimalloc
 * when the thread exits (a thread-specific key's destructor), by trim
 * for the calling thread, and when the module is unloaded (the calling
 * thread's; other threads' blocks stay with mimalloc, unreachable).
 * Cached blocks are still mimalloc's memory: its statistics count them
 * as committed, as before they were freed.
 */
#ifndef ALLOY_ALLOCATORS_MIMALLOC_CACHE_H
#define ALLOY_ALLOCATORS_MIMALLOC_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "allocators/modcache.h"
#include "allocators/quarterclass.h"

/* mimalloc's small fast path ends at 2^10 bytes (MI_SMALL_SIZE_MAX). */
#define MCACHE_LG_MIN	   10
#define MCACHE_MIN	   (((size_t)1 << MCACHE_LG_MIN) + 1)
/* One doubling: its four classes, 256 bytes apart. */
#define MCACHE_BINS	   4
#define MCACHE_DEPTH_DEFAULT 7
#define MCACHE_DEPTH_MAX     255

/*
 * Whether a request of size bytes has a bin: one compare (sizes below
 * the range wrap around to huge).
 */
static inline bool mcache_covers(size_t size)
{
	return size - MCACHE_MIN < (size_t)1 << MCACHE_LG_MIN;
}

/* The bin of a request that mcache_covers. */
static inline size_t mcache_bin(size_t size)
{
	return qclass_of(size, MCACHE_LG_MIN);
}

/* The bytes every block of bin b holds: its size class. */
static inline size_t mcache_bin_bytes(size_t b)
{
	return qclass_bytes(b, MCACHE_LG_MIN);
}

/* Create the thread-exit key; 0 or a negative errno (cache off then). */
MODCACHE_API int mcache_init(void);
/* Empty the calling thread's cache and delete the key (module unload). */
MODCACHE_API void mcache_fini(void);
/* Blocks kept per bin, 0 to MCACHE_DEPTH_MAX (0: off). */
MODCACHE_API void mcache_set_depth(unsigned depth);
/* A cached block of bin b, or NULL. */
MODCACHE_API void *mcache_take(size_t b);
/* Keep p, a free block of bin b; false when the caller must free it. */
MODCACHE_API bool mcache_put(void *p, size_t b);
/* Give the calling thread's cached blocks back to mimalloc. */
MODCACHE_API void mcache_flush_self(void);

#endif /* ALLOY_ALLOCATORS_MIMALLOC_CACHE_H */
