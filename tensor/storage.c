// SPDX-License-Identifier: MIT
/*
 * tensor/storage.c - reference-counted buffers on one device.
 *
 * The buffer is a DataPtr from the device's context, so it goes back to
 * the allocator that made it however the defaults change.  For non-POD
 * element types the storage also remembers which elements it constructed,
 * and destroys exactly those before the memory is freed.
 */
#include <stdlib.h>
#include <string.h>

#include "tensor/storage_impl.h"

/* Memory the CPU may touch: elements there can be constructed in place. */
static bool host_accessible(struct alloy_device dev)
{
	return dev.type == ALLOY_DEVICE_CPU ||
	       dev.type == ALLOY_DEVICE_CUDA_HOST;
}

int alloy__copy_items(const char *func, const struct alloy_type_meta *t,
		      size_t n, const void *src, struct alloy_device src_dev,
		      void *dst, struct alloy_device dst_dev)
{
	size_t bytes = 0;
	int rc;

	if (n == 0 || src == dst)
		return 0;
	if (alloy_type_is_pod(t)) {
		rc = alloy__elems_bytes(func, t, n, &bytes);
		return rc ? rc
			  : alloy_copy_bytes(bytes, src, src_dev, dst, dst_dev);
	}
	if (!host_accessible(src_dev) || !host_accessible(dst_dev))
		return alloy__error(
			-EINVAL, func,
			"elements of non-POD type %s can only be copied in host memory, not %s -> %s",
			alloy_type_name(t),
			alloy_device_type_name(src_dev.type),
			alloy_device_type_name(dst_dev.type));
	/* Registration lets a type go without copy (one never copied). */
	if (!t->copy)
		return alloy__error(
			-ENOTSUP, func,
			"elements of type %s cannot be copied: it has a ctor or dtor but no copy function",
			alloy_type_name(t));
	return t->copy(src, dst, n);
}

/* Destroy the constructed elements, free the memory, empty *b. */
static void buffer_release(struct alloy__buffer *b)
{
	if (b->obj_type && b->nobj && b->dp.ptr)
		b->obj_type->dtor(b->dp.ptr, b->nobj);
	alloy_data_ptr_free(&b->dp);
	b->obj_type = NULL;
	b->nobj = 0;
}

struct alloy_storage *alloy_storage_new(struct alloy_device dev,
					const struct alloy_type_meta *dtype)
{
	struct alloy_storage *s;

	if ((unsigned)dev.type >= ALLOY_DEVICE_TYPE_COUNT) {
		alloy__error(-EINVAL, __func__, "unknown device type %d",
			     dev.type);
		return NULL;
	}
	if (dev.type == ALLOY_DEVICE_CPU && dev.index != 0) {
		alloy__error(-EINVAL, __func__,
			     "the CPU is one device, index 0, not %d",
			     dev.index);
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		alloy__error(-ENOMEM, __func__, "no memory for a storage");
		return NULL;
	}
	atomic_init(&s->refs, 1);
	s->device = dev;
	s->dtype = dtype;
	return s;
}

int alloy_storage_share_external(struct alloy_storage *s, void *ptr,
				 size_t capacity,
				 const struct alloy_type_meta *dtype,
				 alloy_deleter_fn deleter, void *ctx)
{
	ALLOY_ENFORCE(s, -EINVAL, "storage is NULL");
	ALLOY_ENFORCE(dtype, -EINVAL,
		      "external memory %p needs an element type", ptr);
	ALLOY_ENFORCE(ptr || capacity == 0, -EINVAL,
		      "NULL pointer with capacity %zu", capacity);
	ALLOY_ENFORCE(
		alloy_storage_unique(s), -EBUSY,
		"storage has %ld users; only a unique one can take external memory",
		alloy_storage_use_count(s));
	buffer_release(&s->buf);
	s->buf.dp = alloy_data_ptr_wrap(ptr, capacity, s->device, deleter, ctx);
	s->capacity = capacity;
	s->dtype = dtype;
	return 0;
}

struct alloy_storage *
alloy_storage_new_external(void *ptr, size_t capacity, struct alloy_device dev,
			   const struct alloy_type_meta *dtype,
			   alloy_deleter_fn deleter, void *ctx)
{
	struct alloy_storage *s;

	if (!dtype) {
		alloy__error(-EINVAL, __func__,
			     "external memory %p needs an element type", ptr);
		return NULL;
	}
	s = alloy_storage_new(dev, dtype);
	if (s && alloy_storage_share_external(s, ptr, capacity, dtype, deleter,
					      ctx)) {
		free(s);
		return NULL;
	}
	return s;
}

struct alloy_storage *alloy_storage_ref(struct alloy_storage *s)
{
	if (s)
		alloy__ref_get(&s->refs);
	return s;
}

void alloy_storage_unref(struct alloy_storage *s)
{
	if (!s || !alloy__ref_put(&s->refs))
		return;
	buffer_release(&s->buf);
	free(s);
}

long alloy_storage_use_count(const struct alloy_storage *s)
{
	return s ? alloy__storage_use_count(s) : 0;
}

bool alloy_storage_unique(const struct alloy_storage *s)
{
	return alloy_storage_use_count(s) == 1;
}

/* A new buffer of bytes for nelem elements of dtype, all checked. */
static int allocate(const char *func, struct alloy_storage *s,
		    const struct alloy_type_meta *dtype, size_t nelem,
		    size_t bytes)
{
	struct alloy_data_ptr dp;
	int rc;

	if (!alloy_type_is_pod(dtype) && !host_accessible(s->device))
		return alloy__error(-EINVAL, func,
				    "non-POD type %s cannot live in %s memory",
				    dtype->name,
				    alloy_device_type_name(s->device.type));
	buffer_release(&s->buf);
	s->capacity = 0;
	s->dtype = dtype;
	rc = alloy_context_new(s->device, bytes, &dp);
	if (rc)
		return rc;
	if (dtype->ctor && nelem) {
		rc = dtype->ctor(dp.ptr, nelem);
		if (rc) {
			alloy_data_ptr_free(&dp);
			return alloy__error(
				rc, func,
				"constructing %zu elements of %s failed", nelem,
				dtype->name);
		}
	} else if (!alloy_type_is_pod(dtype)) {
		/* A type without ctor is constructed as zeroed bytes. */
		memset(dp.ptr, 0, bytes);
	}
	s->buf.dp = dp;
	s->buf.obj_type = dtype->dtor ? dtype : NULL;
	s->buf.nobj = nelem;
	s->capacity = bytes;
	return 0;
}

int alloy_storage_allocate(struct alloy_storage *s,
			   const struct alloy_type_meta *dtype, size_t nelem)
{
	size_t bytes = 0;
	int rc;

	ALLOY_ENFORCE(s, -EINVAL, "storage is NULL");
	ALLOY_ENFORCE(dtype, -EINVAL, "no element type for %zu elements",
		      nelem);
	rc = alloy__elems_bytes(__func__, dtype, nelem, &bytes);
	if (rc)
		return rc;
	return allocate(__func__, s, dtype, nelem, bytes);
}

int alloy__storage_prepare(const char *func, struct alloy_storage *s,
			   const struct alloy_type_meta *dtype, size_t nelem,
			   size_t bytes)
{
	const struct alloy_type_meta *old = s->dtype;
	bool plain =
		alloy_type_is_pod(dtype) && (!old || alloy_type_is_pod(old));

	s->dtype = dtype;
	/*
	 * No elements: only the label changes.  A buffer that holds (or was
	 * made for) elements of a type with a ctor or dtor goes, so that a
	 * later resize within its capacity never hands its bytes out as the
	 * other type.
	 */
	if (nelem == 0) {
		if (old != dtype && !plain) {
			buffer_release(&s->buf);
			s->capacity = 0;
		}
		return 0;
	}
	/* Plain bytes can be reinterpreted in place, e.g. int32 -> float. */
	if (plain && s->capacity >= bytes)
		return 0;
	return allocate(func, s, dtype, nelem, bytes);
}

void alloy_storage_reset(struct alloy_storage *s)
{
	if (!s)
		return;
	buffer_release(&s->buf);
	s->capacity = 0;
}

void *alloy_storage_data(const struct alloy_storage *s)
{
	return s ? alloy__storage_data(s) : NULL;
}

size_t alloy_storage_capacity(const struct alloy_storage *s)
{
	return s ? alloy__storage_capacity(s) : 0;
}

const struct alloy_type_meta *alloy_storage_dtype(const struct alloy_storage *s)
{
	return s ? alloy__storage_dtype(s) : NULL;
}

void alloy_storage_set_dtype(struct alloy_storage *s,
			     const struct alloy_type_meta *dtype)
{
	if (s)
		s->dtype = dtype;
}

struct alloy_device alloy_storage_device(const struct alloy_storage *s)
{
	return s ? s->device : ALLOY_CPU;
}

const struct alloy_data_ptr *
alloy_storage_data_ptr(const struct alloy_storage *s)
{
	return s ? &s->buf.dp : NULL;
}
