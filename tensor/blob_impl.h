/* SPDX-License-Identifier: MIT */
/*
 * tensor/blob_impl.h - what blob.c gives workspace.c beyond the public
 * header.
 */
#ifndef ALLOY_TENSOR_BLOB_IMPL_H
#define ALLOY_TENSOR_BLOB_IMPL_H

#include <alloy/blob.h>

#include "tensor/tensor_impl.h"

/*
 * Name the memory of the tensors b makes or hands out for writing: their
 * allocations are owned by label (alloy/owner.h), nested under the
 * thread's labels.  A workspace names each blob so.
 */
ALLOY_HIDDEN void alloy__blob_set_owner(struct alloy_blob *b,
					const char *label);

#endif /* ALLOY_TENSOR_BLOB_IMPL_H */
