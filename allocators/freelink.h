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
 * address first, not only writing through a stale pointer) and with a
 * secret drawn at start, and a link is checked on the way out to decode
 * to an address a block can have: below 2^57 (user space, five-level
 * paging included) and aligned as every block of its list is.
 *
 * The secret's top bits are set, so a value written blind decodes above
 * 2^57 unless its own top bits are all set: zero, small numbers,
 * pointers and text never pass, whatever the address layout.  (The
 * address alone does not do this: zero decodes to the address >> 12,
 * whose low bits a backend that aligns its large blocks keeps at zero,
 * and the alignment test then passes for most of them.)  A value with
 * its top bits set (-1, say) passes 1 time in 16 (the caches' blocks
 * are aligned to 16, as glibc's are), at random each run.  glibc does
 * the like for the blocks it caches; alloy's caches keep blocks before
 * glibc or the backend sees them again, and without this they would
 * undo it.
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
#include <sys/random.h>
#include <sys/types.h>
#include <time.h>

#include "config.h"
#ifdef HAVE_VALGRIND_VALGRIND_H
#include <valgrind/valgrind.h>
#endif

/* Addresses a decoded link may not reach: 2^57 and above. */
#define FREELINK_HIGH (~(((uintptr_t)1 << 57) - 1))

/* How a cache hides its links. */
struct freelink_key {
	uintptr_t mask; /* on the address: all ones, or 0 under valgrind */
	/* FREELINK_HIGH set, the rest random; 0 under valgrind. */
	uintptr_t secret;
};

/* A key for a cache starting now. */
static inline struct freelink_key freelink_key(void)
{
	struct freelink_key k = { UINTPTR_MAX, 0 };
	struct timespec now;

#ifdef HAVE_VALGRIND_VALGRIND_H
	if (RUNNING_ON_VALGRIND)
		return (struct freelink_key){ 0, 0 };
#endif
	if (getrandom(&k.secret, sizeof(k.secret), GRND_NONBLOCK) !=
	    (ssize_t)sizeof(k.secret)) {
		/* No entropy yet: the stack's place and the clock. */
		clock_gettime(CLOCK_MONOTONIC, &now);
		k.secret = (uintptr_t)&k * 0x9e3779b97f4a7c15u ^
			   (uintptr_t)now.tv_nsec << 20 ^ (uintptr_t)now.tv_sec;
	}
	k.secret |= FREELINK_HIGH;
	return k;
}

/* What the link in the free block at block is XORed with. */
static inline uintptr_t freelink_veil(const void *block,
				      const struct freelink_key *key)
{
	return (((uintptr_t)block >> 12) & key->mask) ^ key->secret;
}

/* Store next in the free block at block. */
static inline void freelink_set(void *block, void *next,
				const struct freelink_key *key)
{
	*(uintptr_t *)block = freelink_veil(block, key) ^ (uintptr_t)next;
}

/* The next block after the free block at block, as stored. */
static inline void *freelink_get(const void *block,
				 const struct freelink_key *key)
{
	return (void *)(freelink_veil(block, key) ^ *(const uintptr_t *)block);
}

/* Whether next, read from a list of blocks aligned to align, is one. */
static inline bool freelink_ok(const void *next, size_t align)
{
	return !((uintptr_t)next & ((align - 1) | FREELINK_HIGH));
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
