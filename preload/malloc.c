// SPDX-License-Identifier: MIT
/*
 * preload/malloc.c - the malloc family of an unmodified program, served
 * by the front's engine (kernel/front.h): the CPU default's own malloc
 * family, one call away.
 *
 * These definitions interpose on glibc's by ELF symbol lookup: the
 * library comes first in LD_PRELOAD, so every object of the process,
 * glibc and the dynamic loader included, calls them.  glibc's own
 * __libc_malloc and friends are left alone: the default allocator takes
 * its memory through them.
 *
 * Each entry point follows glibc 2.36's contract (errno, size 0,
 * alignment rules, overflow), with one deliberate exception documented in
 * docs/PRELOAD.md: aligned_alloc refuses an alignment that is not a power
 * of two (EINVAL), as glibc does from 2.38 on.  Blocks of the bootstrap
 * allocator are told apart by address and handled wherever they arrive.
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <alloy/plain.h>
#include <alloy/registry.h>

#include "preload/front.h"

#define MIN_ALIGN ALLOY_PLAIN_ALIGN

/* Both refuse what glibc refuses: see the alignment helpers below. */
#define SIZE_HALF (((size_t)-1 >> 1) + 1)

#define INTERPOSE __attribute__((visibility("default")))

/*
 * A valid alignment larger than alloy serves cannot be had: glibc says
 * ENOMEM for it (it tries and fails), so the front does too.
 */
static void *too_aligned(void)
{
	errno = ENOMEM;
	return NULL;
}

static void *alloc_aligned(size_t align, size_t size)
{
	if (align > ALLOY_ALIGN_MAX)
		return too_aligned();
	if (!alloy__front_serves())
		return alloy__boot_alloc(size, align, false);
	return alloy__front_memalign(align < MIN_ALIGN ? MIN_ALIGN : align,
				     size);
}

/* Everything but a thread's ordinary call at depth 0. */
static __attribute__((noinline)) void *malloc_slow(size_t size)
{
	if (!alloy__front_serves())
		return alloy__boot_alloc(size, MIN_ALIGN, false);
	return alloy__front_malloc(size);
}

/*
 * The fast path (kernel/front.h): the thread's word, the default's own
 * malloc, and a count in the thread's record.  The counter's address is
 * taken before the call, so that one register carries it across.
 */
INTERPOSE void *malloc(size_t size)
{
	struct alloy__tls *t = alloy__front_fast;
	const struct alloy__front_binding *b;
	_Atomic int64_t *allocs;
	void *p;

	if (front_unlikely(alloy__slow_now(t)))
		return malloc_slow(size);
	b = atomic_load_explicit(&alloy__front_state.bound,
				 memory_order_acquire);
	allocs = alloy__front_counter(t, b, ALLOY__C_ALLOCS);
	p = b->malloc(size);
	if (front_unlikely(!p))
		return alloy__front_failed();
	alloy__count_add(allocs, 1);
	return p;
}

/* NULL, and the blocks in the bootstrap allocator's range. */
static __attribute__((noinline)) void free_rare(void *ptr)
{
	if (!ptr)
		return;
	if (alloy__boot_live(ptr)) {
		alloy__boot_free(ptr);
		return;
	}
	/* alloy's own block in the range (preload/boot.h) */
	alloy__front_free(ptr);
}

/*
 * While one allocator has served, the fast path counts and calls its
 * free; the engine does the rest (a swap, a thread without a record or
 * inside alloy, the reporter on).  free keeps errno (glibc since 2.33;
 * POSIX): glibc's own free does, and around any other backend's the fast
 * path keeps it.
 */
INTERPOSE void free(void *ptr)
{
	struct alloy__tls *t;
	const struct alloy__front_binding *b;
	int *err, saved;

	if (front_unlikely(!ptr || alloy__boot_owns(ptr))) {
		free_rare(ptr);
		return;
	}
	t = alloy__front_fast;
	b = atomic_load_explicit(&alloy__front_state.sole,
				 memory_order_relaxed);
	if (front_unlikely(!b || alloy__slow_now(t))) {
		alloy__front_free(ptr);
		return;
	}
	alloy__count_add(alloy__front_counter(t, b, ALLOY__C_FREES), 1);
	if (front_likely(b->keeps_errno)) {
		b->free(ptr);
		return;
	}
	err = alloy__front_errno();
	saved = *err;
	b->free(ptr);
	*err = saved;
}

/* glibc keeps cfree for binaries linked against its old versions. */
void cfree(void *ptr);

INTERPOSE void cfree(void *ptr)
{
	free(ptr);
}

INTERPOSE void *calloc(size_t nmemb, size_t size)
{
	size_t n;

	if (__builtin_mul_overflow(nmemb, size, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	if (front_unlikely(!alloy__front_serves()))
		return alloy__boot_alloc(n, MIN_ALIGN, true);
	return alloy__front_calloc(nmemb, size);
}

/*
 * A bootstrap block grows into alloy's memory once alloy may serve.  All
 * of its usable bytes move, as glibc moves them.
 */
static void *realloc_boot(void *ptr, size_t size)
{
	size_t old = alloy__boot_usable(ptr);
	void *n;

	if (size == 0) {
		alloy__boot_free(ptr);
		return NULL;
	}
	if (!alloy__front_serves())
		return alloy__boot_realloc(ptr, size);
	n = malloc(size);
	if (!n)
		return NULL;
	memcpy(n, ptr, old < size ? old : size);
	alloy__boot_free(ptr);
	return n;
}

/*
 * A program's block resized from inside alloy (the loader growing a
 * table while alloy loads a module): the new block comes from the
 * bootstrap allocator, as every allocation made there does.
 */
static void *realloc_inside(void *ptr, size_t size)
{
	size_t old;
	void *n = NULL;

	if (!alloy__front_owns(ptr)) {
		alloy__front_bad_pointer("realloc", ptr);
		errno = EINVAL;
		return NULL;
	}
	old = alloy__front_usable_size(ptr);
	if (size) {
		n = alloy__boot_alloc(size, MIN_ALIGN, false);
		if (!n)
			return NULL;
		memcpy(n, ptr, old < size ? old : size);
	}
	alloy__front_free(ptr);
	return n;
}

INTERPOSE void *realloc(void *ptr, size_t size)
{
	if (!ptr)
		return malloc(size);
	if (alloy__boot_is_block(ptr))
		return realloc_boot(ptr, size);
	if (front_unlikely(!alloy__front_serves()))
		return realloc_inside(ptr, size);
	return alloy__front_realloc(ptr, size);
}

INTERPOSE void *reallocarray(void *ptr, size_t nmemb, size_t size)
{
	size_t n;

	if (__builtin_mul_overflow(nmemb, size, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(ptr, n);
}

INTERPOSE int posix_memalign(void **out, size_t align, size_t size)
{
	int saved = errno, err = 0;
	void *p;

	if (!align || (align & (align - 1)) || align % sizeof(void *))
		return EINVAL;
	p = alloc_aligned(align, size);
	if (!p)
		err = errno;
	else
		*out = p;
	errno = saved;
	return err;
}

/*
 * C11's aligned_alloc: a power of two or EINVAL (glibc 2.38's rule;
 * 2.36 rounds it up as memalign does).
 */
INTERPOSE void *aligned_alloc(size_t align, size_t size)
{
	if (!align || (align & (align - 1))) {
		errno = EINVAL;
		return NULL;
	}
	return alloc_aligned(align, size);
}

/*
 * memalign's old contract: up to 16 is malloc's alignment, more than half
 * the address space is EINVAL, and anything else is rounded up to the
 * next power of two.
 */
INTERPOSE void *memalign(size_t align, size_t size)
{
	if (align <= MIN_ALIGN)
		return malloc(size);
	if (align > SIZE_HALF) {
		errno = EINVAL;
		return NULL;
	}
	if (align & (align - 1))
		align = (size_t)1 << (64 - __builtin_clzl(align));
	return alloc_aligned(align, size);
}

INTERPOSE void *valloc(size_t size)
{
	return alloc_aligned((size_t)getpagesize(), size);
}

/* valloc with the size rounded up to whole pages. */
INTERPOSE void *pvalloc(size_t size)
{
	size_t page = (size_t)getpagesize(), n;

	if (__builtin_add_overflow(size, page - 1, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	return alloc_aligned(page, n & ~(page - 1));
}

INTERPOSE size_t malloc_usable_size(void *ptr)
{
	if (!ptr)
		return 0;
	if (alloy__boot_is_block(ptr))
		return alloy__boot_usable(ptr);
	return alloy__front_usable_size(ptr);
}

static int trim_cpu_allocator(struct alloy_allocator *a, void *arg)
{
	bool *released = arg;

	if (alloy_allocator_device_type(a) == ALLOY_DEVICE_CPU &&
	    alloy_allocator_trim(a) > 0)
		*released = true;
	return 0;
}

/*
 * glibc's malloc_trim gives the free memory of its heaps back to the
 * system.  Under alloy the memory is in the CPU allocators, so each of
 * them trims: its own caches and its backend's (default calls glibc's
 * malloc_trim, jemalloc purges its arenas, mimalloc collects).  1 when
 * any memory went back, 0 otherwise, as glibc answers.  pad, the slack
 * glibc leaves at the top of its main heap, means nothing to the other
 * backends; default trims glibc's heap in full.
 */
INTERPOSE int malloc_trim(size_t pad)
{
	bool released = false;

	(void)pad;
	/* alloy itself, or before it started: nothing of its. */
	if (!alloy__front_serves())
		return 0;
	alloy__front_enter();
	alloy_foreach_allocator(trim_cpu_allocator, &released);
	alloy__front_leave();
	return released;
}
