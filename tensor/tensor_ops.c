// SPDX-License-Identifier: MIT
/*
 * tensor/tensor_ops.c - tensor operations that move or share buffers:
 * extend, reserve_space, shrink_to, share_data, share_external_pointer,
 * copy_from, clone, alias; and the element functions of the built-in
 * "tensor" type (tensors of tensors, tensors in blobs).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor_impl.h"

/* ---- growing and shrinking the outer dimension ---------------------- */

/*
 * Move t's elements into a new buffer of cap_numel elements.  The new
 * storage is filled before the old one is dropped, so on failure t is as
 * it was; a shared old storage stays with its other users.
 */
static int regrow(struct alloy_tensor *t, int64_t cap_numel)
{
	struct alloy_storage *old = t->storage;
	const struct alloy_type_meta *dtype = alloy__storage_dtype(old);
	struct alloy_storage *s = alloy_storage_new(t->device, dtype);
	bool labelled;
	int rc;

	if (!s)
		return -ENOMEM;
	labelled = alloy__tensor_owner_push(t);
	rc = alloy_storage_allocate(s, dtype, (size_t)cap_numel);
	if (labelled)
		alloy_owner_pop();
	if (!rc)
		rc = alloy__copy_items("alloy_tensor_extend", dtype,
				       (size_t)t->numel,
				       alloy__storage_data(old), t->device,
				       alloy__storage_data(s), t->device);
	if (rc) {
		alloy_storage_unref(s);
		return rc;
	}
	alloy__tensor_set_storage(t, s);
	return 0;
}

/* Resize t to its dims with the outer one replaced (no data to keep). */
static int resize_outer(struct alloy_tensor *t, int64_t outer)
{
	int64_t dims[ALLOY_TENSOR_MAX_DIMS];

	memcpy(dims, t->dims, (size_t)t->ndim * sizeof(*dims));
	dims[0] = outer;
	return alloy_tensor_resize(t, dims, t->ndim);
}

int alloy_tensor_extend(struct alloy_tensor *t, int64_t num, float growth_pct)
{
	int64_t outer, cap_outer, numel, cap_numel;
	double grown;
	size_t bytes;
	int rc;

	ALLOY_ENFORCE(t, -EINVAL, "tensor is NULL");
	ALLOY_ENFORCE(t->ndim >= 1, -EINVAL,
		      "tensor has %d dims (numel %" PRId64
		      "); extend needs at least 1",
		      t->ndim, t->numel);
	ALLOY_ENFORCE(num >= 0, -EINVAL, "num is %" PRId64 "; must be >= 0",
		      num);
	ALLOY_ENFORCE(growth_pct >= 0 && isfinite(growth_pct), -EINVAL,
		      "growth_pct is %g; must be finite and >= 0",
		      (double)growth_pct);
	ALLOY_ENFORCE(!__builtin_add_overflow(t->dims[0], num, &outer),
		      -EOVERFLOW,
		      "outer dim %" PRId64 " + %" PRId64 " overflows",
		      t->dims[0], num);
	/* Nothing allocated yet: there is no data to keep. */
	if (!alloy__storage_data(t->storage))
		return resize_outer(t, outer);
	rc = alloy__tensor_shape_outer(__func__, t, outer, &numel, &bytes);
	if (rc)
		return rc;
	if (bytes > alloy__storage_capacity(t->storage)) {
		/* Grow the capacity geometrically: amortised O(1) per element.
		 */
		grown = ceil((double)t->dims[0] * (100.0 + growth_pct) / 100.0);
		cap_outer =
			grown > (double)outer
				? (grown < 0x1p62 ? (int64_t)grown : INT64_MAX)
				: outer;
		/* Growth that would overflow falls back to what is asked. */
		if (alloy__tensor_shape_outer(__func__, t, cap_outer,
					      &cap_numel, NULL))
			cap_numel = numel;
		rc = regrow(t, cap_numel);
		if (rc)
			return rc;
		t->reserved = true;
	}
	t->dims[0] = outer;
	t->numel = numel;
	return 0;
}

int alloy_tensor_reserve_space(struct alloy_tensor *t, int64_t outer_dim)
{
	const struct alloy_type_meta *dtype;
	int64_t cap_numel;
	size_t bytes;
	int rc;

	ALLOY_ENFORCE(t, -EINVAL, "tensor is NULL");
	ALLOY_ENFORCE(t->numel != -1 && t->ndim >= 1, -EINVAL,
		      "tensor has %d dims (numel %" PRId64
		      "); reserve_space needs at least 1",
		      t->ndim, t->numel);
	ALLOY_ENFORCE(outer_dim >= 0, -EINVAL,
		      "outer_dim is %" PRId64 "; must be >= 0", outer_dim);
	dtype = alloy__storage_dtype(t->storage);
	ALLOY_ENFORCE(dtype, -EINVAL,
		      "tensor has no type yet: call raw_mutable_data first");
	ALLOY_ENFORCE(
		alloy__storage_unique(t->storage), -EBUSY,
		"storage is shared by %ld users; reserve_space needs it alone",
		alloy__storage_use_count(t->storage));
	rc = alloy__tensor_shape_outer(__func__, t, outer_dim, &cap_numel,
				       &bytes);
	if (rc)
		return rc;
	if (bytes <= alloy__storage_capacity(t->storage))
		return 0;
	/* As in c10, the old contents are discarded, not copied. */
	rc = alloy_storage_allocate(t->storage, dtype, (size_t)cap_numel);
	if (rc)
		return rc;
	t->reserved = true;
	return 0;
}

int alloy_tensor_shrink_to(struct alloy_tensor *t, int64_t outer_dim)
{
	int64_t numel = outer_dim;

	ALLOY_ENFORCE(t, -EINVAL, "tensor is NULL");
	ALLOY_ENFORCE(t->ndim >= 1, -EINVAL,
		      "tensor has %d dims; shrink_to needs at least 1",
		      t->ndim);
	ALLOY_ENFORCE(outer_dim >= 0 && outer_dim <= t->dims[0], -EINVAL,
		      "new outer dim %" PRId64 " is outside 0..%" PRId64
		      " (the current one)",
		      outer_dim, t->dims[0]);
	ALLOY_ENFORCE(alloy__storage_unique(t->storage), -EBUSY,
		      "storage is shared by %ld users; use resize instead",
		      alloy__storage_use_count(t->storage));
	/* Smaller than a product already checked: cannot overflow. */
	for (int i = 1; i < t->ndim; i++)
		numel *= t->dims[i];
	t->dims[0] = outer_dim;
	t->numel = numel;
	return 0;
}

/* ---- sharing -------------------------------------------------------- */

int alloy_tensor_share_data(struct alloy_tensor *t,
			    const struct alloy_tensor *src)
{
	ALLOY_ENFORCE(t && src, -EINVAL, "%s is NULL", t ? "src" : "tensor");
	ALLOY_ENFORCE(t->device.type == src->device.type &&
			      t->device.index == src->device.index,
		      -EINVAL, "tensor is on %s:%d, source on %s:%d",
		      alloy_device_type_name(t->device.type), t->device.index,
		      alloy_device_type_name(src->device.type),
		      src->device.index);
	ALLOY_ENFORCE(src->numel == t->numel, -EINVAL,
		      "numel %" PRId64 " != source numel %" PRId64
		      " (reshape before sharing)",
		      t->numel, src->numel);
	ALLOY_ENFORCE(alloy__storage_data(src->storage) || src->numel == 0,
		      -EINVAL,
		      "source has %" PRId64 " elements but no buffer yet",
		      src->numel);
	if (t->storage != src->storage)
		alloy__tensor_set_storage(t, alloy_storage_ref(src->storage));
	return 0;
}

int alloy_tensor_share_external_pointer(struct alloy_tensor *t, void *ptr,
					const struct alloy_type_meta *dtype,
					size_t nbytes, alloy_deleter_fn deleter,
					void *ctx)
{
	struct alloy_storage *s;
	size_t need = 0;
	int rc;

	ALLOY_ENFORCE(t, -EINVAL, "tensor is NULL");
	if (!dtype)
		dtype = alloy__storage_dtype(t->storage);
	ALLOY_ENFORCE(dtype, -EINVAL,
		      "tensor has no type: pass the type of the memory at %p",
		      ptr);
	if (t->numel >= 0) {
		rc = alloy__elems_bytes(__func__, dtype, (uint64_t)t->numel,
					&need);
		if (rc)
			return rc;
	}
	if (nbytes == 0) {
		ALLOY_ENFORCE(t->numel >= 0, -EINVAL,
			      "tensor has no dims: pass nbytes for %p", ptr);
		nbytes = need;
	}
	ALLOY_ENFORCE(ptr || nbytes == 0, -EINVAL, "NULL pointer for %zu bytes",
		      nbytes);
	ALLOY_ENFORCE(nbytes >= need, -EINVAL,
		      "%zu bytes at %p are fewer than numel %" PRId64
		      " x itemsize %zu",
		      nbytes, ptr, t->numel, dtype->itemsize);
	if (alloy__storage_unique(t->storage))
		return alloy_storage_share_external(t->storage, ptr, nbytes,
						    dtype, deleter, ctx);
	s = alloy_storage_new_external(ptr, nbytes, t->device, dtype, deleter,
				       ctx);
	if (!s)
		return -ENOMEM;
	alloy__tensor_set_storage(t, s);
	return 0;
}

/* ---- copies --------------------------------------------------------- */

int alloy_tensor_copy_from(struct alloy_tensor *t,
			   const struct alloy_tensor *src)
{
	const struct alloy_type_meta *dtype;
	void *dst;
	int rc;

	ALLOY_ENFORCE(t && src, -EINVAL, "%s is NULL", t ? "src" : "tensor");
	if (t == src)
		return 0;
	ALLOY_ENFORCE(src->numel <= 0 || alloy__storage_data(src->storage),
		      -EINVAL,
		      "source has %" PRId64 " elements but no buffer yet",
		      src->numel);
	dtype = alloy__storage_dtype(src->storage);
	if (alloy__storage_dtype(t->storage) != dtype || src->numel == -1) {
		rc = alloy__tensor_new_storage(__func__, t, dtype);
		if (rc)
			return rc;
	}
	if (src->numel == -1) {
		alloy__tensor_set_dims(t, NULL, 0, -1);
		return 0;
	}
	rc = alloy_tensor_resize(t, src->dims, src->ndim);
	if (rc || src->numel == 0)
		return rc;
	rc = alloy__tensor_mutable_data(__func__, t, dtype, &dst);
	if (rc)
		return rc;
	return alloy__copy_items(__func__, dtype, (size_t)src->numel,
				 alloy__storage_data(src->storage), src->device,
				 dst, t->device);
}

struct alloy_tensor *alloy_tensor_clone(const struct alloy_tensor *src)
{
	struct alloy_tensor *t;

	if (!src) {
		alloy__error(-EINVAL, __func__, "src is NULL");
		return NULL;
	}
	t = alloy_tensor_new(src->device);
	if (t && alloy_tensor_copy_from(t, src)) {
		alloy_tensor_unref(t);
		return NULL;
	}
	return t;
}

struct alloy_tensor *alloy_tensor_alias(const struct alloy_tensor *src)
{
	struct alloy_tensor *t;

	if (!src) {
		alloy__error(-EINVAL, __func__, "src is NULL");
		return NULL;
	}
	t = alloy_tensor_new(src->device);
	if (!t)
		return NULL;
	alloy__tensor_set_storage(t, alloy_storage_ref(src->storage));
	alloy__tensor_set_dims(t, src->dims, src->ndim, src->numel);
	return t;
}

/* ---- the "tensor" element type -------------------------------------- */

void alloy__tensor_elem_dtor(void *p, size_t n)
{
	struct alloy_tensor **e = p;

	for (size_t i = 0; i < n; i++)
		alloy_tensor_unref(e[i]);
}

/* Deep, as clone is: the copy shares nothing with the source. */
int alloy__tensor_elem_copy(const void *src, void *dst, size_t n)
{
	struct alloy_tensor *const *from = src;
	struct alloy_tensor **to = dst;

	for (size_t i = 0; i < n; i++) {
		struct alloy_tensor *c = NULL;

		if (from[i] && !(c = alloy_tensor_clone(from[i])))
			return -ENOMEM;
		alloy_tensor_unref(to[i]);
		to[i] = c;
	}
	return 0;
}

void *alloy__tensor_create(void)
{
	return alloy_tensor_new(ALLOY_CPU);
}

void alloy__tensor_destroy(void *obj)
{
	alloy_tensor_unref(obj);
}
