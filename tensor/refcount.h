/* SPDX-License-Identifier: MIT */
/*
 * tensor/refcount.h - reference counts, for storages and tensors.
 */
#ifndef ALLOY_TENSOR_REFCOUNT_H
#define ALLOY_TENSOR_REFCOUNT_H

#include <stdatomic.h>
#include <stdbool.h>

/*
 * Reference counts of storages and tensors.  Taking a reference needs no
 * ordering; dropping one is release/acquire so that the last user sees
 * every other user's writes before it frees.
 */
static inline void alloy__ref_get(atomic_long *refs)
{
	atomic_fetch_add_explicit(refs, 1, memory_order_relaxed);
}

/* True when this dropped the last reference. */
static inline bool alloy__ref_put(atomic_long *refs)
{
	return atomic_fetch_sub_explicit(refs, 1, memory_order_acq_rel) == 1;
}

#endif /* ALLOY_TENSOR_REFCOUNT_H */
