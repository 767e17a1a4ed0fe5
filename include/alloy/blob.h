/* SPDX-License-Identifier: MIT */
/*
 * alloy/blob.h - a type-erased holder of one object (Caffe2's Blob).
 *
 * A blob holds a pointer and its type meta, and frees the object with the
 * type's destroy function when it is replaced, reset or the blob is freed
 * (unless the object was only shared with it).  The usual content is a
 * tensor: the built-in type ALLOY_TYPE_TENSOR holds a
 * `struct alloy_tensor *`, and the blob owns one reference to it.
 *
 * A blob is not thread-safe; the workspace that holds it is.
 */
#ifndef ALLOY_BLOB_H
#define ALLOY_BLOB_H

#include <stdbool.h>
#include <alloy/device.h>
#include <alloy/typemeta.h>

#ifdef __cplusplus
extern "C" {
#endif

struct alloy_blob;
struct alloy_tensor;

/* An empty blob.  NULL + message when out of memory. */
struct alloy_blob *alloy_blob_new(void);

/* Destroy the object it owns, then the blob.  NULL-safe. */
void alloy_blob_free(struct alloy_blob *b);

/* The type held, NULL when empty. */
const struct alloy_type_meta *alloy_blob_meta(const struct alloy_blob *b);
bool alloy_blob_is_type(const struct alloy_blob *b,
			const struct alloy_type_meta *t);
bool alloy_blob_is_empty(const struct alloy_blob *b);

/*
 * The object, checked to be of type t.  NULL + -EINVAL message naming
 * both the held and the requested type ("blob holds float while caller
 * expects double"), or saying the blob is empty.
 */
const void *alloy_blob_get(const struct alloy_blob *b,
			   const struct alloy_type_meta *t);

/*
 * The object for writing: when the blob holds a t it is returned as is;
 * otherwise a default t is made (alloy_type_new_object) and only then is
 * the old object destroyed.  *is_new (may be NULL) says which happened.
 * On failure (NULL: out of memory, or t's constructor failed) the blob
 * keeps its old contents, type and object, untouched.
 */
void *alloy_blob_get_mutable(struct alloy_blob *b,
			     const struct alloy_type_meta *t, bool *is_new);

/*
 * Take ownership of obj, of type t, destroying what the blob held.
 * Returns obj, or NULL (-EINVAL) for a NULL t or obj, which are then not
 * taken.
 */
void *alloy_blob_reset(struct alloy_blob *b, const struct alloy_type_meta *t,
		       void *obj);

/* Hold obj without owning it: it is never destroyed by the blob. */
int alloy_blob_share_external(struct alloy_blob *b,
			      const struct alloy_type_meta *t, void *obj);

/* Destroy the owned object (if any) and leave the blob empty. */
void alloy_blob_clear(struct alloy_blob *b);

/*
 * Tensors in blobs.  get_tensor is the checked get.  get_mutable_tensor
 * returns the tensor held if it is on dev, else replaces the content with
 * a new tensor on dev (Caffe2's BlobGetMutableTensor).  The blob keeps its
 * reference; take one with alloy_tensor_ref() to outlive the blob.
 */
struct alloy_tensor *alloy_blob_get_tensor(const struct alloy_blob *b);
struct alloy_tensor *alloy_blob_get_mutable_tensor(struct alloy_blob *b,
						   struct alloy_device dev);

#ifdef __cplusplus
}
#endif
#endif /* ALLOY_BLOB_H */
