// SPDX-License-Identifier: MIT
/*
 * allocators/cuda_async.c - `cuda_async`: the driver's stream-ordered
 * allocator (cudaMallocAsync/cudaFreeAsync) behind the alloy interface.
 *
 * The driver keeps its own pool per device, so this is a thin layer: it
 * remembers each block's stream and device, frees on that stream, and
 * honours record_stream: a block also used on other streams is freed only
 * after the host has waited for those streams (the source has no
 * cross-stream wait; correctness first, and record_stream is rare).
 * realloc stays on the block's device and stream, as cuda_caching's.
 * The blocks' records come from a pool under the map's lock
 * (allocators/ptrmap.h): no malloc or free of ours in a pair.
 */

#include "kernel/base.h"
#include "allocators/cuda_policy.h"
#include "allocators/ptrmap.h"

#define ASYNC_ALIGN 256u /* what cudaMallocAsync guarantees */

struct async_block {
	void *stream;
	int device;
	struct alloy__ptrvec uses; /* other streams it was used on */
};

struct cua {
	struct alloy__cuda_base b;     /* lock, src, ops, name */
	struct alloy__ptrmap blocks;   /* address -> struct async_block */
	struct alloy__recpool records; /* of blocks freed */
};

/* File a new block's record under its address; 0 or -ENOMEM. */
static int keep(struct cua *ca, void *p, int device, void *stream)
{
	struct async_block *blk;
	int rc = -ENOMEM;

	pthread_mutex_lock(&ca->b.lock);
	blk = alloy__recpool_take(&ca->records, sizeof(*blk));
	if (blk) {
		*blk = (struct async_block){ .stream = stream,
					     .device = device };
		rc = alloy__ptrmap_put(&ca->blocks, p, blk);
		if (rc)
			alloy__recpool_give(&ca->records, blk);
	}
	pthread_mutex_unlock(&ca->b.lock);
	return rc;
}

static void *alloc_on(void *ctx, int device, size_t size, size_t align,
		      unsigned flags, void *stream)
{
	struct cua *ca = ctx;
	void *p;

	if (unlikely(align > ASYNC_ALIGN)) {
		alloy__error(
			-EINVAL, ca->b.name,
			"alignment %zu is above the %u bytes cudaMallocAsync gives",
			align, ASYNC_ALIGN);
		return NULL;
	}
	if (ca->b.src.ops->dev_malloc_async(ca->b.src.ctx, device, size, stream,
					    &p))
		return NULL;
	if (keep(ca, p, device, stream)) {
		ca->b.src.ops->dev_free_async(ca->b.src.ctx, device, p, stream);
		alloy__error(-ENOMEM, ca->b.name,
			     "no memory for the block's record");
		return NULL;
	}
	if (flags & ALLOY_ALLOC_ZERO)
		ca->b.src.ops->dev_memset(ca->b.src.ctx, device, p, 0, size,
					  stream);
	return p;
}

static void *async_alloc_async(void *ctx, size_t size, size_t align,
			       unsigned flags, void *stream)
{
	return alloc_on(ctx, alloy_cuda_current_device(), size, align, flags,
			stream);
}

static void *async_alloc(void *ctx, size_t size, size_t align, unsigned flags)
{
	return async_alloc_async(ctx, size, align, flags,
				 alloy_cuda_current_stream());
}

static void async_free_async(void *ctx, void *ptr, size_t size, size_t align,
			     void *stream)
{
	struct cua *ca = ctx;
	struct async_block *r, blk;

	pthread_mutex_lock(&ca->b.lock);
	r = alloy__ptrmap_take(&ca->blocks, ptr);
	if (r) {
		blk = *r;
		alloy__recpool_give(&ca->records, r);
	}
	pthread_mutex_unlock(&ca->b.lock);
	if (!r) {
		alloy__error(-EINVAL, ca->b.name,
			     "%p was not allocated here (double free?)", ptr);
		return;
	}
	/* Work on other streams that used it must be done first. */
	if (stream && stream != blk.stream)
		ca->b.src.ops->stream_synchronize(ca->b.src.ctx, stream);
	for (size_t i = 0; i < blk.uses.n; i++)
		ca->b.src.ops->stream_synchronize(ca->b.src.ctx, blk.uses.v[i]);
	ca->b.src.ops->dev_free_async(ca->b.src.ctx, blk.device, ptr,
				      blk.stream);
	alloy__ptrvec_free(&blk.uses);
}

static void async_free(void *ctx, void *ptr, size_t size, size_t align)
{
	async_free_async(ctx, ptr, size, align, NULL);
}

/*
 * Grow or shrink keeping the contents: a new block on the old one's
 * device and stream (whichever device the calling thread is on), a
 * device-to-device copy ordered on that stream, then the old block freed
 * on it as any free.
 */
static void *async_realloc(void *ctx, void *ptr, size_t old_size,
			   size_t new_size, size_t align)
{
	struct cua *ca = ctx;
	struct async_block *blk;
	void *stream = NULL;
	int device = 0;

	pthread_mutex_lock(&ca->b.lock);
	blk = alloy__ptrmap_get(&ca->blocks, ptr);
	if (blk) {
		stream = blk->stream;
		device = blk->device;
	}
	pthread_mutex_unlock(&ca->b.lock);
	if (!blk) {
		alloy__error(-EINVAL, ca->b.name,
			     "realloc: %p is not a live block", ptr);
		return NULL;
	}
	return alloy__cuda_realloc_on(&ca->b, alloc_on, device, stream, false,
				      ptr, old_size, new_size, align);
}

static int async_record_stream(void *ctx, void *ptr, void *stream)
{
	struct cua *ca = ctx;
	struct async_block *blk;
	int rc = 0;

	pthread_mutex_lock(&ca->b.lock);
	blk = alloy__ptrmap_get(&ca->blocks, ptr);
	if (!blk)
		rc = alloy__error(-EINVAL, ca->b.name,
				  "record_stream: %p is not a live block", ptr);
	else if (stream != blk->stream &&
		 alloy__ptrvec_add_unique(&blk->uses, stream))
		rc = alloy__error(-ENOMEM, ca->b.name,
				  "record_stream: no memory");
	pthread_mutex_unlock(&ca->b.lock);
	return rc;
}

static const struct alloy_allocator_ops async_template = {
	.abi_major = ALLOY_ABI_MAJOR,
	.abi_minor = ALLOY_ABI_MINOR,
	.struct_size = sizeof(struct alloy_allocator_ops),
	.device_type = ALLOY_DEVICE_CUDA,
	.alloc = async_alloc,
	.free = async_free,
	.alloc_async = async_alloc_async,
	.free_async = async_free_async,
	.record_stream = async_record_stream,
	.realloc = async_realloc,
};

int alloy__cuda_async_new(const struct alloy__devsrc *src, const char *name,
			  const struct alloy_allocator_ops **ops, void **ctx)
{
	return alloy__cuda_base_new(sizeof(struct cua), src, name,
				    &async_template, ops, ctx);
}
