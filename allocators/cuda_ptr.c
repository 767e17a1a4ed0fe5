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
 *
 * The DataPtrs live in records of a pool under the map's lock
 * (allocators/ptrmap.h): a pool spares a malloc and a free a pair, most
 * of what a record costs over alloy_alloc with a DataPtr, for at most one
 * record (48 bytes) per block live at the busiest moment.
 */
#include <pthread.h>

#include "kernel/base.h"
#include "allocators/ptrmap.h"
#include "devices/devsrc.h"
#include <alloy/cuda.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct alloy__ptrmap blocks;   /* address -> its DataPtr */
static struct alloy__recpool records; /* the DataPtrs of blocks freed */

/* File dp under its address; 0 or -ENOMEM.  The lock is held. */
static int keep_locked(const struct alloy_data_ptr *dp)
{
	struct alloy_data_ptr *r = alloy__recpool_take(&records, sizeof(*r));

	if (!r)
		return -ENOMEM;
	*r = *dp;
	if (alloy__ptrmap_put(&blocks, dp->ptr, r)) {
		alloy__recpool_give(&records, r);
		return -ENOMEM;
	}
	return 0;
}

void *alloy_cuda_malloc(size_t size, int device, void *stream)
{
	struct alloy_data_ptr dp;
	int rc;

	if (!size || alloy__cuda_alloc_on(device, stream, size, 0, &dp))
		return NULL;
	pthread_mutex_lock(&lock);
	rc = keep_locked(&dp);
	pthread_mutex_unlock(&lock);
	if (rc) {
		alloy_data_ptr_free(&dp);
		alloy__error(-ENOMEM, __func__,
			     "no memory for the block's record");
		return NULL;
	}
	return dp.ptr;
}

void alloy_cuda_free(void *ptr, size_t size, int device, void *stream)
{
	struct alloy_data_ptr dp, *r;

	if (!ptr)
		return;
	pthread_mutex_lock(&lock);
	r = alloy__ptrmap_take(&blocks, ptr);
	if (r) {
		dp = *r;
		alloy__recpool_give(&records, r);
	}
	pthread_mutex_unlock(&lock);
	if (!r) {
		alloy__error(
			-EINVAL, __func__,
			"%p is not a live block of alloy_cuda_malloc (freed already?)",
			ptr);
		return;
	}
	alloy_data_ptr_free(&dp);
}

int alloy_cuda_ptr_record_stream(void *ptr, void *stream)
{
	struct alloy_data_ptr *r;
	int rc;

	/* The lock keeps the block from being freed under the call. */
	pthread_mutex_lock(&lock);
	r = alloy__ptrmap_get(&blocks, ptr);
	rc = r ? alloy_cuda_record_stream(r, stream)
	       : alloy__error(-EINVAL, __func__,
			      "%p is not a live block of alloy_cuda_malloc",
			      ptr);
	pthread_mutex_unlock(&lock);
	return rc;
}
