/* SPDX-License-Identifier: MIT */
/*
 * kernel/count.h - the thread record and counting: each thread's record
 * (counters, the allocation window, grace sections), the counters summed
 * over threads, and the accounting of blocks on their allocators.  The
 * out-of-line half is kernel/count.c, which owns all of it; the inline
 * pieces here are the allocation fast paths' (kernel/alloc.c,
 * kernel/plain.c), and stay inline where they are used.  Core's files,
 * allocators/ (the default allocator's per-thread cache hangs off the
 * record and counts there) and reporter/ (its counters, its sections)
 * include it.
 *
 * The protocol that keeps unregistering safe without a lock or a grace
 * section on the allocation path (docs/ARCHITECTURE.md, "Why
 * unregistering is safe"): a block is counted on its allocator *before*
 * the allocator's code runs and uncounted only after it returned; the
 * default is read and the block counted inside a window that
 * alloy__wait_windows() drains.  An unregister first makes sure the
 * allocator is no default and marks it dying, then drains the windows,
 * then reads the live count: every thread either counted its block on it
 * (the count is seen: -EBUSY) or will read another default.
 */
#ifndef ALLOY_KERNEL_COUNT_H
#define ALLOY_KERNEL_COUNT_H

#include "kernel/base.h"
#include "kernel/registry.h" /* the allocators blocks are counted on */

/* ---- per-thread records: counters, windows, sections ---------------- */

/*
 * Counters kept per thread and summed on read, so that the allocation
 * path never writes a cache line another thread writes.  A thread's
 * values are folded into the retired totals when it exits.
 */
#define ALLOY__TCOUNT_SLOTS 1024

/* Per-allocator counters: tcount slots base + ALLOY__C_* (alloy/inline.h). */

struct alloy__unwind_cache; /* kernel/unwind.h */

struct alloy__tls {
	union {
		struct {
			/*
			 * 1 while this thread reads a device's default and
			 * counts its block there (alloy__pick_default):
			 * alloy__wait_windows() waits for it.
			 */
			_Atomic int window;
			/*
			 * alloy__error_mark for a thread with a record
			 * (kernel/error.c).  Beside the window, so that the
			 * store that closes the window clears it too.
			 */
			unsigned error_mark;
		};
		_Atomic uint64_t window_and_mark;
	};
	/* This thread's copy of alloy__slow_mask (one compare to test). */
	_Atomic unsigned slow;
	unsigned depth;		  /* nesting of enter/leave */
	atomic_uint_fast64_t seq; /* odd while inside alloy__enter/leave */
	struct alloy__tls *next;
	struct alloy__tls *prev;
	void *owner; /* the owner labels of this thread (kernel/owner.c) */
	/*
	 * The default allocator's cache of this thread's free blocks
	 * (allocators/default_cache.c), or NULL; emptied through
	 * alloy__tls_cache_retire when the record is retired.
	 */
	void *cache;
	/*
	 * The cache of the thread's walks of the unwind tables
	 * (kernel/unwind.c), made at its first walk, and the reporter's
	 * recent stacks (reporter/stacks.c), made at its first call stack:
	 * both kept with the record, since what they hold is the process's,
	 * not the thread's.
	 */
	struct alloy__unwind_cache *walk;
	void *stacks;
	/*
	 * Where an allocation that found no default counts itself
	 * (alloy__no_default's counters): written, never read.
	 */
	_Atomic int64_t nowhere[ALLOY__C_COUNT];
	/* Written only by this thread (alloy__count_add), read by all. */
	_Atomic int64_t count[ALLOY__TCOUNT_SLOTS];
};

/* alloy__tls_self, the thread's record or NULL: alloy/inline.h. */
/*
 * The allocation fast paths' view of the same record: alloy__tls_self
 * where the thread has one, else (before its first allocation, after its
 * exit) a record that is never written, whose slow flag has
 * ALLOY__SLOW_NO_RECORD set.  The fast paths test one word for both
 * cases, and leave before they write anything.  Everything else reads
 * alloy__tls_self, NULL where there is no record.
 */
extern ALLOY_HIDDEN __thread struct alloy__tls *alloy__tls_fast
	__attribute__((tls_model("initial-exec")));
extern ALLOY_HIDDEN atomic_bool alloy__need_fence;
/* The record alloy__tls_fast names for a thread without one. */
extern ALLOY_HIDDEN const struct alloy__tls alloy__no_record;

/*
 * Set once by the allocator that keeps a per-thread cache (the default
 * one): called with a record's cache when the record is retired.  At its
 * thread's exit (give_back) the blocks go back to their allocator; in a
 * fork child, for the threads that are gone, they are only forgotten and
 * the record drops the cache: such a thread may have been halfway through
 * changing it at the fork.  Returns the bytes the cache held.
 * Core knows the hook, not the allocator (layers point downward).
 */
extern ALLOY_HIDDEN size_t (*alloy__tls_cache_retire)(void *cache,
						      bool give_back);

/*
 * What sends an allocation off the fast path, in one word so that the
 * fast path tests it once: the allocation side must fence for itself (no
 * membarrier), or the reporter's hooks are installed.  Both are rare.
 * NO_RECORD is set only in the record that alloy__tls_fast names for a
 * thread without one (kernel/count.c), never in the mask.
 */
enum {
	ALLOY__SLOW_FENCE = 1,
	ALLOY__SLOW_HOOKS = 2,
	ALLOY__SLOW_NO_RECORD = 4
};
extern ALLOY_HIDDEN _Atomic unsigned alloy__slow_mask;

/*
 * Set or clear bits of the slow mask; every thread's record gets the new
 * value too (a thread may act on the old one for a moment, as it may on
 * any relaxed read).
 */
ALLOY_HIDDEN void alloy__slow_mask_set(unsigned bits, bool on);

/*
 * Whether this thread's record says to leave the fast path.  On x86-64 a
 * compare with memory, which is the relaxed load the generic code does
 * and one instruction fewer on the hottest path.
 */
static inline bool alloy__slow_now(struct alloy__tls *t)
{
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__) && \
	!defined(__SANITIZE_THREAD__)
	bool slow;

	__asm__("cmpl $0, %1" : "=@ccne"(slow) : "m"(t->slow));
	return slow;
#else
	return atomic_load_explicit(&t->slow, memory_order_relaxed) != 0;
#endif
}

/*
 * This thread's record, made on first use.  NULL when there is no memory
 * for one, and for a thread whose record was already given back at its
 * exit (a destructor that runs later and frees memory): callers then use
 * the shared totals.
 */
ALLOY_HIDDEN struct alloy__tls *alloy__tls_create(void);

/*
 * The calling thread's call stack by alloy__unwind (kernel/unwind.h),
 * through its record's cache: -1 also where the thread has no record or
 * no memory for the cache, and the caller then asks another unwinder.
 */
ALLOY_HIDDEN int alloy__unwind_self(uintptr_t *out, int max, int *leading_ours);

static inline struct alloy__tls *alloy__tls_get(void)
{
	struct alloy__tls *t = alloy__tls_self;

	return likely(t) ? t : alloy__tls_create();
}

/* Add v to one of this thread's own counters (alloy/inline.h says how). */
static inline void alloy__count_add(_Atomic int64_t *c, int64_t v)
{
	alloy__counter_add((int64_t *)c, v);
}

/* Subtract v from one of this thread's own counters. */
static inline void alloy__count_sub(_Atomic int64_t *c, int64_t v)
{
	alloy__counter_sub((int64_t *)c, v);
}

/* Add to the retired totals directly (a thread without a record). */
ALLOY_HIDDEN void alloy__tcount_add_shared(int slot, int64_t delta);

/* Reserve n consecutive counter slots; returns the first, or -ENOSPC. */
ALLOY_HIDDEN int alloy__tcount_reserve(int n);

static inline void alloy__tcount_add(struct alloy__tls *t, int slot,
				     int64_t delta)
{
	if (unlikely(!t)) {
		alloy__tcount_add_shared(slot, delta);
		return;
	}
	alloy__count_add(&t->count[slot], delta);
}

/* The sum over all threads, living and exited. */
ALLOY_HIDDEN int64_t alloy__tcount_sum(int slot);
/* Zero a slot everywhere; only while nobody can be updating it. */
ALLOY_HIDDEN void alloy__tcount_zero(int slot);

/*
 * A thread without a record (see alloy__tls_get) opens its window on a
 * shared count instead; alloy__wait_windows() waits for that too.
 */
extern ALLOY_HIDDEN _Atomic int alloy__shared_windows;

/*
 * Windows: the allocation fast path marks the few instructions in which
 * it reads a device's default and counts a block there.  Once
 * alloy__wait_windows() returns, every thread either counted its block
 * (an unregister then sees it live) or will read the default anew.  The
 * fast side pays two plain stores: the waiting side issues membarrier(),
 * so the fast side needs no fence of its own where the kernel has it.
 */
static inline void alloy__window_open(struct alloy__tls *t)
{
	atomic_store_explicit(&t->window, 1, memory_order_relaxed);
	if (unlikely(atomic_load_explicit(&alloy__need_fence,
					  memory_order_relaxed)))
		atomic_thread_fence(memory_order_seq_cst);
	else
		atomic_signal_fence(memory_order_seq_cst);
}

/* The same where alloy__slow_mask was seen 0: membarrier is there. */
static inline void alloy__window_open_fast(struct alloy__tls *t)
{
	atomic_store_explicit(&t->window, 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
}

static inline void alloy__window_close(struct alloy__tls *t)
{
	/* Release: the count is seen before the window is seen closed. */
	atomic_store_explicit(&t->window, 0, memory_order_release);
}

/*
 * Close the window and clear the error mark, in one store where it can
 * be: the fast paths call the allocator next, and the mark then tells
 * whether the allocator explained a failure (kernel/alloc.c).
 */
static inline void alloy__window_close_clear_mark(struct alloy__tls *t)
{
#ifdef __SANITIZE_THREAD__
	t->error_mark = 0; /* TSan is given the two stores it knows */
	alloy__window_close(t);
#else
	atomic_store_explicit(&t->window_and_mark, 0, memory_order_release);
#endif
}

ALLOY_HIDDEN void alloy__wait_windows(void);

/*
 * Sections, for the paths that call the reporter's hooks and around
 * context ops (kernel/context.c): a thread inside enter/leave may be using
 * hooks or a context it looked up; alloy__synchronize() returns once
 * every thread that was inside such a section when it was called has
 * left it (a grace period, as in RCU).  One grace period covers all of
 * them, so alloy_unregister_context and turning the reporter off wait
 * for any context op running on any thread (a GPU synchronize, say): an
 * accepted trade-off against an atomic count per context, which every
 * op would then pay for.
 */
static inline void alloy__enter(struct alloy__tls *t)
{
	if (t->depth++ == 0) {
		uint_fast64_t s =
			atomic_load_explicit(&t->seq, memory_order_relaxed);

		atomic_store_explicit(&t->seq, s + 1, memory_order_relaxed);
		if (unlikely(atomic_load_explicit(&alloy__need_fence,
						  memory_order_relaxed)))
			atomic_thread_fence(memory_order_seq_cst);
		else
			atomic_signal_fence(memory_order_seq_cst);
	}
}

static inline void alloy__leave(struct alloy__tls *t)
{
	if (--t->depth == 0) {
		uint_fast64_t s =
			atomic_load_explicit(&t->seq, memory_order_relaxed);

		atomic_store_explicit(&t->seq, s + 1, memory_order_release);
	}
}

ALLOY_HIDDEN void alloy__synchronize(void);

/*
 * A section on the calling thread's record, for code outside the
 * allocation path: the record is what alloy__section_leave takes.  A
 * thread without one (NULL) holds the shared window instead, which
 * alloy__synchronize() also waits on, so that it too is covered.
 */
static inline struct alloy__tls *alloy__section_enter(void)
{
	struct alloy__tls *t = alloy__tls_get();

	if (t)
		alloy__enter(t);
	else
		atomic_fetch_add(&alloy__shared_windows, 1);
	return t;
}

static inline void alloy__section_leave(struct alloy__tls *t)
{
	if (t)
		alloy__leave(t);
	else
		atomic_fetch_sub(&alloy__shared_windows, 1);
}

/* ---- blocks counted on their allocators ----------------------------- */

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

/*
 * alloy__free_and_count for a thread without a record: the op, then the
 * count (kernel/alloc.c, beside the deleters).
 */
ALLOY_HIDDEN void alloy__free_unrecorded(struct alloy_allocator *a, void *block,
					 size_t size, size_t align,
					 size_t counted);

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
		alloy__free_counted((const struct alloy__allocator_head *)a, t,
				    block, size, align, counted);
	else
		alloy__free_unrecorded(a, block, size, align, counted);
}

/* Live blocks of a: allocations minus frees, summed over threads. */
ALLOY_HIDDEN int64_t alloy__live_blocks(const struct alloy_allocator *a);

#endif /* ALLOY_KERNEL_COUNT_H */
