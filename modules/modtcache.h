/* SPDX-License-Identifier: MIT */
/*
 * modules/modtcache.h - a backend module's per-thread cache of free
 * blocks, 33 bytes to 64 KiB: what the default allocator's thread cache
 * (allocators/default_cache.h) is to glibc, for jemalloc and mimalloc.
 *
 * Both backends are slower in 1 KiB - 64 KiB than at their smallest
 * sizes, and slower than alloy's own path could hide: mimalloc serves up
 * to 1024 bytes from a per-size page pointer of the thread's heap and
 * takes its slower generic path above; jemalloc's thread cache grows
 * dearer with the size, and above its tcache_max (32 KiB) a block comes
 * from the arena under a lock.  Below 1 KiB mimalloc is quick until a
 * free empties its page, which then takes its slower retire path: a
 * block made and freed over and over, as a tensor
 * runtime's small buffers are, pays that every time.  Below 1 KiB a pair
 * through jemalloc's module and its table of flags cost more than a pop
 * and a push: both modules start at 33 bytes (jemalloc's where the
 * alignment asked is the class's own, modules/jemalloc.c).
 *
 * One list per size class, four classes to a doubling
 * (modules/quarterclass.h; the classes of both backends in this
 * range), each block made at its class's full size, so that any block of
 * a list holds any request of the class.  A block is kept only if aligned
 * to 16 at least; a request (at most 64-aligned) takes its list's head if
 * the head has its alignment, else a new block of the class, which joins
 * the list when freed.  Above 1 KiB every class is a multiple of 256 and
 * both backends align such blocks to 64, so the head always serves; below,
 * a class's blocks have the alignment of its size's lowest set bit (80:
 * 16), and a DataPtr's 64 is served from the list of a class that is a
 * multiple of 64 and from new blocks otherwise.  A list holds at most
 * "thread_cache" blocks (the module's option, 7 unless set; 0 turns the
 * cache off) and never more than 64 KiB beyond its first block: at the
 * default, at most 1.37 MiB per thread (44 KiB of it below 1 KiB;
 * docs/PLUGINS.md).
 *
 * The lists link their blocks through the blocks' first words, hidden as
 * glibc hides its own (allocators/freelink.h).  The cache is the
 * thread's own (a block of the backend's, reached from one thread-local
 * pointer: a pop and a push, no lock, no atomic), made at the thread's
 * first keep and emptied back into the backend with the cache's own
 * block when the thread exits (a thread-specific key's destructor), by
 * trim for the calling thread, and when the module is unloaded (the
 * calling thread's; other threads' blocks stay with the backend,
 * unreachable).  A block made by one thread and freed by another joins
 * the freeing thread's cache; both backends take any thread's block
 * back.  Cached blocks are still the backend's memory: its statistics
 * count them as in use, as before they were freed.
 *
 * Compiled into each module that uses it (each has its own cache, key and
 * options), as modules/modcache.c is.
 */
#ifndef ALLOY_ALLOCATORS_MODTCACHE_H
#define ALLOY_ALLOCATORS_MODTCACHE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <alloy/allocator.h>

#include "allocators/freelink.h"
#include "modules/modcache.h"
#include "modules/quarterclass.h"

/*
 * The first doubling above 2^5 bytes, eleven of them: 33 B .. 64 KiB.  A
 * module may keep fewer of these sizes (jemalloc's keeps those below
 * 1 KiB only at their class's own alignment: see modules/jemalloc.c).
 */
#define MTCACHE_LG_MIN	  5
#define MTCACHE_DOUBLINGS 11
#define MTCACHE_LG_END	  (MTCACHE_LG_MIN + MTCACHE_DOUBLINGS)
#define MTCACHE_MIN	  (((size_t)1 << MTCACHE_LG_MIN) + 1)
#define MTCACHE_MAX	  ((size_t)1 << MTCACHE_LG_END)
#define MTCACHE_BINS	  (4 * MTCACHE_DOUBLINGS)
/* The most alignment a request the cache serves may ask. */
#define MTCACHE_ALIGN 64
/* The least alignment of a block the cache keeps. */
#define MTCACHE_KEEP_ALIGN 16
/* Bytes a list may hold beyond its first block. */
#define MTCACHE_BIN_BYTES     ((size_t)64 << 10)
#define MTCACHE_DEPTH_DEFAULT 7
#define MTCACHE_DEPTH_MAX     255

/*
 * Whether a request of size at align has a list: sizes below the range
 * wrap around to huge, so one compare for the size.
 */
static inline bool mtcache_covers(size_t size, size_t align)
{
	return (size - MTCACHE_MIN <= MTCACHE_MAX - MTCACHE_MIN) &
	       (align <= MTCACHE_ALIGN);
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
	/* A new block of bytes aligned to align, zeroed if asked. */
	void *(*make)(size_t bytes, size_t align, bool zero);
	/* Give back a block that make returned for bytes. */
	void (*release)(void *ptr, size_t bytes);
};

/*
 * A module's ops take the cache's path inline and jump to a function of
 * their own for everything else.  Shaped as the op itself, such a
 * function is reached without moving an argument; noipa keeps gcc from
 * making a private copy without the unused ctx, whose arguments each sit
 * one register lower, so that the ops would shuffle their registers
 * before the cache's path too.
 */
#if defined(__has_attribute)
#if __has_attribute(noipa)
#define MTCACHE_OTHER_PATH static __attribute__((noinline, noipa))
#endif
#endif
#ifndef MTCACHE_OTHER_PATH
#define MTCACHE_OTHER_PATH static __attribute__((noinline))
#endif

/*
 * Set the backend and create the thread-exit key: 0 or a negative errno
 * (the cache keeps nothing then).
 */
MODCACHE_API int mtcache_init(const struct mtcache_backend *be);
/* Empty the calling thread's cache and delete the key (module unload). */
MODCACHE_API void mtcache_fini(void);
/* The module's "thread_cache" option (blocks per list, 0 to 255). */
MODCACHE_API int mtcache_option(const char *module, const char *value);
/* Give the calling thread's kept blocks back to the backend. */
MODCACHE_API void mtcache_flush_self(void);

/*
 * The fast paths below are inline in the module's ops, a pop and a push;
 * modules/modtcache.c has the rest and the state they read.
 */
struct mtcache {
	void *head[MTCACHE_BINS];
	unsigned char count[MTCACHE_BINS];
};

/*
 * The calling thread's cache: before its first keep and after its exit,
 * a cache that keeps nothing, never NULL (modules/modtcache.c says
 * why only a pointer, and why initial-exec).
 */
extern MODCACHE_API __thread struct mtcache *mtcache_self
	__attribute__((tls_model("initial-exec")));
/* The links' key (allocators/freelink.h). */
extern MODCACHE_API struct freelink_key mtcache_link_key;

/*
 * The list of each size in the range, from one table at the cost of a
 * shift and a load: a row per 8 bytes (the classes are 8 bytes apart or
 * more), 8 KiB for the range.  A table with coarser rows above 1 KiB
 * would be 512 bytes, but picking the row then costs a compare and a
 * jump or conditional move on both halves of every pair.
 */
#define MTCACHE_ROW_LG 3
#define MTCACHE_ROWS   (((MTCACHE_MAX - MTCACHE_MIN) >> MTCACHE_ROW_LG) + 1)

/*
 * The tables the pop and the push read, side by side: a free reads both
 * from one base address.
 */
struct mtcache_tables {
	/* Each list's depth: the option, capped by MTCACHE_BIN_BYTES. */
	_Atomic unsigned char depth[MTCACHE_BINS];
	/* The list of each row (below). */
	unsigned char bin_of[MTCACHE_ROWS];
};
extern MODCACHE_API struct mtcache_tables mtcache_tables;

/*
 * The table's row for a size of the range.  Counted from MTCACHE_MIN, a
 * multiple of 8 plus 1 as the classes' first sizes are, so the rows split
 * where (size - 1) / 8 would; and size - MTCACHE_MIN is what
 * mtcache_covers computed already.
 */
static inline size_t mtcache_row(size_t size)
{
	return (size - MTCACHE_MIN) >> MTCACHE_ROW_LG;
}

/* The list of a request that mtcache_covers. */
static inline size_t mtcache_bin(size_t size)
{
	return mtcache_tables.bin_of[mtcache_row(size)];
}

/*
 * Out of line: a request the head of list b does not serve, or
 * (bad_head) whose link failed its check.  The head is not passed: read
 * again there, it needs no register of its own on the way.
 */
MODCACHE_API void *mtcache_alloc_slow(struct mtcache *c, size_t b, size_t align,
				      bool bad_head);
/* Out of line: a free the list has no room for, or the thread no cache. */
MODCACHE_API void mtcache_free_slow(struct mtcache *c, void *ptr, size_t b);

/*
 * Out of line: a covered request with ALLOY_ALLOC_ZERO, served as
 * mtcache_alloc serves the others and cleared.  Apart, so that the
 * inline path tests the flags first and is done with them: they need no
 * register of their own while it pops.  Shaped as the alloc op (ctx
 * unused), so the op jumps to it without moving an argument.
 */
MODCACHE_API void *mtcache_alloc_zeroed(void *ctx, size_t size, size_t align);

/*
 * A block for a covered request (flags: the alloc op's, ALLOY_ALLOC_*):
 * the head of its list if there is one and it has the alignment asked
 * (blocks below 1 KiB have their class's, which may be 16), else a new
 * one of the class, which joins the list when freed.
 */
static inline void *mtcache_alloc(size_t size, size_t align, unsigned flags)
{
	size_t b;
	struct mtcache *c;
	void *p, *next;

	if (__builtin_expect(flags & ALLOY_ALLOC_ZERO, 0))
		return mtcache_alloc_zeroed(NULL, size, align);
	b = mtcache_bin(size);
	c = mtcache_self;
	if (__builtin_expect(!(p = c->head[b]) || ((uintptr_t)p & (align - 1)),
			     0))
		return mtcache_alloc_slow(c, b, align, false);
	next = freelink_get(p, &mtcache_link_key);
	if (__builtin_expect(!freelink_ok(next, MTCACHE_KEEP_ALIGN), 0))
		return mtcache_alloc_slow(c, b, align, true);
	c->head[b] = next;
	c->count[b]--;
	return p;
}

/* Put p at the head of list b of c, which has room for it. */
static inline void mtcache_push(struct mtcache *c, void *p, size_t b)
{
	freelink_set(p, c->head[b], &mtcache_link_key);
	c->head[b] = p;
	c->count[b]++;
}

/* Keep a block of a covered size, or give it back to the backend. */
static inline void mtcache_free(void *ptr, size_t size)
{
	size_t b = mtcache_bin(size);
	struct mtcache *c = mtcache_self;

	if (__builtin_expect(c->count[b] >= atomic_load_explicit(
						    &mtcache_tables.depth[b],
						    memory_order_relaxed) ||
				     (uintptr_t)ptr % MTCACHE_KEEP_ALIGN,
			     0)) {
		mtcache_free_slow(c, ptr, b);
		return;
	}
	mtcache_push(c, ptr, b);
}

#endif /* ALLOY_ALLOCATORS_MODTCACHE_H */
