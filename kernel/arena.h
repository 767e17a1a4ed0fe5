/* SPDX-License-Identifier: MIT */
/*
 * kernel/arena.h - memory for alloy's own bookkeeping, from mmap, never from
 * the process's malloc.
 *
 * When alloy serves the process's malloc (the LD_PRELOAD front), anything
 * alloy itself took from malloc would come back into alloy, possibly
 * while it holds a lock.  So per-thread records, the reporter's tables and
 * buffers, stack tables and the like come from here.
 */
#ifndef ALLOY_KERNEL_ARENA_H
#define ALLOY_KERNEL_ARENA_H

#include <stddef.h>

#include "kernel/base.h"

/*
 * size bytes, zeroed, aligned to 16 (to the page above 64 KiB); NULL when
 * the kernel refuses memory.  Free with the same size.
 */
ALLOY_HIDDEN void *alloy__arena_alloc(size_t size);
ALLOY_HIDDEN void alloy__arena_free(void *p, size_t size);

/* Bytes the arena holds from the kernel, and bytes handed out now. */
ALLOY_HIDDEN void alloy__arena_usage(size_t *mapped, size_t *in_use);

/* fork(): take the arena's lock before, release it after (kernel/fork.c). */
ALLOY_HIDDEN void alloy__arena_lock(void);
ALLOY_HIDDEN void alloy__arena_unlock(void);

#endif /* ALLOY_KERNEL_ARENA_H */
