/* SPDX-License-Identifier: MIT */
/*
 * tensor/storage_impl.h - storage.c's interface to the tensor code above
 * it: the storage itself (its accessors are inline, as the tensor code
 * calls them on every access) and the two operations tensors need.
 */
#ifndef ALLOY_TENSOR_STORAGE_IMPL_H
#define ALLOY_TENSOR_STORAGE_IMPL_H

#include <alloy/storage.h>

#include "tensor/refcount.h"
#include "tensor/typemeta_impl.h"

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

/*
 * Make s hold nelem elements (bytes in all) of dtype, for a tensor's
 * mutable_data: the type is set, and the buffer is kept when both the old
 * and the new type are plain bytes and it is large enough; otherwise a
 * new one comes from the device's context (constructed when dtype is not
 * POD).  Errors name func.
 */
ALLOY_HIDDEN int alloy__storage_prepare(const char *func,
					struct alloy_storage *s,
					const struct alloy_type_meta *dtype,
					size_t nelem, size_t bytes);

/*
 * Copy n elements of type t from src on src_dev to dst on dst_dev: POD
 * bytes through alloy_copy_bytes, others with t->copy (CPU only).
 */
ALLOY_HIDDEN int alloy__copy_items(const char *func,
				   const struct alloy_type_meta *t, size_t n,
				   const void *src, struct alloy_device src_dev,
				   void *dst, struct alloy_device dst_dev);

#endif /* ALLOY_TENSOR_STORAGE_IMPL_H */
