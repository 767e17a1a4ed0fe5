/* SPDX-License-Identifier: MIT */
/*
 * tensor/internal.h - what the files of the tensor layer share.
 */
#ifndef ALLOY_TENSOR_INTERNAL_H
#define ALLOY_TENSOR_INTERNAL_H

#include <alloy/storage.h>
#include <alloy/tensor.h>
#include <alloy/typemeta.h>

#include "core/internal.h"

/*
 * A buffer and the elements constructed in it.  obj_type is the type
 * whose dtor must run over the first nobj elements before the memory is
 * freed (NULL: nothing to destroy) - c10 captures it in the deleter's
 * closure; C keeps it next to the DataPtr.
 */
struct alloy__buffer {
	struct alloy_data_ptr dp;
	const struct alloy_type_meta *obj_type;
	size_t nobj;
};

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

struct alloy_storage {
	atomic_long refs;
	struct alloy__buffer buf;
	size_t capacity; /* bytes usable at buf.dp.ptr */
	const struct alloy_type_meta *dtype;
	struct alloy_device device;
};

/*
 * The storage accessors for s != NULL, inline: the tensor code calls them
 * on every access, and across files they could not be inlined otherwise.
 */
static inline void *alloy__storage_data(const struct alloy_storage *s)
{
	return s->buf.dp.ptr;
}

static inline size_t alloy__storage_capacity(const struct alloy_storage *s)
{
	return s->capacity;
}

static inline const struct alloy_type_meta *
alloy__storage_dtype(const struct alloy_storage *s)
{
	return s->dtype;
}

static inline long alloy__storage_use_count(const struct alloy_storage *s)
{
	return atomic_load_explicit(&s->refs, memory_order_acquire);
}

static inline bool alloy__storage_unique(const struct alloy_storage *s)
{
	return alloy__storage_use_count(s) == 1;
}

/* Destroy the constructed elements, free the memory, empty *b. */
ALLOY_HIDDEN void alloy__buffer_release(struct alloy__buffer *b);

/*
 * Copy n elements of type t from src on src_dev to dst on dst_dev: POD
 * bytes through alloy_copy_bytes, others with t->copy (CPU only).
 */
ALLOY_HIDDEN int alloy__copy_items(const char *func,
				   const struct alloy_type_meta *t, size_t n,
				   const void *src, struct alloy_device src_dev,
				   void *dst, struct alloy_device dst_dev);

/* The -EOVERFLOW of alloy__elems_bytes, out of line. */
ALLOY_HIDDEN int alloy__elems_overflow(const char *func,
				       const struct alloy_type_meta *t,
				       uint64_t n);

/* n x itemsize into *bytes, or -EOVERFLOW with a message naming func. */
static inline int alloy__elems_bytes(const char *func,
				     const struct alloy_type_meta *t,
				     uint64_t n, size_t *bytes)
{
	uint64_t b;

	if (unlikely(__builtin_mul_overflow(n, t ? t->itemsize : 0, &b) ||
		     b > (uint64_t)PTRDIFF_MAX)) {
		*bytes = 0;
		return alloy__elems_overflow(func, t, n);
	}
	*bytes = (size_t)b;
	return 0;
}

/* ---- tensors (tensor.c, tensor_ops.c) ------------------------------ */

struct alloy_tensor {
	atomic_long refs;
	int ndim;
	bool reserved; /* extend/reserve_space ran: keep the buffer */
	int64_t numel; /* -1 until the first resize */
	struct alloy_device device;
	struct alloy_storage *storage; /* never NULL */
	int64_t dims[ALLOY_TENSOR_MAX_DIMS];
};

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

/* The element functions of the built-in "tensor" type (tensor.c). */
ALLOY_HIDDEN void alloy__tensor_elem_dtor(void *p, size_t n);
ALLOY_HIDDEN int alloy__tensor_elem_copy(const void *src, void *dst, size_t n);
ALLOY_HIDDEN void *alloy__tensor_create(void);
ALLOY_HIDDEN void alloy__tensor_destroy(void *obj);

#endif /* ALLOY_TENSOR_INTERNAL_H */
