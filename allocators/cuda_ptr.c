// SPDX-License-Identifier: MIT
/*
 * allocators/cuda_ptr.c - device memory as plain pointers: blocks of the
 * CUDA default allocator for callers that keep no DataPtr, in the shape
 * of cudaMalloc / cudaFree with a stream.
 *
 * The shape is the one PyTorch's CUDAPluggableAllocator loads by name
 * (void *alloc(size_t, int, cudaStream_t), void free(void *, size_t, int,
 * cudaStream_t)), so torch can take its CUDA memory straight from
 * liballoy (docs/CUDA.md, "Plain pointers, and PyTorch's CUDA tensors on
 * alloy").  Each live block's DataPtr is kept in a map from its address:
 * the free finds the allocator that made the block, whatever the default
 * has become since.  Lock order: this file's lock, then an allocator's
 * (record_stream only); never the other way.
 */
#include <pthread.h>
#include <stdlib.h>

#include "core/internal.h"
#include "allocators/ptrmap.h"
#include <alloy/cuda.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct alloy__ptrmap blocks; /* address -> struct alloy_data_ptr */

/*
 * Allocate on device, ordered on stream: the thread's current device and
 * stream are set for the call and put back after it.
 */
static int alloc_on(size_t size, int device, void *stream,
		    struct alloy_data_ptr *dp)
{
	int old_device = alloy_cuda_current_device();
	void *old_stream = alloy_cuda_current_stream();
	int rc = alloy_cuda_set_device(device);

	if (rc)
		return rc;
	alloy_cuda_set_stream(stream);
	rc = alloy_alloc_default(ALLOY_DEVICE_CUDA, size, 0, dp);
	alloy_cuda_set_stream(old_stream);
	alloy_cuda_set_device(old_device);
	return rc;
}

void *alloy_cuda_malloc(size_t size, int device, void *stream)
{
	struct alloy_data_ptr *dp;
	int rc;

	if (!size)
		return NULL;
	dp = malloc(sizeof(*dp));
	if (!dp) {
		alloy__error(-ENOMEM, __func__, "no memory for a block record");
		return NULL;
	}
	if (alloc_on(size, device, stream, dp)) {
		free(dp);
		return NULL;
	}
	pthread_mutex_lock(&lock);
	rc = alloy__ptrmap_put(&blocks, dp->ptr, dp);
	pthread_mutex_unlock(&lock);
	if (rc) {
		alloy_data_ptr_free(dp);
		free(dp);
		alloy__error(-ENOMEM, __func__, "no memory for the block map");
		return NULL;
	}
	return dp->ptr;
}

void alloy_cuda_free(void *ptr, size_t size, int device, void *stream)
{
	struct alloy_data_ptr *dp;

	if (!ptr)
		return;
	pthread_mutex_lock(&lock);
	dp = alloy__ptrmap_take(&blocks, ptr);
	pthread_mutex_unlock(&lock);
	if (!dp) {
		alloy__error(-EINVAL, __func__,
			     "%p is not a live block of alloy_cuda_malloc (freed already?)",
			     ptr);
		return;
	}
	alloy_data_ptr_free(dp);
	free(dp);
}

int alloy_cuda_ptr_record_stream(void *ptr, void *stream)
{
	struct alloy_data_ptr *dp;
	int rc;

	/* The lock keeps the block from being freed under the call. */
	pthread_mutex_lock(&lock);
	dp = alloy__ptrmap_get(&blocks, ptr);
	rc = dp ? alloy_cuda_record_stream(dp, stream)
		: alloy__error(-EINVAL, __func__,
			       "%p is not a live block of alloy_cuda_malloc",
			       ptr);
	pthread_mutex_unlock(&lock);
	return rc;
}
