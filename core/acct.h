/* SPDX-License-Identifier: MIT */
/*
 * core/acct.h - the pieces of the allocation fast path that the DataPtr
 * path (core/alloc.c) and the plain-pointer path (core/plain.c) share:
 * picking a device's default and counting a block on it.
 *
 * The protocol that keeps unregistering safe without a lock or a grace
 * section on this path (docs/ARCHITECTURE.md, "Why unregistering is
 * safe"): a block is counted on its allocator *before* the allocator's
 * code runs and uncounted only after it returned; the default is read and
 * the block counted inside a window that alloy__wait_windows() drains.
 * An unregister first makes sure the allocator is no default and marks it
 * dying, then drains the windows, then reads the live count: every thread
 * either counted its block on it (the count is seen: -EBUSY) or will read
 * another default.
 */
#ifndef ALLOY_CORE_ACCT_H
#define ALLOY_CORE_ACCT_H

#include "core/internal.h"

/* This thread's counters of allocator a (slots ALLOY__C_*). */
static inline _Atomic int64_t *alloy__acct(struct alloy__tls *t,
					   const struct alloy_allocator *a)
{
	return (_Atomic int64_t *)((char *)t + a->acct_offset);
}

/*
 * The default of device_type, with one allocation of size bytes counted
 * on it in this thread's counters: alloy__no_default (whose alloc op
 * fails) when the device has no default.  `fast`: alloy__slow_mask was
 * seen 0, so no fence is needed here.  Clears the thread's error mark
 * (the caller's allocator call comes next).
 */
static inline __attribute__((always_inline)) struct alloy_allocator *
alloy__pick_default(struct alloy__tls *t, size_t device_type, size_t size,
		    bool fast)
{
	struct alloy_allocator *a;
	_Atomic int64_t *c;

	if (fast)
		alloy__window_open_fast(t);
	else
		alloy__window_open(t);
	a = atomic_load_explicit(&alloy__defaults[device_type],
				 memory_order_acquire);
	c = alloy__acct(t, a);
	alloy__count_add(&c[ALLOY__C_ALLOCS], 1);
	alloy__count_add(&c[ALLOY__C_BYTES], (int64_t)size);
	alloy__window_close_clear_mark(t);
	return a;
}

/*
 * alloy__pick_default from any thread, one without a record too (a thread
 * whose record could not be made, or is gone at its exit): then the
 * shared window and the shared totals.  The slow paths' way in.  Clears
 * the thread's error mark too.
 */
ALLOY_HIDDEN struct alloy_allocator *alloy__pick_default_any(int device_type,
							    size_t size);

/* Take back an allocation of size bytes counted on a that did not happen. */
ALLOY_HIDDEN void alloy__uncount_alloc(struct alloy_allocator *a, size_t size);

/*
 * One allocation of size bytes from an allocator the caller named: count
 * it on a, then look at a's state.  An unregister marks the allocator
 * dying before it drains the windows and reads the counts, so either it
 * sees this block or this sees it dying; false (nothing left counted)
 * when it is.  `fast` as for alloy__pick_default.  Clears the thread's
 * error mark.
 */
static inline __attribute__((always_inline)) bool
alloy__count_on_live(struct alloy__tls *t, struct alloy_allocator *a,
		     size_t size, bool fast)
{
	_Atomic int64_t *c = alloy__acct(t, a);

	if (fast)
		alloy__window_open_fast(t);
	else
		alloy__window_open(t);
	alloy__count_add(&c[ALLOY__C_ALLOCS], 1);
	alloy__count_add(&c[ALLOY__C_BYTES], (int64_t)size);
	alloy__window_close_clear_mark(t);
	if (likely(alloy__state_live(&a->state)))
		return true;
	alloy__uncount_alloc(a, size);
	return false;
}

/* The free of a thread that has no record (yet, or any more). */
ALLOY_HIDDEN void alloy__count_free_slow(struct alloy_allocator *a,
					 size_t size);

/* alloy__free_and_count for a thread without a record: the op, then the count. */
ALLOY_HIDDEN void alloy__free_unrecorded(struct alloy_allocator *a,
					 void *block, size_t size,
					 size_t align, size_t counted);

/*
 * Give a's block back and count it freed (counted bytes), from any
 * thread: alloy__free_counted (alloy/allocator.h) where the thread has a
 * record, else alloy__free_unrecorded.
 */
static inline __attribute__((always_inline)) void
alloy__free_and_count(struct alloy_allocator *a, void *block, size_t size,
		      size_t align, size_t counted)
{
	struct alloy__tls *t = alloy__tls_self;

	if (likely(t))
		alloy__free_counted((const struct alloy__allocator_head *)a,
				    t, block, size, align, counted);
	else
		alloy__free_unrecorded(a, block, size, align, counted);
}

/* The hooks of the moment (the reporter), or NULL: set in core/alloc.c. */
ALLOY_HIDDEN extern _Atomic(const struct alloy__hooks *) alloy__hooks;

static inline const struct alloy__hooks *alloy__hooks_now(void)
{
	return atomic_load_explicit(&alloy__hooks, memory_order_acquire);
}

#endif /* ALLOY_CORE_ACCT_H */
