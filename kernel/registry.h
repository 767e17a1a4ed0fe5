/* SPDX-License-Identifier: MIT */
/*
 * kernel/registry.h - the registry's internals (kernel/registry.c): the
 * allocator table, a slot's life, the defaults per device.  Core's files
 * and the layers that look inside a registered allocator (allocators/:
 * a wrapper holds and checks its inner; reporter/: an allocator's name
 * and key) include it.
 */
#ifndef ALLOY_KERNEL_REGISTRY_H
#define ALLOY_KERNEL_REGISTRY_H

#include "kernel/base.h"

/*
 * A table slot's life.  INIT and DYING hold the slot and its name while
 * the allocator's init or fini runs outside the registry's lock (so that
 * they may call the registry themselves).
 */
enum alloy__alloc_state { ALLOC_FREE = 0, ALLOC_LIVE, ALLOC_DYING, ALLOC_INIT };

/*
 * Whether *state (an allocator's) reads ALLOC_LIVE: a relaxed load.  On
 * x86-64 a compare with memory, as alloy__slow_now: one instruction
 * fewer on the allocation fast path.
 */
static inline bool alloy__state_live(atomic_int *state)
{
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__) && \
	!defined(__SANITIZE_THREAD__)
	bool live;

	__asm__("cmpl %2, %1" : "=@cce"(live) : "m"(*state), "i"(ALLOC_LIVE));
	return live;
#else
	return atomic_load_explicit(state, memory_order_relaxed) == ALLOC_LIVE;
#endif
}

/*
 * 512 bytes, a power of two: a plain block's free finds its allocator
 * from the index in its header with one shift, not a multiply.
 */
struct __attribute__((aligned(512))) alloy_allocator {
	/* struct alloy__allocator_head (alloy/allocator.h): fixed, first. */
	void *ctx;
	/*
	 * Byte offset of its counters in a struct alloy__tls (kernel/count.h).
	 */
	ptrdiff_t acct_offset;
	struct alloy_allocator_ops ops; /* zeroed private copy */
	/* liballoy's own from here. */
	atomic_int state; /* enum alloy__alloc_state */
	atomic_int holds; /* users besides its blocks: unregister is -EBUSY */
	int index;	  /* position in the table */
	int counters;	  /* first tcount slot */
	unsigned long serial; /* registration order */
	uint64_t name_hash;   /* FNV-1a of name: the reporter's key */
	char name[ALLOY_NAME_MAX + 1];
	char origin[256];
};

extern ALLOY_HIDDEN _Atomic(struct alloy_allocator *)
	alloy__defaults[ALLOY_DEVICE_TYPE_COUNT];

/*
 * What alloy__defaults holds for a device without a default, so that the
 * fast paths need not test for NULL: an allocator in no table, counted in
 * each record's nowhere[], whose alloc op always fails.  A fast path that
 * got it goes to its slow path from the failure; everything else sees
 * NULL through alloy__default_of.
 */
extern ALLOY_HIDDEN struct alloy_allocator alloy__no_default;

static inline struct alloy_allocator *
alloy__default_of(struct alloy_allocator *a)
{
	return a == &alloy__no_default ? NULL : a;
}

/* The table, indexed by struct alloy_allocator's index (never freed). */
extern ALLOY_HIDDEN struct alloy_allocator
	alloy__allocators[ALLOY_MAX_ALLOCATORS];

/* Reserve the counters of every table entry; called once by init. */
ALLOY_HIDDEN int alloy__registry_init(void);

/*
 * Keep a from being unregistered while something uses it other than
 * through blocks it made (a wrapper's inner): +1 to hold, -1 to let go.
 */
ALLOY_HIDDEN void alloy__allocator_hold(struct alloy_allocator *a, int delta);

/* FNV-1a of a string (kernel/registry.c). */
ALLOY_HIDDEN uint64_t alloy__hash_name(const char *s);

/* Validate an ops struct as registration does; 0 or -EINVAL + message. */
ALLOY_HIDDEN int alloy__check_ops(const struct alloy_allocator_ops *ops,
				  size_t *copy_size);

#endif /* ALLOY_KERNEL_REGISTRY_H */
