// SPDX-License-Identifier: MIT
/*
 * allocators/default.c - "default": aligned CPU memory from glibc's own
 * allocator, large blocks from mappings of their own.
 *
 * c10's DefaultCPUAllocator in C: 64-byte alignment unless ALLOY_CONF says
 * otherwise, and the two fill options of c10's CPU allocator: zero_fill
 * (every block reads as zeroes) and junk_fill (new blocks are filled with
 * ALLOY_JUNK_ALLOC and freed ones with ALLOY_JUNK_FREE, so that code
 * reading memory it never wrote, or after freeing it, sees garbage).
 *
 * Small blocks (size + alignment under 128 KiB) come from glibc's plain
 * malloc.  At glibc's own alignment (16 on x86-64: the plain-pointer
 * API's blocks) the block is glibc's pointer itself.  At a larger one it
 * is carved from a malloc of size + align bytes: the block starts at the
 * first aligned address at least one word in, and that word holds
 * glibc's pointer.  glibc's malloc and free are its fast path (per-thread
 * cache), where posix_memalign always takes the slow one (with a split of
 * the chunk, several times the cost); the price is align bytes more per
 * carved block.  Keeping every request under
 * 128 KiB, glibc's own threshold for mapping, also means alloy never
 * moves glibc's dynamic thresholds: the process's malloc behaves as if
 * alloy were not there.  Large blocks are allocators/bigblock.c's: a
 * mapping each, and a cache of freed ones instead of glibc's brk churn.
 *
 * Which kind a block is follows from the size and alignment it was made
 * with, which free and realloc are given (the ops' contract), so nothing
 * in the block says it.  usable_size is given the size only: a large
 * block of at least BIG_MIN bytes says what its mapping holds, any other
 * the size asked for (all the contract asks).  realloc keeps to the kind:
 * glibc's realloc for a direct block, glibc's realloc and a shift for a
 * carved one whose alignment moved, the mapping's own growth for a large
 * one, a move when the new size changes the kind.
 *
 * glibc is called by its own names (__libc_malloc, __libc_calloc,
 * __libc_realloc, __libc_free), never by malloc/free, which an LD_PRELOAD
 * front may define for the whole process and route back into alloy.
 * malloc_trim has no such name; it is looked up in libc's own scope
 * (dlsym on libc's handle searches libc and its dependencies, never a
 * preloaded object); without that handle (a static program) trim releases
 * only the big blocks' cache.  Under a sanitizer that owns malloc the
 * plain names are used instead (kernel/sanitizer.h says why).
 */
#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/base.h"
#include "kernel/conf.h"
#include "kernel/sanitizer.h"
#include "allocators/bigblock.h"
#include "allocators/builtin.h"
#include "allocators/default_cache.h"

/* At or above this, size + align goes to a mapping (glibc's threshold). */
#define BIG_MIN ((size_t)128 << 10)

/* The alignment glibc gives every block (MALLOC_ALIGNMENT). */
#define DIRECT_ALIGN _Alignof(max_align_t)

#ifdef ALLOY_SANITIZER_OWNS_MALLOC
#define libc_malloc  malloc
#define libc_calloc  calloc
#define libc_realloc realloc
#define libc_free    free
static int (*libc_trim)(size_t) = malloc_trim;
/* The sanitizer's malloc is not glibc's: no family for the front. */
#define LIBC_FAMILY NULL

static void resolve_libc(void)
{
}

/*
 * A sanitizer's malloc and realloc promise 8 bytes: direct blocks are
 * asked for at 16, and a resize moves them (default_realloc's move).
 */
#define DIRECT_RESIZES_IN_PLACE false

static void *direct_alloc(size_t size, bool zero)
{
	void *p;

	if (posix_memalign(&p, DIRECT_ALIGN, size))
		return NULL;
	if (zero)
		memset(p, 0, size);
	return p;
}
#else
void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *ptr, size_t size);
void __libc_free(void *ptr);
void *__libc_memalign(size_t align, size_t size);
#define libc_malloc  __libc_malloc
#define libc_calloc  __libc_calloc
#define libc_realloc __libc_realloc
#define libc_free    __libc_free
static int (*libc_trim)(size_t);

/*
 * glibc's malloc as the front's malloc family (kernel/front.h): its
 * memory is the process's own, whatever no other family mapped.
 * Complete once resolve_libc has found malloc_usable_size.
 */
static struct alloy_malloc_family libc_family = {
	.malloc = __libc_malloc,
	.calloc = __libc_calloc,
	.realloc = __libc_realloc,
	.memalign = __libc_memalign,
	.free = __libc_free,
	.system = 1,
};
#define LIBC_FAMILY  (&libc_family)

/* malloc_trim and malloc_usable_size as libc defines them. */
static void resolve_libc(void)
{
	void *libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);

	if (!libc)
		return;
	*(void **)&libc_trim = dlsym(libc, "malloc_trim");
	*(void **)&libc_family.usable_size = dlsym(libc, "malloc_usable_size");
	dlclose(libc);
}

#define DIRECT_RESIZES_IN_PLACE true
#define direct_alloc		libc_alloc
#endif

/* size bytes from glibc, zeroed if asked. */
static inline void *libc_alloc(size_t size, bool zero)
{
	return zero ? libc_calloc(1, size) : libc_malloc(size);
}

/* Where the block at align starts in glibc's block raw. */
static inline char *block_in(char *raw, size_t align)
{
	/* glibc's pointer is 8-aligned, so the result - raw <= align. */
	return (char *)(((uintptr_t)raw + sizeof(void *) + align - 1) &
			~(uintptr_t)(align - 1));
}

/*
 * A block of size bytes at align, carved from glibc (see above).  Out of
 * line: the direct blocks' path then keeps no register across glibc's
 * call and reaches it by a tail call.
 */
static __attribute__((noinline)) void *carve(size_t size, size_t align,
					     bool zero)
{
	char *raw = libc_alloc(size + align, zero);
	char *ptr;

	if (!raw)
		return NULL;
	ptr = block_in(raw, align);
	((void **)ptr)[-1] = raw;
	return ptr;
}

/*
 * Resize a carved block with glibc's realloc.  glibc copies its whole
 * block, so the bytes are at the old offset in the new one; when the new
 * pointer puts the alignment at another offset they are shifted there.
 */
static void *recarve(void *ptr, size_t old_size, size_t new_size, size_t align)
{
	char *raw = ((void **)ptr)[-1];
	size_t old_off = (size_t)((char *)ptr - raw);
	char *nraw = libc_realloc(raw, new_size + align), *nptr;

	if (!nraw)
		return NULL;
	nptr = block_in(nraw, align);
	if (nptr != nraw + old_off)
		memmove(nptr, nraw + old_off,
			old_size < new_size ? old_size : new_size);
	((void **)nptr)[-1] = nraw;
	return nptr;
}

/*
 * The cache's side of a direct block, out of line: the other sizes then
 * reach glibc by a tail call, without a frame set up for the cache.
 */
/* The bin's first block held a bad link (allocators/default_cache.h). */
static __attribute__((noinline, cold)) void *cached_take_last(size_t size,
							      bool zero)
{
	void *p = alloy__dcache_take_last(alloy__dcache_bin(size));

	if (zero)
		memset(p, 0, size);
	return p;
}

static __attribute__((noinline)) void *cached_take(size_t size, bool zero)
{
	void *p = alloy__dcache_take(alloy__dcache_bin(size));

	if (unlikely(p == ALLOY__DCACHE_BAD_LINK))
		return cached_take_last(size, zero);
	if (!p)
		return direct_alloc(alloy__dcache_block_size(size), zero);
	if (zero)
		memset(p, 0, size);
	return p;
}

static __attribute__((noinline)) void cached_give(void *ptr, size_t size)
{
	if (!alloy__dcache_put(ptr, alloy__dcache_bin(size)))
		libc_free(ptr);
}

/* A direct block: from this thread's cache where its size has a bin. */
static inline void *direct_take(size_t size, bool zero)
{
	if (alloy__dcache_covers(size))
		return cached_take(size, zero);
	return direct_alloc(size, zero);
}

static inline void direct_give(void *ptr, size_t size)
{
	if (alloy__dcache_covers(size))
		cached_give(ptr, size);
	else
		libc_free(ptr);
}

/* The per-thread cache gives its blocks back through this. */
static void release_direct(void *ptr)
{
	libc_free(ptr);
}

/* At most 2^62 bytes at 2^40 (alloy's limits): this cannot wrap. */
static inline bool is_big(size_t size, size_t align)
{
	return size + align >= BIG_MIN;
}

static inline bool is_direct(size_t align)
{
	return align <= DIRECT_ALIGN;
}

/* A block of the kind size and align make it, zeroed if asked. */
static inline void *take(size_t size, size_t align, bool zero)
{
	if (is_big(size, align))
		return alloy__bigblock_alloc(size, align, zero);
	if (is_direct(align))
		return direct_take(size, zero);
	return carve(size, align, zero);
}

/*
 * A block to fill: zeroed (ALLOY_ALLOC_ZERO, zero_fill) or junk
 * (junk_fill).  Out of line, so that default_alloc's common case reaches
 * glibc by a tail call, without a frame kept for the fill.
 */
static __attribute__((noinline)) void *take_filled(size_t size, size_t align,
						   unsigned flags)
{
	bool zero = (flags & ALLOY_ALLOC_ZERO) || alloy__conf.zero_fill;
	void *p = take(size, align, zero);

	if (!zero && p)
		memset(p, ALLOY_JUNK_ALLOC, size);
	return p;
}

/* zero_fill or junk_fill: the two adjacent flags tested in one load. */
static inline bool conf_fills(void)
{
	uint16_t both;

	_Static_assert(offsetof(struct alloy__conf, junk_fill) ==
			       offsetof(struct alloy__conf, zero_fill) + 1,
		       "the fill flags are adjacent bytes");
	memcpy(&both, &alloy__conf.zero_fill, sizeof(both));
	return both != 0;
}

static void *default_alloc(void *ctx, size_t size, size_t align, unsigned flags)
{
	(void)ctx;
	if (unlikely((flags & ALLOY_ALLOC_ZERO) || conf_fills()))
		return take_filled(size, align, flags);
	return take(size, align, false);
}

static void default_free(void *ctx, void *ptr, size_t size, size_t align)
{
	(void)ctx;
	if (unlikely(alloy__conf.junk_fill))
		memset(ptr, ALLOY_JUNK_FREE, size);
	if (is_big(size, align))
		alloy__bigblock_free(ptr);
	else if (is_direct(align))
		direct_give(ptr, size);
	else
		libc_free(((void **)ptr)[-1]);
}

/*
 * In place where the kind of block stays (see above); otherwise (a new
 * kind, junk to write, a direct block under a sanitizer) a new block, the
 * bytes and the old one freed.  NULL leaves the old block as it was.
 */
static void *default_realloc(void *ctx, void *ptr, size_t old_size,
			     size_t new_size, size_t align)
{
	bool big = is_big(old_size, align);
	void *p;

	if (likely(!alloy__conf.junk_fill) && big == is_big(new_size, align)) {
		if (big) {
			if (alloy__bigblock_resize(ptr, new_size, align, &p))
				return p;
		} else if (!is_direct(align)) {
			return recarve(ptr, old_size, new_size, align);
		} else if (DIRECT_RESIZES_IN_PLACE) {
			return libc_realloc(ptr,
					    alloy__dcache_block_size(new_size));
		}
	}
	p = default_alloc(ctx, new_size, align, 0);
	if (!p)
		return NULL;
	memcpy(p, ptr, old_size < new_size ? old_size : new_size);
	default_free(ctx, ptr, old_size, align);
	return p;
}

static size_t default_usable_size(void *ctx, const void *ptr, size_t size)
{
	(void)ctx;
	/* Only a block this large is a mapping whatever its alignment. */
	if (size >= BIG_MIN)
		return alloy__bigblock_usable(ptr);
	return size;
}

static long long default_trim(void *ctx)
{
	size_t released = alloy__dcache_flush_self();
	bool libc_released = libc_trim && libc_trim(0);

	(void)ctx;
	released += alloy__bigblock_trim();
	/*
	 * glibc says whether it released anything, not how much: 1 byte
	 * stands for "some", so that malloc_trim answers as glibc's does.
	 */
	if (!released && libc_released)
		released = 1;
	return (long long)released;
}

/* Registry's counts, plus what the big blocks' and threads' caches hold. */
static int default_stats(void *ctx, struct alloy_allocator_stats *st)
{
	(void)ctx;
	st->reserved = st->allocated + alloy__bigblock_cached() +
		       alloy__dcache_bytes();
	return 0;
}

/* Blocks kept per bin of each thread's cache; 0 turns the cache off. */
static int set_thread_cache(const char *value)
{
	uint64_t n;

	if (alloy_parse_size(value, &n) || n > DCACHE_DEPTH_MAX)
		return alloy__error(-ERANGE, "default",
				    "thread_cache \"%s\" must be a count of "
				    "blocks per size, 0 to %d (0: no cache)",
				    value, DCACHE_DEPTH_MAX);
	if (n && alloy__dcache_slot < 0)
		return alloy__error(-ENOSPC, "default",
				    "the per-thread cache has no counter slot");
	atomic_store(&alloy__dcache_depth, (unsigned)n);
	return 0;
}

static int default_set_option(void *ctx, const char *key, const char *value)
{
	uint64_t n;

	(void)ctx;
	if (strcmp(key, "thread_cache") == 0)
		return set_thread_cache(value);
	if (strcmp(key, "cache") != 0)
		return alloy__error(
			-EINVAL, "default",
			"unknown option \"%s\" (known: cache, thread_cache)",
			key);
	if (alloy_parse_size(value, &n) || n > SIZE_MAX)
		return alloy__error(
			-ERANGE, "default",
			"cache \"%s\" must be a size in bytes (0: no cache)",
			value);
	alloy__bigblock_set_limit((size_t)n);
	return 0;
}

static const struct alloy_allocator_ops default_ops = {
	.abi_major = ALLOY_ABI_MAJOR,
	.abi_minor = ALLOY_ABI_MINOR,
	.struct_size = sizeof(struct alloy_allocator_ops),
	.name = "default",
	.device_type = ALLOY_DEVICE_CPU,
	.alloc = default_alloc,
	.free = default_free,
	.realloc = default_realloc,
	.usable_size = default_usable_size,
	.trim = default_trim,
	.stats = default_stats,
	.set_option = default_set_option,
	.malloc_family = LIBC_FAMILY,
};

int alloy__register_default_allocator(void)
{
	resolve_libc();
	/* Without its counter slot the cache is off; the allocator works. */
	alloy__dcache_init(release_direct);
	return alloy_register_allocator(&default_ops, NULL, "builtin", NULL);
}
