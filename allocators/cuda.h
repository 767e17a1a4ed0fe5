/* SPDX-License-Identifier: MIT */
/*
 * allocators/cuda.h - what the CUDA allocators share, and their
 * constructors: the code that composes them (liballoy's built-in simulated
 * allocators, modules/cuda.c for alloy_cuda.so) builds each over a device
 * source (devices/devsrc.h) and registers what it gets back.
 */
#ifndef ALLOY_ALLOCATORS_CUDA_H
#define ALLOY_ALLOCATORS_CUDA_H

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

#endif /* ALLOY_ALLOCATORS_CUDA_H */
