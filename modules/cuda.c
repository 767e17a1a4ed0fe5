// SPDX-License-Identifier: MIT
/*
 * modules/cuda.c - the entry of alloy_cuda.so.
 *
 * Provides `cuda` (plain), `cuda_caching`, `cuda_host`, `cuda_async`
 * (cudaMallocAsync) and the device context for `cuda`, all of them
 * liballoy's policy code over the CUDA runtime source.  It composes
 * three layers (devices, allocators, contexts), so it lives above them.  The
 * loader finds this module for any of those names (the prefix before the first
 * '_' is tried).  On a machine without a usable device, init refuses the module
 * with "no CUDA device: ..." and nothing is registered.
 */
#include <errno.h>
#include <stddef.h>
#include <alloy/plugin.h>

#include "devices/cuda_runtime.h"
#include "allocators/cuda_policy.h"
#include "contexts/cuda_context.h"

static struct alloy_plugin_allocator allocators[4];
static struct alloy_plugin_context contexts[1];

static int cuda_module_init(void)
{
	return alloy__cuda_runtime_probe();
}

static struct alloy_plugin_descriptor descriptor = {
	.abi_major = ALLOY_ABI_MAJOR,
	.abi_minor = ALLOY_ABI_MINOR,
	.struct_size = sizeof(struct alloy_plugin_descriptor),
	.name = "cuda",
	.description =
		"CUDA device memory: cuda (cudaMalloc), cuda_caching "
		"(caching allocator), cuda_host (pinned host), cuda_async "
		"(cudaMallocAsync), context",
	.init = cuda_module_init,
	.allocators = allocators,
	.contexts = contexts,
};

/* Build the tables; touches no CUDA call, so it cannot fail on a GPU-less host.
 */
static int build(void)
{
	struct alloy__devsrc src = alloy__cuda_runtime_source();
	static const struct {
		const char *name;
		int (*make)(const struct alloy__devsrc *, const char *,
			    const struct alloy_allocator_ops **, void **);
	} makers[] = {
		{ "cuda", alloy__cuda_plain_new },
		{ "cuda_caching", alloy__cuda_caching_new },
		{ "cuda_host", alloy__cuda_host_new },
		{ "cuda_async", alloy__cuda_async_new },
	};
	size_t n = 0;
	int rc;

	for (size_t i = 0; i < sizeof(makers) / sizeof(makers[0]); i++) {
		rc = makers[i].make(&src, makers[i].name, &allocators[n].ops,
				    &allocators[n].ctx);
		if (rc)
			return rc;
		n++;
	}
	rc = alloy__cuda_context_new(&src, &contexts[0].ops, &contexts[0].ctx);
	if (rc)
		return rc;
	descriptor.nallocators = n;
	descriptor.ncontexts = 1;
	return 0;
}

const struct alloy_plugin_descriptor *alloy_module_entry(void);

const struct alloy_plugin_descriptor *alloy_module_entry(void)
{
	static int built;

	/* The loader reads the descriptor once per load; build it once. */
	if (!built && build() == 0)
		built = 1;
	return &descriptor;
}
