/* SPDX-License-Identifier: MIT */
/*
 * allocators/modtcache.h - a backend module's per-thread cache of free
 * medium blocks, 1025 bytes to 64 KiB: what the default allocator's
 * thread cache (allocators/default_cache.h) is to glibc, for jemalloc and
 * mimalloc.
 *
 * Both backends are slower in this range than at their smallest sizes,
 * and slower than alloy's own path could hide: mimalloc serves up to 1024
 * bytes from a per-size page pointer of the thread's heap and takes its
 * generic path above (262 instructions a mi_malloc + mi_free pair at
 * 1040 bytes against 156 at 1024); jemalloc's thread cache costs 234
 * instructions a mallocx + sdallocx pair at 4 KiB and 387 at 16 KiB, and
 * above its tcache_max (32 KiB) a block comes from the arena under a lock
 * (2,600-4,200).  A tensor runtime frees and makes again blocks of these
 * sizes all the time (activations, a NumPy array of 1 KiB behind the
 * plain-pointer API's 16-byte header), so the module keeps them itself:
 * one list per size class, four classes to a doubling
 * (allocators/quarterclass.h; the classes of both backends in this range),
 * each block made at its class's full size and aligned to 64 bytes, so
 * that any block of a list serves any request of the class at any
 * alignment up to 64.  A list holds at most "thread_cache" blocks (the
 * module's option, 7 unless set; 0 turns the cache off) and never more
 * than 64 KiB beyond its first block: at the default, at most 1.33 MiB
 * per thread (docs/PLUGINS.md).
 *
 * The lists link their blocks through the blocks' first words, hidden as
 * glibc hides its own (allocators/freelink.h).  The cache is the
 * thread's own (thread-local storage: a pop and a push, no lock, no
 * atomic), emptied back into the backend when the thread
 * exits (a thread-specific key's destructor), by trim for the calling
 * thread, and when the module is unloaded (the calling thread's; other
 * threads' blocks stay with the backend, unreachable).  A block made by
 * one thread and freed by another joins the freeing thread's cache; both
 * backends take any thread's block back.  Only 64-aligned blocks are
 * kept.  Cached blocks are still the backend's memory: its statistics
 * count them as in use, as before they were freed.
 *
 * Compiled into each module that uses it (each has its own cache, key and
 * options), as allocators/modcache.c is.
 */
#ifndef ALLOY_ALLOCATORS_MODTCACHE_H
#define ALLOY_ALLOCATORS_MODTCACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "allocators/modcache.h"
#include "allocators/quarterclass.h"

/* The first doubling above 2^10 bytes, six of them: 1025 B .. 64 KiB. */
#define MTCACHE_LG_MIN	  10
#define MTCACHE_DOUBLINGS 6
#define MTCACHE_LG_END	  (MTCACHE_LG_MIN + MTCACHE_DOUBLINGS)
#define MTCACHE_MIN	  (((size_t)1 << MTCACHE_LG_MIN) + 1)
#define MTCACHE_MAX	  ((size_t)1 << MTCACHE_LG_END)
#define MTCACHE_BINS	  (4 * MTCACHE_DOUBLINGS)
/* What every kept block is aligned to, and served requests at most. */
#define MTCACHE_ALIGN	  64
/* Bytes a list may hold beyond its first block. */
#define MTCACHE_BIN_BYTES ((size_t)64 << 10)
#define MTCACHE_DEPTH_DEFAULT 7
#define MTCACHE_DEPTH_MAX     255

/*
 * Whether a request of size at align has a list: sizes below the range
 * wrap around to huge, so one compare for the size.
 */
static inline bool mtcache_covers(size_t size, size_t align)
{
	return size - MTCACHE_MIN <= MTCACHE_MAX - MTCACHE_MIN &&
	       align <= MTCACHE_ALIGN;
}

/*
 * The bytes the cache makes a block of a covered size with: its class's
 * (any block of a list serves any request of the list).
 */
static inline size_t mtcache_block_bytes(size_t size)
{
	return qclass_bytes(qclass_of(size, MTCACHE_LG_MIN), MTCACHE_LG_MIN);
}

struct mtcache_backend {
	const char *name; /* the module's, for the message of a bad link */
	/* A new block of bytes aligned to MTCACHE_ALIGN, zeroed if asked. */
	void *(*make)(size_t bytes, bool zero);
	/* Give back a block that make returned for bytes. */
	void (*release)(void *ptr, size_t bytes);
};

/*
 * Set the backend and create the thread-exit key: 0 or a negative errno
 * (the cache keeps nothing then).
 */
MODCACHE_API int mtcache_init(const struct mtcache_backend *be);
/* Empty the calling thread's cache and delete the key (module unload). */
MODCACHE_API void mtcache_fini(void);
/* The module's "thread_cache" option (blocks per list, 0 to 255). */
MODCACHE_API int mtcache_option(const char *module, const char *value);
/* A block for a covered request: a kept one, else a new one. */
MODCACHE_API void *mtcache_alloc(size_t size, bool zero);
/* Keep a block of a covered size, or give it back to the backend. */
MODCACHE_API void mtcache_free(void *ptr, size_t size);
/* Give the calling thread's kept blocks back to the backend. */
MODCACHE_API void mtcache_flush_self(void);

#endif /* ALLOY_ALLOCATORS_MODTCACHE_H */
