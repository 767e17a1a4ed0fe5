// SPDX-License-Identifier: MIT
/*
 * preload/malloc.c - the malloc family of an unmodified program, served
 * by alloy's plain-pointer API (alloy/plain.h).
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
	void *p;

	if (align > ALLOY_ALIGN_MAX)
		return too_aligned();
	if (!alloy__front_serves())
		return alloy__boot_alloc(size, align, false);
	alloy__front_depth++;
	p = alloy_aligned_alloc(align < MIN_ALIGN ? MIN_ALIGN : align, size);
	alloy__front_depth--;
	return p;
}

INTERPOSE void *malloc(size_t size)
{
	void *p;

	if (front_unlikely(!alloy__front_serves()))
		return alloy__boot_alloc(size, MIN_ALIGN, false);
	alloy__front_depth++;
	p = alloy_malloc(size);
	alloy__front_depth--;
	return p;
}

/*
 * This thread's errno, found once: free keeps it across every call, and
 * __errno_location is a call and a return of its own on each (the
 * address is the thread's for its life, and a fork child's thread has
 * its parent's).
 */
static __thread int *thread_errno __attribute__((tls_model("initial-exec")));

static inline int *errno_of_thread(void)
{
	int *e = thread_errno;

	if (front_unlikely(!e))
		e = thread_errno = &errno;
	return e;
}

INTERPOSE void free(void *ptr)
{
	int saved, *err;

	if (!ptr)
		return;
	if (alloy__boot_is_block(ptr)) {
		alloy__boot_free(ptr);
		return;
	}
	if (front_unlikely(alloy__front_strict) && !alloy_plain_owns(ptr)) {
		alloy__front_bad_pointer("free", ptr);
		return;
	}
	/* free keeps errno (glibc since 2.33; POSIX); a backend may not. */
	err = errno_of_thread();
	saved = *err;
	alloy__front_depth++;
	alloy_free(ptr);
	alloy__front_depth--;
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
	void *p;

	if (__builtin_mul_overflow(nmemb, size, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	if (front_unlikely(!alloy__front_serves()))
		return alloy__boot_alloc(n, MIN_ALIGN, true);
	alloy__front_depth++;
	p = alloy_calloc(nmemb, size);
	alloy__front_depth--;
	return p;
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
 * An alloy block resized from inside alloy (the loader growing a table
 * while alloy loads a module): the new block comes from the bootstrap
 * allocator, as every allocation made there does.
 */
static void *realloc_inside(void *ptr, size_t size)
{
	size_t old = alloy_usable_size(ptr);
	void *n = NULL;

	if (size) {
		n = alloy__boot_alloc(size, MIN_ALIGN, false);
		if (!n)
			return NULL;
		memcpy(n, ptr, old < size ? old : size);
	}
	alloy_free(ptr);
	return n;
}

INTERPOSE void *realloc(void *ptr, size_t size)
{
	void *p;

	if (!ptr)
		return malloc(size);
	if (alloy__boot_is_block(ptr))
		return realloc_boot(ptr, size);
	if (front_unlikely(alloy__front_strict) && !alloy_plain_owns(ptr)) {
		alloy__front_bad_pointer("realloc", ptr);
		errno = EINVAL;
		return NULL;
	}
	if (front_unlikely(!alloy__front_serves()))
		return realloc_inside(ptr, size);
	alloy__front_depth++;
	p = alloy_realloc(ptr, size);
	alloy__front_depth--;
	return p;
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
	size_t n;

	if (!ptr)
		return 0;
	if (alloy__boot_is_block(ptr))
		return alloy__boot_usable(ptr);
	alloy__front_depth++;
	n = alloy_usable_size(ptr);
	alloy__front_depth--;
	return n;
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
	alloy__front_depth++;
	alloy_foreach_allocator(trim_cpu_allocator, &released);
	alloy__front_depth--;
	return released;
}
