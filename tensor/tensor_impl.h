/* SPDX-License-Identifier: MIT */
/*
 * tensor/tensor_impl.h - what tensor.c gives tensor_ops.c and blob.c
 * beyond the public header: the tensor itself and its shape helpers.
 */
#ifndef ALLOY_TENSOR_TENSOR_IMPL_H
#define ALLOY_TENSOR_TENSOR_IMPL_H

#include <alloy/tensor.h>

#include "tensor/storage_impl.h"

struct alloy_tensor {
	atomic_long refs;
	int ndim;
	bool reserved; /* extend/reserve_space ran: keep the buffer */
	int64_t numel; /* -1 until the first resize */
	struct alloy_device device;
	struct alloy_storage *storage; /* never NULL */
	int64_t dims[ALLOY_TENSOR_MAX_DIMS];
	/*
	 * Owner label of the memory it allocates (a workspace blob's name,
	 * tensor/blob.c), pushed around its allocations; NULL: none.  From
	 * alloy__owner_intern, so it outlives the blob.
	 */
	const char *owner;
};

/* Allocation of t's memory under its owner label, if it has one. */
static inline bool alloy__tensor_owner_push(const struct alloy_tensor *t)
{
	return t->owner && !alloy_owner_push(t->owner);
}

/*
 * Check dims for t's type: 0 <= ndim <= max, every dim >= 0, and neither
 * their product nor its size in bytes overflows.  Fills *numel and *bytes
 * (either may be NULL).  Errors name func.
 */
ALLOY_HIDDEN int alloy__tensor_shape(const char *func,
				     const struct alloy_tensor *t,
				     const int64_t *dims, int ndim,
				     int64_t *numel, size_t *bytes);

/* The same for t's own dims with the outer one (t->ndim >= 1) replaced. */
ALLOY_HIDDEN int alloy__tensor_shape_outer(const char *func,
					   const struct alloy_tensor *t,
					   int64_t outer, int64_t *numel,
					   size_t *bytes);

/* Record dims and numel (already checked). */
ALLOY_HIDDEN void alloy__tensor_set_dims(struct alloy_tensor *t,
					 const int64_t *dims, int ndim,
					 int64_t numel);

/* Drop t's reference to its storage and use s (whose reference t takes). */
ALLOY_HIDDEN void alloy__tensor_set_storage(struct alloy_tensor *t,
					    struct alloy_storage *s);

/* Give t a fresh empty storage of type dtype; 0 or -ENOMEM. */
ALLOY_HIDDEN int alloy__tensor_new_storage(const char *func,
					   struct alloy_tensor *t,
					   const struct alloy_type_meta *dtype);

/* raw_mutable_data with the error code: 0 and *out, or -errno. */
ALLOY_HIDDEN int alloy__tensor_mutable_data(const char *func,
					    struct alloy_tensor *t,
					    const struct alloy_type_meta *dtype,
					    void **out);

/* The element functions of the built-in "tensor" type (tensor_ops.c). */
ALLOY_HIDDEN void alloy__tensor_elem_dtor(void *p, size_t n);
ALLOY_HIDDEN int alloy__tensor_elem_copy(const void *src, void *dst, size_t n);
ALLOY_HIDDEN void *alloy__tensor_create(void);
ALLOY_HIDDEN void alloy__tensor_destroy(void *obj);

#endif /* ALLOY_TENSOR_TENSOR_IMPL_H */
