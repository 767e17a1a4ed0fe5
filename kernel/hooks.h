/* SPDX-License-Identifier: MIT */
/*
 * kernel/hooks.h - the allocation hooks, through which the reporter sees
 * every block made and freed (set and read in kernel/alloc.c).  Core's
 * allocation paths and reporter/ include it.
 */
#ifndef ALLOY_KERNEL_HOOKS_H
#define ALLOY_KERNEL_HOOKS_H

#include "kernel/base.h"

/*
 * When set, every allocation through alloy_alloc is reported here and
 * its DataPtr gets a deleter that reports the free, so that a block is
 * reported at free exactly when it was reported at allocation.
 */
struct alloy__hooks {
	void (*on_alloc)(struct alloy_allocator *a,
			 const struct alloy_data_ptr *dp);
	void (*on_free)(struct alloy_allocator *a,
			const struct alloy_data_ptr *dp);
};

/* Install h (NULL: none); the allocation paths leave their fast side. */
ALLOY_HIDDEN void alloy__set_hooks(const struct alloy__hooks *h);

/* The hooks of the moment (the reporter's), or NULL. */
ALLOY_HIDDEN extern _Atomic(const struct alloy__hooks *) alloy__hooks;

static inline const struct alloy__hooks *alloy__hooks_now(void)
{
	return atomic_load_explicit(&alloy__hooks, memory_order_acquire);
}

#endif /* ALLOY_KERNEL_HOOKS_H */
