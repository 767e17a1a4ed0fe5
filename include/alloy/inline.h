/* SPDX-License-Identifier: MIT */
/*
 * alloy/inline.h - what the inline free of alloy/allocator.h reads of
 * liballoy's own state.  Not for direct use.
 *
 * alloy_data_ptr_free frees a block of alloy's registry in the caller's
 * code: the allocator's free op called from there, with the block's
 * bytes counted before the call and the block after it, as liballoy's
 * deleter counts them (docs/ARCHITECTURE.md, "Why unregistering is
 * safe").  A deleter calling the op from a frame of its own costs a call
 * and a return more a pair, which is most of the time alloy adds to a
 * backend's fastest pair (docs/BENCHMARKS.md).  So what it
 * reads is part of liballoy.so.1's ABI, fixed as the soname is:
 *
 *  - the thread's record, alloy__tls_self (initial-exec TLS: no call to
 *    __tls_get_addr in callers; NULL while the thread has none);
 *  - the start of every registered allocator, struct alloy__allocator_head
 *    (alloy/allocator.h);
 *  - the per-thread counters of an allocator: int64_t slots at
 *    acct_offset bytes into the thread's record, ALLOY__C_* below.
 */
#ifndef ALLOY_INLINE_H
#define ALLOY_INLINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct alloy__tls;
extern __thread struct alloy__tls *alloy__tls_self
	__attribute__((tls_model("initial-exec")));

/* An allocator's per-thread counters, in int64_t slots from acct_offset. */
enum {
	ALLOY__C_ALLOCS = 0, /* allocations ever */
	ALLOY__C_FREES,	     /* frees ever; live blocks = allocs - frees */
	ALLOY__C_BYTES,	     /* live bytes */
	ALLOY__C_COUNT
};

/*
 * Add v to one of this thread's own counters.  Only this thread writes
 * it, so no atomic read-modify-write is needed, only a single store that
 * readers cannot see half-done: on x86-64 one add to memory (as the
 * kernel's this_cpu_add), elsewhere a load and a release store.  Release
 * because a reader that sees a free counted (an unregister, summing with
 * acquire loads) may then reuse the allocator's slot: everything the
 * freeing thread did with the allocator must come before.  x86-64's
 * stores are ordered after earlier loads and stores already.
 */
static inline void alloy__counter_add(int64_t *c, int64_t v)
{
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
	__asm__("addq %1, %0" : "+m"(*c) : "er"(v));
#else
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + v,
			 __ATOMIC_RELEASE);
#endif
}

/* Subtract v from one of this thread's own counters, as above. */
static inline void alloy__counter_sub(int64_t *c, int64_t v)
{
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
	__asm__("subq %1, %0" : "+m"(*c) : "er"(v));
#else
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) - v,
			 __ATOMIC_RELEASE);
#endif
}

#ifdef __cplusplus
}
#endif

#endif /* ALLOY_INLINE_H */
