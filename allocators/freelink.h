/* SPDX-License-Identifier: MIT */
/*
 * allocators/freelink.h - the link that a cache's free list keeps in the
 * first word of each free block, hidden the way glibc hides its own
 * (since 2.32, "safe-linking").
 *
 * A program that writes to a block after freeing it (a stale pointer, a
 * use-after-free) overwrites that word.  Were it a plain pointer, a later
 * allocation would hand out whatever the program wrote there as a block:
 * a use-after-free made into a write to an address of its choosing, the
 * classic attack on a per-thread cache.  So the link is stored XORed with
 * the address of the word that holds it shifted right by 12 bits (random
 * under address-space randomisation: forging a link takes reading an
 * address first, not only writing through a stale pointer), and a link
 * is checked on the way out to decode to an address aligned as every
 * block of its list is: a value written blind decodes to a misaligned
 * one but 1 time in 16 (glibc's blocks) or 64 (the modules' caches).
 * glibc does this for the blocks it caches; alloy's caches keep blocks
 * before glibc or the backend sees them again, and without this they
 * would undo it.
 *
 * A list whose link fails the check ends there: the blocks after it are
 * dropped (never handed out, never given back: leaked), and the cache
 * says so once on stderr.
 *
 * Under valgrind the links are stored plain (the key is 0): memcheck
 * finds leaks by following pointers, and hidden links would make every
 * cached block behind the first of its list look lost at exit; nor would
 * hiding them catch anything there (a write into a block the cache holds
 * is no error to memcheck).  Each cache takes its key from freelink_key()
 * when it starts.
 */
#ifndef ALLOY_ALLOCATORS_FREELINK_H
#define ALLOY_ALLOCATORS_FREELINK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#ifdef HAVE_VALGRIND_VALGRIND_H
#include <valgrind/valgrind.h>
#endif

/* All ones, or 0 (links stored plain) under valgrind. */
static inline uintptr_t freelink_key(void)
{
#ifdef HAVE_VALGRIND_VALGRIND_H
	if (RUNNING_ON_VALGRIND)
		return 0;
#endif
	return UINTPTR_MAX;
}

/* Store next in the free block at block. */
static inline void freelink_set(void *block, void *next, uintptr_t key)
{
	*(uintptr_t *)block =
		(((uintptr_t)block >> 12) & key) ^ (uintptr_t)next;
}

/* The next block after the free block at block, as stored. */
static inline void *freelink_get(const void *block, uintptr_t key)
{
	return (void *)((((uintptr_t)block >> 12) & key) ^
			*(const uintptr_t *)block);
}

/* Whether next, read from a list of blocks aligned to align, is one. */
static inline bool freelink_ok(const void *next, size_t align)
{
	return !((uintptr_t)next & (align - 1));
}

/*
 * The free block p of a list of bytes-sized blocks held a link the cache
 * did not write: count it in *seen, and say the first on stderr.
 */
static inline void freelink_report(_Atomic unsigned long long *seen,
				   const char *cache, const void *p,
				   size_t bytes)
{
	if (atomic_fetch_add(seen, 1) == 0)
		fprintf(stderr,
			"alloy: %s: the free block at %p (%zu bytes) was written to after its free: the blocks cached after it are dropped, not handed out (later ones are counted, not shown)\n",
			cache, p, bytes);
}

#endif /* ALLOY_ALLOCATORS_FREELINK_H */
