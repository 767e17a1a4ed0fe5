/* SPDX-License-Identifier: MIT */
/*
 * kernel/front.h - the engine of liballoy_preload's malloc front: a
 * program's malloc family served by the CPU default's own malloc family
 * (struct alloy_malloc_family), with no header on the blocks and one
 * call between the program and the backend.
 *
 * How a free finds its allocator (docs/PRELOAD.md says it for users):
 *  - While only one allocator has served the front (no swap yet), every
 *    block not of the bootstrap allocator is that allocator's: free calls
 *    its free at once.
 *  - After a swap, by address: the page map (kernel/pagemap.h) gives the
 *    family that mapped the block's page, 0 being the C library's malloc.
 *  - A CPU default without a family (the debug wrapper, a plugin) serves
 *    through alloy's plain-pointer API (a 16-byte header); those blocks
 *    are kept in a set (kernel/ptrset.h) that a free looks in first.
 * Blocks are counted per allocator in the thread's record: allocations
 * and frees, exact; their bytes are the reporter's to know (each would
 * cost a usable-size lookup otherwise).
 *
 * An allocator that has served the front stays registered: its blocks
 * may be freed at any moment, through functions of its library.
 *
 * The functions with default visibility are liballoy_preload's way in;
 * the hidden ones are the registry's.
 */
#ifndef ALLOY_KERNEL_FRONT_H
#define ALLOY_KERNEL_FRONT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel/base.h"

struct alloy_allocator;

#define ALLOY__FRONT_API __attribute__((visibility("default")))

/*
 * Per thread, raised around every call into alloy's general code from the
 * front: a malloc with it raised is alloy's own, and the bootstrap
 * allocator serves it (preload/front.h).  A thread starts with
 * ALLOY__FRONT_FRESH set, cleared at its first call once the front is
 * ready, so that the entry points test one word for both.
 */
#define ALLOY__FRONT_FRESH (1u << 31)
extern ALLOY__FRONT_API __thread unsigned alloy__front_depth
	__attribute__((tls_model("initial-exec")));

/*
 * The depth is raised and lowered only through these two: they keep
 * alloy__front_fast true to it.
 */
ALLOY__FRONT_API void alloy__front_enter(void);
ALLOY__FRONT_API void alloy__front_leave(void);

/*
 * The entry points' fast path, inlined into malloc and free
 * (preload/malloc.c): one word per thread says whether the thread may
 * take it, and the binding says what to call.
 *
 * alloy__front_fast is the thread's record (kernel/count.h) while its
 * depth is 0 and it has one, else a record whose slow word is set; so a
 * single compare of the record's slow word covers the depth, a missing
 * record, the reporter's hooks and the fence, and anything else goes to
 * the engine's functions below.
 */
struct alloy__tls;
extern ALLOY__FRONT_API __thread struct alloy__tls *alloy__front_fast
	__attribute__((tls_model("initial-exec")));

struct alloy__front_binding {
	void *(*malloc)(size_t size);
	void (*free)(void *ptr);
	ptrdiff_t acct_offset; /* its allocator's counters in a record */
	bool keeps_errno;      /* its free leaves errno alone (glibc's) */
};

/*
 * What the entry points read: the CPU default's binding (what malloc
 * calls), and the binding of every block while one allocator has served
 * the front (NULL after a swap).  The preload library holds it, so that
 * its fast paths load it from their own data, and hands it to the engine
 * at start; only the engine writes it.
 */
struct alloy__front_state {
	_Atomic(const struct alloy__front_binding *) bound;
	_Atomic(const struct alloy__front_binding *) sole;
};

/* One of b's counters (ALLOY__C_*) in the record t. */
static inline _Atomic int64_t *
alloy__front_counter(struct alloy__tls *t, const struct alloy__front_binding *b,
		     int which)
{
	return (_Atomic int64_t *)((char *)t + b->acct_offset) + which;
}

/* A backend's allocation failed: errno ENOMEM, as the C library says. */
ALLOY__FRONT_API void *alloy__front_failed(void);

/*
 * Start serving: bind to the current CPU default, published in state
 * from now on.  bad is called for a pointer that free, realloc or
 * malloc_usable_size were given and no allocator made (func names the
 * entry point).
 */
ALLOY__FRONT_API void alloy__front_start(void (*bad)(const char *func,
						     const void *p),
					 struct alloy__front_state *state);

ALLOY__FRONT_API void *alloy__front_malloc(size_t size);
/* nmemb * size has been checked for overflow. */
ALLOY__FRONT_API void *alloy__front_calloc(size_t nmemb, size_t size);
/* align: a power of two, 16 to ALLOY_ALIGN_MAX. */
ALLOY__FRONT_API void *alloy__front_memalign(size_t align, size_t size);
/* ptr: not NULL, not a bootstrap block. */
ALLOY__FRONT_API void alloy__front_free(void *ptr);
ALLOY__FRONT_API void *alloy__front_realloc(void *ptr, size_t size);
ALLOY__FRONT_API size_t alloy__front_usable_size(void *ptr);
/* Whether ptr is a live block the front knows the allocator of. */
ALLOY__FRONT_API bool alloy__front_owns(const void *ptr);

/*
 * The process mapped [p, p + len), from code at caller; unmapped it;
 * moved it (mremap).  A family's mappings are marked as its in the page
 * map; anyone else's mapping or unmapping clears the marks there.
 */
ALLOY__FRONT_API void alloy__front_mapped(void *p, size_t len,
					  const void *caller);
ALLOY__FRONT_API void alloy__front_unmapped(void *p, size_t len);
ALLOY__FRONT_API void alloy__front_moved(void *old, size_t old_len, void *p,
					 size_t len);

/* The registry's: a allocator was registered (before its init runs). */
ALLOY_HIDDEN void alloy__front_add_family(struct alloy_allocator *a);
/* The registry's: a failed its init, or was unregistered. */
ALLOY_HIDDEN void alloy__front_drop_family(struct alloy_allocator *a);
/* The registry's, under its lock: a is the CPU default from now on. */
ALLOY_HIDDEN void alloy__front_default_changed(struct alloy_allocator *a);
/* Whether a has served the front, and so must stay registered. */
ALLOY_HIDDEN bool alloy__front_holds(const struct alloy_allocator *a);

#endif /* ALLOY_KERNEL_FRONT_H */
