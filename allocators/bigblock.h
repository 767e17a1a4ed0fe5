/* SPDX-License-Identifier: MIT */
/*
 * allocators/bigblock.h - the default allocator's large blocks: anonymous
 * mappings of their own, with a bounded cache of freed ones.
 *
 * Every block carries a two-word header just below the pointer handed out:
 * ptr[-2] is the length of the mapping and ptr[-1] its offset from the
 * mapping's start.  Which blocks are big is the caller's to know (from
 * the size and alignment: allocators/default.c).
 */
#ifndef ALLOY_ALLOCATORS_BIGBLOCK_H
#define ALLOY_ALLOCATORS_BIGBLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel/base.h"

/* Cached bytes kept at most, unless "default.cache" says otherwise. */
#define ALLOY__BIGBLOCK_CACHE_DEFAULT ((size_t)64 << 20)

/*
 * A block of size bytes aligned to align (a power of two), reading as
 * zeroes if zero is set; NULL when the system refuses or size overflows.
 */
ALLOY_HIDDEN void *alloy__bigblock_alloc(size_t size, size_t align, bool zero);
/*
 * Resize ptr (made at align) to size bytes where its mapping allows:
 * within the mapping, or grown by mremap when align is at most a page.
 * True with *out set (NULL: the system refused; ptr is unchanged), false
 * when the caller must move the block itself.
 */
ALLOY_HIDDEN bool alloy__bigblock_resize(void *ptr, size_t size, size_t align,
					 void **out);
/* Give ptr back: into the cache if it fits, to the system otherwise. */
ALLOY_HIDDEN void alloy__bigblock_free(void *ptr);
/* Bytes usable at ptr. */
ALLOY_HIDDEN size_t alloy__bigblock_usable(const void *ptr);
/* Unmap every cached mapping; returns the bytes given back. */
ALLOY_HIDDEN size_t alloy__bigblock_trim(void);
/* Bytes held in the cache now. */
ALLOY_HIDDEN size_t alloy__bigblock_cached(void);
/* Keep at most limit bytes cached (0: cache nothing); trims the excess. */
ALLOY_HIDDEN void alloy__bigblock_set_limit(size_t limit);

#endif /* ALLOY_ALLOCATORS_BIGBLOCK_H */
