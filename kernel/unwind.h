/* SPDX-License-Identifier: MIT */
/*
 * kernel/unwind.h - the calling thread's call stack from the unwind
 * tables, with a per-thread cache of each return address's frame
 * (kernel/unwind.c has the design).  x86-64 only; elsewhere every
 * walk says "ask libunwind".
 */
#ifndef ALLOY_REPORTER_UNWIND_H
#define ALLOY_REPORTER_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

#include "kernel/base.h"

/* Slots of a cache: a power of two (64 KiB a thread at 16 bytes each). */
#define UNWIND_CACHE_SLOTS 4096

/* How to step over the frame of one code address (unwind.c). */
struct unwind_rule {
	uintptr_t key;	 /* the address looked up; 0: an empty slot */
	int32_t cfa_off; /* CFA = (rsp or rbp) + cfa_off */
	int16_t bp_off;	 /* rbp's caller value at CFA + bp_off, if saved */
	uint8_t flags;	 /* UNWIND_* of unwind.c */
	uint8_t unused;
};

/*
 * One thread's cache.  Zeroed memory is an empty cache; the caller keeps
 * it (the reporter: with the thread's record, kernel/count.c) and gives
 * it to every walk of that thread only.
 */
struct alloy__unwind_cache {
	unsigned long generation; /* of the loaded objects it was filled for */
	uintptr_t thread;	  /* pthread_self() of the stack top below */
	uintptr_t stack_top;	  /* outermost CFA seen on it; 0: unknown */
	unsigned long misses;	  /* rules read from the tables (tests) */
	struct unwind_rule slot[UNWIND_CACHE_SLOTS];
};

/*
 * The return addresses of the calling thread's stack into out, innermost
 * first, starting with an address inside this function; at most max.
 * Returns how many, or -1 when a frame needs what only libunwind does
 * (an expression for the CFA, a signal frame): the caller then asks
 * libunwind for the whole stack.  *leading_ours: how many of the first
 * frames are in alloy's own objects (liballoy*), which a site leaves out.
 * Calls no malloc; takes the loader's lock (dl_iterate_phdr) only for an
 * address not in the cache.
 */
ALLOY_HIDDEN int alloy__unwind(struct alloy__unwind_cache *c, uintptr_t *out,
			       int max, int *leading_ours);

/* Whether the object at path is alloy's own: liballoy*, any folder. */
ALLOY_HIDDEN bool alloy__unwind_is_ours(const char *path);

#endif /* ALLOY_REPORTER_UNWIND_H */
