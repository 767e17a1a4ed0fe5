// SPDX-License-Identifier: MIT
/*
 * allocators/bigblock.c - large blocks of the default allocator: one
 * anonymous mapping each, and a bounded cache of freed mappings.
 *
 * Why not glibc: for blocks from 128 KiB up glibc either maps and unmaps
 * every block (until its dynamic threshold moves), or carves them from the
 * heap's top and gives the top back with brk whenever it grows past the
 * trim threshold.  Which one happens depends on the order of earlier
 * frees, and a loop that creates and frees arrays of a megabyte or so can
 * land on the wrong side: thousands of brk calls, and fresh zeroed pages
 * to fault in at every step.  Tuning glibc (mallopt) would change the
 * process's malloc for everyone; keeping the freed mappings here changes
 * nothing outside alloy.
 *
 * A freed block's mapping goes into the cache while the cache holds fewer
 * than CACHE_SLOTS mappings and at most the limit in bytes (64 MiB unless
 * "default.cache" says otherwise; glibc's own dynamic trim threshold goes
 * up to the same); otherwise it is unmapped.  An allocation takes the
 * smallest cached mapping that is large enough, or grows the largest
 * smaller one with mremap, which keeps its pages, or maps a new one.  Only
 * the part of a reused mapping that held data is cleared for a zeroed
 * block: the rest is fresh from the kernel.  A block grows within its
 * mapping, else by mremap (the kernel moves the pages, never the bytes).
 *
 * A mapping keeps up to SLACK times what its block needs; only beyond
 * that is the tail unmapped, when the mapping is taken from the cache or
 * the block shrinks.  The slack is for the buffer that grows by realloc
 * round after round (a program's output string, a growing array): the
 * mapping it had when it was freed comes back whole to its next first
 * step, and the growth to come stays inside pages already faulted in,
 * with no mremap at all.  Trimming to the first step instead gave the
 * pages back only to fault them in again a step later (thousands of
 * faults a second in a JSON round trip under alloy run).  The slack was
 * resident in the cache already: taking it whole adds nothing to RSS.
 *
 * The cost is RSS: up to the limit stays resident after the blocks are
 * freed, until alloy_allocator_trim() or exit, and a block may hold up to
 * SLACK times its size while it lives.
 *
 * The cache's lock is only ever tried, a bounded number of times: a thread
 * that cannot have it maps or unmaps by itself instead of waiting, so a
 * child forked while another thread held it still works (uncached).
 */
#include <sched.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "allocators/bigblock.h"

#define CACHE_SLOTS 32
/* A mapping may be this many times its block's need (see above). */
#define SLACK 8
/* The header below the pointer handed out: length, offset. */
#define HEADER (2 * sizeof(uintptr_t))

struct mapping {
	char *base;
	size_t len;
};

static struct {
	atomic_flag lock;
	int n;
	struct mapping slot[CACHE_SLOTS];
} cache = { .lock = ATOMIC_FLAG_INIT };

static atomic_size_t cache_bytes;
static atomic_size_t cache_limit = ALLOY__BIGBLOCK_CACHE_DEFAULT;

static size_t page_size(void)
{
	static atomic_size_t page;
	size_t p = atomic_load_explicit(&page, memory_order_relaxed);

	if (unlikely(!p)) {
		long v = sysconf(_SC_PAGESIZE);

		p = v > 0 ? (size_t)v : 4096;
		atomic_store_explicit(&page, p, memory_order_relaxed);
	}
	return p;
}

/* Try for the lock at most tries times; false: do without the cache. */
static bool cache_lock(int tries)
{
	for (int i = 0; i < tries; i++) {
		if (!atomic_flag_test_and_set_explicit(&cache.lock,
						       memory_order_acquire))
			return true;
		if (i >= 64)
			sched_yield();
#if defined(__x86_64__) || defined(__i386__)
		else
			__builtin_ia32_pause();
#endif
	}
	return false;
}

static void cache_unlock(void)
{
	atomic_flag_clear_explicit(&cache.lock, memory_order_release);
}

static struct mapping cache_remove(int i)
{
	struct mapping m = cache.slot[i];

	cache.slot[i] = cache.slot[--cache.n];
	atomic_store_explicit(
		&cache_bytes,
		atomic_load_explicit(&cache_bytes, memory_order_relaxed) -
			m.len,
		memory_order_relaxed);
	return m;
}

/*
 * The smallest cached mapping of at least need bytes, else the largest
 * one; { NULL, 0 } when the cache is empty or busy.
 */
static struct mapping cache_take(size_t need)
{
	struct mapping none = { NULL, 0 };
	int fit = -1, largest = -1;

	if (!atomic_load_explicit(&cache_bytes, memory_order_relaxed) ||
	    !cache_lock(100))
		return none;
	for (int i = 0; i < cache.n; i++) {
		size_t len = cache.slot[i].len;

		if (len >= need && (fit < 0 || len < cache.slot[fit].len))
			fit = i;
		if (largest < 0 || len > cache.slot[largest].len)
			largest = i;
	}
	if (fit >= 0)
		none = cache_remove(fit);
	else if (largest >= 0)
		none = cache_remove(largest);
	cache_unlock();
	return none;
}

static bool cache_put(struct mapping m)
{
	size_t limit = atomic_load_explicit(&cache_limit, memory_order_relaxed);
	size_t bytes;
	bool kept = false;

	if (m.len > limit || !cache_lock(100))
		return false;
	bytes = atomic_load_explicit(&cache_bytes, memory_order_relaxed);
	if (cache.n < CACHE_SLOTS && bytes <= limit && m.len <= limit - bytes) {
		cache.slot[cache.n++] = m;
		atomic_store_explicit(&cache_bytes, bytes + m.len,
				      memory_order_relaxed);
		kept = true;
	}
	cache_unlock();
	return kept;
}

/* Whether a mapping of len bytes is beyond the slack for need bytes. */
static inline bool far_too_large(size_t len, size_t need)
{
	return len / SLACK > need;
}

/*
 * A mapping of need bytes: a cached one fitted to size, or a new one.
 * *dirty is how many bytes at its start may hold old data.
 */
static struct mapping map_block(size_t need, size_t *dirty)
{
	struct mapping m = cache_take(need);

	*dirty = 0;
	if (m.base && m.len >= need) {
		/* Keep what the block needs, and the slack, not more. */
		if (far_too_large(m.len, need) &&
		    !munmap(m.base + need, m.len - need))
			m.len = need;
		*dirty = m.len;
		return m;
	}
	if (m.base) {
		/* Too small: grow it, keeping the pages it has. */
		void *n = mremap(m.base, m.len, need, MREMAP_MAYMOVE);

		if (n != MAP_FAILED) {
			*dirty = m.len;
			return (struct mapping){ n, need };
		}
		munmap(m.base, m.len);
	}
	m.base = mmap(NULL, need, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m.base == MAP_FAILED)
		return (struct mapping){ NULL, 0 };
	m.len = need;
	return m;
}

void *alloy__bigblock_alloc(size_t size, size_t align, bool zero)
{
	size_t page = page_size();
	/* The header fits below the block at any alignment of 16 or more. */
	size_t room = align > HEADER ? align : HEADER;
	struct mapping m;
	size_t dirty, off;
	char *ptr;

	if (size > SIZE_MAX - room - page)
		return NULL;
	m = map_block((size + room + page - 1) & ~(page - 1), &dirty);
	if (!m.base)
		return NULL;
	ptr = (char *)(((uintptr_t)m.base + HEADER + align - 1) &
		       ~(uintptr_t)(align - 1));
	off = (size_t)(ptr - m.base);
	((uintptr_t *)ptr)[-2] = m.len;
	((uintptr_t *)ptr)[-1] = off;
	if (zero && dirty > off)
		memset(ptr, 0, size < dirty - off ? size : dirty - off);
	return ptr;
}

void alloy__bigblock_free(void *ptr)
{
	uintptr_t off = ((uintptr_t *)ptr)[-1];
	struct mapping m = { (char *)ptr - off, ((uintptr_t *)ptr)[-2] };

	if (!cache_put(m))
		munmap(m.base, m.len);
}

bool alloy__bigblock_resize(void *ptr, size_t size, size_t align, void **out)
{
	size_t page = page_size();
	uintptr_t off = ((uintptr_t *)ptr)[-1];
	size_t len = ((uintptr_t *)ptr)[-2], need;
	char *base = (char *)ptr - off, *n;

	*out = NULL;
	if (size > SIZE_MAX - off - page)
		return true;
	need = (off + size + page - 1) & ~(page - 1);
	if (need <= len) {
		/* Beyond the slack now: drop the tail, as map_block does. */
		if (far_too_large(len, need) &&
		    !munmap(base + need, len - need))
			((uintptr_t *)ptr)[-2] = need;
		*out = ptr;
		return true;
	}
	/* mremap keeps page alignment only: larger ones move by copying. */
	if (align > page)
		return false;
	n = mremap(base, len, need, MREMAP_MAYMOVE);
	if (n == MAP_FAILED)
		return true;
	*out = n + off;
	((uintptr_t *)*out)[-2] = need;
	return true;
}

size_t alloy__bigblock_usable(const void *ptr)
{
	uintptr_t off = ((const uintptr_t *)ptr)[-1];

	return ((const uintptr_t *)ptr)[-2] - off;
}

/* Unmap cached mappings until at most keep bytes are cached. */
static size_t cache_shrink(size_t keep)
{
	struct mapping out[CACHE_SLOTS];
	size_t freed = 0;
	int n = 0;

	/* Patient, but never forever: a forked child may find it held. */
	if (!cache_lock(10000))
		return 0;
	while (cache.n &&
	       atomic_load_explicit(&cache_bytes, memory_order_relaxed) > keep)
		out[n++] = cache_remove(cache.n - 1);
	cache_unlock();
	for (int i = 0; i < n; i++) {
		munmap(out[i].base, out[i].len);
		freed += out[i].len;
	}
	return freed;
}

size_t alloy__bigblock_trim(void)
{
	return cache_shrink(0);
}

size_t alloy__bigblock_cached(void)
{
	return atomic_load_explicit(&cache_bytes, memory_order_relaxed);
}

void alloy__bigblock_set_limit(size_t limit)
{
	atomic_store_explicit(&cache_limit, limit, memory_order_relaxed);
	cache_shrink(limit);
}
