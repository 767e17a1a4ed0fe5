/* SPDX-License-Identifier: MIT */
/*
 * alloy/tensor.h - a multi-dimensional array on one device with Caffe2's
 * memory semantics (caffe2::Tensor over TensorImpl).
 *
 * A `struct alloy_tensor *` is a reference-counted handle: copying the
 * pointer and alloy_tensor_ref() is c10's UnsafeSharedInstance, the last
 * alloy_tensor_unref() frees it.  The tensor holds its dims, its number of
 * elements (numel, -1 until the first resize) and a Storage, which it may
 * share with other tensors (share_data, alias).
 *
 * Allocation is lazy: resize only records dims; raw_mutable_data() makes
 * the buffer through the device's context, i.e. from the default allocator
 * *current at that moment*.  Whether resize frees the buffer follows c10:
 * it is freed when capacity < needed, or keep_on_shrink is off, or more
 * than max_keep_on_shrink_memory bytes would stay unused; a reserved
 * tensor (after extend or reserve_space) is freed only when it must grow.
 *
 * Functions returning int give 0 or a negative errno and leave a message
 * naming the values (alloy_last_error()); on failure the tensor is
 * unchanged unless said otherwise.  Pointer-returning functions return
 * NULL only on failure: a zero-element tensor without a buffer yields a
 * non-NULL pointer that must not be dereferenced.  One tensor is not
 * thread-safe; different tensors sharing a storage are, for reference
 * counting only.
 */
#ifndef ALLOY_TENSOR_H
#define ALLOY_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <alloy/device.h>
#include <alloy/storage.h>
#include <alloy/typemeta.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most dimensions a tensor has (NumPy's classic limit). */
#define ALLOY_TENSOR_MAX_DIMS 32

struct alloy_tensor;

/* A tensor on dev, numel -1, no type, no buffer.  NULL + message. */
struct alloy_tensor *alloy_tensor_new(struct alloy_device dev);

/* The same, resized to dims (no buffer yet). */
struct alloy_tensor *alloy_tensor_new_dims(struct alloy_device dev,
					   const int64_t *dims, int ndim);

/* Take and drop a reference to the handle.  NULL-safe. */
struct alloy_tensor *alloy_tensor_ref(struct alloy_tensor *t);
void alloy_tensor_unref(struct alloy_tensor *t);

/* ---- shape -------------------------------------------------------- */

/*
 * Set the dims (ndim 0 = a scalar of one element); frees the buffer as
 * described above.  -EINVAL negative dim or too many dims, -EOVERFLOW
 * the dims' product or its size in bytes overflows.
 */
int alloy_tensor_resize(struct alloy_tensor *t, const int64_t *dims, int ndim);

/* Resize to src's dims. */
int alloy_tensor_resize_like(struct alloy_tensor *t,
			     const struct alloy_tensor *src);

/* New dims with the same numel; the storage is not touched. */
int alloy_tensor_reshape(struct alloy_tensor *t, const int64_t *dims, int ndim);

/*
 * Grow the outer dimension by num, keeping the data.  When the buffer is
 * too small it grows to at least (100 + growth_pct)% of the outer
 * dimension, so that extending one at a time is amortised O(1); the
 * tensor is then reserved.  -EINVAL on a 0-dim tensor or num < 0.
 */
int alloy_tensor_extend(struct alloy_tensor *t, int64_t num, float growth_pct);

/*
 * Make room for outer_dim in the outer dimension without changing the
 * dims; the current contents are discarded if the buffer has to grow.
 * Marks the tensor reserved.  Needs a type and unshared storage.
 */
int alloy_tensor_reserve_space(struct alloy_tensor *t, int64_t outer_dim);

/*
 * Shrink the outer dimension to outer_dim (<= the current one), keeping
 * the data and the buffer: never reallocates.  -EBUSY on shared storage.
 */
int alloy_tensor_shrink_to(struct alloy_tensor *t, int64_t outer_dim);

/* ---- sharing ------------------------------------------------------ */

/*
 * Share src's storage (its buffer and type).  numel must be equal, and
 * src must have a buffer unless it has no elements.
 */
int alloy_tensor_share_data(struct alloy_tensor *t,
			    const struct alloy_tensor *src);

/*
 * Use nbytes of caller memory at ptr as the buffer.  dtype NULL keeps the
 * tensor's type (which must then be set); nbytes 0 means numel x
 * itemsize.  deleter(dp) runs with dp->ptr == ptr, dp->ctx == ctx when the
 * last user lets go; deleter NULL leaves ownership with the caller.
 */
int alloy_tensor_share_external_pointer(struct alloy_tensor *t, void *ptr,
					const struct alloy_type_meta *dtype,
					size_t nbytes, alloy_deleter_fn deleter,
					void *ctx);

/*
 * Drop the buffer; a shared storage is left to its other users and t gets
 * a new empty one (which can fail: -ENOMEM).
 */
int alloy_tensor_free_memory(struct alloy_tensor *t);

/* ---- copies ------------------------------------------------------- */

/*
 * Make t a copy of src: type, dims and contents, across devices through
 * the contexts (alloy_copy_bytes).  Non-POD elements are copied through
 * the type's copy function, on the CPU only.
 */
int alloy_tensor_copy_from(struct alloy_tensor *t,
			   const struct alloy_tensor *src);

/* A deep copy on the same device.  NULL + message. */
struct alloy_tensor *alloy_tensor_clone(const struct alloy_tensor *src);

/* A new tensor with src's dims sharing src's storage. */
struct alloy_tensor *alloy_tensor_alias(const struct alloy_tensor *src);

/* ---- data --------------------------------------------------------- */

/* The buffer, read-only.  NULL when not allocated yet (lazy). */
const void *alloy_tensor_raw_data(const struct alloy_tensor *t);

/* The same, checking the elements are of type dtype. */
const void *alloy_tensor_data(const struct alloy_tensor *t,
			      const struct alloy_type_meta *dtype);

/*
 * The buffer for writing elements of dtype (NULL: the current type),
 * allocating it if needed.  The buffer is kept when the type is the same,
 * or when old and new types are POD and the capacity suffices (int32 ->
 * float keeps the pointer); otherwise a new one is made and, for non-POD
 * types, its elements constructed.
 */
void *alloy_tensor_raw_mutable_data(struct alloy_tensor *t,
				    const struct alloy_type_meta *dtype);

/* ---- element type and elements ---------------------------------- */

/*
 * Set the type of t's elements in place.  The type lives in the storage,
 * so a storage shared with other tensors is refused (-EBUSY): they would
 * see their elements change type; clone or alias first.  Without a buffer
 * only the type changes (raw_mutable_data then allocates, constructing
 * non-POD elements).  With one, its bytes are reinterpreted: both types
 * must be POD (-EINVAL otherwise) and the buffer large enough for numel
 * elements of dtype (-EINVAL otherwise).  -EOVERFLOW when numel elements
 * of dtype do not fit in memory.  Unchanged on failure.
 */
int alloy_tensor_set_dtype(struct alloy_tensor *t,
			   const struct alloy_type_meta *dtype);

/*
 * String elements (type "string") without their char *: set copies s
 * (NULL and "" both store the empty string), making the buffer if the
 * tensor has none yet; get returns the element, "" for an empty one,
 * valid until the element is set again or the buffer released.  -EINVAL
 * (set) / NULL (get) with a message when t does not hold strings or (get)
 * has no buffer, -ERANGE / NULL for i outside 0..numel-1, -ENOMEM (the
 * element keeps its value).
 */
int alloy_tensor_string_set(struct alloy_tensor *t, int64_t i, const char *s);
const char *alloy_tensor_string_get(const struct alloy_tensor *t, int64_t i);

/*
 * t's buffer is also used by work queued on stream (a CUDA stream): its
 * memory is not handed out again before that work is done.  The
 * tensor-level form of alloy_cuda_record_stream on its storage's DataPtr.
 * 0 when t has no buffer yet; -ENOTSUP when the allocator that made the
 * buffer is not stream-aware (any CPU allocator), -EINVAL for memory
 * alloy did not allocate (share_external_pointer).
 */
int alloy_tensor_record_stream(const struct alloy_tensor *t, void *stream);

/* ---- accessors ---------------------------------------------------- */

int alloy_tensor_ndim(const struct alloy_tensor *t);
const int64_t *alloy_tensor_dims(const struct alloy_tensor *t);
/* Dimension i (negative counts from the end), or -EINVAL. */
int64_t alloy_tensor_dim(const struct alloy_tensor *t, int i);
/* Dimension i as int32; -ERANGE when it exceeds INT32_MAX. */
int alloy_tensor_dim32(const struct alloy_tensor *t, int i, int32_t *out);
int64_t alloy_tensor_numel(const struct alloy_tensor *t);
const struct alloy_type_meta *alloy_tensor_dtype(const struct alloy_tensor *t);
size_t alloy_tensor_itemsize(const struct alloy_tensor *t);
/* numel x itemsize (0 before the first resize). */
size_t alloy_tensor_nbytes(const struct alloy_tensor *t);
/* Bytes of the buffer (0 when none). */
size_t alloy_tensor_capacity_nbytes(const struct alloy_tensor *t);
struct alloy_device alloy_tensor_device(const struct alloy_tensor *t);
struct alloy_storage *alloy_tensor_storage(const struct alloy_tensor *t);
bool alloy_tensor_is_reserved(const struct alloy_tensor *t);
/* The allocator that made the buffer, NULL when none or external. */
struct alloy_allocator *alloy_tensor_allocator(const struct alloy_tensor *t);

/*
 * A one-line description into buf (always NUL-terminated when len > 0):
 * "Tensor float [2, 3] numel=6 cpu:0 capacity=24 storage_refs=1".
 * Returns what snprintf returns.
 */
int alloy_tensor_debug_string(const struct alloy_tensor *t, char *buf,
			      size_t len);

/* ---- policy ------------------------------------------------------- */

/*
 * The keep_on_shrink / max_keep_on_shrink_memory policy, from ALLOY_CONF
 * at first use; these change it for the whole process from now on
 * (UINT64_MAX = unlimited).
 */
void alloy_tensor_set_keep_on_shrink(bool keep);
void alloy_tensor_set_max_keep_on_shrink_memory(uint64_t bytes);
bool alloy_tensor_keep_on_shrink(void);
uint64_t alloy_tensor_max_keep_on_shrink_memory(void);

#ifdef __cplusplus
}
#endif
#endif /* ALLOY_TENSOR_H */
