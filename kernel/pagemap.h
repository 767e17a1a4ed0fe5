/* SPDX-License-Identifier: MIT */
/*
 * kernel/pagemap.h - which malloc family mapped each page of the address
 * space: one byte per 4 KiB page, in a three-level table indexed by the
 * address (as the page maps of tcmalloc and jemalloc's rtree are), so
 * that a free finds the family of its block in three loads.  The root is
 * small and static; the middle tables and the leaves are mapped on first
 * use, so a process whose families map nothing pays nothing, not even
 * address space (which counts under RLIMIT_AS).
 *
 * 0 is "no family mapped it": the C library's own malloc, or nobody's.
 * A byte is written when a family's object maps memory and cleared when
 * anyone unmaps it (kernel/front.c, preload/mmap.c).  Readers take no
 * lock: a block is freed only after it was made, and it was made only
 * after its family's mapping returned, so its page's byte is seen.
 */
#ifndef ALLOY_KERNEL_PAGEMAP_H
#define ALLOY_KERNEL_PAGEMAP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel/base.h"

#define ALLOY__PAGE_SHIFT 12
/* User addresses of x86-64 and arm64 with 4-level tables: 47 bits. */
#define ALLOY__ADDR_BITS 47
/* Page numbers split 12 + 11 + 12: a leaf is a page covering 16 MiB. */
#define ALLOY__LEAF_BITS 12
#define ALLOY__MID_BITS	 11
#define ALLOY__ROOT_BITS                                          \
	(ALLOY__ADDR_BITS - ALLOY__PAGE_SHIFT - ALLOY__MID_BITS - \
	 ALLOY__LEAF_BITS)
#define ALLOY__LEAF_SIZE ((size_t)1 << ALLOY__LEAF_BITS)
#define ALLOY__MID_SIZE	 ((size_t)1 << ALLOY__MID_BITS)
#define ALLOY__ROOT_SIZE ((size_t)1 << ALLOY__ROOT_BITS)

struct alloy__pagemap_mid {
	_Atomic(uint8_t *) leaf[ALLOY__MID_SIZE];
};

extern ALLOY_HIDDEN _Atomic(struct alloy__pagemap_mid *)
	alloy__pagemap_root[ALLOY__ROOT_SIZE];

/* The family byte of the page holding p; 0 for any address never set. */
static inline unsigned alloy__pagemap_get(const void *p)
{
	uintptr_t page = (uintptr_t)p >> ALLOY__PAGE_SHIFT;
	uintptr_t r = page >> (ALLOY__MID_BITS + ALLOY__LEAF_BITS);
	struct alloy__pagemap_mid *mid;
	uint8_t *leaf;

	if (unlikely(r >= ALLOY__ROOT_SIZE))
		return 0;
	mid = atomic_load_explicit(&alloy__pagemap_root[r],
				   memory_order_relaxed);
	if (!mid)
		return 0;
	leaf = atomic_load_explicit(
		&mid->leaf[(page >> ALLOY__LEAF_BITS) & (ALLOY__MID_SIZE - 1)],
		memory_order_relaxed);
	if (!leaf)
		return 0;
	return leaf[page & (ALLOY__LEAF_SIZE - 1)];
}

/*
 * Give every page of [start, start + len) the byte tag.  Setting a
 * non-zero tag makes the tables it needs (0, or -ENOMEM when one could
 * not be mapped: the rest of the range then stays as it was); clearing
 * (tag 0) never makes one.
 */
ALLOY_HIDDEN int alloy__pagemap_set(uintptr_t start, size_t len, unsigned tag);

/* Whether any page was ever given a non-zero tag. */
ALLOY_HIDDEN bool alloy__pagemap_used(void);

#endif /* ALLOY_KERNEL_PAGEMAP_H */
