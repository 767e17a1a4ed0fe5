// SPDX-License-Identifier: MIT
/*
 * allocators/cuda_plain.c - `cuda`: one device allocation per block.
 *
 * No caching: every alloc is a cudaMalloc and every free a cudaFree (which
 * synchronises the device).  It is the baseline the caching allocator is
 * measured against, and the simplest correct choice for code that
 * allocates once.  Blocks are remembered by address so that a free knows
 * its device and a double free is reported instead of reaching the driver.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/base.h"
#include "allocators/cuda_policy.h"
#include "allocators/ptrmap.h"

#define PLAIN_ALIGN 256u /* what cudaMalloc guarantees */

struct plain {
	struct alloy__cuda_base b;   /* lock, src, ops, name */
	struct alloy__ptrmap blocks; /* address -> device + 1 */
};

/* A block of size bytes on device (zeroed on stream if asked). */
static void *alloc_on(void *ctx, int device, size_t size, size_t align,
		      unsigned flags, void *stream)
{
	struct plain *pl = ctx;
	void *p;
	int rc;

	if (unlikely(align > PLAIN_ALIGN)) {
		alloy__error(
			-EINVAL, pl->b.name,
			"alignment %zu is above the %u bytes cudaMalloc gives",
			align, PLAIN_ALIGN);
		return NULL;
	}
	if (pl->b.src.ops->dev_malloc(pl->b.src.ctx, device, size, &p))
		return NULL;
	pthread_mutex_lock(&pl->b.lock);
	rc = alloy__ptrmap_put(&pl->blocks, p, (void *)(intptr_t)(device + 1));
	pthread_mutex_unlock(&pl->b.lock);
	if (rc) {
		pl->b.src.ops->dev_free(pl->b.src.ctx, device, p);
		alloy__error(-ENOMEM, pl->b.name,
			     "no memory for the block map");
		return NULL;
	}
	if (flags & ALLOY_ALLOC_ZERO)
		pl->b.src.ops->dev_memset(pl->b.src.ctx, device, p, 0, size,
					  stream);
	return p;
}

static void *plain_alloc_async(void *ctx, size_t size, size_t align,
			       unsigned flags, void *stream)
{
	return alloc_on(ctx, alloy_cuda_current_device(), size, align, flags,
			stream);
}

static void *plain_alloc(void *ctx, size_t size, size_t align, unsigned flags)
{
	return plain_alloc_async(ctx, size, align, flags,
				 alloy_cuda_current_stream());
}

static void plain_free(void *ctx, void *ptr, size_t size, size_t align)
{
	struct plain *pl = ctx;
	intptr_t dev;

	pthread_mutex_lock(&pl->b.lock);
	dev = (intptr_t)alloy__ptrmap_take(&pl->blocks, ptr);
	pthread_mutex_unlock(&pl->b.lock);
	if (!dev) {
		alloy__error(-EINVAL, pl->b.name,
			     "%p was not allocated here (double free?)", ptr);
		return;
	}
	/* cudaFree waits for the device: no stream can still be using it. */
	pl->b.src.ops->dev_free(pl->b.src.ctx, (int)dev - 1, ptr);
}

/* Keep the contents with a device-to-device copy, never a host memcpy. */
static void *plain_realloc(void *ctx, void *ptr, size_t old_size,
			   size_t new_size, size_t align)
{
	struct plain *pl = ctx;
	intptr_t dev;

	pthread_mutex_lock(&pl->b.lock);
	dev = (intptr_t)alloy__ptrmap_get(&pl->blocks, ptr);
	pthread_mutex_unlock(&pl->b.lock);
	if (!dev) {
		alloy__error(-EINVAL, pl->b.name,
			     "realloc: %p is not a live block", ptr);
		return NULL;
	}
	/* On the block's device, whichever the calling thread is on. */
	return alloy__cuda_realloc_on(&pl->b, alloc_on, (int)dev - 1, NULL,
				      true, ptr, old_size, new_size, align);
}

static const struct alloy_allocator_ops plain_template = {
	.abi_major = ALLOY_ABI_MAJOR,
	.abi_minor = ALLOY_ABI_MINOR,
	.struct_size = sizeof(struct alloy_allocator_ops),
	.device_type = ALLOY_DEVICE_CUDA,
	.alloc = plain_alloc,
	.free = plain_free,
	.realloc = plain_realloc,
	.alloc_async = plain_alloc_async,
};

int alloy__cuda_plain_new(const struct alloy__devsrc *src, const char *name,
			  const struct alloy_allocator_ops **ops, void **ctx)
{
	return alloy__cuda_base_new(sizeof(struct plain), src, name,
				    &plain_template, ops, ctx);
}
