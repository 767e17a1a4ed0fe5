// SPDX-License-Identifier: MIT
/*
 * tests/plugins/slow_context.c - a plugin providing the pinned-host
 * device context, whose new_bytes waits until the test lets it go (as a
 * slow pinned allocation would), so that a test can unload the plugin
 * while a thread runs its code.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

#include "common.h"

static atomic_bool entered, released;

static int slow_new(void *ctx, struct alloy_device dev, size_t n,
		    struct alloy_data_ptr *out)
{
	(void)ctx;
	(void)dev;
	(void)n;
	(void)out;
	atomic_store(&entered, true);
	while (!atomic_load(&released))
		usleep(1000);
	return -ENOMEM;
}

static int copy(void *ctx, size_t n, const void *src, struct alloy_device sd,
		void *dst, struct alloy_device dd, void *stream)
{
	(void)ctx;
	(void)sd;
	(void)dd;
	(void)stream;
	memcpy(dst, src, n);
	return 0;
}

/* For the test (it dlsyms them): whether new_bytes runs; let it return. */
EXPORT bool slow_context_entered(void);
bool slow_context_entered(void)
{
	return atomic_load(&entered);
}

EXPORT void slow_context_release(void);
void slow_context_release(void)
{
	atomic_store(&released, true);
}

static const struct alloy_context_ops ops = {
	.abi_major = ALLOY_ABI_MAJOR,
	.abi_minor = ALLOY_ABI_MINOR,
	.struct_size = sizeof(struct alloy_context_ops),
	.name = "slow_context",
	.device_type = ALLOY_DEVICE_CUDA_HOST,
	.new_bytes = slow_new,
	.copy_bytes = copy,
};
static const struct alloy_plugin_context contexts[] = { { &ops, NULL } };
static const struct alloy_plugin_descriptor desc = {
	.abi_major = ALLOY_ABI_MAJOR,
	.abi_minor = ALLOY_ABI_MINOR,
	.struct_size = sizeof(struct alloy_plugin_descriptor),
	.name = "slow_context",
	.description = "a test plugin with a slow pinned-host context",
	.contexts = contexts,
	.ncontexts = 1,
};

EXPORT const struct alloy_plugin_descriptor *alloy_module_entry(void)
{
	return &desc;
}
