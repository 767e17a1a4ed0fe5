// SPDX-License-Identifier: MIT
/*
 * modules/mimalloc.c - the "mimalloc" module: CPU memory from
 * mimalloc's own API (mi_malloc / mi_malloc_aligned / mi_free), never
 * from its malloc.
 *
 * mi_malloc_aligned is slower than mi_malloc (above 1 KiB it has no fast
 * path: it over-allocates and marks the page, which sends mi_free the slow
 * way too, a cost every pair pays).  Yet mi_malloc's blocks are
 * usually aligned enough: mimalloc packs equal blocks from an aligned page
 * start, so a block is aligned to the lowest set bit of its size class,
 * and its classes above 1 KiB are multiples of 256.  So where that is
 * likely - sizes above 1 KiB, or a multiple of the alignment - the module
 * asks mi_malloc and checks the pointer; only a misaligned block (freed at
 * once) or any other size goes to mi_malloc_aligned.  The check makes the
 * result right whatever mimalloc's layout.  mi_free frees both kinds.
 *
 * mi_malloc_aligned's own result is checked too: mimalloc 2.0.9 returns
 * misaligned blocks for some sizes up to 1 KiB at alignments of 256 and
 * more (an upstream bug that later releases fix); such a request is
 * made again above 1 KiB, where mimalloc aligns by over-allocating.
 *
 * Loaded with RTLD_LOCAL, libmimalloc's malloc/free do not interpose on
 * the process's: only the mi_* calls below reach it.  Its statistics are
 * process-wide figures of mimalloc's memory (committed now and at peak,
 * from mi_process_info), which are alloy's alone as long as nothing else
 * in the process calls mimalloc.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <mimalloc.h>

#include <alloy/conf.h>
#include <alloy/plugin.h>

#include "modules/modcache.h"
#include "modules/modtcache.h"

/*
 * The thread cache (modules/modtcache.h) up to 64 KiB, the large cache
 * above: from 128 KiB mimalloc gives every block a span of its own, a slow
 * path that the cache spares.
 */
#define LARGE_LG_MIN MTCACHE_LG_END
/* Above this, mimalloc's size classes are multiples of 256. */
#define SMALL_MAX 1024
/* Alignments mi_malloc is tried for above SMALL_MAX. */
#define TRY_ALIGN_MAX 4096

static bool misaligned(const void *p, size_t align)
{
	return (uintptr_t)p & (align - 1);
}

/* mi_malloc_aligned, with its misaligned results made again (see above). */
static void *alloc_aligned(size_t size, size_t align, bool zero)
{
	void *p = zero ? mi_zalloc_aligned(size, align)
		       : mi_malloc_aligned(size, align);

	if (!misaligned(p, align))
		return p;
	mi_free(p);
	size = size > SMALL_MAX ? size : SMALL_MAX + 1;
	p = zero ? mi_zalloc_aligned(size, align)
		 : mi_malloc_aligned(size, align);
	if (!misaligned(p, align))
		return p;
	mi_free(p);
	alloy_plugin_error(-ENOMEM,
			   "mimalloc: no block of %zu bytes aligned to %zu",
			   size, align);
	return NULL;
}

/*
 * mi_malloc's block p was misaligned: give it back and take an aligned
 * one of its usable size, zeroed (rare enough that the zeroing costs
 * nothing that matters, and the fast path then keeps only align alive
 * across its call).
 */
static __attribute__((noinline, cold)) void *realign(void *p, size_t align)
{
	size_t size = mi_usable_size(p);

	mi_free(p);
	return alloc_aligned(size, align, true);
}

/* A block from mimalloc itself, by the rules at the top. */
static inline void *alloc_uncached(size_t size, size_t align, bool zero)
{
	void *p;

	if (size > SMALL_MAX ? align > TRY_ALIGN_MAX : (size & (align - 1)))
		return alloc_aligned(size, align, zero);
	p = zero ? mi_zalloc(size) : mi_malloc(size);
	/* NULL is aligned too: out of memory is reported as such. */
	if (__builtin_expect(misaligned(p, align), 0))
		return realign(p, align);
	return p;
}

/* A large block: a kept one, else one of its class's full size. */
static __attribute__((noinline)) void *large_alloc(size_t size, size_t align,
						   bool zero)
{
	void *p = zero ? NULL : modcache_take(size);

	return p ? p : alloc_uncached(modcache_block_bytes(size), align, zero);
}

/* What the thread cache does not cover (see MTCACHE_OTHER_PATH). */
MTCACHE_OTHER_PATH void *alloc_other(void *ctx, size_t size, size_t align,
				     unsigned flags)
{
	bool zero = flags & ALLOY_ALLOC_ZERO;

	(void)ctx;
	if (size > modcache_min && modcache_covers(size, align))
		return large_alloc(size, align, zero);
	return alloc_uncached(size, align, zero);
}

/* The thread cache's path first, inline, with no frame to set up. */
static void *mi_alloy_alloc(void *ctx, size_t size, size_t align,
			    unsigned flags)
{
	if (__builtin_expect(mtcache_covers(size, align), 1))
		return mtcache_alloc(size, align, flags);
	return alloc_other(ctx, size, align, flags);
}

/* The frees the thread cache does not take. */
MTCACHE_OTHER_PATH void free_other(void *ctx, void *ptr, size_t size,
				   size_t align)
{
	(void)ctx;
	if (size > modcache_min && modcache_covers(size, align)) {
		modcache_free(ptr, size);
		return;
	}
	mi_free(ptr);
}

static void mi_alloy_free(void *ctx, void *ptr, size_t size, size_t align)
{
	if (__builtin_expect(mtcache_covers(size, align), 1)) {
		mtcache_free(ptr, size);
		return;
	}
	free_other(ctx, ptr, size, align);
}

/*
 * In place while the block is no more than twice what is needed (as
 * mi_realloc does), otherwise a new block through mi_alloy_alloc: not
 * mi_realloc_aligned, whose result could be misaligned (see above) after
 * it has already let the old block go.  A block that stays at one of the
 * cache's sizes must hold its bin's full size, as every block the cache
 * keeps does.
 */
static void *mi_alloy_realloc(void *ctx, void *ptr, size_t old_size,
			      size_t new_size, size_t align)
{
	size_t usable = mi_usable_size(ptr);
	size_t need = mtcache_covers(new_size, align)
			      ? mtcache_block_bytes(new_size)
			      : new_size;
	void *p;

	if (need <= usable && new_size >= usable / 2)
		return ptr;
	p = mi_alloy_alloc(ctx, new_size, align, 0);
	if (!p)
		return NULL;
	memcpy(p, ptr, old_size < new_size ? old_size : new_size);
	mi_free(ptr);
	return p;
}

static size_t mi_alloy_usable_size(void *ctx, const void *ptr, size_t size)
{
	(void)ctx;
	(void)size;
	return mi_usable_size(ptr);
}

static int mi_alloy_stats(void *ctx, struct alloy_allocator_stats *st)
{
	size_t elapsed, user, sys, rss, peak_rss, commit, peak_commit, faults;

	(void)ctx;
	/* Fold the threads' statistics into the process's before reading. */
	mi_stats_merge();
	mi_process_info(&elapsed, &user, &sys, &rss, &peak_rss, &commit,
			&peak_commit, &faults);
	st->reserved = commit;
	st->peak_reserved = peak_commit;
	st->mapped = commit;
	return 0;
}

static long long mi_alloy_trim(void *ctx)
{
	struct alloy_allocator_stats before = { 0 }, after = { 0 };

	mi_alloy_stats(ctx, &before);
	mtcache_flush_self();
	modcache_flush();
	mi_collect(true);
	mi_alloy_stats(ctx, &after);
	return before.reserved > after.reserved
		       ? (long long)(before.reserved - after.reserved)
		       : 0;
}

static void release_block(void *ptr)
{
	mi_free(ptr);
}

static size_t block_bytes(const void *ptr)
{
	return mi_usable_size(ptr);
}

/* The thread cache's blocks (modules/modtcache.h). */
static void *make_cached(size_t bytes, size_t align, bool zero)
{
	return alloc_uncached(bytes, align, zero);
}

static void release_cached(void *ptr, size_t bytes)
{
	(void)bytes;
	mi_free(ptr);
}

static int mi_alloy_init(void *ctx)
{
	static const struct modcache_backend backend = { release_block,
							 block_bytes };
	static const struct mtcache_backend cached = { "mimalloc", make_cached,
						       release_cached };
	int rc = mtcache_init(&cached);

	(void)ctx;
	modcache_init(LARGE_LG_MIN, &backend);
	if (rc)
		return alloy_plugin_error(rc,
					  "mimalloc: no thread-exit key for "
					  "the per-thread cache: %s",
					  strerror(-rc));
	return 0;
}

static void mi_alloy_fini(void *ctx)
{
	(void)ctx;
	mtcache_fini();
	modcache_flush();
}

/*
 * "thread_cache": blocks kept per size in each thread's cache; "cache":
 * bytes of large blocks kept for the process.
 */
static int mi_alloy_set_option(void *ctx, const char *key, const char *value)
{
	(void)ctx;
	if (strcmp(key, "cache") == 0)
		return modcache_option("mimalloc", value);
	if (strcmp(key, "thread_cache") == 0)
		return mtcache_option("mimalloc", value);
	return alloy_plugin_error(
		-EINVAL,
		"mimalloc: unknown option \"%s\" (known: cache, thread_cache)",
		key);
}

/* mi_usable_size with malloc_usable_size's type. */
static size_t usable_size(void *ptr)
{
	return mi_usable_size(ptr);
}

/* mimalloc's own API as the front's malloc family (kernel/front.h). */
static const struct alloy_malloc_family mi_family = {
	.malloc = mi_malloc,
	.calloc = mi_calloc,
	.realloc = mi_realloc,
	.memalign = mi_memalign,
	.free = mi_free,
	.usable_size = usable_size,
};

static const struct alloy_allocator_ops mi_ops = {
	.abi_major = ALLOY_ABI_MAJOR,
	.abi_minor = ALLOY_ABI_MINOR,
	.struct_size = sizeof(struct alloy_allocator_ops),
	.name = "mimalloc",
	.device_type = ALLOY_DEVICE_CPU,
	.alloc = mi_alloy_alloc,
	.free = mi_alloy_free,
	.realloc = mi_alloy_realloc,
	.usable_size = mi_alloy_usable_size,
	.trim = mi_alloy_trim,
	.stats = mi_alloy_stats,
	.init = mi_alloy_init,
	.fini = mi_alloy_fini,
	.set_option = mi_alloy_set_option,
	.malloc_family = &mi_family,
};

static const struct alloy_plugin_allocator mi_allocators[] = {
	{ &mi_ops, NULL },
};

static const struct alloy_plugin_descriptor mi_descriptor = {
	.abi_major = ALLOY_ABI_MAJOR,
	.abi_minor = ALLOY_ABI_MINOR,
	.struct_size = sizeof(struct alloy_plugin_descriptor),
	.name = "mimalloc",
	.description =
		"mimalloc through mi_malloc (mi_malloc_aligned when needed) and mi_free",
	.allocators = mi_allocators,
	.nallocators = 1,
};

const struct alloy_plugin_descriptor *alloy_module_entry(void)
{
	return &mi_descriptor;
}
