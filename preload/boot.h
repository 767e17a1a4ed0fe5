/* SPDX-License-Identifier: MIT */
/*
 * preload/boot.h - the front's bootstrap allocator: memory for the calls
 * that alloy must not serve.
 *
 * Those are the calls made before alloy is ready (constructors of other
 * libraries, the dynamic loader), while it initialises (dlopen of a
 * module, ALLOY_CONF's parsing) and from inside alloy itself (a backend or
 * the debug wrapper calling malloc).  Its blocks live in one reserved
 * address range, so any entry point tells them apart from alloy's by
 * address alone, whenever they come back.
 */
#ifndef ALLOY_PRELOAD_BOOT_H
#define ALLOY_PRELOAD_BOOT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FRONT_HIDDEN __attribute__((visibility("hidden")))

/*
 * The reserved range: [alloy__boot_lo, alloy__boot_end).  Until it is
 * reserved lo is above every address, so nothing is in it; end is
 * published before lo, so a reader that sees the range's lo sees its
 * end.
 */
extern FRONT_HIDDEN _Atomic uintptr_t alloy__boot_lo, alloy__boot_end;

/*
 * Whether p lies in the bootstrap allocator's range.  Two compares with
 * memory, and the first is usually enough: the range is mapped at the
 * front's start, above the program's heap and the mappings made after it
 * (the kernel hands out mappings from the top down).
 */
static inline bool alloy__boot_owns(const void *p)
{
	return (uintptr_t)p >= atomic_load_explicit(&alloy__boot_lo,
						    memory_order_acquire) &&
	       (uintptr_t)p < atomic_load_explicit(&alloy__boot_end,
						   memory_order_relaxed);
}

/*
 * Whether p is a live block of the bootstrap allocator: in its range and
 * with its header (alloy__boot_live checks the header of a p in range).  An
 * allocator that itself calls malloc from inside alloy is served from the
 * range, so alloy's blocks can lie in it too.
 */
FRONT_HIDDEN bool alloy__boot_live(const void *p);

static inline bool alloy__boot_is_block(const void *p)
{
	return __builtin_expect(alloy__boot_owns(p), 0) && alloy__boot_live(p);
}

/*
 * size bytes aligned to align (a power of two from 16 to 2 MiB), zeroed when
 * zero is set; NULL with errno ENOMEM when the range is spent.
 */
FRONT_HIDDEN void *alloy__boot_alloc(size_t size, size_t align, bool zero);
FRONT_HIDDEN void alloy__boot_free(void *p);
/* Bytes usable at p, a bootstrap block. */
FRONT_HIDDEN size_t alloy__boot_usable(const void *p);
/* realloc within the bootstrap range (size > 0). */
FRONT_HIDDEN void *alloy__boot_realloc(void *p, size_t size);

/* Blocks handed out now and bytes of the range in use (for tests). */
FRONT_HIDDEN void alloy__boot_usage(size_t *blocks, size_t *bytes);

/* fork(): the lock is held across it (preload/init.c registers these). */
FRONT_HIDDEN void alloy__boot_fork_prepare(void);
FRONT_HIDDEN void alloy__boot_fork_parent(void);
FRONT_HIDDEN void alloy__boot_fork_child(void);

#endif /* ALLOY_PRELOAD_BOOT_H */
