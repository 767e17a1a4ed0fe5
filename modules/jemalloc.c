// SPDX-License-Identifier: MIT
/*
 * modules/jemalloc.c - the "jemalloc" module: CPU memory from jemalloc,
 * never through the process's malloc.
 *
 * Two of jemalloc's entry points serve a block.  Where no flag is needed
 * (the alignment is the size class's own, jemalloc's shared arena) it is
 * jemalloc's own malloc, calloc, realloc and free, looked up in
 * jemalloc's object itself, so that neither glibc's malloc nor an
 * LD_PRELOAD front that defines malloc for the process is reached: in
 * Debian's jemalloc 5.3 only malloc and free have the fast path, and a
 * pair through them costs far less than mallocx + sdallocx with flags 0
 * (docs/BENCHMARKS.md).  The plain-pointer API's blocks
 * (16-aligned, never under 17 bytes) are known flag-free by two tests,
 * without the table below.  Everywhere else it is the
 * non-standard API, mallocx / sdallocx / rallocx with the flags; sized
 * free spares the size lookup there.  jemalloc frees any of its blocks
 * through either, so the two may meet (a block made with flags and the
 * arena option changed before its free, for one).
 *
 * Alignment is passed only when the size class does not give it anyway:
 * any MALLOCX_ALIGN flag takes jemalloc off its flags-0 fast path, and at
 * 64 bytes most sizes need none.  The
 * rule, from jemalloc's size classes: every object of a small class is
 * aligned to the lowest set bit of the class size (its slabs are
 * page-aligned and the objects packed), and large allocations are at least
 * cache-line aligned (their random offset inside the first page, when
 * opt.cache_oblivious is on, is a multiple of 64).  Up to 1 KiB, where
 * classes are 8 to 128 bytes apart, a table made at registration says,
 * per 8 bytes of size, the largest alignment for which jemalloc's own
 * nallocx gives the same class with and without MALLOCX_ALIGN (so the
 * aligned request would be served from the very same bin); above 1 KiB
 * every class is a multiple of 256 or large, so 64 is always natural.
 * The free passes the same flags as the allocation (the rule depends on
 * size and alignment only), which sdallocx needs to find the same class.
 *
 * Blocks of 33 bytes to 64 KiB at alignments up to 64 go through the
 * module's per-thread cache (modules/modtcache.h) - up to 1 KiB only
 * where the alignment is the class's own (a DataPtr's 64 B at 64; the
 * plain-pointer API's 16-aligned blocks stay with jemalloc's malloc
 * there) - and larger ones through its process-wide cache
 * (modules/modcache.h), both on the shared arena only.
 *
 * Option jemalloc.arena:dedicated gives alloy an arena of its own, so that
 * what the stats report is alloy's memory alone even in a process whose
 * own malloc is jemalloc too.  The thread caches are bypassed then (they
 * are per thread, not per arena), which costs some speed.
 *
 * jemalloc must have been loaded at process start (it uses static TLS);
 * see docs/PLUGINS.md.  The module links against it, so it is loaded with
 * this module if it was not, and that late load is what fails with
 * "cannot allocate memory in static TLS block" - alloy's loader explains.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <jemalloc/jemalloc.h>

#include <alloy/plugin.h>

#include "modules/modcache.h"
#include "modules/modtcache.h"

/* Sizes up to this have their natural alignment in the table. */
#define TABLE_MAX 1024
/*
 * Plain-pointer requests go to jemalloc's own malloc up to the table's
 * end (where its thread cache is as fast as the module's); the module's
 * thread cache takes them above.
 */
#define PLAIN_MAX TABLE_MAX
/* What every size above TABLE_MAX is aligned to with flags 0. */
#define ABOVE_TABLE_NATURAL 64

struct je_state {
	int flags;	/* MALLOCX_ARENA | MALLOCX_TCACHE_NONE, or 0 */
	unsigned arena; /* the dedicated arena, when flags != 0 */
	bool have_arena;
	/* Alignment of a flags-0 object of size 8i - 7 .. 8i; 0: unknown. */
	uint16_t natural[TABLE_MAX / 8 + 1];
	/*
	 * The least of them over every size above 8 (0 without jemalloc's
	 * own malloc): a block of such a size at this alignment or less
	 * needs no flag, the first test of the fast path.
	 */
	size_t plain_align;
	/*
	 * The second: sizes 9 .. PLAIN_MAX; 0 (no fast path) on a dedicated
	 * arena or without jemalloc's own malloc.  Set with flags, by
	 * set_flags().
	 */
	size_t plain_span;
	/*
	 * Whether every size of each of the thread cache's lists (33 bytes
	 * to 64 KiB) is in one class of jemalloc's, at least the list's
	 * bytes (so any block it made there holds them, a realloc'ed one
	 * too, and a sized free of any of them names its class), checked at
	 * init.
	 */
	bool classes_are_lists;
	/* The thread cache is used: on the shared arena, the classes right. */
	bool thread_cache;
};

static struct je_state je;

/* jemalloc's own malloc family (see above); NULL if it has none. */
static struct {
	void *(*malloc)(size_t size);
	void *(*calloc)(size_t n, size_t size);
	void *(*realloc)(void *ptr, size_t size);
	void (*free)(void *ptr);
} own;

/*
 * The same functions as the front's malloc family (kernel/front.h), with
 * jemalloc's memalign and malloc_usable_size: complete only where
 * find_own_malloc found them all.
 */
static struct alloy_malloc_family je_family;

/* Whether p is code in the object whose base is base. */
static bool defined_in(void *p, const void *base)
{
	Dl_info info;

	return p && dladdr(p, &info) && info.dli_fbase == base;
}

/*
 * Find malloc, calloc, realloc and free in jemalloc's object.  dlsym on its
 * handle searches the object before its dependencies, and the check that each
 * lies in it refuses a jemalloc built with a prefix (whose plain names
 * would be libc's): then everything goes through mallocx.
 */
static void find_own_malloc(void)
{
	Dl_info info;
	void *h, *m, *c, *r, *f, *a, *u;

	if (!dladdr((void *)mallocx, &info) || !info.dli_fname)
		return;
	h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return;
	m = dlsym(h, "malloc");
	c = dlsym(h, "calloc");
	r = dlsym(h, "realloc");
	f = dlsym(h, "free");
	a = dlsym(h, "memalign");
	u = dlsym(h, "malloc_usable_size");
	dlclose(h);
	if (!defined_in(m, info.dli_fbase) || !defined_in(c, info.dli_fbase) ||
	    !defined_in(r, info.dli_fbase) || !defined_in(f, info.dli_fbase))
		return;
	*(void **)&own.malloc = m;
	*(void **)&own.calloc = c;
	*(void **)&own.realloc = r;
	*(void **)&own.free = f;
	if (!defined_in(a, info.dli_fbase) || !defined_in(u, info.dli_fbase))
		return;
	je_family.malloc = own.malloc;
	je_family.calloc = own.calloc;
	je_family.realloc = own.realloc;
	je_family.free = own.free;
	*(void **)&je_family.memalign = a;
	*(void **)&je_family.usable_size = u;
}

/* The alignment flags for a block of size (>= 1) at align. */
static inline int align_flags(const struct je_state *s, size_t size,
			      size_t align)
{
	size_t natural = size <= TABLE_MAX ? s->natural[(size + 7) >> 3]
					   : ABOVE_TABLE_NATURAL;

	if (align <= natural)
		return 0;
	return MALLOCX_LG_ALIGN((unsigned)__builtin_ctzl(align));
}

/* Any block of jemalloc's, whatever flags made it. */
static void release_block(void *ptr)
{
	dallocx(ptr, 0);
}

static size_t block_bytes(const void *ptr)
{
	return sallocx((void *)ptr, 0);
}

/*
 * The thread cache's blocks (modules/modtcache.h), on the shared arena
 * with flags 0: 64 is natural above 1 KiB.
 */
static void *make_cached(size_t bytes, size_t align, bool zero);

static void release_cached(void *ptr, size_t bytes)
{
	if (own.free)
		own.free(ptr);
	else
		sdallocx(ptr, bytes, 0);
}

static bool classes_are_lists(void)
{
	/*
	 * Above 1 KiB jemalloc's classes are the lists' own; below, a list
	 * may sit inside a larger class (33-40 and 41-48 are both in 48).
	 */
	for (size_t least = MTCACHE_MIN; least <= MTCACHE_MAX;
	     least = mtcache_block_bytes(least) + 1) {
		size_t bytes = mtcache_block_bytes(least);

		if (nallocx(least, 0) != nallocx(bytes, 0) ||
		    nallocx(bytes, 0) < bytes)
			return false;
	}
	return true;
}

/*
 * The large cache starts above the thread cache, or where jemalloc's own
 * thread caches end (tcache_max, 32 KiB unless MALLOC_CONF says) if that
 * is later, at a power of two.
 */
static void init_large_cache(void)
{
	static const struct modcache_backend backend = { release_block,
							 block_bytes };
	size_t tcache_max = 32 << 10, len = sizeof(tcache_max);
	unsigned lg = MTCACHE_LG_END;

	if (mallctl("arenas.tcache_max", &tcache_max, &len, NULL, 0))
		tcache_max = 32 << 10;
	while (lg < 40 && ((size_t)1 << lg) < tcache_max)
		lg++;
	modcache_init(lg, &backend);
}

/* The arena's flags, and the fast path's size span that goes with them. */
static void set_flags(struct je_state *s, int flags)
{
	s->flags = flags;
	s->plain_span = flags || !own.malloc ? 0 : PLAIN_MAX + 1 - 9;
	s->thread_cache = !flags && s->classes_are_lists;
}

static int je_init(void *ctx)
{
	static const struct mtcache_backend cached = { "jemalloc", make_cached,
						       release_cached };
	struct je_state *s = ctx;
	int rc;

	for (size_t i = 1; i <= TABLE_MAX / 8; i++) {
		size_t size = 8 * i, plain = nallocx(size, 0);
		unsigned lg = 3;

		/* Classes are multiples of 8: all of 8i-7..8i share one. */
		while (lg < 12 &&
		       nallocx(size, MALLOCX_LG_ALIGN(lg + 1)) == plain)
			lg++;
		s->natural[i] = plain ? (uint16_t)(1u << lg) : 0;
	}
	s->natural[0] = s->natural[1];
	s->plain_align = own.malloc ? ABOVE_TABLE_NATURAL : 0;
	for (size_t i = 2; i <= TABLE_MAX / 8; i++)
		if (s->natural[i] < s->plain_align)
			s->plain_align = s->natural[i];
	init_large_cache();
	s->classes_are_lists = classes_are_lists();
	set_flags(s, 0);
	rc = mtcache_init(&cached);
	if (rc)
		return alloy_plugin_error(rc,
					  "jemalloc: no thread-exit key for "
					  "the per-thread cache: %s",
					  strerror(-rc));
	return 0;
}

/*
 * Whether a block of size at align goes through jemalloc's own malloc
 * family without a look at the table or the large cache: the
 * plain-pointer API's blocks (16-aligned, over 8 bytes) below the large
 * sizes, on the shared arena.
 */
static inline bool plain_block(const struct je_state *s, size_t size,
			       size_t align)
{
	/* The alignment first: a DataPtr's 64 fails at the first test. */
	return __builtin_expect(
		align <= s->plain_align && size - 9 < s->plain_span, 1);
}

/* A block through the table's flags (see the top). */
static void *alloc_flags(struct je_state *s, size_t size, size_t align,
			 unsigned flags)
{
	int f;

	/* mallocx(0) is undefined; alloy never asks, but be safe. */
	size = size ? size : 1;
	f = align_flags(s, size, align) | s->flags;
	if (!f && own.malloc)
		return flags & ALLOY_ALLOC_ZERO ? own.calloc(1, size)
						: own.malloc(size);
	if (flags & ALLOY_ALLOC_ZERO)
		f |= MALLOCX_ZERO;
	return mallocx(size, f);
}

static void *make_cached(size_t bytes, size_t align, bool zero)
{
	return alloc_flags(&je, bytes, align, zero ? ALLOY_ALLOC_ZERO : 0);
}

/*
 * Whether a block of size at align is the thread cache's.  Up to 1 KiB
 * only where the alignment is the class's own: every block a list holds
 * was then made with flags 0, in the list's class (an aligned request
 * can land in a larger one).
 */
static inline bool thread_kind(const struct je_state *s, size_t size,
			       size_t align)
{
	return s->thread_cache && mtcache_covers(size, align) &&
	       (size > TABLE_MAX || align <= s->natural[(size + 7) >> 3]);
}

/*
 * Whether a block of size at align is the large cache's: on the shared
 * arena only (a dedicated one keeps its own memory, see the top).
 */
static inline bool large_kind(const struct je_state *s, size_t size,
			      size_t align)
{
	return __builtin_expect(size > modcache_min, 0) &&
	       modcache_covers(size, align) && !s->flags;
}

/* A large block: a kept one, else one of its class's full size. */
static __attribute__((noinline)) void *
large_alloc(struct je_state *s, size_t size, size_t align, unsigned flags)
{
	void *p = flags & ALLOY_ALLOC_ZERO ? NULL : modcache_take(size);

	return p ? p : alloc_flags(s, modcache_block_bytes(size), align, flags);
}

/* Past the two fast paths, jemalloc's own malloc and the thread cache. */
MTCACHE_OTHER_PATH void *alloc_other(void *ctx, size_t size, size_t align,
				     unsigned flags)
{
	struct je_state *s = ctx;

	if (large_kind(s, size, align))
		return large_alloc(s, size, align, flags);
	return alloc_flags(s, size, align, flags);
}

static void *je_alloc(void *ctx, size_t size, size_t align, unsigned flags)
{
	struct je_state *s = ctx;

	if (plain_block(s, size, align))
		return flags & ALLOY_ALLOC_ZERO ? own.calloc(1, size)
						: own.malloc(size);
	if (__builtin_expect(thread_kind(s, size, align), 1))
		return mtcache_alloc(size, align, flags);
	return alloc_other(ctx, size, align, flags);
}

MTCACHE_OTHER_PATH void free_other(void *ctx, void *ptr, size_t size,
				   size_t align)
{
	struct je_state *s = ctx;
	int f;

	if (large_kind(s, size, align)) {
		modcache_free(ptr, size);
		return;
	}
	size = size ? size : 1;
	f = align_flags(s, size, align) | s->flags;
	if (!f && own.free)
		own.free(ptr);
	else
		sdallocx(ptr, size, f);
}

static void je_free(void *ctx, void *ptr, size_t size, size_t align)
{
	struct je_state *s = ctx;

	if (plain_block(s, size, align)) {
		own.free(ptr);
		return;
	}
	if (__builtin_expect(thread_kind(s, size, align), 1)) {
		mtcache_free(ptr, size);
		return;
	}
	free_other(ctx, ptr, size, align);
}

/* The new block gets the flags its free will pass (see align_flags). */
static void *je_realloc(void *ctx, void *ptr, size_t old_size, size_t new_size,
			size_t align)
{
	struct je_state *s = ctx;
	int f;

	(void)old_size;
	new_size = new_size ? new_size : 1;
	/* A block that may join the thread cache holds its list's bytes. */
	if (thread_kind(s, new_size, align))
		new_size = mtcache_block_bytes(new_size);
	f = align_flags(s, new_size, align) | s->flags;
	/* realloc frees only for size 0, which is never asked here. */
	if (!f && own.realloc)
		return own.realloc(ptr, new_size);
	return rallocx(ptr, new_size, f);
}

static size_t je_usable_size(void *ctx, const void *ptr, size_t size)
{
	(void)ctx;
	(void)size;
	return sallocx((void *)ptr, 0);
}

static int read_size(const char *name, size_t *out)
{
	size_t len = sizeof(*out);
	int rc = mallctl(name, out, &len, NULL, 0);

	if (rc)
		return alloy_plugin_error(
			-rc, "jemalloc: mallctl(\"%s\") failed: %s", name,
			strerror(rc));
	return 0;
}

/* jemalloc's statistics are a snapshot taken when "epoch" is written. */
static int refresh_epoch(void)
{
	uint64_t epoch = 1;
	size_t len = sizeof(epoch);
	int rc = mallctl("epoch", &epoch, &len, &epoch, len);

	if (rc)
		return alloy_plugin_error(
			-rc, "jemalloc: mallctl(\"epoch\") failed: %s",
			strerror(rc));
	return 0;
}

static int arena_stats(unsigned arena, struct alloy_allocator_stats *st)
{
	size_t small, large, pactive, page, v;
	char name[64];
	int rc;

#define ARENA_STAT(key, out)                                                 \
	do {                                                                 \
		snprintf(name, sizeof(name), "stats.arenas.%u." key, arena); \
		rc = read_size(name, (out));                                 \
		if (rc)                                                      \
			return rc;                                           \
	} while (0)
	ARENA_STAT("small.allocated", &small);
	ARENA_STAT("large.allocated", &large);
	ARENA_STAT("pactive", &pactive);
	rc = read_size("arenas.page", &page);
	if (rc)
		return rc;
	st->allocated = small + large;
	st->active = (uint64_t)pactive * page;
	ARENA_STAT("resident", &v);
	st->resident = v;
	ARENA_STAT("mapped", &v);
	st->mapped = v;
#undef ARENA_STAT
	return 0;
}

static int je_stats(void *ctx, struct alloy_allocator_stats *st)
{
	struct je_state *s = ctx;
	size_t v;
	int rc = refresh_epoch();

	if (rc)
		return rc;
	if (s->flags) {
		rc = arena_stats(s->arena, st);
	} else {
		static const struct {
			const char *name;
			size_t off;
		} keys[] = {
			{ "stats.allocated",
			  offsetof(struct alloy_allocator_stats, allocated) },
			{ "stats.active",
			  offsetof(struct alloy_allocator_stats, active) },
			{ "stats.resident",
			  offsetof(struct alloy_allocator_stats, resident) },
			{ "stats.mapped",
			  offsetof(struct alloy_allocator_stats, mapped) },
		};

		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && !rc;
		     i++) {
			rc = read_size(keys[i].name, &v);
			*(uint64_t *)((char *)st + keys[i].off) = v;
		}
	}
	if (rc)
		return rc;
	/* Held from the system: the pages jemalloc has active. */
	st->reserved = st->active;
	return 0;
}

static long long je_trim(void *ctx)
{
	struct je_state *s = ctx;
	struct alloy_allocator_stats before = { 0 }, after = { 0 };
	char name[64];
	int rc;

	if (je_stats(s, &before))
		return -EIO;
	mtcache_flush_self();
	modcache_flush();
	/*
	 * The program's blocks under alloy run are jemalloc's own: this
	 * thread's jemalloc cache holds the ones it freed last.
	 */
	mallctl("thread.tcache.flush", NULL, NULL, NULL, 0);
	snprintf(name, sizeof(name), "arena.%u.purge",
		 s->flags ? s->arena : (unsigned)MALLCTL_ARENAS_ALL);
	rc = mallctl(name, NULL, NULL, NULL, 0);
	if (rc)
		return alloy_plugin_error(
			-rc, "jemalloc: mallctl(\"%s\") failed: %s", name,
			strerror(rc));
	if (je_stats(s, &after))
		return -EIO;
	return before.resident > after.resident
		       ? (long long)(before.resident - after.resident)
		       : 0;
}

static int use_dedicated_arena(struct je_state *s)
{
	size_t len = sizeof(s->arena);
	int rc;

	if (!s->have_arena) {
		rc = mallctl("arenas.create", &s->arena, &len, NULL, 0);
		if (rc)
			return alloy_plugin_error(
				-rc,
				"jemalloc: cannot create a dedicated arena: mallctl(\"arenas.create\"): %s",
				strerror(rc));
		s->have_arena = true;
	}
	set_flags(s, MALLOCX_ARENA(s->arena) | MALLOCX_TCACHE_NONE);
	return 0;
}

/*
 * Blocks carry their arena, and sdallocx finds it whatever the flags say,
 * so switching between shared and dedicated is safe with live blocks.
 */
static int je_set_option(void *ctx, const char *key, const char *value)
{
	struct je_state *s = ctx;

	if (strcmp(key, "cache") == 0)
		return modcache_option("jemalloc", value);
	if (strcmp(key, "thread_cache") == 0)
		return mtcache_option("jemalloc", value);
	if (strcmp(key, "arena") != 0)
		return alloy_plugin_error(
			-EINVAL,
			"jemalloc: unknown option \"%s\" (known: arena, cache, "
			"thread_cache)",
			key);
	if (strcmp(value, "dedicated") == 0)
		return use_dedicated_arena(s);
	if (strcmp(value, "shared") == 0) {
		set_flags(s, 0);
		return 0;
	}
	return alloy_plugin_error(
		-ERANGE,
		"jemalloc: arena \"%s\" is not \"shared\" or \"dedicated\"",
		value);
}

/* Unloaded: the kept blocks go back before the code that keeps them. */
static void je_fini(void *ctx)
{
	(void)ctx;
	mtcache_fini();
	modcache_flush();
}

static const struct alloy_allocator_ops je_ops = {
	.abi_major = ALLOY_ABI_MAJOR,
	.abi_minor = ALLOY_ABI_MINOR,
	.struct_size = sizeof(struct alloy_allocator_ops),
	.name = "jemalloc",
	.device_type = ALLOY_DEVICE_CPU,
	.alloc = je_alloc,
	.free = je_free,
	.init = je_init,
	.fini = je_fini,
	.realloc = je_realloc,
	.usable_size = je_usable_size,
	.trim = je_trim,
	.stats = je_stats,
	.set_option = je_set_option,
	.malloc_family = &je_family,
};

static const struct alloy_plugin_allocator je_allocators[] = {
	{ &je_ops, &je },
};

static const struct alloy_plugin_descriptor je_descriptor = {
	.abi_major = ALLOY_ABI_MAJOR,
	.abi_minor = ALLOY_ABI_MINOR,
	.struct_size = sizeof(struct alloy_plugin_descriptor),
	.name = "jemalloc",
	.description =
		"jemalloc through its own malloc/free or mallocx/sdallocx, optionally in its own arena",
	.allocators = je_allocators,
	.nallocators = 1,
};

/*
 * jemalloc's own functions are found here, before the allocator is
 * registered: the registry hands its malloc family to the front then.
 */
const struct alloy_plugin_descriptor *alloy_module_entry(void)
{
	find_own_malloc();
	return &je_descriptor;
}
