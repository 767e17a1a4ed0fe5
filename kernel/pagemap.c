// SPDX-License-Identifier: MIT
/*
 * kernel/pagemap.c - the page map's writers (kernel/pagemap.h).
 *
 * Tables are mapped with the system call itself, not mmap(): under
 * liballoy_preload mmap is the front's, which writes this map.  A table,
 * once made, stays for the process's life: a reader may hold its address
 * at any moment, and address space that one family mapped tends to be
 * mapped again.
 */
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pagemap.h"

_Atomic(struct alloy__pagemap_mid *) alloy__pagemap_root[ALLOY__ROOT_SIZE];
static atomic_bool used;

/*
 * The table *slot points to, made if it is missing and make is set.  Two
 * threads may make one: the first stays, the other's goes.
 */
static void *table_at(void *_Atomic *slot, size_t bytes, bool make)
{
	void *t = atomic_load_explicit(slot, memory_order_acquire), *seen;
	long r;

	if (t || !make)
		return t;
	r = syscall(SYS_mmap, NULL, bytes, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r == -1)
		return NULL;
	t = (void *)r;
	seen = NULL;
	if (atomic_compare_exchange_strong(slot, &seen, t))
		return t;
	syscall(SYS_munmap, t, bytes);
	return seen;
}

/* The leaf of page, made (with its middle table) if make is set. */
static uint8_t *leaf_of(uintptr_t page, bool make)
{
	uintptr_t r = page >> (ALLOY__MID_BITS + ALLOY__LEAF_BITS);
	struct alloy__pagemap_mid *mid;

	mid = table_at((void *_Atomic *)&alloy__pagemap_root[r], sizeof(*mid),
		       make);
	if (!mid)
		return NULL;
	return table_at((void *_Atomic *)&mid->leaf[(page >> ALLOY__LEAF_BITS) &
						    (ALLOY__MID_SIZE - 1)],
			ALLOY__LEAF_SIZE, make);
}

int alloy__pagemap_set(uintptr_t start, size_t len, unsigned tag)
{
	uintptr_t end;

	if (!len)
		return 0;
	if (__builtin_add_overflow(start, len - 1, &end))
		end = UINTPTR_MAX;
	end >>= ALLOY__PAGE_SHIFT;
	if (tag)
		atomic_store_explicit(&used, true, memory_order_relaxed);
	/* Leaf by leaf: the first and the last may be partial. */
	for (uintptr_t page = start >> ALLOY__PAGE_SHIFT; page <= end;) {
		size_t from = page & (ALLOY__LEAF_SIZE - 1);
		size_t n = ALLOY__LEAF_SIZE - from;
		uint8_t *leaf;

		if (page >> (ALLOY__MID_BITS + ALLOY__LEAF_BITS) >=
		    ALLOY__ROOT_SIZE)
			break;
		if (n > end - page + 1)
			n = end - page + 1;
		leaf = leaf_of(page, tag != 0);
		if (!leaf && tag)
			return -ENOMEM;
		if (leaf)
			memset(leaf + from, (int)tag, n);
		page += n;
	}
	return 0;
}

bool alloy__pagemap_used(void)
{
	return atomic_load_explicit(&used, memory_order_relaxed);
}
