// SPDX-License-Identifier: MIT
/*
 * tensor/tensor.c - the tensor handle: life cycle, shape, lazy
 * allocation, data access and the keep-on-shrink policy.
 *
 * The operations that move data between buffers or tensors (extend,
 * reserve, shrink, sharing, copies) are in tensor_ops.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor_impl.h"
#include "kernel/conf.h"

/*
 * What data accessors hand out for a tensor with no elements and no
 * buffer: any pointer is valid there, and NULL is kept for failure.
 */
static max_align_t empty_buffer;

/*
 * Tensors as elements (the built-in "tensor" type): typemeta.c, below
 * this file, holds the entry; its functions are these, bound at load.
 */
__attribute__((constructor)) static void bind_tensor_type(void)
{
	static const struct alloy__type_fns fns = {
		.dtor = alloy__tensor_elem_dtor,
		.copy = alloy__tensor_elem_copy,
		.create = alloy__tensor_create,
		.destroy = alloy__tensor_destroy,
	};

	alloy__type_bind_tensor(&fns);
}

/* ---- the keep-on-shrink policy -------------------------------------- */

/*
 * The values live in alloy__conf so that `alloy conf` shows what is in
 * force; they are read and written atomically because a setter may run
 * while other threads resize.
 */
void alloy_tensor_set_keep_on_shrink(bool keep)
{
	alloy__ensure_init();
	__atomic_store_n(&alloy__conf.keep_on_shrink, keep, __ATOMIC_RELAXED);
}

void alloy_tensor_set_max_keep_on_shrink_memory(uint64_t bytes)
{
	alloy__ensure_init();
	__atomic_store_n(&alloy__conf.max_keep_on_shrink_memory, bytes,
			 __ATOMIC_RELAXED);
}

bool alloy_tensor_keep_on_shrink(void)
{
	alloy__ensure_init();
	return __atomic_load_n(&alloy__conf.keep_on_shrink, __ATOMIC_RELAXED);
}

uint64_t alloy_tensor_max_keep_on_shrink_memory(void)
{
	alloy__ensure_init();
	return __atomic_load_n(&alloy__conf.max_keep_on_shrink_memory,
			       __ATOMIC_RELAXED);
}

/*
 * c10's rule: a reserved tensor lets go of its buffer only when it must
 * grow; others also when keeping it is switched off or would leave more
 * than max_keep_on_shrink_memory bytes unused.
 */
static bool must_free(const struct alloy_tensor *t, size_t needed)
{
	size_t cap = alloy__storage_capacity(t->storage);

	if (cap < needed)
		return true;
	if (t->reserved)
		return false;
	return !alloy_tensor_keep_on_shrink() ||
	       (uint64_t)(cap - needed) >
		       alloy_tensor_max_keep_on_shrink_memory();
}

/* ---- life cycle ----------------------------------------------------- */

struct alloy_tensor *alloy_tensor_new(struct alloy_device dev)
{
	struct alloy_tensor *t = calloc(1, sizeof(*t));

	if (!t) {
		alloy__error(-ENOMEM, __func__, "no memory for a tensor");
		return NULL;
	}
	t->storage = alloy_storage_new(dev, NULL);
	if (!t->storage) {
		free(t);
		return NULL;
	}
	atomic_init(&t->refs, 1);
	t->numel = -1;
	t->device = dev;
	return t;
}

struct alloy_tensor *alloy_tensor_new_dims(struct alloy_device dev,
					   const int64_t *dims, int ndim)
{
	struct alloy_tensor *t = alloy_tensor_new(dev);

	if (t && alloy_tensor_resize(t, dims, ndim)) {
		alloy_tensor_unref(t);
		return NULL;
	}
	return t;
}

struct alloy_tensor *alloy_tensor_ref(struct alloy_tensor *t)
{
	if (t)
		alloy__ref_get(&t->refs);
	return t;
}

void alloy_tensor_unref(struct alloy_tensor *t)
{
	if (!t || !alloy__ref_put(&t->refs))
		return;
	alloy_storage_unref(t->storage);
	free(t);
}

void alloy__tensor_set_storage(struct alloy_tensor *t, struct alloy_storage *s)
{
	alloy_storage_unref(t->storage);
	t->storage = s;
}

int alloy__tensor_new_storage(const char *func, struct alloy_tensor *t,
			      const struct alloy_type_meta *dtype)
{
	struct alloy_storage *s = alloy_storage_new(t->device, dtype);

	if (!s)
		return alloy__error(-ENOMEM, func,
				    "no memory for a new storage");
	alloy__tensor_set_storage(t, s);
	return 0;
}

int alloy_tensor_free_memory(struct alloy_tensor *t)
{
	ALLOY_ENFORCE(t, -EINVAL, "tensor is NULL");
	/* Others still use a shared buffer: only this tensor lets go. */
	if (!alloy__storage_unique(t->storage))
		return alloy__tensor_new_storage(
			__func__, t, alloy__storage_dtype(t->storage));
	alloy_storage_reset(t->storage);
	return 0;
}

/* ---- shape ---------------------------------------------------------- */

/* The shape checks, with the outer dimension read as `outer`. */
static int shape(const char *func, const struct alloy_tensor *t,
		 const int64_t *dims, int ndim, int64_t outer, int64_t *numel,
		 size_t *bytes)
{
	int64_t n = 1;
	size_t b;
	int rc;

	for (int i = 0; i < ndim; i++) {
		int64_t d = i ? dims[i] : outer;

		if (d < 0)
			return alloy__error(-EINVAL, func,
					    "dim %d is %" PRId64
					    "; dims must be >= 0",
					    i, d);
		if (__builtin_mul_overflow(n, d, &n))
			return alloy__error(
				-EOVERFLOW, func,
				"the product of the dims overflows at dim %d (%" PRId64
				")",
				i, d);
	}
	rc = alloy__elems_bytes(func, alloy__storage_dtype(t->storage),
				(uint64_t)n, &b);
	if (rc)
		return rc;
	if (numel)
		*numel = n;
	if (bytes)
		*bytes = b;
	return 0;
}

int alloy__tensor_shape(const char *func, const struct alloy_tensor *t,
			const int64_t *dims, int ndim, int64_t *numel,
			size_t *bytes)
{
	if (ndim < 0 || ndim > ALLOY_TENSOR_MAX_DIMS)
		return alloy__error(-EINVAL, func, "ndim %d is outside 0..%d",
				    ndim, ALLOY_TENSOR_MAX_DIMS);
	if (ndim > 0 && !dims)
		return alloy__error(-EINVAL, func, "dims is NULL for ndim %d",
				    ndim);
	return shape(func, t, dims, ndim, ndim ? dims[0] : 1, numel, bytes);
}

int alloy__tensor_shape_outer(const char *func, const struct alloy_tensor *t,
			      int64_t outer, int64_t *numel, size_t *bytes)
{
	return shape(func, t, t->dims, t->ndim, outer, numel, bytes);
}

void alloy__tensor_set_dims(struct alloy_tensor *t, const int64_t *dims,
			    int ndim, int64_t numel)
{
	if (ndim > 0 && dims != t->dims)
		memmove(t->dims, dims, (size_t)ndim * sizeof(*dims));
	t->ndim = ndim;
	t->numel = numel;
}

int alloy_tensor_resize(struct alloy_tensor *t, const int64_t *dims, int ndim)
{
	int64_t numel;
	size_t bytes;
	int rc;

	ALLOY_ENFORCE(t, -EINVAL, "tensor is NULL");
	rc = alloy__tensor_shape(__func__, t, dims, ndim, &numel, &bytes);
	if (rc)
		return rc;
	/*
	 * A buffer too small (or kept against the rules) goes, whether or
	 * not the tensor had dims: external memory shared before the first
	 * resize is held to its byte count like any other.
	 */
	if (numel != t->numel && alloy__storage_data(t->storage) &&
	    must_free(t, bytes)) {
		rc = alloy_tensor_free_memory(t);
		if (rc)
			return rc;
	}
	alloy__tensor_set_dims(t, dims, ndim, numel);
	return 0;
}

int alloy_tensor_resize_like(struct alloy_tensor *t,
			     const struct alloy_tensor *src)
{
	ALLOY_ENFORCE(t && src, -EINVAL, "%s is NULL", t ? "src" : "tensor");
	ALLOY_ENFORCE(src->numel >= 0, -EINVAL,
		      "source tensor has no dims yet (numel -1)");
	return alloy_tensor_resize(t, src->dims, src->ndim);
}

int alloy_tensor_reshape(struct alloy_tensor *t, const int64_t *dims, int ndim)
{
	int64_t numel = 0;
	int rc;

	ALLOY_ENFORCE(t, -EINVAL, "tensor is NULL");
	rc = alloy__tensor_shape(__func__, t, dims, ndim, &numel, NULL);
	if (rc)
		return rc;
	ALLOY_ENFORCE(numel == t->numel, -EINVAL,
		      "new numel %" PRId64 " != current numel %" PRId64
		      " (use resize)",
		      numel, t->numel);
	alloy__tensor_set_dims(t, dims, ndim, numel);
	return 0;
}

/* ---- data ----------------------------------------------------------- */

/* The buffer, or the stand-in for a tensor with no elements. */
static void *data_or_empty(const struct alloy_tensor *t)
{
	void *p = alloy__storage_data(t->storage);

	return p ? p : (void *)&empty_buffer;
}

/* NULL + message when t has elements but no buffer (or no dims). */
static void *data_checked(const char *func, const struct alloy_tensor *t)
{
	if (!t) {
		alloy__error(-EINVAL, func, "tensor is NULL");
		return NULL;
	}
	if (t->numel == -1) {
		alloy__error(
			-EINVAL, func,
			"tensor has no dims yet: call resize, then raw_mutable_data");
		return NULL;
	}
	if (t->numel > 0 && !alloy__storage_data(t->storage)) {
		alloy__error(
			-EINVAL, func,
			"tensor of %" PRId64
			" elements has no buffer yet (allocation is lazy: call raw_mutable_data first)",
			t->numel);
		return NULL;
	}
	return data_or_empty(t);
}

const void *alloy_tensor_raw_data(const struct alloy_tensor *t)
{
	return data_checked(__func__, t);
}

const void *alloy_tensor_data(const struct alloy_tensor *t,
			      const struct alloy_type_meta *dtype)
{
	const void *p = data_checked(__func__, t);
	const struct alloy_type_meta *have;

	if (!p)
		return NULL;
	have = alloy__storage_dtype(t->storage);
	if (have != dtype) {
		alloy__error(-EINVAL, __func__,
			     "tensor holds %s while caller expects %s",
			     alloy_type_name(have), alloy_type_name(dtype));
		return NULL;
	}
	return p;
}

int alloy__tensor_mutable_data(const char *func, struct alloy_tensor *t,
			       const struct alloy_type_meta *dtype, void **out)
{
	const struct alloy_type_meta *old;
	struct alloy_storage *s;
	bool labelled;
	size_t bytes;
	int rc;

	*out = NULL;
	if (!t)
		return alloy__error(-EINVAL, func, "tensor is NULL");
	s = t->storage;
	old = alloy__storage_dtype(s);
	if (!dtype)
		dtype = old;
	if (!dtype)
		return alloy__error(-EINVAL, func,
				    "tensor has no type yet: pass one");
	if (old == dtype && (alloy__storage_data(s) || t->numel == 0))
		goto out;
	if (t->numel < 0)
		return alloy__error(
			-EINVAL, func,
			"tensor has no dims yet: call resize before raw_mutable_data");
	rc = alloy__elems_bytes(func, dtype, (uint64_t)t->numel, &bytes);
	if (rc)
		return rc;

	/* A shared storage keeps its type for its other users. */
	if (!alloy__storage_unique(s) && old != dtype) {
		rc = alloy__tensor_new_storage(func, t, dtype);
		if (rc)
			return rc;
	}
	labelled = alloy__tensor_owner_push(t);
	rc = alloy__storage_prepare(func, t->storage, dtype, (size_t)t->numel,
				    bytes);
	if (labelled)
		alloy_owner_pop();
	if (rc)
		return rc;
out:
	*out = data_or_empty(t);
	return 0;
}

void *alloy_tensor_raw_mutable_data(struct alloy_tensor *t,
				    const struct alloy_type_meta *dtype)
{
	void *p;

	alloy__tensor_mutable_data(__func__, t, dtype, &p);
	return p;
}

/* ---- accessors ------------------------------------------------------ */

int alloy_tensor_ndim(const struct alloy_tensor *t)
{
	return t ? t->ndim : 0;
}

const int64_t *alloy_tensor_dims(const struct alloy_tensor *t)
{
	return t ? t->dims : NULL;
}

int64_t alloy_tensor_dim(const struct alloy_tensor *t, int i)
{
	ALLOY_ENFORCE(t, -EINVAL, "tensor is NULL");
	ALLOY_ENFORCE(i >= -t->ndim && i < t->ndim, -EINVAL,
		      "dim index %d is outside %d..%d", i, -t->ndim,
		      t->ndim - 1);
	return t->dims[i < 0 ? i + t->ndim : i];
}

int alloy_tensor_dim32(const struct alloy_tensor *t, int i, int32_t *out)
{
	int64_t d = alloy_tensor_dim(t, i);

	if (d < 0)
		return (int)d;
	ALLOY_ENFORCE(out, -EINVAL, "out is NULL");
	ALLOY_ENFORCE(d <= INT32_MAX, -ERANGE,
		      "dim %d is %" PRId64 ", more than INT32_MAX", i, d);
	*out = (int32_t)d;
	return 0;
}

int64_t alloy_tensor_numel(const struct alloy_tensor *t)
{
	return t ? t->numel : -1;
}

const struct alloy_type_meta *alloy_tensor_dtype(const struct alloy_tensor *t)
{
	return t ? alloy__storage_dtype(t->storage) : NULL;
}

size_t alloy_tensor_itemsize(const struct alloy_tensor *t)
{
	const struct alloy_type_meta *d = alloy_tensor_dtype(t);

	return d ? d->itemsize : 0;
}

size_t alloy_tensor_nbytes(const struct alloy_tensor *t)
{
	/* Overflow was ruled out when the dims or the type were set. */
	return t && t->numel > 0 ? (size_t)t->numel * alloy_tensor_itemsize(t)
				 : 0;
}

size_t alloy_tensor_capacity_nbytes(const struct alloy_tensor *t)
{
	return t ? alloy__storage_capacity(t->storage) : 0;
}

struct alloy_device alloy_tensor_device(const struct alloy_tensor *t)
{
	return t ? t->device : ALLOY_CPU;
}

struct alloy_storage *alloy_tensor_storage(const struct alloy_tensor *t)
{
	return t ? t->storage : NULL;
}

bool alloy_tensor_is_reserved(const struct alloy_tensor *t)
{
	return t && t->reserved;
}

struct alloy_allocator *alloy_tensor_allocator(const struct alloy_tensor *t)
{
	return t ? alloy_data_ptr_allocator(alloy_storage_data_ptr(t->storage))
		 : NULL;
}

int alloy_tensor_debug_string(const struct alloy_tensor *t, char *buf,
			      size_t len)
{
	struct alloy_allocator *a;
	size_t off = 0;
	int n;

	if (!t)
		return snprintf(buf, len, "Tensor (null)");
#define PUT(...)                                                      \
	do {                                                          \
		n = snprintf(buf + (off < len ? off : len),           \
			     off < len ? len - off : 0, __VA_ARGS__); \
		off += n > 0 ? (size_t)n : 0;                         \
	} while (0)
	PUT("Tensor %s [", alloy_type_name(alloy_tensor_dtype(t)));
	for (int i = 0; i < t->ndim; i++)
		PUT("%s%" PRId64, i ? ", " : "", t->dims[i]);
	PUT("] numel=%" PRId64 " %s:%d capacity=%zu storage_refs=%ld", t->numel,
	    alloy_device_type_name(t->device.type), t->device.index,
	    alloy__storage_capacity(t->storage),
	    alloy__storage_use_count(t->storage));
	a = alloy_tensor_allocator(t);
	if (a)
		PUT(" allocator=%s", alloy_allocator_name(a));
	else if (alloy__storage_data(t->storage))
		PUT(" external");
	if (t->reserved)
		PUT(" reserved");
#undef PUT
	return (int)off;
}
