// SPDX-License-Identifier: MIT
/*
 * tests/plugins/pinned_name.c - a third-party plugin whose allocator is
 * named "cuda_host", the name the pinned-host default waits for until the
 * CUDA module loads.  It must never become that default by its name
 * alone, and must be refused where a module provides the name.
 */
#include "common.h"

static const struct alloy_allocator_ops pinned = {
	.abi_major = ALLOY_ABI_MAJOR,
	.abi_minor = ALLOY_ABI_MINOR,
	.struct_size = sizeof(struct alloy_allocator_ops),
	.name = "cuda_host",
	.device_type = ALLOY_DEVICE_CUDA_HOST,
	.alloc = tp_alloc,
	.free = tp_free,
};
static const struct alloy_plugin_allocator list[] = { { &pinned, NULL } };
static const struct alloy_plugin_descriptor desc = TP_DESCRIPTOR(list);

EXPORT const struct alloy_plugin_descriptor *alloy_module_entry(void)
{
	return &desc;
}
