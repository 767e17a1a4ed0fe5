/* SPDX-License-Identifier: MIT */
/*
 * tensor/typemeta_impl.h - what typemeta.c gives the rest of the tensor
 * layer beyond its public header: element counts to bytes, and the slot
 * of the built-in "tensor" element type, whose functions live in the
 * tensor files above it.
 *
 * The tensor layer's files depend downward only, in this order:
 * typemeta.c, storage.c, tensor.c and tensor_ops.c, blob.c, workspace.c
 * (syncedmem.c stands apart).  Each private header is the interface of
 * one of them, included by the files above it.
 */
#ifndef ALLOY_TENSOR_TYPEMETA_IMPL_H
#define ALLOY_TENSOR_TYPEMETA_IMPL_H

#include <alloy/typemeta.h>

#include "kernel/base.h"

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

/*
 * The element functions of the built-in "tensor" type.  tensor.c binds
 * them from a constructor, so they are in place before any caller can
 * look the type up; typemeta.c, below the tensor code, never names them.
 */
struct alloy__type_fns {
	void (*dtor)(void *p, size_t n);
	int (*copy)(const void *src, void *dst, size_t n);
	void *(*create)(void);
	void (*destroy)(void *obj);
};

ALLOY_HIDDEN void alloy__type_bind_tensor(const struct alloy__type_fns *fns);

#endif /* ALLOY_TENSOR_TYPEMETA_IMPL_H */
