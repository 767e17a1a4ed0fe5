/* SPDX-License-Identifier: MIT */
/*
 * allocators/cuda_policy.h - what the CUDA allocators share, and their
 * constructors: the code that composes them (liballoy's built-in simulated
 * allocators, modules/cuda.c for alloy_cuda.so) builds each over a device
 * source (devices/devsrc.h) and registers what it gets back.
 */
#ifndef ALLOY_ALLOCATORS_CUDA_POLICY_H
#define ALLOY_ALLOCATORS_CUDA_POLICY_H

#include <pthread.h>

#include "devices/devsrc.h"

/* ---- policy code over a source ---------------------------------------- */

/* What every allocator over a source starts with. */
struct alloy__cuda_base {
	pthread_mutex_t lock;
	struct alloy__devsrc src;
	struct alloy_allocator_ops ops; /* a template, named after name */
	char name[ALLOY_NAME_MAX + 1];
};

/*
 * Allocate a zeroed context of size bytes that starts with a struct
 * alloy__cuda_base, set up from src, name and tmpl, and return what to
 * register in *ops and *ctx (allocators/cuda_common.c).
 */
__attribute__((visibility("hidden"))) int
alloy__cuda_base_new(size_t size, const struct alloy__devsrc *src,
		     const char *name, const struct alloy_allocator_ops *tmpl,
		     const struct alloy_allocator_ops **ops, void **ctx);

/* An allocator's own "make a block of size on device, ordered on stream". */
typedef void *alloy__cuda_alloc_on_fn(void *ctx, int device, size_t size,
				      size_t align, unsigned flags,
				      void *stream);

/*
 * The rest of a device allocator's realloc once the old block's device
 * and stream are known: a new block made there by alloc_on, the first
 * min(old_size, new_size) bytes copied device to device on that stream
 * (sync: waited for on the host), then the old block freed through the
 * allocator's free op (the new one instead when the copy failed).  The
 * new block, or NULL with the reason set.  b is the allocator's context.
 */
__attribute__((visibility("hidden"))) void *
alloy__cuda_realloc_on(struct alloy__cuda_base *b,
		       alloy__cuda_alloc_on_fn *alloc_on, int device,
		       void *stream, bool sync, void *ptr, size_t old_size,
		       size_t new_size, size_t align);

/*
 * The caching allocator, the pinned host allocator and the plain
 * allocator over src.  *ops and *ctx are what to register (the module
 * puts them in its descriptor); ctx lives until the process ends, as a
 * registered allocator's context may be reached after unregistering.
 */
ALLOY_DEVSRC_PRIVATE int
alloy__cuda_caching_new(const struct alloy__devsrc *src, const char *name,
			const struct alloy_allocator_ops **ops, void **ctx);
ALLOY_DEVSRC_PRIVATE int
alloy__cuda_host_new(const struct alloy__devsrc *src, const char *name,
		     const struct alloy_allocator_ops **ops, void **ctx);
ALLOY_DEVSRC_PRIVATE int
alloy__cuda_plain_new(const struct alloy__devsrc *src, const char *name,
		      const struct alloy_allocator_ops **ops, void **ctx);
ALLOY_DEVSRC_PRIVATE int
alloy__cuda_async_new(const struct alloy__devsrc *src, const char *name,
		      const struct alloy_allocator_ops **ops, void **ctx);

#endif /* ALLOY_ALLOCATORS_CUDA_POLICY_H */
