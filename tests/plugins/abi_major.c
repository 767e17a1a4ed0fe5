// SPDX-License-Identifier: MIT
/* tests/plugins/abi_major.c - built for a future ABI major. */
#include "common.h"

static const struct alloy_allocator_ops ops = TP_OPS("abi_major_alloc");
static const struct alloy_plugin_allocator list[] = { { &ops, NULL } };
static struct alloy_plugin_descriptor desc = TP_DESCRIPTOR(list);

EXPORT const struct alloy_plugin_descriptor *alloy_module_entry(void)
{
	desc.abi_major = ALLOY_ABI_MAJOR + 1;
	return &desc;
}
