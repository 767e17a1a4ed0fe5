/* SPDX-License-Identifier: MIT */
/*
 * alloy/storage.h - a reference-counted buffer on one device (c10's
 * StorageImpl).
 *
 * A storage holds one DataPtr made by its device's context, its capacity
 * in bytes and the element type its buffer is declared to hold.  Tensors
 * share a storage by taking references; the buffer goes back to the
 * allocator that made it when the last reference is dropped or the storage
 * is reset.  When the buffer holds constructed non-POD elements, their
 * destructor runs first.
 *
 * Reference counts are atomic, so references may be taken and dropped
 * from any thread; everything else about one storage is single-threaded.
 */
#ifndef ALLOY_STORAGE_H
#define ALLOY_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <alloy/allocator.h>
#include <alloy/typemeta.h>

#ifdef __cplusplus
extern "C" {
#endif

struct alloy_storage;

/* An empty storage (no buffer) on dev; dtype may be NULL.  NULL + msg. */
struct alloy_storage *alloy_storage_new(struct alloy_device dev,
					const struct alloy_type_meta *dtype);

/*
 * A storage over memory alloy does not own: capacity bytes at ptr.  When
 * the last reference goes, deleter(dp) runs with dp->ptr == ptr and
 * dp->ctx == ctx (deleter NULL: the caller keeps ownership).  Elements
 * are never constructed or destroyed by alloy in external memory.  dtype
 * is required (-EINVAL), as in c10.
 */
struct alloy_storage *
alloy_storage_new_external(void *ptr, size_t capacity, struct alloy_device dev,
			   const struct alloy_type_meta *dtype,
			   alloy_deleter_fn deleter, void *ctx);

/* Take and drop a reference.  Both NULL-safe; ref returns s. */
struct alloy_storage *alloy_storage_ref(struct alloy_storage *s);
void alloy_storage_unref(struct alloy_storage *s);

/* References held now, and whether the caller's is the only one. */
long alloy_storage_use_count(const struct alloy_storage *s);
bool alloy_storage_unique(const struct alloy_storage *s);

/*
 * Replace the buffer with a new one of nelem elements of dtype, made by
 * the device's context (from the default allocator of this moment), its
 * elements constructed when dtype has a ctor.  The old buffer is released
 * first.  0, or -EOVERFLOW / -ENOMEM / a context error; the storage is
 * then empty.
 */
int alloy_storage_allocate(struct alloy_storage *s,
			   const struct alloy_type_meta *dtype, size_t nelem);

/*
 * Share external memory, as alloy_storage_new_external, in place; only
 * for a storage with a single reference (-EBUSY otherwise).
 */
int alloy_storage_share_external(struct alloy_storage *s, void *ptr,
				 size_t capacity,
				 const struct alloy_type_meta *dtype,
				 alloy_deleter_fn deleter, void *ctx);

/* Release the buffer (destroying constructed elements); keeps dtype. */
void alloy_storage_reset(struct alloy_storage *s);

/* Accessors. */
void *alloy_storage_data(const struct alloy_storage *s);
size_t alloy_storage_capacity(const struct alloy_storage *s);
const struct alloy_type_meta *
alloy_storage_dtype(const struct alloy_storage *s);
void alloy_storage_set_dtype(struct alloy_storage *s,
			     const struct alloy_type_meta *dtype);
struct alloy_device alloy_storage_device(const struct alloy_storage *s);
/* The DataPtr, e.g. to ask which allocator made the buffer. */
const struct alloy_data_ptr *
alloy_storage_data_ptr(const struct alloy_storage *s);

#ifdef __cplusplus
}
#endif
#endif /* ALLOY_STORAGE_H */
