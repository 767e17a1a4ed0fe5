// SPDX-License-Identifier: MIT
/*
 * tensor/tensor_dtype.c - a tensor's element type and its elements from
 * the outside: changing the type in place, string elements without
 * touching their char *, and telling a stream-aware allocator that a
 * tensor's buffer is used on another stream.
 *
 * The type lives in the storage (as in c10), so changing it in place
 * changes it for every tensor sharing that storage.  alloy_tensor_set_dtype
 * therefore refuses a shared storage instead of surprising its other users:
 * the caller can clone or alias first, and say which they meant.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <alloy/cuda.h> /* alloy_cuda_record_stream */

#include "tensor/tensor_impl.h"

int alloy_tensor_set_dtype(struct alloy_tensor *t,
			   const struct alloy_type_meta *dtype)
{
	struct alloy_storage *s;
	const struct alloy_type_meta *old;
	size_t bytes = 0;
	int rc;

	ALLOY_ENFORCE(t && dtype, -EINVAL, "%s is NULL", t ? "type" : "tensor");
	s = t->storage;
	old = alloy__storage_dtype(s);
	if (old == dtype)
		return 0;
	ALLOY_ENFORCE(
		alloy__storage_unique(s), -EBUSY,
		"storage is shared by %ld users, whose elements would change type too (clone or alias first)",
		alloy__storage_use_count(s));
	if (t->numel > 0) {
		rc = alloy__elems_bytes(__func__, dtype, (uint64_t)t->numel,
					&bytes);
		if (rc)
			return rc;
	}
	if (alloy__storage_data(s)) {
		ALLOY_ENFORCE(
			alloy_type_is_pod(dtype) &&
				(!old || alloy_type_is_pod(old)),
			-EINVAL,
			"the buffer's %s elements cannot be reinterpreted as %s (only plain bytes can; use raw_mutable_data, which constructs)",
			alloy_type_name(old), alloy_type_name(dtype));
		ALLOY_ENFORCE(
			alloy__storage_capacity(s) >= bytes, -EINVAL,
			"buffer of %zu bytes is too small for %" PRId64
			" elements of %s (%zu bytes; use raw_mutable_data, which grows it)",
			alloy__storage_capacity(s), t->numel, dtype->name,
			bytes);
	}
	alloy_storage_set_dtype(s, dtype);
	return 0;
}

/*
 * The i-th string element of t into *out, for func: t holds strings and
 * has a buffer (made here when it has none yet and make is set), and i is
 * in range.
 */
static int string_slot(const char *func, struct alloy_tensor *t, int64_t i,
		       bool make, char ***out)
{
	const struct alloy_type_meta *str = alloy_type(ALLOY_TYPE_STRING);
	char **v;
	int rc;

	*out = NULL;
	if (!t)
		return alloy__error(-EINVAL, func, "tensor is NULL");
	if (alloy__storage_dtype(t->storage) != str)
		return alloy__error(
			-EINVAL, func,
			"tensor holds %s while caller expects string",
			alloy_type_name(alloy__storage_dtype(t->storage)));
	if (i < 0 || i >= t->numel)
		return alloy__error(-ERANGE, func,
				    "element %" PRId64
				    " is outside 0..%" PRId64,
				    i, t->numel - 1);
	v = alloy__storage_data(t->storage);
	if (!v && make) {
		rc = alloy__tensor_mutable_data(func, t, str, (void **)&v);
		if (rc)
			return rc;
	}
	if (!v)
		return alloy__error(
			-EINVAL, func,
			"tensor of %" PRId64
			" strings has no buffer yet (allocation is lazy: call raw_mutable_data first)",
			t->numel);
	*out = v + i;
	return 0;
}

int alloy_tensor_string_set(struct alloy_tensor *t, int64_t i, const char *s)
{
	char **slot, *copy = NULL;
	int rc = string_slot(__func__, t, i, true, &slot);

	if (rc)
		return rc;
	/* The copy first: on failure the element keeps its old value. */
	if (s && *s) {
		copy = strdup(s);
		ALLOY_ENFORCE(copy, -ENOMEM,
			      "no memory for a string of %zu bytes", strlen(s));
	}
	free(*slot);
	*slot = copy;
	return 0;
}

const char *alloy_tensor_string_get(const struct alloy_tensor *t, int64_t i)
{
	char **slot;

	/* Never allocates, so the tensor is not changed. */
	if (string_slot(__func__, (struct alloy_tensor *)t, i, false, &slot))
		return NULL;
	return *slot ? *slot : "";
}

int alloy_tensor_record_stream(const struct alloy_tensor *t, void *stream)
{
	ALLOY_ENFORCE(t, -EINVAL, "tensor is NULL");
	return alloy_cuda_record_stream(alloy_storage_data_ptr(t->storage),
					stream);
}
