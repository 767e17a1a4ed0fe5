// SPDX-License-Identifier: MIT
/*
 * interop/dlpack.c - export an alloy tensor as a DLManagedTensor and
 * import one as an alloy tensor, sharing the memory both ways.
 *
 * Export: one record holds the DLManagedTensor, a reference to the
 * tensor's storage and the shape and strides the DLTensor points at, so a
 * consumer's deleter frees one block and drops the reference.  Holding the
 * storage, not the tensor, is what c10 does too: the tensor may be resized
 * or freed meanwhile (a shared storage is never reset under its other
 * users; tensor.c gives the resized tensor a new one).
 *
 * Import: the producer's memory becomes an external storage whose deleter
 * calls the producer's, so the storage's single release is the single
 * call DLPack asks for.
 */
#include <inttypes.h>
#include <alloy/dlpack.h>

#include "kernel/arena.h"
#include "kernel/base.h"

struct export_rec {
	DLManagedTensor m;
	struct alloy_storage *storage;
	int ndim;	/* the record's own copy: sizes its free */
	int64_t dims[]; /* ndim shape, then ndim strides */
};

/*
 * The record's size for ndim dims.  It comes from alloy's arena, not the
 * process's malloc: under the LD_PRELOAD front that malloc is alloy.
 */
static size_t export_rec_size(int ndim)
{
	return sizeof(struct export_rec) + 2 * (size_t)ndim * sizeof(int64_t);
}

static void export_deleter(DLManagedTensor *m)
{
	struct export_rec *r = m->manager_ctx;

	alloy_storage_unref(r->storage);
	alloy__arena_free(r, export_rec_size(r->ndim));
}

int alloy_dlpack_export(struct alloy_tensor *t, DLManagedTensor **out)
{
	const struct alloy_type_meta *type;
	struct export_rec *r;
	DLDataType dt;
	DLDevice dev;
	int64_t stride = 1;
	void *data;
	int ndim, rc;

	ALLOY_ENFORCE(t && out, -EINVAL, "%s is NULL", t ? "out" : "tensor");
	*out = NULL;
	ALLOY_ENFORCE(alloy_tensor_numel(t) >= 0, -EINVAL,
		      "tensor has no dims yet: resize it before exporting");
	type = alloy_tensor_dtype(t);
	ALLOY_ENFORCE(type, -EINVAL, "tensor has no element type yet");
	rc = alloy_dlpack_dtype(type, &dt);
	if (!rc)
		rc = alloy_dlpack_device(alloy_tensor_device(t), &dev);
	if (rc)
		return rc;
	/* Lazy tensors get their buffer now: the consumer may write to it. */
	data = alloy_tensor_raw_mutable_data(t, NULL);
	if (!data)
		return -ENOMEM; /* the message is the tensor layer's */
	ndim = alloy_tensor_ndim(t);
	r = alloy__arena_alloc(export_rec_size(ndim));
	ALLOY_ENFORCE(r, -ENOMEM, "no memory for the export of %d dims", ndim);
	r->ndim = ndim;
	r->storage = alloy_storage_ref(alloy_tensor_storage(t));
	for (int i = 0; i < ndim; i++)
		r->dims[i] = alloy_tensor_dims(t)[i];
	/* Row-major strides in elements (no overflow: numel fits). */
	for (int i = ndim - 1; i >= 0; i--) {
		r->dims[ndim + i] = stride;
		stride *= r->dims[i] > 1 ? r->dims[i] : 1;
	}
	r->m = (DLManagedTensor){
		.dl_tensor = { .data = data,
			       .device = dev,
			       .ndim = ndim,
			       .dtype = dt,
			       .shape = r->dims,
			       .strides = r->dims + ndim,
			       .byte_offset = 0 },
		.manager_ctx = r,
		.deleter = export_deleter,
	};
	*out = &r->m;
	return 0;
}

static void import_deleter(struct alloy_data_ptr *dp)
{
	DLManagedTensor *m = dp->ctx;

	if (m->deleter)
		m->deleter(m);
}

/*
 * Whether strides describe the row-major layout of shape (NULL does).
 * Dims of size 1 may have any stride, and so may every dim of a tensor
 * without elements: no address depends on them.
 */
static bool row_major(const DLTensor *d, int64_t numel)
{
	int64_t want = 1;

	if (!d->strides || numel == 0)
		return true;
	for (int i = d->ndim - 1; i >= 0; i--) {
		if (d->shape[i] != 1 && d->strides[i] != want)
			return false;
		want *= d->shape[i];
	}
	return true;
}

/* Check d's shape; its element count into *numel. */
static int check_shape(const DLTensor *d, int64_t *numel)
{
	int64_t n = 1;

	ALLOY_ENFORCE(d->ndim >= 0 && d->ndim <= ALLOY_TENSOR_MAX_DIMS, -EINVAL,
		      "ndim %d is outside 0..%d", d->ndim,
		      ALLOY_TENSOR_MAX_DIMS);
	ALLOY_ENFORCE(d->shape || d->ndim == 0, -EINVAL,
		      "shape is NULL for %d dims", d->ndim);
	for (int i = 0; i < d->ndim; i++) {
		ALLOY_ENFORCE(d->shape[i] >= 0, -EINVAL,
			      "dim %d is negative (%" PRId64 ")", i,
			      d->shape[i]);
		ALLOY_ENFORCE(!__builtin_mul_overflow(n, d->shape[i], &n),
			      -EOVERFLOW,
			      "the dims' product overflows at dim %d", i);
	}
	*numel = n;
	return 0;
}

int alloy_dlpack_import(DLManagedTensor *m, struct alloy_tensor **out)
{
	const struct alloy_type_meta *type;
	struct alloy_tensor *t;
	struct alloy_device dev;
	const DLTensor *d;
	int64_t numel = 0;
	size_t nbytes;
	char *data;
	int rc;

	ALLOY_ENFORCE(m && out, -EINVAL, "%s is NULL",
		      m ? "out" : "managed tensor");
	*out = NULL;
	d = &m->dl_tensor;
	rc = alloy_dlpack_device_of(d->device, &dev);
	if (!rc)
		rc = alloy_dlpack_type_of(d->dtype, &type);
	if (!rc)
		rc = check_shape(d, &numel);
	if (rc)
		return rc;
	ALLOY_ENFORCE(
		row_major(d, numel), -ENOTSUP,
		"the tensor is strided (not C-contiguous); alloy tensors are contiguous: make a contiguous copy first");
	ALLOY_ENFORCE(!__builtin_mul_overflow((uint64_t)numel, type->itemsize,
					      &nbytes),
		      -EOVERFLOW, "%" PRId64 " elements of %zu bytes overflow",
		      numel, type->itemsize);
	ALLOY_ENFORCE(d->data || nbytes == 0, -EINVAL,
		      "data is NULL for %zu bytes", nbytes);
	data = d->data ? (char *)d->data + d->byte_offset : NULL;
	t = alloy_tensor_new_dims(dev, d->shape, d->ndim);
	if (!t)
		return -ENOMEM;
	rc = alloy_tensor_share_external_pointer(t, data, type, nbytes,
						 import_deleter, m);
	if (rc) {
		alloy_tensor_unref(t);
		return rc;
	}
	*out = t;
	return 0;
}
