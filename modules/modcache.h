/* SPDX-License-Identifier: MIT */
/*
 * modules/modcache.h - a backend module's process-wide cache of free
 * large blocks: what the default allocator's mapping cache
 * (allocators/bigblock.c) is to glibc, for jemalloc and mimalloc.
 *
 * Both backends have a slow path for large blocks that a tensor runtime
 * walks all the time: jemalloc keeps only blocks up to its tcache_max
 * (32 KiB) per thread and finds every larger one in its arena's extents
 * under a lock; mimalloc gives every block above 128 KiB a span of its
 * own in a segment and returns it at the free.  A NumPy-like loop that
 * creates and frees arrays of 64 KiB to a few MiB is then far slower on
 * either than on glibc (glibc keeps such blocks in its heap once its
 * dynamic threshold has moved).  So the
 * module keeps freed blocks of 2^lg_min to 2^(lg_min + 8) bytes: a list
 * of at most MODCACHE_DEPTH blocks per size class, four classes to a
 * doubling (modules/quarterclass.h), each block made at its class's
 * full size, and at most a limit of bytes in all ("cache" option of the
 * module, 64 MiB unless set, as the default allocator's; 0 turns it
 * off).
 *
 * One cache per module for the whole process, under a lock that is only
 * ever tried once: a thread that cannot have it (another holds it, or a
 * fork child whose parent's thread held it at the fork) goes to the
 * backend itself.  Only blocks aligned to 64 bytes are kept, and only
 * requests of at most that alignment served, so any block serves any of
 * them; a block is kept only when the backend says it holds its class's
 * bytes (a realloc'ed one may not).  Zeroed requests go to the backend,
 * whose fresh pages are zero already.
 *
 * The price is RSS: up to the limit stays allocated in the backend after
 * the blocks are freed, until trim (which empties the cache first) or
 * exit; the backend's statistics count it as its own memory.
 */
#ifndef ALLOY_ALLOCATORS_MODCACHE_H
#define ALLOY_ALLOCATORS_MODCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "modules/quarterclass.h"

/* Within the module that compiles it in: no lookup through the GOT. */
#define MODCACHE_API __attribute__((visibility("hidden")))

/* Doublings covered from 2^lg_min, and blocks kept per class. */
#define MODCACHE_DOUBLINGS 8
#define MODCACHE_CLASSES   (4 * MODCACHE_DOUBLINGS)
#define MODCACHE_DEPTH	   2
/* What every kept block is aligned to, and served requests at most. */
#define MODCACHE_ALIGN	       64
#define MODCACHE_LIMIT_DEFAULT ((size_t)64 << 20)

struct modcache_backend {
	void (*release)(void *ptr);	   /* the backend's free */
	size_t (*usable)(const void *ptr); /* bytes the block holds */
};

/*
 * Blocks above 2^lg_min bytes go to the cache (0: none until
 * modcache_init); read on every allocation and free of the module.
 */
extern MODCACHE_API size_t modcache_min;

/* Cover 2^lg_min .. 2^(lg_min + MODCACHE_DOUBLINGS) bytes. */
MODCACHE_API void modcache_init(unsigned lg_min,
				const struct modcache_backend *be);
/* Keep at most limit bytes (0: nothing); gives back the excess. */
MODCACHE_API void modcache_set_limit(size_t limit);
/* Give every kept block back to the backend; returns the bytes. */
MODCACHE_API size_t modcache_flush(void);
/* The module's "cache" option (a size in bytes); module names errors. */
MODCACHE_API int modcache_option(const char *module, const char *value);

/* Whether a request of size at align is one the cache serves. */
static inline bool modcache_covers(size_t size, size_t align)
{
	return size - modcache_min - 1 <
		       (modcache_min << MODCACHE_DOUBLINGS) - modcache_min &&
	       align <= MODCACHE_ALIGN;
}

/* The bytes to make a block of a covered size with. */
MODCACHE_API size_t modcache_block_bytes(size_t size);
/* A kept block for a covered request of size bytes, or NULL. */
MODCACHE_API void *modcache_take(size_t size);
/* Keep ptr, freed at size; false when the caller must free it. */
MODCACHE_API bool modcache_put(void *ptr, size_t size);
/* Keep ptr, freed at a covered size, or give it to the backend. */
MODCACHE_API void modcache_free(void *ptr, size_t size);

#endif /* ALLOY_ALLOCATORS_MODCACHE_H */
