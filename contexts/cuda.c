// SPDX-License-Identifier: MIT
/*
 * contexts/cuda.c - the device context for `cuda`, over a device source.
 *
 * new() takes memory from the registry's current default allocator for
 * cuda on the requested device; copy_bytes() moves bytes host->device,
 * device->host and device->device, synchronously (stream NULL) or queued
 * on a stream; memset_bytes() sets device bytes the same way.  An async copy
 * from or to pinned memory of the default cuda_host allocator (any part of
 * a block) records its stream on that block, so the block is not reused
 * before the copy has run.
 *
 * The same code serves the real device (the alloy_cuda module registers
 * it over the CUDA runtime) and the simulated one (tests and tools
 * register it with alloy_cuda_sim_register_context).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/base.h"
#include "contexts/cuda_context.h"

struct cuda_ctx {
	struct alloy__devsrc src;
	struct alloy_context_ops ops;
};

static int cuda_new_bytes(void *ctx, struct alloy_device dev, size_t nbytes,
			  struct alloy_data_ptr *out)
{
	/*
	 * The default comes from the registry: the loader installs the
	 * configured one (conf key `cuda`) when the module registers it.
	 */
	return alloy__cuda_alloc_on(dev.index, alloy_cuda_current_stream(),
				    nbytes, 0, out);
}

/*
 * If ptr lies in a block of the default pinned allocator (at its start or
 * anywhere inside it), note that the copy just queued on stream uses it.
 * 0, or an error for the caller to return.
 *
 * When the note cannot be made (no memory to note the stream on the
 * block, or the block is already freed: record_stream only notes the
 * stream, the event comes at free time), the copy is queued and cannot
 * be taken back: failing it would let the caller free the block while the
 * copy still reads or writes it.  So the stream is synchronised instead:
 * then the copy is over and the block needs no protection.  A resource
 * failure costs only that wait and the copy succeeds; a block that was
 * already freed is the caller's bug, reported with the allocator's message
 * once the copy has finished.
 */
static int record_pinned(struct cuda_ctx *c, void *ptr, void *stream)
{
	struct alloy_allocator *host =
		alloy_get_default(ALLOY_DEVICE_CUDA_HOST);
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(host);
	int rc, sync_rc;

	if (!host || !ops->record_stream)
		return 0;
	rc = ops->record_stream(alloy_allocator_ctx(host), ptr, stream);
	if (!rc || rc == -ENOENT) /* recorded, or not pinned memory */
		return 0;
	sync_rc = c->src.ops->stream_synchronize(c->src.ctx, stream);
	if (sync_rc)
		return sync_rc;
	return rc == -EINVAL ? rc : 0;
}

static int cuda_copy_bytes(void *ctx, size_t nbytes, const void *src,
			   struct alloy_device src_dev, void *dst,
			   struct alloy_device dst_dev, void *stream)
{
	struct cuda_ctx *c = ctx;
	bool src_dev_mem = src_dev.type == ALLOY_DEVICE_CUDA;
	bool dst_dev_mem = dst_dev.type == ALLOY_DEVICE_CUDA;
	enum alloy__copy_kind kind;
	int device;
	int rc;

	if (src_dev_mem && dst_dev_mem)
		kind = ALLOY__D2D;
	else if (src_dev_mem)
		kind = ALLOY__D2H;
	else if (dst_dev_mem)
		kind = ALLOY__H2D;
	else
		kind = ALLOY__H2H;
	device = dst_dev_mem ? dst_dev.index : src_dev.index;
	rc = c->src.ops->copy(c->src.ctx, device, dst, src, nbytes, kind,
			      stream, stream == NULL);
	if (rc || !stream)
		return rc;
	/* Queued: a pinned host side must outlive the copy. */
	if (!src_dev_mem)
		rc = record_pinned(c, (void *)src, stream);
	if (!rc && !dst_dev_mem)
		rc = record_pinned(c, dst, stream);
	return rc;
}

static int cuda_synchronize(void *ctx, struct alloy_device dev)
{
	struct cuda_ctx *c = ctx;

	return c->src.ops->device_synchronize(c->src.ctx, dev.index);
}

/*
 * Through the device source, on stream; without one, on the default
 * stream, waited for, so that alloy_memset returns with the bytes set.
 */
static int cuda_memset(void *ctx, struct alloy_device dev, void *ptr, int byte,
		       size_t n, void *stream)
{
	struct cuda_ctx *c = ctx;
	int rc = c->src.ops->dev_memset(c->src.ctx, dev.index, ptr, byte, n,
					stream);

	if (rc || stream)
		return rc;
	return c->src.ops->stream_synchronize(c->src.ctx, NULL);
}

static const struct alloy_context_ops cuda_context_template = {
	.abi_major = ALLOY_ABI_MAJOR,
	.abi_minor = ALLOY_ABI_MINOR,
	.struct_size = sizeof(struct alloy_context_ops),
	.name = "cuda",
	.device_type = ALLOY_DEVICE_CUDA,
	.new_bytes = cuda_new_bytes,
	.copy_bytes = cuda_copy_bytes,
	.synchronize = cuda_synchronize,
	.memset_bytes = cuda_memset,
};

int alloy__cuda_context_new(const struct alloy__devsrc *src,
			    const struct alloy_context_ops **ops, void **ctx)
{
	/*
	 * The module builds its context on every load, and a machine without
	 * a device refuses every load: one context for the runtime source,
	 * made once, keeps those attempts from leaking.
	 */
	static struct cuda_ctx *runtime;
	bool is_runtime;
	struct cuda_ctx *c;

	ALLOY_ENFORCE(src && ops && ctx, -EINVAL, "NULL argument");
	is_runtime = !strcmp(src->ops->name, "cuda");
	c = is_runtime ? __atomic_load_n(&runtime, __ATOMIC_ACQUIRE) : NULL;
	if (!c) {
		c = calloc(1, sizeof(*c));
		ALLOY_ENFORCE(c, -ENOMEM, "no memory for the cuda context");
		if (is_runtime) {
			struct cuda_ctx *none = NULL;

			if (!__atomic_compare_exchange_n(
				    &runtime, &none, c, false, __ATOMIC_ACQ_REL,
				    __ATOMIC_ACQUIRE)) {
				free(c);
				c = none;
			}
		}
	}
	c->src = *src; /* the module's table may have moved since */
	c->ops = cuda_context_template;
	*ops = &c->ops;
	*ctx = c;
	return 0;
}

int alloy_cuda_sim_register_context(struct alloy_cuda_sim *sim)
{
	struct alloy__devsrc src;
	const struct alloy_context_ops *ops;
	void *ctx;
	int rc;

	ALLOY_ENFORCE(sim, -EINVAL, "sim is NULL");
	src = alloy__cuda_sim_source(sim);
	rc = alloy__cuda_context_new(&src, &ops, &ctx);
	if (rc)
		return rc;
	rc = alloy_register_context(ops, ctx);
	if (rc)
		free(ctx); /* refused: nobody else has it */
	return rc;
}
